// aisrv CPU engine — FULLY_CONNECTED preparation: int8 (per-tensor weights with TFLite's legacy multiplier, or
// per-channel symmetric weights) and uint8 (per-tensor); float32 models (float32 weights and bias) and dynamic-range
// ones (float32 activations, constant int8 weights per-tensor or per-channel, float32 bias: TensorFlow Lite's
// EvalHybrid, inputs quantized per batch row symmetrically or, with asymmetric_quantize_inputs, asymmetrically);
// weights [output depth, accumulation depth], the input flattened to [batches, accumulation depth].
#include <limits>

#include "conv_common.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

namespace {

// The 8-bit output stage and accumulator bound (unchanged from the integer-only engine).
Result<void> prepare_quantized(const PrepareContext& ctx, const FullyConnectedOptions& opt, const TensorSpec& in,
                               const TensorSpec& w, const TensorSpec& out, FullyConnectedParams& p) {
  const float in_scale = AISRV_TRY(ctx.scale(in, "input"));
  const float out_scale = AISRV_TRY(ctx.scale(out, "output"));
  const int32_t in_zp = AISRV_TRY(ctx.zero_point(in, "input"));
  const int32_t out_zp = AISRV_TRY(ctx.zero_point(out, "output"));
  if (!w.quant.present()) return ctx.error("weights '{}' are not quantized", w.name);
  const size_t nscales = w.quant.scale.size();
  int32_t w_zp = 0;
  ChannelRequant rq;
  if (nscales > 1) {
    if (in.type != DType::int8 || nscales != static_cast<size_t>(p.output_depth) || w.quant.axis != 0)
      return ctx.error("weights have {} scales along dimension {}; per-channel needs int8 and {} along dimension 0",
                       nscales, w.quant.axis, p.output_depth);
    for (int64_t zp : w.quant.zero_point)
      if (zp != 0) return ctx.error("per-channel weight zero point {} is not 0", zp);
    rq = AISRV_TRY(per_channel_requant(ctx, in_scale, w.quant.scale, out_scale, p.output_depth));
  } else {
    w_zp = AISRV_TRY(ctx.zero_point(w, "weights"));
    rq = AISRV_TRY(legacy_requant(ctx, in_scale, w.quant.scale[0], ctx.optional_input(2), out_scale,
                                  p.output_depth));
  }
  AISRV_TRY(set_output_stage(p, std::move(rq), in_zp, w_zp, out_zp, out_scale, out.type, opt.activation));

  p.bias = AISRV_TRY(bias_data(ctx, 2, p.output_depth));
  return check_accumulator_bound(ctx, w, p.filter_offset, p.output_depth, p.accum_depth, p.accum_depth, 1,
                                 max_abs_offset_value(in.type, p.input_offset), p.bias);
}

// TFLite's hybrid FULLY_CONNECTED applies its activation with ApplyActivationToVector, not with a clamp to the float
// range: NONE leaves values as they are (infinities included), RELU is max(0, x), RELU6 / RELU_N1_TO_1 clamp both
// sides. The bounds are given as (-inf / +inf for a side left open); the kernel reproduces TFLite's comparisons.
// TANH and SIGN_BIT would need an activation code the parameters have no field for: refused.
Result<FloatActivation> hybrid_activation(const PrepareContext& ctx, Activation activation) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  switch (activation) {
    case Activation::none: return FloatActivation{-inf, inf};
    case Activation::relu: return FloatActivation{0.0f, inf};
    case Activation::relu6: return FloatActivation{0.0f, 6.0f};
    case Activation::relu_n1_to_1: return FloatActivation{-1.0f, 1.0f};
    default:
      return ctx.error("fused activation {} is not supported on a dynamic-range FULLY_CONNECTED (only NONE, RELU, "
                       "RELU6, RELU_N1_TO_1)",
                       static_cast<int>(activation));
  }
}

Result<void> prepare_float(const PrepareContext& ctx, const FullyConnectedOptions& opt, const TensorSpec& w,
                           FullyConnectedParams& p) {
  p.float_bias = AISRV_TRY(float_bias_data(ctx, 2, p.output_depth));
  if (p.filter_type == DType::float32) {
    const FloatActivation act = AISRV_TRY(float_activation_range(ctx, opt.activation));
    p.float_act_min = act.min;
    p.float_act_max = act.max;
    return {};
  }
  const FloatActivation act = AISRV_TRY(hybrid_activation(ctx, opt.activation));
  p.float_act_min = act.min;
  p.float_act_max = act.max;
  p.filter_scales = AISRV_TRY(hybrid_filter_scales(ctx, w, p.output_depth, /*axis=*/0));
  p.asymmetric_quantize_inputs = opt.asymmetric_quantize_inputs;
  // Quantized inputs are within [-127, 127] (symmetric) or differ from their offset by at most 255 (asymmetric).
  return check_accumulator_bound(ctx, w, 0, p.output_depth, p.accum_depth, p.accum_depth, 1,
                                 p.asymmetric_quantize_inputs ? 255 : 127, nullptr);
}

}  // namespace

Result<OpParams> prepare_fully_connected(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(2, 3, 1));
  const auto& opt = std::get<FullyConnectedOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& w = *AISRV_TRY(ctx.input(1, "weights"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::float32}, "input"));
  if (in.type == DType::float32) {
    // A float model (float32 weights, which may be computed) or a dynamic-range one (constant int8 weights).
    AISRV_TRY(ctx.expect_type(w, {DType::float32, DType::int8}, "weights of a float32 input"));
    AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
    if (w.type == DType::int8) AISRV_TRY(ctx.expect_constant(w, "weights"));
  } else {
    AISRV_TRY(ctx.expect_same_type(in, w, "input and weights"));
    AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
    AISRV_TRY(ctx.expect_constant(w, "weights"));
  }
  if (opt.weights_format != 0)
    return ctx.error("weights format {} (shuffled) is not supported", static_cast<int>(opt.weights_format));
  if (w.shape.rank != 2) return ctx.error("weights '{}' have rank {}, expected 2", w.name, w.shape.rank);

  FullyConnectedParams p;
  p.dtype = in.type;
  p.filter_type = w.type;
  p.output_depth = w.shape[0];
  p.accum_depth = w.shape[1];
  if (p.accum_depth < 1) return ctx.error("weights '{}' have accumulation depth {}", w.name, p.accum_depth);
  const int64_t in_elements = in.shape.elements();
  if (in_elements % p.accum_depth != 0)
    return ctx.error("input has {} elements, not a multiple of the accumulation depth {}", in_elements,
                     p.accum_depth);
  const int64_t batches = in_elements / p.accum_depth;
  if (out.shape.rank < 1 || out.shape[out.shape.rank - 1] != p.output_depth ||
      out.shape.elements() != batches * p.output_depth)
    return ctx.error("output '{}' holds {} elements; expected {} batches of {}", out.name, out.shape.elements(),
                     batches, p.output_depth);
  // keep_num_dims: TFLite requires the input's last dimension to be the accumulation depth (the output keeps the
  // input's other dimensions).
  if (opt.keep_num_dims && (in.shape.rank < 1 || in.shape[in.shape.rank - 1] != p.accum_depth))
    return ctx.error("keep_num_dims: the input's last dimension must be the accumulation depth {}", p.accum_depth);
  p.batches = static_cast<int32_t>(batches);

  if (p.dtype == DType::float32) AISRV_TRY(prepare_float(ctx, opt, w, p));
  else AISRV_TRY(prepare_quantized(ctx, opt, in, w, out, p));
  p.input = ctx.read_input(0);
  p.weights = ctx.read_input(1);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
