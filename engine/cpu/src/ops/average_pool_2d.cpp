// aisrv CPU engine — AVERAGE_POOL_2D preparation: int8 / uint8 / int16 (input and output share their quantization,
// as TFLite requires, so the kernel averages raw values) and float32 (fused activation as a float clamp, TFLite's
// CalculateActivationRange).
#include <cmath>
#include <limits>

#include "conv_common.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_average_pool_2d(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(1, 1, 1));
  const auto& opt = std::get<Pool2DOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::int16, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));

  AveragePool2DParams p;
  p.dtype = in.type;
  AISRV_TRY(prepare_pool_window(ctx, opt, in, out, p));

  if (in.type == DType::float32) {
    const FloatActivation act = AISRV_TRY(float_activation_range(ctx, opt.activation));
    p.float_act_min = act.min;
    p.float_act_max = act.max;
    p.input = ctx.read_input(0);
    p.output = ctx.write_output();
    return OpParams{std::move(p)};
  }

  // The int32 sum of a window must not overflow: 2^23 cells of 8-bit values, 2^16 - 1 of int16 values.
  const int64_t max_cells = in.type == DType::int16 ? (int64_t{1} << 16) - 1 : int64_t{1} << 23;
  if (int64_t{p.filter_h} * p.filter_w > max_cells)
    return ctx.error("pooling window {}x{} is too large", p.filter_h, p.filter_w);

  const float in_scale = AISRV_TRY(ctx.scale(in, "input"));
  const float out_scale = AISRV_TRY(ctx.scale(out, "output"));
  const int32_t in_zp = AISRV_TRY(ctx.zero_point(in, "input"));
  const int32_t out_zp = AISRV_TRY(ctx.zero_point(out, "output"));
  if (std::abs(static_cast<double>(in_scale - out_scale)) > 1.0e-6 || in_zp != out_zp)
    return ctx.error("input quantization ({:g}, {}) and output quantization ({:g}, {}) differ", in_scale, in_zp,
                     out_scale, out_zp);
  const ActivationRange act = AISRV_TRY(activation_range(opt.activation, out.type, out_scale, out_zp));
  p.act_min = act.min;
  p.act_max = act.max;
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
