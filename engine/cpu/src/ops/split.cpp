// aisrv CPU engine — SPLIT, SPLIT_V and UNPACK preparation: the input cut along one axis into consecutive pieces,
// one per output (SplitParams). SPLIT: constant scalar int32 axis (input 0), num_splits equal pieces. SPLIT_V:
// constant sizes (int32 or int64, at most one -1 for "the rest") and axis. UNPACK: `num` pieces of size 1 along the
// axis, which the outputs drop. Every output shape is checked against what the operator produces; any element type.
#include <algorithm>
#include <cstring>
#include <span>

#include <fmt/ranges.h>

#include "prepare.hpp"

namespace aisrv::engine::cpu {

namespace {

std::string dims_text(const Shape& s) {
  return fmt::format("[{}]", fmt::join(std::span(s.dims.data(), static_cast<size_t>(s.rank)), ","));
}

Result<void> check_data_type(const PrepareContext& ctx, const TensorSpec& in) {
  return ctx.expect_type(in,
                         {DType::int8, DType::uint8, DType::int16, DType::int32, DType::int64, DType::float32,
                          DType::boolean},
                         "input");
}

// The constant axis of SPLIT / SPLIT_V: one int32 value in [-rank, rank), made non-negative.
Result<int> split_axis(const PrepareContext& ctx, size_t input, const TensorSpec& in) {
  const TensorSpec& t = *AISRV_TRY(ctx.input(input, "axis"));
  const std::vector<int32_t> v = AISRV_TRY(ctx.int32_values(t, "axis"));
  if (v.size() != 1) return ctx.error("axis '{}' holds {} values, expected 1", t.name, v.size());
  const int rank = in.shape.rank;
  if (v[0] < -rank || v[0] >= rank) return ctx.error("axis {} is outside the input's rank {}", v[0], rank);
  return v[0] < 0 ? v[0] + rank : v[0];
}

// Outer / inner sizes and data pointers; the per-output sizes are set by the caller. Every output must have the
// input's type and the shape `shape_of(i)`.
template <typename ShapeOf>
Result<SplitParams> make_params(const PrepareContext& ctx, size_t data_input, const TensorSpec& in, int axis,
                                std::vector<int32_t> sizes, ShapeOf&& shape_of) {
  SplitParams p;
  p.element_size = protocol::dtype_size(in.type);
  p.outer_size = 1;
  p.inner_size = 1;
  for (int d = 0; d < axis; ++d) p.outer_size *= in.shape[d];
  for (int d = axis + 1; d < in.shape.rank; ++d) p.inner_size *= in.shape[d];
  p.axis_size = in.shape[axis];
  for (size_t i = 0; i < sizes.size(); ++i) {
    const TensorSpec& out = ctx.output(i);
    AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
    const Shape want = shape_of(i, sizes[i]);
    if (!(out.shape == want))
      return ctx.error("output {} '{}' has shape {}, expected {}", i, out.name, dims_text(out.shape),
                       dims_text(want));
    p.outputs.push_back(ctx.write_output(i));
  }
  p.sizes = std::move(sizes);
  p.input = ctx.read_input(data_input);
  return p;
}

}  // namespace

Result<OpParams> prepare_split(const PrepareContext& ctx) {
  const bool v = ctx.op().code == static_cast<int32_t>(BuiltinOp::split_v);
  const int32_t num_splits = v ? std::get<SplitVOptions>(ctx.op().options).num_splits
                               : std::get<SplitOptions>(ctx.op().options).num_splits;
  if (num_splits < 1 || static_cast<size_t>(num_splits) != ctx.op().outputs.size())
    return ctx.error("num_splits is {} but the operator has {} outputs", num_splits, ctx.op().outputs.size());
  AISRV_TRY(ctx.check_counts(v ? 3 : 2, v ? 3 : 2, static_cast<size_t>(num_splits)));
  const size_t data_input = v ? 0 : 1;  // SPLIT: (axis, input); SPLIT_V: (input, size_splits, axis)
  const TensorSpec& in = *AISRV_TRY(ctx.input(data_input, "input"));
  AISRV_TRY(check_data_type(ctx, in));
  const int axis = AISRV_TRY(split_axis(ctx, v ? 2 : 0, in));
  const int32_t axis_size = in.shape[axis];

  std::vector<int32_t> sizes(static_cast<size_t>(num_splits));
  if (!v) {
    if (axis_size % num_splits != 0)
      return ctx.error("input dimension {} ({}) does not divide into {} pieces", axis, axis_size, num_splits);
    std::fill(sizes.begin(), sizes.end(), axis_size / num_splits);
  } else {
    // TFLite: sizes sum to the axis' size, or one of them is -1 and takes what the others leave.
    const TensorSpec& st = *AISRV_TRY(ctx.input(1, "size_splits"));
    AISRV_TRY(ctx.expect_type(st, {DType::int32, DType::int64}, "size_splits"));
    AISRV_TRY(ctx.expect_constant(st, "size_splits"));
    if (st.shape.rank != 1 || st.shape[0] != num_splits)
      return ctx.error("size_splits '{}' has shape {}, expected [{}]", st.name, dims_text(st.shape), num_splits);
    int64_t sum = 0;
    int rest = -1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      int64_t s;
      if (st.type == DType::int32) {
        int32_t x;
        std::memcpy(&x, st.data + i * sizeof x, sizeof x);
        s = x;
      } else {
        std::memcpy(&s, st.data + i * sizeof s, sizeof s);
      }
      if (s == -1) {
        if (rest >= 0) return ctx.error("size_splits holds more than one -1");
        rest = static_cast<int>(i);
        continue;
      }
      if (s < 0 || s > axis_size)
        return ctx.error("size_splits entry {} is {}, outside [0, {}]", i, s, axis_size);
      sum += s;
      sizes[i] = static_cast<int32_t>(s);
    }
    if (rest >= 0 ? sum > axis_size : sum != axis_size)
      return ctx.error("size_splits add up to {}, but input dimension {} is {}", sum, axis, axis_size);
    if (rest >= 0) sizes[static_cast<size_t>(rest)] = static_cast<int32_t>(axis_size - sum);
  }
  SplitParams p = AISRV_TRY(make_params(ctx, data_input, in, axis, std::move(sizes), [&](size_t, int32_t size) {
    Shape s = in.shape;
    s.dims[static_cast<size_t>(axis)] = size;
    return s;
  }));
  return OpParams{std::move(p)};
}

Result<OpParams> prepare_unpack(const PrepareContext& ctx) {
  const auto& opt = std::get<UnpackOptions>(ctx.op().options);
  if (opt.num < 1 || static_cast<size_t>(opt.num) != ctx.op().outputs.size())
    return ctx.error("num is {} but the operator has {} outputs", opt.num, ctx.op().outputs.size());
  AISRV_TRY(ctx.check_counts(1, 1, static_cast<size_t>(opt.num)));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  AISRV_TRY(check_data_type(ctx, in));
  const int rank = in.shape.rank;
  if (opt.axis < -rank || opt.axis >= rank) return ctx.error("axis {} is outside the input's rank {}", opt.axis, rank);
  const int axis = opt.axis < 0 ? opt.axis + rank : opt.axis;
  if (in.shape[axis] != opt.num)
    return ctx.error("input dimension {} is {}, but num is {}", axis, in.shape[axis], opt.num);
  // TFLite refuses to unpack into outputs quantized differently from the input (it does not rescale).
  for (size_t i = 0; i < static_cast<size_t>(opt.num); ++i) {
    const TensorSpec& out = ctx.output(i);
    if (out.quant.scale != in.quant.scale || out.quant.zero_point != in.quant.zero_point)
      return ctx.error("output {} '{}' is quantized differently from the input", i, out.name);
  }
  Shape piece;  // the input without the axis
  for (int d = 0; d < rank; ++d)
    if (d != axis) piece.dims[static_cast<size_t>(piece.rank++)] = in.shape[d];
  SplitParams p = AISRV_TRY(make_params(ctx, 0, in, axis, std::vector<int32_t>(static_cast<size_t>(opt.num), 1),
                                        [&](size_t, int32_t) { return piece; }));
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
