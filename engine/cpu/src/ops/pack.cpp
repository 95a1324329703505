// aisrv CPU engine — PACK preparation: values_count inputs of one shape stacked along a new axis of the output. It
// is a concatenation of pieces of size 1 along that axis, so it runs as CONCATENATION (ConcatenationParams, every
// piece copied, never rescaled). Its checks are TensorFlow Lite's (tensorflow/lite/kernels/pack.cc): identical input
// shapes and types, inputs quantized exactly as the output; any element type (bytes are moved).
#include <span>

#include <fmt/ranges.h>

#include "prepare.hpp"

namespace aisrv::engine::cpu {

namespace {

std::string dims_text(const Shape& s) {
  return fmt::format("[{}]", fmt::join(std::span(s.dims.data(), static_cast<size_t>(s.rank)), ","));
}

}  // namespace

Result<OpParams> prepare_pack(const PrepareContext& ctx) {
  const auto& opt = std::get<PackOptions>(ctx.op().options);
  if (opt.values_count < 1 || static_cast<size_t>(opt.values_count) != ctx.input_count())
    return ctx.error("values_count is {} but the operator has {} inputs", opt.values_count, ctx.input_count());
  AISRV_TRY(ctx.check_counts(ctx.input_count(), ctx.input_count(), 1));
  const TensorSpec& first = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(first,
                            {DType::int8, DType::uint8, DType::int16, DType::int32, DType::int64, DType::float32,
                             DType::boolean},
                            "input"));
  AISRV_TRY(ctx.expect_same_type(first, out, "input and output"));
  const int out_rank = first.shape.rank + 1;
  if (out_rank > kMaxRank) return ctx.error("inputs of rank {} stack into more than {} dimensions", out_rank - 1,
                                            kMaxRank);
  if (opt.axis < -out_rank || opt.axis >= out_rank)
    return ctx.error("axis {} is outside the output's rank {}", opt.axis, out_rank);
  const int axis = opt.axis < 0 ? opt.axis + out_rank : opt.axis;

  Shape expected;  // the input shape with values_count inserted at the axis
  expected.rank = out_rank;
  for (int d = 0, k = 0; d < out_rank; ++d)
    expected.dims[static_cast<size_t>(d)] = d == axis ? opt.values_count : first.shape[k++];
  if (!(out.shape == expected))
    return ctx.error("output '{}' has shape {}; stacking {} inputs of shape {} along axis {} gives {}", out.name,
                     dims_text(out.shape), opt.values_count, dims_text(first.shape), axis, dims_text(expected));

  ConcatenationParams p;
  p.dtype = out.type;
  p.element_size = protocol::dtype_size(out.type);
  p.outer_size = 1;
  p.inner_size = 1;
  for (int d = 0; d < axis; ++d) p.outer_size *= out.shape[d];
  for (int d = axis + 1; d < out_rank; ++d) p.inner_size *= out.shape[d];
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const TensorSpec& in = *AISRV_TRY(ctx.input(i, "input"));
    AISRV_TRY(ctx.expect_same_type(first, in, "inputs"));
    if (!(in.shape == first.shape))
      return ctx.error("input {} '{}' has shape {}, input 0 {}", i, in.name, dims_text(in.shape),
                       dims_text(first.shape));
    // TFLite does not rescale: every input must be quantized as the output.
    if (in.quant.scale != out.quant.scale || in.quant.zero_point != out.quant.zero_point)
      return ctx.error("input {} '{}' is quantized differently from the output", i, in.name);
    ConcatenationParams::Input e;
    e.data = ctx.read_input(i);
    e.axis_size = 1;
    e.rescale = false;
    p.inputs.push_back(e);
  }
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
