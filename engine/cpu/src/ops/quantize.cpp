// aisrv CPU engine — QUANTIZE preparation: float32 -> int8 / uint8 / int16 (affine quantization), and
// int8 / uint8 / int16 -> int8 / uint8 / int16 requantization (including the int8 <-> uint8 zero-point shift).
#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_quantize(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(1, 1, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::float32, DType::int8, DType::uint8, DType::int16}, "input"));
  AISRV_TRY(ctx.expect_type(out, {DType::int8, DType::uint8, DType::int16}, "output"));
  if (in.shape.elements() != out.shape.elements())
    return ctx.error("input has {} elements, the output {}", in.shape.elements(), out.shape.elements());
  QuantizeParams p;
  p.input_type = in.type;
  p.output_type = out.type;
  p.elements = in.shape.elements();
  p.output_scale = AISRV_TRY(ctx.scale(out, "output"));
  p.output_zero_point = AISRV_TRY(ctx.zero_point(out, "output"));
  if (in.type != DType::float32) {
    const float in_scale = AISRV_TRY(ctx.scale(in, "input"));
    p.input_zero_point = AISRV_TRY(ctx.zero_point(in, "input"));
    const QuantizedMultiplier q = AISRV_TRY(checked_multiplier(
        static_cast<double>(in_scale) / static_cast<double>(p.output_scale), ctx.where()));
    p.multiplier = q.multiplier;
    p.shift = q.shift;
  }
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
