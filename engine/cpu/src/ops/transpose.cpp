// aisrv CPU engine — TRANSPOSE preparation: a constant int32 permutation of the input's dimensions; any element
// type (the data are moved, not converted).
#include <fmt/ranges.h>

#include "prepare.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_transpose(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(2, 2, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& perm_t = *AISRV_TRY(ctx.input(1, "permutation"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::int16, DType::int32, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  const std::vector<int32_t> perm = AISRV_TRY(ctx.int32_values(perm_t, "permutation"));
  if (perm.size() != static_cast<size_t>(in.shape.rank) || out.shape.rank != in.shape.rank)
    return ctx.error("permutation has {} entries for rank {} (output rank {})", perm.size(), in.shape.rank,
                     out.shape.rank);
  TransposeParams p;
  p.element_size = protocol::dtype_size(in.type);
  p.input_shape = in.shape;
  p.output_shape = out.shape;
  std::array<bool, kMaxRank> seen{};
  for (int i = 0; i < in.shape.rank; ++i) {
    const int32_t d = perm[static_cast<size_t>(i)];
    if (d < 0 || d >= in.shape.rank || seen[static_cast<size_t>(d)])
      return ctx.error("{} is not a permutation of 0..{}", fmt::join(perm, ","), in.shape.rank - 1);
    seen[static_cast<size_t>(d)] = true;
    if (out.shape[i] != in.shape[d])
      return ctx.error("output dimension {} is {}, but input dimension {} is {}", i, out.shape[i], d, in.shape[d]);
    p.perm[static_cast<size_t>(i)] = d;
  }
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
