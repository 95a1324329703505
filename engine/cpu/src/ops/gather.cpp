// aisrv CPU engine — GATHER preparation: slices of the input along `axis` (negative counts from the end) picked by an
// int32 or int64 index tensor, with `batch_dims` leading dimensions shared by input and indices (negative counts
// from the indices' rank), as TensorFlow Lite and TFLite Micro define it (gather.cc). The output shape is
// input[:axis] + indices[batch_dims:] + input[axis+1:]. Run-time indices are checked by the kernel (an index outside
// the axis fails the inference); constant indices are checked here. Any element type.
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

Result<OpParams> prepare_gather(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(2, 2, 1));
  const auto& opt = std::get<GatherOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& idx = *AISRV_TRY(ctx.input(1, "indices"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in,
                            {DType::int8, DType::uint8, DType::int16, DType::int32, DType::int64, DType::float32,
                             DType::boolean},
                            "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  AISRV_TRY(ctx.expect_type(idx, {DType::int32, DType::int64}, "indices"));

  const int rank = in.shape.rank, idx_rank = idx.shape.rank;
  if (opt.axis < -rank || opt.axis >= rank) return ctx.error("axis {} is outside the input's rank {}", opt.axis, rank);
  const int axis = opt.axis < 0 ? opt.axis + rank : opt.axis;
  if (opt.batch_dims < -idx_rank || opt.batch_dims > idx_rank)
    return ctx.error("batch_dims {} is outside [{}, {}] (the indices' rank)", opt.batch_dims, -idx_rank, idx_rank);
  const int batch_dims = opt.batch_dims < 0 ? opt.batch_dims + idx_rank : opt.batch_dims;
  if (batch_dims > axis) return ctx.error("batch_dims {} is greater than axis {}", batch_dims, axis);
  for (int d = 0; d < batch_dims; ++d)
    if (in.shape[d] != idx.shape[d])
      return ctx.error("batch dimension {} is {} in the input but {} in the indices", d, in.shape[d], idx.shape[d]);

  GatherParams p;
  p.element_size = protocol::dtype_size(in.type);
  p.index_type = idx.type;
  p.axis_size = in.shape[axis];
  p.batch_size = p.outer_size = p.inner_size = p.index_count = 1;
  for (int d = 0; d < batch_dims; ++d) p.batch_size *= in.shape[d];
  for (int d = batch_dims; d < axis; ++d) p.outer_size *= in.shape[d];
  for (int d = axis + 1; d < rank; ++d) p.inner_size *= in.shape[d];
  for (int d = batch_dims; d < idx_rank; ++d) p.index_count *= idx.shape[d];

  const int out_rank = rank + idx_rank - 1 - batch_dims;
  bool shape_ok = out.shape.rank == out_rank;
  for (int d = 0, k = 0; shape_ok && d < rank; ++d) {
    if (d == axis) {
      for (int j = batch_dims; shape_ok && j < idx_rank; ++j) shape_ok = out.shape[k++] == idx.shape[j];
    } else {
      shape_ok = out.shape[k++] == in.shape[d];
    }
  }
  if (!shape_ok)
    return ctx.error("output '{}' has shape {}; gathering input {} with indices {} along axis {} (batch_dims {}) "
                     "gives another",
                     out.name, dims_text(out.shape), dims_text(in.shape), dims_text(idx.shape), axis, batch_dims);

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
      if (v < 0 || v >= p.axis_size)
        return ctx.error("constant index {} (entry {}) is outside [0, {})", v, i, p.axis_size);
    }
  }
  p.input = ctx.read_input(0);
  p.indices = ctx.read_input(1);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
