// aisrv CPU engine — CONCATENATION preparation: any number of inputs of one element type along one axis; int8 /
// uint8 inputs quantized differently from the output are rescaled, others copied.
#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_concatenation(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(1, 4096, 1));
  const auto& opt = std::get<ConcatenationOptions>(ctx.op().options);
  if (opt.activation != Activation::none) return ctx.error("fused activations are not supported on CONCATENATION");
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(out, {DType::int8, DType::uint8, DType::int16, DType::int32, DType::float32},
                            "output"));
  const int rank = out.shape.rank;
  const int32_t axis = opt.axis < 0 ? opt.axis + rank : opt.axis;
  if (rank < 1 || axis < 0 || axis >= rank) return ctx.error("axis {} is outside the output's rank {}", opt.axis, rank);

  ConcatenationParams p;
  p.dtype = out.type;
  p.element_size = protocol::dtype_size(out.type);
  p.outer_size = 1;
  p.inner_size = 1;
  for (int d = 0; d < axis; ++d) p.outer_size *= out.shape[d];
  for (int d = axis + 1; d < rank; ++d) p.inner_size *= out.shape[d];
  const bool quantized = out.type == DType::int8 || out.type == DType::uint8;
  if (quantized) {
    p.output_scale = AISRV_TRY(ctx.scale(out, "output"));
    p.output_zero_point = AISRV_TRY(ctx.zero_point(out, "output"));
  }
  int64_t axis_total = 0;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const TensorSpec& in = *AISRV_TRY(ctx.input(i, "input"));
    AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
    if (in.shape.rank != rank) return ctx.error("input {} has rank {}, the output {}", i, in.shape.rank, rank);
    for (int d = 0; d < rank; ++d)
      if (d != axis && in.shape[d] != out.shape[d])
        return ctx.error("input {} dimension {} is {}, the output's {}", i, d, in.shape[d], out.shape[d]);
    ConcatenationParams::Input e;
    e.axis_size = in.shape[axis];
    axis_total += e.axis_size;
    if (quantized) {
      e.scale = AISRV_TRY(ctx.scale(in, "input"));
      e.zero_point = AISRV_TRY(ctx.zero_point(in, "input"));
      e.rescale = e.scale != p.output_scale || e.zero_point != p.output_zero_point;
    }
    e.data = ctx.read_input(i);
    p.inputs.push_back(e);
  }
  if (axis_total != out.shape[axis])
    return ctx.error("inputs add up to {} along axis {}, the output has {}", axis_total, axis, out.shape[axis]);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
