// aisrv CPU engine — MAX_POOL_2D (int8, uint8, int16, float32) and L2_POOL_2D (float32) preparation. Window
// arithmetic and padding as TensorFlow Lite's ComputePaddingHeightWidth; MAX_POOL_2D compares raw quantized values,
// so input and output must share their quantization (TFLite Micro's check: scales within 1e-6, equal zero points).
#include <cmath>
#include <limits>

#include "conv_common.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_pool_2d(const PrepareContext& ctx) {
  const bool is_l2 = ctx.op().code == static_cast<int32_t>(BuiltinOp::l2_pool_2d);
  AISRV_TRY(ctx.check_counts(1, 1, 1));
  const auto& opt = std::get<Pool2DOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  if (is_l2) AISRV_TRY(ctx.expect_type(in, {DType::float32}, "input"));
  else AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::int16, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));

  Pool2DParams p;
  p.kind = is_l2 ? PoolKind::l2 : PoolKind::max;
  p.dtype = in.type;
  AISRV_TRY(prepare_pool_window(ctx, opt, in, out, p));

  if (in.type == DType::float32) {
    const FloatActivation act = AISRV_TRY(float_activation_range(ctx, opt.activation));
    p.float_act_min = act.min;
    p.float_act_max = act.max;
  } else {
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
  }
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
