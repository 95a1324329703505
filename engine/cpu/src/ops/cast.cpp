// aisrv CPU engine — CAST preparation: any pair of float32, int8, uint8, int16, int32, int64 and bool
// (TensorFlow Lite Micro's types plus the ones TensorFlow Lite casts, uint8 among them); the values convert as
// static_cast does (see kernels/ref/cast.cpp), quantization parameters are ignored as TensorFlow Lite does.
#include "prepare.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_cast(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(1, 1, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  using D = DType;
  AISRV_TRY(ctx.expect_type(in, {D::float32, D::int8, D::uint8, D::int16, D::int32, D::int64, D::boolean},
                            "input"));
  AISRV_TRY(ctx.expect_type(out, {D::float32, D::int8, D::uint8, D::int16, D::int32, D::int64, D::boolean},
                            "output"));
  if (!(in.shape == out.shape)) return ctx.error("output '{}' does not have the input's shape", out.name);
  CastParams p;
  p.input_type = in.type;
  p.output_type = out.type;
  p.elements = in.shape.elements();
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
