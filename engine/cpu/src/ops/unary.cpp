// aisrv CPU engine — preparation of the unary element-wise operators: LOGISTIC, TANH, HARD_SWISH, RELU, RELU6,
// RELU_N1_TO_1, LEAKY_RELU, FLOOR, SQRT, RSQRT, EXP. float32 everywhere the reference has it; int8 / int16 with the
// parameters TensorFlow Lite Micro's Prepare functions compute; uint8 as TensorFlow Lite's reference kernels do
// (LOGISTIC / TANH through a 256-entry table built with float math). Which UnaryParams fields each operator uses is
// stated at the function that fills them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

namespace {

// An error of a shared helper (quant_math.hpp) with this operator's "operator N (NAME): " prefix.
template <typename T>
Result<T> in_context(const PrepareContext& ctx, Result<T> r) {
  if (!r.ok()) return Error{r.error().code, ctx.where() + ": " + r.error().message};
  return r;
}

struct Quant {
  float scale = 0.0f;
  int32_t zero_point = 0;
};

Result<Quant> quant_of(const PrepareContext& ctx, const TensorSpec& t, std::string_view what) {
  Quant q;
  q.scale = AISRV_TRY(ctx.scale(t, what));
  q.zero_point = AISRV_TRY(ctx.zero_point(t, what));
  return q;
}

// TFLite's CheckedLog2: log2 of a float rounded to the nearest integer (in float, through std::log as TFLite
// computes it), and whether the value is a power of two within 1e-3 of an octave.
bool checked_log2(float x, int* log2_rounded) {
  const float x_log2 = std::log(x) * (1.0f / std::log(2.0f));
  const float rounded = std::round(x_log2);
  *log2_rounded = static_cast<int>(rounded);
  return std::abs(x_log2 - rounded) < 1e-3f;
}

// float -> int32 as x86's cvttss2si does (what static_cast compiles to in TFLite's table generator): truncation,
// and the "integer indefinite" INT32_MIN for NaN and values out of range.
int32_t float_to_int32_truncating(float v) {
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(v);
}

// TFLite's LUTPopulate for uint8: every input byte dequantized in float, transformed, requantized with a float
// reciprocal of the output scale, rounded half away from zero, clamped to [0, 255].
template <typename Fn>
void fill_uint8_table(UnaryParams& p, Quant in, Quant out, Fn transform) {
  const float inverse_scale = 1 / out.scale;
  for (int32_t v = 0; v <= 255; ++v) {
    const float dequantized = in.scale * static_cast<float>(v - in.zero_point);
    const float transformed = transform(dequantized);
    const float rescaled = std::round(transformed * inverse_scale);
    const int32_t quantized = float_to_int32_truncating(rescaled + static_cast<float>(out.zero_point));
    p.table[static_cast<size_t>(v)] = static_cast<uint8_t>(std::clamp(quantized, 0, 255));
  }
  p.use_table = true;
}

// LOGISTIC / TANH, int8 (TFLite Micro CalculateArithmeticOpDataLogistic / tanh CalculateArithmeticOpData): the
// input is brought to Q4.27 by input_multiplier * 2^(input_shift - 31), a frexp decomposition of scale * 2^27 taken
// without QuantizeMultiplier's renormalisation; inputs whose distance to the zero point reaches input_range_radius
// saturate. Fields: input_zero_point, input_multiplier, input_shift, input_range_radius.
Result<void> prepare_int8_sigmoid_like(const PrepareContext& ctx, UnaryParams& p, Quant in) {
  constexpr int kInputIntegerBits = 4;
  const double real = static_cast<double>(in.scale) * static_cast<double>(1 << (31 - kInputIntegerBits));
  int shift = 0;
  const double mantissa = std::frexp(real, &shift);
  // The input scale is a float, so the mantissa has 24 bits and never rounds up to 2^31 here.
  p.input_multiplier = static_cast<int32_t>(std::round(mantissa * static_cast<double>(int64_t{1} << 31)));
  if (shift < 0)
    return ctx.error("input scale {:g} is too small for the int8 fixed-point kernel (below 2^-28)", in.scale);
  // TFLite's CalculateInputRadius: floor((2^4 - 1) * 2^27 / 2^shift) in double.
  const double radius = std::floor(15.0 * std::ldexp(1.0, 27) / std::ldexp(1.0, shift));
  p.input_range_radius = static_cast<int32_t>(radius);
  // A radius of 0 saturates every input, so the multiplier is never used; keep its shift in the kernels' range.
  p.input_shift = std::min(shift, 30);
  p.input_zero_point = in.zero_point;
  return {};
}

// LOGISTIC / TANH, int16 (TFLite Micro): zero points 0, output scale 2^-15; a power-of-two input scale of 2^-12
// (TANH also 2^-11) uses the table directly (input_multiplier 0, input_shift the left shift), any other scale is
// brought to the table's 1/(3 * 4096) by an integer multiplier below 2^15 and a right shift. Fields:
// input_multiplier, input_shift.
Result<void> prepare_int16_sigmoid_like(const PrepareContext& ctx, UnaryParams& p, Quant in, Quant out,
                                        bool is_tanh) {
  if (in.zero_point != 0 || out.zero_point != 0)
    return ctx.error("int16 input and output must have zero point 0 (have {} and {})", in.zero_point,
                     out.zero_point);
  int in_log2 = 0;
  bool pot = checked_log2(in.scale, &in_log2);
  int left_shift = (15 - 3) + in_log2;
  pot = pot && (left_shift == 0 || (is_tanh && left_shift == 1));
  int32_t multiplier = 0;
  if (!pot) {
    double m = static_cast<double>(in.scale) * 4096.0 * 3.0;
    left_shift = 0;
    while (m <= 32767.0 / 2.0 && left_shift <= 30) {
      ++left_shift;
      m = m * 2.0;
    }
    if (!(m <= 32767.0))
      return ctx.error("int16 input scale {:g} is too large for the table kernel", in.scale);
    multiplier = static_cast<int32_t>(m);
    if (multiplier == 0) return ctx.error("int16 input scale {:g} is too small for the table kernel", in.scale);
  }
  int out_log2 = 0;
  if (!checked_log2(out.scale, &out_log2) || out_log2 != -15)
    return ctx.error("int16 output scale {:g} must be 2^-15", out.scale);
  p.input_multiplier = multiplier;
  p.input_shift = left_shift;
  return {};
}

// RELU, RELU6, RELU_N1_TO_1, quantized (TFLite Micro CalculateReluOpData, TFLite QuantizedReluX): requantize by
// input scale / output scale (a float quotient), then clamp to the quantized activation bounds. TFLite Micro's RELU6
// instead clamps the raw input to its own quantized 0 and 6 and ignores the output quantization; both give the same
// bytes when input and output share their quantization (the only case that kernel computes correctly), and
// TensorFlow Lite's requantizing form is kept for the others. Fields: input_zero_point, output_zero_point,
// output_multiplier, output_shift, act_min, act_max.
Result<void> prepare_quantized_relu(const PrepareContext& ctx, UnaryParams& p, DType type, Quant in, Quant out,
                                    Activation bounds) {
  const QuantizedMultiplier m =
      AISRV_TRY(in_context(ctx, checked_multiplier(static_cast<double>(in.scale / out.scale), "input/output scale")));
  p.output_multiplier = m.multiplier;
  p.output_shift = m.shift;
  const ActivationRange r = AISRV_TRY(in_context(ctx, activation_range(bounds, type, out.scale, out.zero_point)));
  p.act_min = r.min;
  p.act_max = r.max;
  p.input_zero_point = in.zero_point;
  p.output_zero_point = out.zero_point;
  return {};
}

// HARD_SWISH, 8-bit (TFLite Micro / TFLite HardSwishPrepare): the input on a "hires" scale input_scale / 128, an
// output multiplier (exponent <= 0) and a "reluish" multiplier mapping [-3, 3] to the int16 range, both reduced to
// Q0.15 by DownScaleInt32ToInt16Multiplier. Fields: input_zero_point, output_zero_point, output_multiplier_q15,
// output_exponent, reluish_multiplier_q15, reluish_exponent.
Result<void> prepare_quantized_hard_swish(const PrepareContext& ctx, UnaryParams& p, Quant in, Quant out) {
  const float hires_input_scale = (1.0f / 128.0f) * in.scale;
  const float reluish_scale = 3.0f / 32768.0f;
  const double output_real = static_cast<double>(hires_input_scale / out.scale);
  const double reluish_real = static_cast<double>(hires_input_scale / reluish_scale);
  if (!std::isfinite(output_real) || !std::isfinite(reluish_real))
    return ctx.error("input/output scales {:g}, {:g} give a multiplier that is not finite", in.scale, out.scale);
  auto to_q15 = [](int32_t m) -> int16_t {
    constexpr int32_t kRounding = 1 << 15;
    if (m >= std::numeric_limits<int32_t>::max() - kRounding) return std::numeric_limits<int16_t>::max();
    return static_cast<int16_t>((m + kRounding) >> 16);
  };
  const QuantizedMultiplier om = quantize_multiplier(output_real);
  if (om.shift > 0)
    return ctx.error("output scale {:g} is too small for the input scale {:g} (hires multiplier above 1)",
                     out.scale, in.scale);
  const QuantizedMultiplier rm = quantize_multiplier(reluish_real);
  if (rm.shift > 30) return ctx.error("input scale {:g} is too large for HARD_SWISH", in.scale);
  p.output_multiplier_q15 = to_q15(om.multiplier);
  p.output_exponent = om.shift;
  p.reluish_multiplier_q15 = to_q15(rm.multiplier);
  p.reluish_exponent = rm.shift;
  p.input_zero_point = in.zero_point;
  p.output_zero_point = out.zero_point;
  return {};
}

// LEAKY_RELU, quantized (TFLite Micro CalculateOpDataLeakyRelu): identity multiplier input / output scale and alpha
// multiplier input scale * alpha / output scale, both float expressions; alpha may be negative (the kernel applies
// the sign after the multiply). Fields: input_zero_point, output_zero_point, output_multiplier / output_shift
// (identity), output_multiplier_2 / output_shift_2 (alpha).
Result<void> prepare_quantized_leaky_relu(const PrepareContext& ctx, UnaryParams& p, Quant in, Quant out,
                                          float alpha) {
  const double alpha_real = static_cast<double>(in.scale * alpha / out.scale);
  const double identity_real = static_cast<double>(in.scale / out.scale);
  if (!std::isfinite(alpha_real)) return ctx.error("alpha {} gives a multiplier that is not finite", alpha);
  const QuantizedMultiplier identity =
      AISRV_TRY(in_context(ctx, checked_multiplier(identity_real, "input/output scale")));
  const QuantizedMultiplier am = quantize_multiplier(alpha_real);
  if (am.shift > 30) return ctx.error("alpha {} is too large for the input/output scales", alpha);
  if (am.multiplier == std::numeric_limits<int32_t>::min())
    return ctx.error("alpha {} rounds to a multiplier of -2^31, which the kernel cannot negate", alpha);
  p.output_multiplier = identity.multiplier;
  p.output_shift = identity.shift;
  p.output_multiplier_2 = am.multiplier;
  p.output_shift_2 = am.shift;
  p.input_zero_point = in.zero_point;
  p.output_zero_point = out.zero_point;
  return {};
}

// RSQRT, int8 (TFLite Micro PrepareAbsRsqrt / SetRsqrtOutputMultiplier): multiplier 1 / (sqrt(input scale) * output
// scale). TFLite Micro fails the inference on an input below the zero point; the unary kernels cannot fail, so only
// a zero point of -128 (no such input possible) is accepted. Fields: input_zero_point, output_zero_point,
// output_multiplier, output_shift.
Result<void> prepare_int8_rsqrt(const PrepareContext& ctx, UnaryParams& p, Quant in, Quant out) {
  if (in.zero_point != -128)
    return ctx.error("int8 input zero point {} is not supported: TFLite Micro fails on inputs below the zero point "
                     "at run time; only zero point -128 (all inputs valid) is accepted",
                     in.zero_point);
  const double real = 1. / static_cast<double>(std::sqrt(in.scale) * out.scale);
  const QuantizedMultiplier m = AISRV_TRY(in_context(ctx, checked_multiplier(real, "rsqrt output multiplier")));
  // The kernel shifts by output_shift - 20 (TFLite's kShift keeping the inverse square root integral).
  if (m.shift - 20 < -31) return ctx.error("output scale {:g} is too large for the int8 kernel", out.scale);
  p.output_multiplier = m.multiplier;
  p.output_shift = m.shift;
  p.input_zero_point = in.zero_point;
  p.output_zero_point = out.zero_point;
  return {};
}

Result<UnaryOp> unary_op_of(const PrepareContext& ctx) {
  switch (static_cast<BuiltinOp>(ctx.op().code)) {
    case BuiltinOp::logistic: return UnaryOp::logistic;
    case BuiltinOp::tanh: return UnaryOp::tanh;
    case BuiltinOp::hard_swish: return UnaryOp::hard_swish;
    case BuiltinOp::relu: return UnaryOp::relu;
    case BuiltinOp::relu6: return UnaryOp::relu6;
    case BuiltinOp::relu_n1_to_1: return UnaryOp::relu_n1_to_1;
    case BuiltinOp::leaky_relu: return UnaryOp::leaky_relu;
    case BuiltinOp::floor: return UnaryOp::floor;
    case BuiltinOp::sqrt: return UnaryOp::sqrt;
    case BuiltinOp::rsqrt: return UnaryOp::rsqrt;
    case BuiltinOp::exp: return UnaryOp::exp;
    default: return ctx.error("is not a unary element-wise operator");
  }
}

// The element types each operator supports (TFLite Micro's, plus uint8 where TensorFlow Lite has it).
Result<void> check_input_type(const PrepareContext& ctx, UnaryOp op, const TensorSpec& in) {
  using D = DType;
  switch (op) {
    case UnaryOp::logistic:
    case UnaryOp::tanh:
    case UnaryOp::relu:
    case UnaryOp::relu6:
    case UnaryOp::leaky_relu: return ctx.expect_type(in, {D::float32, D::int8, D::uint8, D::int16}, "input");
    case UnaryOp::hard_swish:
    case UnaryOp::relu_n1_to_1: return ctx.expect_type(in, {D::float32, D::int8, D::uint8}, "input");
    case UnaryOp::rsqrt: return ctx.expect_type(in, {D::float32, D::int8}, "input");
    case UnaryOp::floor:
    case UnaryOp::sqrt:
    case UnaryOp::exp: return ctx.expect_type(in, {D::float32}, "input");
  }
  return ctx.error("unknown unary operator");
}

}  // namespace

Result<OpParams> prepare_unary(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(1, 1, 1));
  const UnaryOp op = AISRV_TRY(unary_op_of(ctx));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(check_input_type(ctx, op, in));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  if (!(in.shape == out.shape)) return ctx.error("output '{}' does not have the input's shape", out.name);

  UnaryParams p;
  p.op = op;
  p.dtype = in.type;
  p.elements = in.shape.elements();
  if (op == UnaryOp::leaky_relu) {
    const auto* opt = std::get_if<LeakyReluOptions>(&ctx.op().options);
    p.alpha = opt ? opt->alpha : 0.0f;
  }

  if (in.type != DType::float32) {
    const Quant qi = AISRV_TRY(quant_of(ctx, in, "input"));
    const Quant qo = AISRV_TRY(quant_of(ctx, out, "output"));
    switch (op) {
      case UnaryOp::logistic:
      case UnaryOp::tanh: {
        const bool is_tanh = op == UnaryOp::tanh;
        if (in.type == DType::int16) {
          AISRV_TRY(prepare_int16_sigmoid_like(ctx, p, qi, qo, is_tanh));
        } else if (in.type == DType::int8) {
          // TFLite Micro's int8 kernels write a fixed output quantization: (1/256, -128) for LOGISTIC and (1/128, 0)
          // for TANH.
          const float want_scale = is_tanh ? 1.0f / 128 : 1.0f / 256;
          const int32_t want_zp = is_tanh ? 0 : -128;
          if (qo.scale != want_scale || qo.zero_point != want_zp)
            return ctx.error("int8 output quantization ({:g}, {}) must be ({:g}, {})", qo.scale, qo.zero_point,
                             want_scale, want_zp);
          AISRV_TRY(prepare_int8_sigmoid_like(ctx, p, qi));
        } else if (is_tanh) {
          fill_uint8_table(p, qi, qo, [](float v) { return std::tanh(v); });
        } else {
          if (qo.scale != 1.0f / 256) return ctx.error("uint8 output scale {:g} must be 1/256", qo.scale);
          fill_uint8_table(p, qi, qo, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
        }
        break;
      }
      case UnaryOp::hard_swish: AISRV_TRY(prepare_quantized_hard_swish(ctx, p, qi, qo)); break;
      case UnaryOp::relu:
        if (in.type == DType::int16 && (qi.zero_point != 0 || qo.zero_point != 0))
          return ctx.error("int16 input and output must have zero point 0 (have {} and {})", qi.zero_point,
                           qo.zero_point);
        AISRV_TRY(prepare_quantized_relu(ctx, p, in.type, qi, qo, Activation::relu));
        break;
      case UnaryOp::relu6: AISRV_TRY(prepare_quantized_relu(ctx, p, in.type, qi, qo, Activation::relu6)); break;
      case UnaryOp::relu_n1_to_1:
        AISRV_TRY(prepare_quantized_relu(ctx, p, in.type, qi, qo, Activation::relu_n1_to_1));
        break;
      case UnaryOp::leaky_relu: AISRV_TRY(prepare_quantized_leaky_relu(ctx, p, qi, qo, p.alpha)); break;
      case UnaryOp::rsqrt: AISRV_TRY(prepare_int8_rsqrt(ctx, p, qi, qo)); break;
      default: return ctx.error("has no quantized form");
    }
  }
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
