// aisrv CPU engine — MEAN preparation: int8 / uint8 (TFLite Micro's integer mean: int32 sums, the 1/count factor
// folded into the requantization multiplier) and float32, over any set of axes, with or without keep_dims.
#include <algorithm>
#include <bit>

#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_mean(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(2, 2, 1));
  const auto& opt = std::get<ReducerOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& axes_t = *AISRV_TRY(ctx.input(1, "axes"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  if (in.shape.rank < 1) return ctx.error("input '{}' is a scalar", in.name);
  const std::vector<int32_t> axes = AISRV_TRY(ctx.int32_values(axes_t, "axes"));

  MeanParams p;
  p.dtype = in.type;
  p.input_shape = in.shape;
  for (int32_t a : axes) {
    const int32_t r = a < 0 ? a + in.shape.rank : a;
    if (r < 0 || r >= in.shape.rank) return ctx.error("axis {} is outside the input's rank {}", a, in.shape.rank);
    p.reduced[static_cast<size_t>(r)] = true;
  }
  p.output_elements = 1;
  p.reduced_elements = 1;
  for (int d = 0; d < in.shape.rank; ++d)
    (p.reduced[static_cast<size_t>(d)] ? p.reduced_elements : p.output_elements) *= in.shape[d];
  if (out.shape.elements() != p.output_elements)
    return ctx.error("output has {} elements; reducing the input gives {}", out.shape.elements(), p.output_elements);
  const int expected_rank = opt.keep_dims ? in.shape.rank : in.shape.rank - static_cast<int>(std::count(
                                                              p.reduced.begin(), p.reduced.end(), true));
  if (out.shape.rank != expected_rank)
    return ctx.error("output rank {} does not match keep_dims={} (expected {})", out.shape.rank, opt.keep_dims,
                     expected_rank);

  if (in.type != DType::float32) {
    if (p.reduced_elements > (int64_t{1} << 23))
      return ctx.error("mean over {} elements would overflow the 32-bit sum", p.reduced_elements);
    const float in_scale = AISRV_TRY(ctx.scale(in, "input"));
    const float out_scale = AISRV_TRY(ctx.scale(out, "output"));
    p.input_zero_point = AISRV_TRY(ctx.zero_point(in, "input"));
    p.output_zero_point = AISRV_TRY(ctx.zero_point(out, "output"));
    const QuantizedMultiplier q = AISRV_TRY(checked_multiplier(
        static_cast<double>(in_scale) / static_cast<double>(out_scale), ctx.where()));
    // Fold 1/count into the multiplier as TFLite Micro does at run time: shift by floor(log2(count)) (at most 32,
    // and never below the -31 the kernels accept), then divide.
    int shift = 63 - std::countl_zero(static_cast<uint64_t>(p.reduced_elements));
    shift = std::min(shift, 32);
    shift = std::min(shift, 31 + q.shift);
    shift = std::max(shift, 0);
    p.multiplier = static_cast<int32_t>((static_cast<int64_t>(q.multiplier) << shift) / p.reduced_elements);
    p.shift = q.shift - shift;
  }
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
