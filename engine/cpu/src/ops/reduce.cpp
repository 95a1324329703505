// aisrv CPU engine — SUM and REDUCE_MAX preparation over a constant int32 set of axes (negative axes count from the
// end, repeats are ignored), with or without keep_dims:
//   - SUM float32 / int32: plain sums; int8 / int16: TensorFlow Lite Micro's QuantizedMeanOrSum (int32 sums, the
//     zero point removed once per reduced element, then requantized by input_scale / output_scale); uint8 (not in
//     TFLite Micro): TensorFlow Lite's float rescaling, which it runs only when the quantizations differ — with equal
//     quantization TFLite sums in 8 bits (wrapping), which we refuse.
//   - REDUCE_MAX float32 / int32, and int8 / uint8 / int16 with the input's quantization on the output (checked
//     exactly, as TFLite does).
// Preparation bounds the reduced element count so that no int32 sum (or float-to-int conversion) can overflow.
#include <algorithm>
#include <cmath>

#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_reduce(const PrepareContext& ctx) {
  const bool is_sum = ctx.op().code == static_cast<int32_t>(BuiltinOp::sum);
  AISRV_TRY(ctx.check_counts(2, 2, 1));
  const auto& opt = std::get<ReducerOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& axes_t = *AISRV_TRY(ctx.input(1, "axes"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::int16, DType::int32, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  if (in.shape.rank < 1) return ctx.error("input '{}' is a scalar", in.name);
  if (axes_t.shape.rank > 1) return ctx.error("axes '{}' has rank {}, expected 0 or 1", axes_t.name, axes_t.shape.rank);
  const std::vector<int32_t> axes = AISRV_TRY(ctx.int32_values(axes_t, "axes"));

  ReduceParams p;
  p.op = is_sum ? ReduceOp::sum : ReduceOp::max;
  p.dtype = in.type;
  p.input_shape = in.shape;
  for (int32_t a : axes) {
    const int32_t r = a < 0 ? a + in.shape.rank : a;
    if (r < 0 || r >= in.shape.rank) return ctx.error("axis {} is outside the input's rank {}", a, in.shape.rank);
    p.reduced[static_cast<size_t>(r)] = true;
  }
  p.output_elements = 1;
  p.reduced_elements = 1;
  Shape expected;
  for (int d = 0; d < in.shape.rank; ++d) {
    const bool reduced = p.reduced[static_cast<size_t>(d)];
    (reduced ? p.reduced_elements : p.output_elements) *= in.shape[d];
    if (!reduced || opt.keep_dims) expected.dims[static_cast<size_t>(expected.rank++)] = reduced ? 1 : in.shape[d];
  }
  if (!(out.shape == expected)) {
    std::string want;
    for (int d = 0; d < expected.rank; ++d) want += (d ? "x" : "") + std::to_string(expected[d]);
    return ctx.error("output shape does not match reducing the input with keep_dims={} (expected [{}])",
                     opt.keep_dims, want);
  }

  if (in.type == DType::int8 || in.type == DType::uint8 || in.type == DType::int16) {
    p.input_scale = AISRV_TRY(ctx.scale(in, "input"));
    p.output_scale = AISRV_TRY(ctx.scale(out, "output"));
    p.input_zero_point = AISRV_TRY(ctx.zero_point(in, "input"));
    p.output_zero_point = AISRV_TRY(ctx.zero_point(out, "output"));
    const bool same_quantization = p.input_scale == p.output_scale && p.input_zero_point == p.output_zero_point;
    if (!is_sum) {
      if (!same_quantization)
        return ctx.error("input quantization ({:g}, {}) and output quantization ({:g}, {}) differ", p.input_scale,
                         p.input_zero_point, p.output_scale, p.output_zero_point);
    } else if (in.type == DType::uint8) {
      if (same_quantization)
        return ctx.error("SUM of uint8 with the input's quantization on the output: TensorFlow Lite sums such "
                         "tensors in 8 bits, wrapping around; not supported");
      // TFLite rounds sum * scale + bias in float and converts it to int32: keep that far from int32's limits.
      const double scale = static_cast<double>(p.input_scale) / static_cast<double>(p.output_scale);
      if (p.reduced_elements > (int64_t{1} << 23) || scale * 255.0 * static_cast<double>(p.reduced_elements) > 1.0e9)
        return ctx.error("SUM of {} elements with scale ratio {:g} leaves the integer range", p.reduced_elements,
                         scale);
    } else {
      // int32 sum of (q - zero point) over the reduced elements: at most 2^16 (int8) / 2^17 (int16) per element.
      const int64_t per_element = int64_t{type_max(in.type)} - type_min(in.type) + 1;
      if (p.reduced_elements * per_element > (int64_t{1} << 31) - 1)
        return ctx.error("SUM over {} elements would overflow the 32-bit sum", p.reduced_elements);
      const QuantizedMultiplier q = AISRV_TRY(checked_multiplier(
          static_cast<double>(p.input_scale) / static_cast<double>(p.output_scale), ctx.where()));
      p.multiplier = q.multiplier;
      p.shift = q.shift;
    }
  }
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
