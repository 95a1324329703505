// aisrv CPU engine — GATHER_ND preparation: the input's slices picked by index tuples (the last dimension of an
// int32 or int64 index tensor, at most the input's rank), as TensorFlow Lite and TFLite Micro define it
// (gather_nd.cc). The output shape is indices.shape[:-1] + input.shape[depth:]. Run-time indices are checked by the
// kernel (an index outside its dimension fails the inference); constant indices are checked here. Any element type.
#include <cstring>
#include <span>

#include <fmt/ranges.h>

#include "prepare.hpp"

namespace aisrv::engine::cpu {

namespace {

std::string dims_text(const Shape& s) {
  return fmt::format("[{}]", fmt::join(std::span(s.dims.data(), static_cast<size_t>(s.rank)), ","));
}

}  // namespace

Result<OpParams> prepare_gather_nd(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(2, 2, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& idx = *AISRV_TRY(ctx.input(1, "indices"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in,
                            {DType::int8, DType::uint8, DType::int16, DType::int32, DType::int64, DType::float32,
                             DType::boolean},
                            "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  AISRV_TRY(ctx.expect_type(idx, {DType::int32, DType::int64}, "indices"));
  if (in.shape.rank < 1) return ctx.error("input '{}' is a scalar; it must be at least a vector", in.name);
  if (idx.shape.rank < 1) return ctx.error("indices '{}' are a scalar; they must be at least a vector", idx.name);
  const int depth = idx.shape[idx.shape.rank - 1];
  if (depth > in.shape.rank)
    return ctx.error("index tuples have {} entries, more than the input's rank {}", depth, in.shape.rank);

  GatherNdParams p;
  p.element_size = protocol::dtype_size(in.type);
  p.index_type = idx.type;
  p.input_shape = in.shape;
  p.index_depth = depth;
  p.tuple_count = 1;
  p.slice_elements = 1;
  Shape expected;
  for (int d = 0; d + 1 < idx.shape.rank; ++d) {
    p.tuple_count *= idx.shape[d];
    expected.dims[static_cast<size_t>(expected.rank++)] = idx.shape[d];
  }
  for (int d = depth; d < in.shape.rank; ++d) {
    p.slice_elements *= in.shape[d];
    if (expected.rank == kMaxRank)
      return ctx.error("the output of indices {} on input {} has more than {} dimensions", dims_text(idx.shape),
                       dims_text(in.shape), kMaxRank);
    expected.dims[static_cast<size_t>(expected.rank++)] = in.shape[d];
  }
  if (!(out.shape == expected))
    return ctx.error("output '{}' has shape {}, but gathering input {} with indices {} gives {}", out.name,
                     dims_text(out.shape), dims_text(in.shape), dims_text(idx.shape), dims_text(expected));

  if (idx.is_constant()) {
    for (int64_t i = 0; i < idx.shape.elements(); ++i) {
      int64_t v;
      if (idx.type == DType::int32) {
        int32_t x;
        std::memcpy(&x, idx.data + i * 4, sizeof x);
        v = x;
      } else {
        std::memcpy(&v, idx.data + i * 8, sizeof v);
      }
      const int32_t dim = in.shape[static_cast<int>(i % depth)];
      if (v < 0 || v >= dim)
        return ctx.error("constant index {} (entry {}) is outside [0, {})", v, i, dim);
    }
  }
  p.input = ctx.read_input(0);
  p.indices = ctx.read_input(1);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
