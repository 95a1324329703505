// aisrv CPU engine — MAX_POOL_2D (int8, uint8, int16, float32) and L2_POOL_2D (float32) preparation. Window
// arithmetic and padding as TensorFlow Lite's ComputePaddingHeightWidth; MAX_POOL_2D compares raw quantized values,
// so input and output must share their quantization (TFLite Micro's check: scales within 1e-6, equal zero points).
#include <cmath>
#include <limits>

#include "conv_common.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

namespace {

// TFLite's CalculateActivationRange<float>. TANH and SIGN_BIT have no clamp form; TFLite silently ignores them, we
// refuse them rather than run a model whose activation we skip.
Result<void> float_activation(const PrepareContext& ctx, Activation act, float& lo, float& hi) {
  lo = std::numeric_limits<float>::lowest();
  hi = std::numeric_limits<float>::max();
  switch (act) {
    case Activation::none: return {};
    case Activation::relu: lo = 0.0f; return {};
    case Activation::relu6: lo = 0.0f; hi = 6.0f; return {};
    case Activation::relu_n1_to_1: lo = -1.0f; hi = 1.0f; return {};
    default: return ctx.error("fused activation {} is not supported", static_cast<int>(act));
  }
}

}  // namespace

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
  p.input_shape = AISRV_TRY(ctx.dims4(in, "input"));
  p.output_shape = AISRV_TRY(ctx.dims4(out, "output"));
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  if (os.n != is.n || os.c != is.c)
    return ctx.error("output {}x..x{} does not match input batch {} / channels {}", os.n, os.c, is.n, is.c);
  p.filter_h = opt.filter_h;
  p.filter_w = opt.filter_w;
  p.stride_h = opt.stride_h;
  p.stride_w = opt.stride_w;
  const int32_t oh = AISRV_TRY(window_output_size(ctx, opt.padding, is.h, p.filter_h, p.stride_h, 1, "height"));
  const int32_t ow = AISRV_TRY(window_output_size(ctx, opt.padding, is.w, p.filter_w, p.stride_w, 1, "width"));
  if (oh != os.h || ow != os.w)
    return ctx.error("output is {}x{} but the window arithmetic gives {}x{}", os.h, os.w, oh, ow);
  const AxisPadding ph = window_padding(is.h, p.filter_h, oh, p.stride_h, 1);
  const AxisPadding pw = window_padding(is.w, p.filter_w, ow, p.stride_w, 1);
  p.padding = Padding2D{ph.before, pw.before, ph.after, pw.after};
  // The kernels form out_index * stride - padding in int32 (below the input extent for TFLite's window arithmetic).
  if (int64_t{os.h - 1} * p.stride_h > std::numeric_limits<int32_t>::max() ||
      int64_t{os.w - 1} * p.stride_w > std::numeric_limits<int32_t>::max())
    return ctx.error("strides {}x{} are too large", p.stride_h, p.stride_w);

  if (in.type == DType::float32) {
    AISRV_TRY(float_activation(ctx, opt.activation, p.float_act_min, p.float_act_max));
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
