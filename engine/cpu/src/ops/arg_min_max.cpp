// aisrv CPU engine — ARG_MAX / ARG_MIN preparation: input int8, uint8, int16, int32 or float32 of rank >= 1; the
// axis a constant int32 or int64 scalar (or 1-element tensor), negative counting from the end; the output int32 or
// int64 as the options' output_type says, shaped as the input without the axis (TensorFlow Lite's shape rule).
#include <cstring>

#include "prepare.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_arg_min_max(const PrepareContext& ctx) {
  const bool is_max = ctx.op().code == static_cast<int32_t>(BuiltinOp::arg_max);
  AISRV_TRY(ctx.check_counts(2, 2, 1));
  DType option_type = DType::unknown;
  if (const auto* o = std::get_if<ArgMaxOptions>(&ctx.op().options)) option_type = o->output_type;
  else if (const auto* o2 = std::get_if<ArgMinOptions>(&ctx.op().options)) option_type = o2->output_type;
  else return ctx.error("has no {} options", is_max ? "ArgMax" : "ArgMin");

  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& axis_t = *AISRV_TRY(ctx.input(1, "axis"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::int16, DType::int32, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_type(out, {DType::int32, DType::int64}, "output"));
  if (option_type != out.type)
    return ctx.error("output '{}' is {} but the options ask for {}", out.name, protocol::dtype_name(out.type),
                     protocol::dtype_name(option_type));
  if (in.shape.rank < 1) return ctx.error("input '{}' is a scalar", in.name);

  AISRV_TRY(ctx.expect_type(axis_t, {DType::int32, DType::int64}, "axis"));
  AISRV_TRY(ctx.expect_constant(axis_t, "axis"));
  if (axis_t.shape.elements() != 1)
    return ctx.error("axis '{}' has {} values, expected 1", axis_t.name, axis_t.shape.elements());
  int64_t axis = 0;
  if (axis_t.type == DType::int32) {
    int32_t v = 0;
    std::memcpy(&v, axis_t.data, sizeof v);
    axis = v;
  } else {
    std::memcpy(&axis, axis_t.data, sizeof axis);
  }
  const int rank = in.shape.rank;
  const int64_t resolved = axis < 0 ? axis + rank : axis;
  if (resolved < 0 || resolved >= rank) return ctx.error("axis {} is outside the input's rank {}", axis, rank);
  const int a = static_cast<int>(resolved);

  Shape expected;
  for (int d = 0; d < rank; ++d)
    if (d != a) expected.dims[static_cast<size_t>(expected.rank++)] = in.shape[d];
  if (!(out.shape == expected))
    return ctx.error("output '{}' must have the input's shape without dimension {}", out.name, a);

  ArgMinMaxParams p;
  p.is_max = is_max;
  p.input_type = in.type;
  p.output_type = out.type;
  p.outer_size = 1;
  p.inner_size = 1;
  for (int d = 0; d < a; ++d) p.outer_size *= in.shape[d];
  for (int d = a + 1; d < rank; ++d) p.inner_size *= in.shape[d];
  p.axis_size = in.shape[a];
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
