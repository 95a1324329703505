// aisrv CPU engine — DEQUANTIZE preparation: int8 / uint8 / int16 -> float32 with the input's per-tensor scale and
// zero point.
#include "prepare.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_dequantize(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(1, 1, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::int16}, "input"));
  AISRV_TRY(ctx.expect_type(out, {DType::float32}, "output"));
  if (in.shape.elements() != out.shape.elements())
    return ctx.error("input has {} elements, the output {}", in.shape.elements(), out.shape.elements());
  DequantizeParams p;
  p.input_type = in.type;
  p.elements = in.shape.elements();
  p.scale = static_cast<double>(AISRV_TRY(ctx.scale(in, "input")));
  p.zero_point = AISRV_TRY(ctx.zero_point(in, "input"));
  p.input = ctx.read_input(0);
  p.output = static_cast<float*>(ctx.write_output());
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
