// aisrv CPU engine — RESHAPE preparation: the output tensor's shape is authoritative (the optional shape input and
// the new_shape option only repeat it); the data are copied unchanged.
#include <cstring>

#include "prepare.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_reshape(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(1, 2, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  if (in.bytes != out.bytes)
    return ctx.error("input has {} elements but the output {}", in.shape.elements(), out.shape.elements());
  CopyParams p;
  p.bytes = in.bytes;
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
