// aisrv CPU engine — FULLY_CONNECTED preparation: int8 (per-tensor weights with TFLite's legacy multiplier, or
// per-channel symmetric weights) and uint8 (per-tensor); weights [output depth, accumulation depth], the input
// flattened to [batches, accumulation depth].
#include "conv_common.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_fully_connected(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(2, 3, 1));
  const auto& opt = std::get<FullyConnectedOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& w = *AISRV_TRY(ctx.input(1, "weights"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, w, "input and weights"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  AISRV_TRY(ctx.expect_constant(w, "weights"));
  if (opt.weights_format != 0)
    return ctx.error("weights format {} (shuffled) is not supported", static_cast<int>(opt.weights_format));
  if (w.shape.rank != 2) return ctx.error("weights '{}' have rank {}, expected 2", w.name, w.shape.rank);

  FullyConnectedParams p;
  p.dtype = in.type;
  p.output_depth = w.shape[0];
  p.accum_depth = w.shape[1];
  const int64_t in_elements = in.shape.elements();
  if (in_elements % p.accum_depth != 0)
    return ctx.error("input has {} elements, not a multiple of the accumulation depth {}", in_elements,
                     p.accum_depth);
  const int64_t batches = in_elements / p.accum_depth;
  if (out.shape.rank < 1 || out.shape[out.shape.rank - 1] != p.output_depth ||
      out.shape.elements() != batches * p.output_depth)
    return ctx.error("output '{}' holds {} elements; expected {} batches of {}", out.name, out.shape.elements(),
                     batches, p.output_depth);
  p.batches = static_cast<int32_t>(batches);

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
  AISRV_TRY(check_accumulator_bound(ctx, w, p.filter_offset, p.output_depth, p.accum_depth, p.accum_depth, 1,
                                    max_abs_offset_value(in.type, p.input_offset), p.bias));
  p.input = ctx.read_input(0);
  p.weights = ctx.read_input(1);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
