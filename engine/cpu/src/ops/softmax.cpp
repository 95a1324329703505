// aisrv CPU engine — SOFTMAX preparation over the last dimension: int8 / uint8 with TFLite's fixed-point reference
// algorithm (5 integer bits for the scaled differences; the output must use scale 1/256 and the type's lowest value
// as zero point, as TFLite requires), and float32 with TFLite's float reference (beta applied in the kernel).
#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_softmax(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(1, 1, 1));
  const auto& opt = std::get<SoftmaxOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  if (in.shape.rank < 1) return ctx.error("input '{}' is a scalar", in.name);
  if (!(in.shape == out.shape)) return ctx.error("output shape differs from the input shape");

  if (in.type == DType::float32) {
    SoftmaxParams p;
    p.dtype = in.type;
    p.depth = in.shape[in.shape.rank - 1];
    p.outer_size = static_cast<int32_t>(in.shape.elements() / p.depth);
    p.beta = opt.beta;
    p.input = ctx.read_input(0);
    p.output = ctx.write_output();
    return OpParams{std::move(p)};
  }

  const float in_scale = AISRV_TRY(ctx.scale(in, "input"));
  (void)AISRV_TRY(ctx.zero_point(in, "input"));
  const float out_scale = AISRV_TRY(ctx.scale(out, "output"));
  const int32_t out_zp = AISRV_TRY(ctx.zero_point(out, "output"));
  if (out_scale != 1.0f / 256 || out_zp != type_min(out.type))
    return ctx.error("output quantization ({:g}, {}) must be (1/256, {})", out_scale, out_zp, type_min(out.type));

  SoftmaxParams p;
  p.dtype = in.type;
  p.depth = in.shape[in.shape.rank - 1];
  p.outer_size = static_cast<int32_t>(in.shape.elements() / p.depth);
  if (p.depth > (1 << 20)) return ctx.error("softmax over {} classes is too wide", p.depth);
  const SoftmaxScaling s = AISRV_TRY(softmax_scaling(static_cast<double>(opt.beta), static_cast<double>(in_scale), 5));
  p.input_multiplier = s.multiplier;
  p.input_left_shift = s.left_shift;
  p.diff_min = s.diff_min;
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
