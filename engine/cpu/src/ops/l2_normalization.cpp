// aisrv CPU engine — L2_NORMALIZATION preparation over the last dimension (rank 1..4, no fused activation, as
// TensorFlow Lite and TFLite Micro require): float32, int8 (TFLite Micro's integer kernel) and uint8 (TFLite's
// reference). The quantized kernels produce values in steps of 1/128, so the output must be quantized (1/128, 0)
// for int8 and (1/128, 128) for uint8 (TensorFlow Lite's checks; TFLite Micro assumes them).
#include <algorithm>

#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_l2_normalization(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(1, 1, 1));
  const auto& opt = std::get<L2NormOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  if (in.shape.rank < 1 || in.shape.rank > 4)
    return ctx.error("input '{}' has rank {}, expected 1 to 4", in.name, in.shape.rank);
  if (!(in.shape == out.shape)) return ctx.error("output shape differs from the input shape");
  if (opt.activation != Activation::none)
    return ctx.error("fused activation {} is not supported (TensorFlow Lite supports none here)",
                     static_cast<int>(opt.activation));

  L2NormParams p;
  p.dtype = in.type;
  p.depth = in.shape[in.shape.rank - 1];
  p.outer_size = in.shape.elements() / p.depth;
  if (in.type != DType::float32) {
    (void)AISRV_TRY(ctx.scale(in, "input"));
    p.input_zero_point = AISRV_TRY(ctx.zero_point(in, "input"));
    const float out_scale = AISRV_TRY(ctx.scale(out, "output"));
    p.output_zero_point = AISRV_TRY(ctx.zero_point(out, "output"));
    const int32_t want_zp = in.type == DType::uint8 ? 128 : 0;
    if (out_scale != 1.0f / 128 || p.output_zero_point != want_zp)
      return ctx.error("output quantization ({:g}, {}) must be (1/128, {})", out_scale, p.output_zero_point, want_zp);
    // The int32 sum of squared differences to the zero point must not overflow.
    const int64_t max_diff =
        std::max<int64_t>(p.input_zero_point - type_min(in.type), type_max(in.type) - p.input_zero_point);
    if (int64_t{p.depth} * max_diff * max_diff > (int64_t{1} << 31) - 1)
      return ctx.error("depth {} is too large for the 32-bit sum of squares", p.depth);
  }
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
