// aisrv CPU engine — CONV_2D preparation: int8 activations with per-channel (or per-tensor) symmetric int8 weights,
// or uint8 activations with per-tensor asymmetric uint8 weights (legacy quantized models); int32 bias; grouped
// convolution when the filter has fewer input channels than the input.
#include "conv_common.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_conv_2d(const PrepareContext& ctx) {
  Conv2DParams p;
  const TensorSpec& filter = *AISRV_TRY(prepare_conv_operands(ctx, p));
  const auto& opt = std::get<Conv2DOptions>(ctx.op().options);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  if (is.c % fs.c != 0)
    return ctx.error("input has {} channels, not a multiple of the filter's {}", is.c, fs.c);
  const int32_t groups = is.c / fs.c;
  if (os.c != fs.n) return ctx.error("output has {} channels but the filter {}", os.c, fs.n);
  if (os.c % groups != 0) return ctx.error("{} output channels do not split into {} groups", os.c, groups);

  AISRV_TRY(prepare_conv_window_and_quantization(ctx, opt, /*scale_axis=*/0, p));

  p.bias = AISRV_TRY(bias_data(ctx, 2, os.c));
  const int64_t taps = int64_t{fs.h} * fs.w * fs.c;
  AISRV_TRY(check_accumulator_bound(ctx, filter, p.filter_offset, os.c, taps, taps, 1,
                                    max_abs_offset_value(p.dtype, p.input_offset), p.bias));
  p.input = ctx.read_input(0);
  p.filter = ctx.read_input(1);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
