// aisrv CPU engine — CONV_2D preparation: int8 activations with per-channel (or per-tensor) symmetric int8 weights,
// or uint8 activations with per-tensor asymmetric uint8 weights (legacy quantized models); int32 bias; grouped
// convolution when the filter has fewer input channels than the input. float32 models (float32 filter and bias,
// grouped too) and dynamic-range ones (float32 activations, constant int8 filter, float32 bias: TensorFlow Lite's
// hybrid kernels, see below).
#include <algorithm>

#include "conv_common.hpp"

namespace aisrv::engine::cpu {

namespace {

// TensorFlow Lite's CONV_2D on a float32 input with int8 weights (conv.cc): with one filter scale (or several, all
// equal) EvalHybrid quantizes each batch symmetrically; with differing per-channel scales EvalHybridPerChannel
// quantizes it asymmetrically. TFLite's per-channel hybrid path runs without the model's dilation (it sets the factors
// to 1 after sizing the output with them), and its per-tensor path reads the legacy single scale, which a file with
// several equal scales does not have (it reads 0): both would compute something else than the model says, so we
// refuse them. Neither TFLite hybrid path convolves groups.
Result<void> prepare_hybrid(const PrepareContext& ctx, const TensorSpec& filter, Conv2DParams& p) {
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  if (is.c != fs.c)
    return ctx.error("dynamic-range convolution: the filter has {} input channels but the input {} (grouped "
                     "convolution has no hybrid kernel)",
                     fs.c, is.c);
  p.filter_scales = AISRV_TRY(hybrid_filter_scales(ctx, filter, os.c, /*axis=*/0));
  const std::vector<float>& scales = filter.quant.scale;
  const bool all_equal = std::all_of(scales.begin(), scales.end(), [&](float s) { return s == scales[0]; });
  if (scales.size() > 1 && all_equal)
    return ctx.error("dynamic-range filter '{}' has {} per-channel scales, all equal: TensorFlow Lite runs that as "
                     "per-tensor with a zero scale; store one scale",
                     filter.name, scales.size());
  p.asymmetric_quantize_inputs = !all_equal;
  if (p.asymmetric_quantize_inputs && (p.dilation_h != 1 || p.dilation_w != 1))
    return ctx.error("dynamic-range convolution with per-channel scales and dilation {}x{}: TensorFlow Lite's kernel "
                     "ignores the dilation, so there is no reference to match",
                     p.dilation_h, p.dilation_w);
  // Quantized inputs are within [-127, 127] (symmetric) or differ from their offset by at most 255 (asymmetric).
  const int64_t taps = int64_t{fs.h} * fs.w * fs.c;
  return check_accumulator_bound(ctx, filter, 0, os.c, taps, taps, 1, p.asymmetric_quantize_inputs ? 255 : 127,
                                 nullptr);
}

}  // namespace

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

  if (p.dtype == DType::float32) {
    AISRV_TRY(prepare_conv_window(ctx, opt, p));
    const FloatActivation act = AISRV_TRY(float_activation_range(ctx, opt.activation));
    p.float_act_min = act.min;
    p.float_act_max = act.max;
    p.float_bias = AISRV_TRY(float_bias_data(ctx, 2, os.c));
    if (p.filter_type == DType::int8) AISRV_TRY(prepare_hybrid(ctx, filter, p));
  } else {
    AISRV_TRY(prepare_conv_window_and_quantization(ctx, opt, /*scale_axis=*/0, p));
    p.bias = AISRV_TRY(bias_data(ctx, 2, os.c));
    const int64_t taps = int64_t{fs.h} * fs.w * fs.c;
    AISRV_TRY(check_accumulator_bound(ctx, filter, p.filter_offset, os.c, taps, taps, 1,
                                      max_abs_offset_value(p.dtype, p.input_offset), p.bias));
  }
  p.input = ctx.read_input(0);
  p.filter = ctx.read_input(1);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
