// aisrv CPU engine — DEPTHWISE_CONV_2D preparation: int8 with per-channel (dimension 3) or per-tensor symmetric
// weights, or uint8 with per-tensor weights; float32 models (float32 filter and bias) and dynamic-range ones (float32
// activations, constant int8 filter, float32 bias: TensorFlow Lite's EvalHybridPerChannel); any depth multiplier
// (output channels = input channels x multiplier).
#include "conv_common.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_depthwise_conv_2d(const PrepareContext& ctx) {
  DepthwiseConv2DParams p;
  const TensorSpec& filter = *AISRV_TRY(prepare_conv_operands(ctx, p));
  const auto& opt = std::get<DepthwiseConv2DOptions>(ctx.op().options);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  if (fs.n != 1) return ctx.error("filter's first dimension is {}, expected 1", fs.n);
  if (fs.c != os.c) return ctx.error("filter has {} channels but the output {}", fs.c, os.c);
  if (os.c % is.c != 0)
    return ctx.error("{} output channels are not a multiple of the {} input channels", os.c, is.c);
  // The shapes define the multiplier (the option field is redundant and some converters leave it 0).
  p.depth_multiplier = os.c / is.c;

  if (p.dtype == DType::float32) {
    AISRV_TRY(prepare_conv_window(ctx, opt, p));
    const FloatActivation act = AISRV_TRY(float_activation_range(ctx, opt.activation));
    p.float_act_min = act.min;
    p.float_act_max = act.max;
    p.float_bias = AISRV_TRY(float_bias_data(ctx, 2, os.c));
    if (p.filter_type == DType::int8) {
      // TFLite always runs the per-channel hybrid kernel here, inputs quantized asymmetrically per batch. It reads
      // one scale per output channel; a single scale (which TFLite would read past) is broadcast.
      p.filter_scales = AISRV_TRY(hybrid_filter_scales(ctx, filter, os.c, /*axis=*/3));
      p.asymmetric_quantize_inputs = true;
      AISRV_TRY(check_accumulator_bound(ctx, filter, 0, os.c, int64_t{fs.h} * fs.w, 1, os.c, 255, nullptr));
    }
  } else {
    AISRV_TRY(prepare_conv_window_and_quantization(ctx, opt, /*scale_axis=*/3, p));
    p.bias = AISRV_TRY(bias_data(ctx, 2, os.c));
    AISRV_TRY(check_accumulator_bound(ctx, filter, p.filter_offset, os.c, int64_t{fs.h} * fs.w, 1, os.c,
                                      max_abs_offset_value(p.dtype, p.input_offset), p.bias));
  }
  p.input = ctx.read_input(0);
  p.filter = ctx.read_input(1);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
