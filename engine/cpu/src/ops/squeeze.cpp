// aisrv CPU engine — SQUEEZE and EXPAND_DIMS preparation: both only relabel the shape, so they run as a byte copy
// (CopyParams). The output shape must be exactly the one the operator produces: SQUEEZE drops the listed
// dimensions of size 1 (all of them when squeeze_dims is empty), EXPAND_DIMS inserts a 1 at its constant axis
// (int32 or int64, in [-rank-1, rank]), as TensorFlow Lite and TFLite Micro define them. Any element type.
#include <cstring>
#include <span>

#include <fmt/ranges.h>

#include "prepare.hpp"

namespace aisrv::engine::cpu {

namespace {

std::string dims_text(const Shape& s) {
  return fmt::format("[{}]", fmt::join(std::span(s.dims.data(), static_cast<size_t>(s.rank)), ","));
}

Result<void> check_data(const PrepareContext& ctx, const TensorSpec& in, const TensorSpec& out) {
  AISRV_TRY(ctx.expect_type(in,
                            {DType::int8, DType::uint8, DType::int16, DType::int32, DType::int64, DType::float32,
                             DType::boolean},
                            "input"));
  return ctx.expect_same_type(in, out, "input and output");
}

Result<OpParams> copy_params(const PrepareContext& ctx, const TensorSpec& in, const TensorSpec& out,
                             const Shape& expected) {
  if (!(out.shape == expected))
    return ctx.error("output '{}' has shape {}, expected {} for input shape {}", out.name, dims_text(out.shape),
                     dims_text(expected), dims_text(in.shape));
  CopyParams p;
  p.bytes = in.bytes;
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace

Result<OpParams> prepare_squeeze(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(1, 1, 1));
  const auto& opt = std::get<SqueezeOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(check_data(ctx, in, out));
  const int rank = in.shape.rank;
  std::array<bool, kMaxRank> squeezed{};
  if (opt.squeeze_dims.empty()) {
    for (int d = 0; d < rank; ++d) squeezed[static_cast<size_t>(d)] = in.shape[d] == 1;
  } else {
    for (const int32_t dim : opt.squeeze_dims) {
      if (dim < -rank || dim >= rank)
        return ctx.error("squeeze dimension {} is outside the input's rank {}", dim, rank);
      const int d = dim < 0 ? dim + rank : dim;
      if (in.shape[d] != 1) return ctx.error("squeeze dimension {} has size {}, not 1", dim, in.shape[d]);
      squeezed[static_cast<size_t>(d)] = true;
    }
  }
  Shape expected;
  for (int d = 0; d < rank; ++d)
    if (!squeezed[static_cast<size_t>(d)]) expected.dims[static_cast<size_t>(expected.rank++)] = in.shape[d];
  return copy_params(ctx, in, out, expected);
}

Result<OpParams> prepare_expand_dims(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(2, 2, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& axis_t = *AISRV_TRY(ctx.input(1, "axis"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(check_data(ctx, in, out));
  AISRV_TRY(ctx.expect_type(axis_t, {DType::int32, DType::int64}, "axis"));
  AISRV_TRY(ctx.expect_constant(axis_t, "axis"));
  if (axis_t.shape.elements() != 1)
    return ctx.error("axis '{}' holds {} values, expected 1", axis_t.name, axis_t.shape.elements());
  int64_t axis;
  if (axis_t.type == DType::int32) {
    int32_t a;
    std::memcpy(&a, axis_t.data, sizeof a);
    axis = a;
  } else {
    std::memcpy(&axis, axis_t.data, sizeof axis);
  }
  const int rank = in.shape.rank;
  if (axis < -rank - 1 || axis > rank) return ctx.error("axis {} is outside [{}, {}]", axis, -rank - 1, rank);
  if (rank + 1 > kMaxRank) return ctx.error("input of rank {} expands beyond rank {}", rank, kMaxRank);
  const int at = static_cast<int>(axis < 0 ? axis + rank + 1 : axis);
  Shape expected;
  expected.rank = rank + 1;
  for (int d = 0, k = 0; d < expected.rank; ++d)
    expected.dims[static_cast<size_t>(d)] = d == at ? 1 : in.shape[k++];
  return copy_params(ctx, in, out, expected);
}

}  // namespace aisrv::engine::cpu
