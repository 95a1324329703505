// aisrv CPU engine — preparation of the binary element-wise operators with numpy-style broadcasting (up to 6-D):
// SUB, MUL, DIV, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, FLOOR_DIV, PRELU, and the float32 / int32 / int16 ADD that
// ops/add.cpp hands over. Quantized parameters are computed as TensorFlow Lite Micro's Prepare functions do for
// int8 / int16 (including where they compute in float rather than double), and as TensorFlow Lite's reference
// kernels do for uint8. Which BinaryParams fields each operator uses is stated at the function that fills them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

namespace {

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

Shape extend(const Shape& s) {
  Shape r;
  r.rank = kMaxRank;
  r.dims.fill(1);
  for (int i = 0; i < s.rank; ++i) r.dims[static_cast<size_t>(kMaxRank - s.rank + i)] = s[i];
  return r;
}

// Numpy broadcasting: the output has the larger rank and, per (right-aligned) dimension, the inputs' common size,
// where a size of 1 stretches to the other input's. Anything else is refused.
Result<void> set_broadcast_shapes(const PrepareContext& ctx, const TensorSpec& a, const TensorSpec& b,
                                  const TensorSpec& out, BinaryParams& p) {
  const int rank = std::max(a.shape.rank, b.shape.rank);
  if (out.shape.rank != rank)
    return ctx.error("output '{}' has rank {}, but the inputs broadcast to rank {}", out.name, out.shape.rank, rank);
  p.input1_shape = extend(a.shape);
  p.input2_shape = extend(b.shape);
  p.output_shape = extend(out.shape);
  for (size_t d = 0; d < static_cast<size_t>(kMaxRank); ++d) {
    const int32_t x = p.input1_shape.dims[d], y = p.input2_shape.dims[d], o = p.output_shape.dims[d];
    if (x != y && x != 1 && y != 1)
      return ctx.error("inputs '{}' and '{}' do not broadcast: dimension sizes {} and {}", a.name, b.name, x, y);
    const int32_t broadcast = x == 1 ? y : x;
    if (o != broadcast)
      return ctx.error("output '{}' has dimension size {} where the inputs broadcast to {}", out.name, o, broadcast);
  }
  return {};
}

Activation fused_activation(const PrepareContext& ctx) {
  const OpOptions& o = ctx.op().options;
  if (const auto* v = std::get_if<AddOptions>(&o)) return v->activation;
  if (const auto* v = std::get_if<SubOptions>(&o)) return v->activation;
  if (const auto* v = std::get_if<MulOptions>(&o)) return v->activation;
  if (const auto* v = std::get_if<DivOptions>(&o)) return v->activation;
  return Activation::none;
}

// TFLite's CalculateActivationRange<float>: NONE is [lowest, max] (so an infinite result becomes +-FLT_MAX).
Result<void> set_float_activation(const PrepareContext& ctx, Activation act, BinaryParams& p) {
  constexpr float kMax = std::numeric_limits<float>::max();
  switch (act) {
    case Activation::none: p.float_act_min = -kMax, p.float_act_max = kMax; return {};
    case Activation::relu: p.float_act_min = 0.0f, p.float_act_max = kMax; return {};
    case Activation::relu6: p.float_act_min = 0.0f, p.float_act_max = 6.0f; return {};
    case Activation::relu_n1_to_1: p.float_act_min = -1.0f, p.float_act_max = 1.0f; return {};
    default: return ctx.error("fused activation {} is not supported", static_cast<int>(act));
  }
}

// TFLite's CalculateActivationRange<int32_t>.
Result<void> set_int32_activation(const PrepareContext& ctx, Activation act, BinaryParams& p) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  switch (act) {
    case Activation::none: p.act_min = kMin, p.act_max = kMax; return {};
    case Activation::relu: p.act_min = 0, p.act_max = kMax; return {};
    case Activation::relu6: p.act_min = 0, p.act_max = 6; return {};
    case Activation::relu_n1_to_1: p.act_min = -1, p.act_max = 1; return {};
    default: return ctx.error("fused activation {} is not supported", static_cast<int>(act));
  }
}

Result<void> set_quantized_activation(const PrepareContext& ctx, Activation act, DType type, Quant out,
                                      BinaryParams& p) {
  const ActivationRange r = AISRV_TRY(in_context(ctx, activation_range(act, type, out.scale, out.zero_point)));
  p.act_min = r.min;
  p.act_max = r.max;
  return {};
}

// TFLite's QuantizeMultiplierSmallerThanOneExp: the ratio must lie in (0, 1).
Result<QuantizedMultiplier> smaller_than_one(const PrepareContext& ctx, double real, std::string_view what) {
  if (!(real > 0.0 && real < 1.0))
    return ctx.error("{} scale ratio {:g} is outside (0, 1), which this kernel requires", what, real);
  return quantize_multiplier(real);
}

Result<QuantizedMultiplier> any_multiplier(const PrepareContext& ctx, double real, std::string_view what) {
  return in_context(ctx, checked_multiplier(real, what));
}

Result<void> expect_unquantized(const PrepareContext& ctx, const TensorSpec& t, std::string_view what) {
  if (t.quant.present())
    return ctx.error("{} '{}' is a quantized int32 tensor; only plain int32 is supported here", what, t.name);
  return {};
}

// ADD / SUB of quantized tensors (TFLite's general rescaling): both inputs shifted left by left_shift (20 for 8-bit,
// 15 for int16), scaled to twice the larger input scale, summed (or subtracted), rescaled to the output. TFLite
// Micro's ADD computes the ratios in double, its SUB in float; TensorFlow Lite's uint8 SUB uses double ratios and
// runs as ADD with a negated input-2 multiplier. Fields: input1/2_offset, output_offset, left_shift,
// input1/2_multiplier and _shift, output_multiplier, output_shift, act_min, act_max.
Result<void> prepare_add_sub_quantized(const PrepareContext& ctx, BinaryParams& p, DType type, Quant q1, Quant q2,
                                       Quant qo, bool is_sub) {
  p.left_shift = type == DType::int16 ? 15 : 20;
  double real1 = 0, real2 = 0, real_out = 0;
  const bool float_ratios = is_sub && type != DType::uint8;
  if (float_ratios) {
    const float twice_max = 2 * std::max(q1.scale, q2.scale);
    real1 = static_cast<double>(q1.scale / twice_max);
    real2 = static_cast<double>(q2.scale / twice_max);
    real_out = static_cast<double>(twice_max / (static_cast<float>(1 << p.left_shift) * qo.scale));
  } else {
    const double twice_max = 2 * static_cast<double>(std::max(q1.scale, q2.scale));
    real1 = static_cast<double>(q1.scale) / twice_max;
    real2 = static_cast<double>(q2.scale) / twice_max;
    real_out = twice_max / (static_cast<double>(1 << p.left_shift) * static_cast<double>(qo.scale));
  }
  const QuantizedMultiplier m1 = AISRV_TRY(smaller_than_one(ctx, real1, "input 1"));
  const QuantizedMultiplier m2 = AISRV_TRY(smaller_than_one(ctx, real2, "input 2"));
  const QuantizedMultiplier mo = AISRV_TRY(smaller_than_one(ctx, real_out, "output (inputs' scales vs output's)"));
  p.input1_multiplier = m1.multiplier;
  p.input1_shift = m1.shift;
  p.input2_multiplier = m2.multiplier;
  p.input2_shift = m2.shift;
  p.output_multiplier = mo.multiplier;
  p.output_shift = mo.shift;
  if (is_sub && type == DType::uint8) {
    p.op = BinaryOp::add;
    p.input2_multiplier = -p.input2_multiplier;
  }
  p.input1_offset = -q1.zero_point;
  p.input2_offset = -q2.zero_point;
  p.output_offset = qo.zero_point;
  return {};
}

// MUL: output_offset + (x1 - zp1) * (x2 - zp2) * scale1 * scale2 / output scale. TFLite Micro forms the ratio in
// double, TensorFlow Lite (uint8) in float. A ratio of 2^30 or more (degenerate output scales, as in the LSTM cell
// of Coral's traffic model) has no 31-bit form and the reference's shift overflows; every non-zero product then
// lies beyond the output range, so the shift is capped at 30 and the kernel's saturating left shift sends such
// products to the activation bound of their sign, as the real-valued formula does. Fields: input1/2_offset,
// output_offset, output_multiplier, output_shift, act_min, act_max.
Result<void> prepare_mul_quantized(const PrepareContext& ctx, BinaryParams& p, DType type, Quant q1, Quant q2,
                                   Quant qo) {
  if (type == DType::int16 && (q1.zero_point != 0 || q2.zero_point != 0 || qo.zero_point != 0))
    return ctx.error("int16 MUL needs zero point 0 on both inputs and the output");
  const double real = type == DType::uint8
                          ? static_cast<double>(q1.scale * q2.scale / qo.scale)
                          : static_cast<double>(q1.scale) * static_cast<double>(q2.scale) /
                                static_cast<double>(qo.scale);
  if (!std::isfinite(real))
    return ctx.error("input scales {:g}, {:g} over output scale {:g} give a ratio that is not finite", q1.scale,
                     q2.scale, qo.scale);
  QuantizedMultiplier m = quantize_multiplier(real);
  m.shift = std::min(m.shift, 30);
  p.output_multiplier = m.multiplier;
  p.output_shift = m.shift;
  p.input1_offset = -q1.zero_point;
  p.input2_offset = -q2.zero_point;
  p.output_offset = qo.zero_point;
  return {};
}

// DIV (TFLite's DivElementwise): the ratio scale1 / (scale2 * output scale) in float. The kernel shifts by
// output_shift - (reciprocal bits) - (headroom of the numerator, at least 23 for 8-bit values); an output_shift
// above 23 would ask for a left shift there, which the reference does not define. Fields: input1/2_offset,
// output_offset, output_multiplier, output_shift, act_min, act_max.
Result<void> prepare_div_quantized(const PrepareContext& ctx, BinaryParams& p, Quant q1, Quant q2, Quant qo) {
  const double real = static_cast<double>(q1.scale / (q2.scale * qo.scale));
  const QuantizedMultiplier m = AISRV_TRY(any_multiplier(ctx, real, "input 1 scale / (input 2 scale * output scale)"));
  if (m.shift > 23) return ctx.error("scale ratio {:g} is too large for the quantized DIV kernel", real);
  p.output_multiplier = m.multiplier;
  p.output_shift = m.shift;
  p.input1_offset = -q1.zero_point;
  p.input2_offset = -q2.zero_point;
  p.output_offset = qo.zero_point;
  return {};
}

// SQUARED_DIFFERENCE (TFLite Micro PrepareQuantized): inputs shifted left by 7 (int8) or 0 (int16), scaled to twice
// the larger input scale, subtracted, squared, rescaled by (2 * max scale)^2 / (2^(2 * left_shift) * output scale);
// no fused activation (the clamp is the type's range). Fields: input1/2_offset, output_offset, left_shift,
// input1/2_multiplier and _shift, output_multiplier, output_shift, act_min, act_max.
Result<void> prepare_squared_difference_quantized(const PrepareContext& ctx, BinaryParams& p, DType type, Quant q1,
                                                  Quant q2, Quant qo) {
  if (type == DType::int16 && (q1.zero_point != 0 || q2.zero_point != 0 || qo.zero_point != 0))
    return ctx.error("int16 SQUARED_DIFFERENCE needs zero point 0 on both inputs and the output");
  p.left_shift = type == DType::int16 ? 0 : 7;
  const double twice_max = 2.0 * static_cast<double>(std::max(q1.scale, q2.scale));
  const double real1 = static_cast<double>(q1.scale) / twice_max;
  const double real2 = static_cast<double>(q2.scale) / twice_max;
  const double real_out =
      (twice_max * twice_max) / static_cast<double>(static_cast<float>(1 << (p.left_shift * 2)) * qo.scale);
  const QuantizedMultiplier m1 = AISRV_TRY(smaller_than_one(ctx, real1, "input 1"));
  const QuantizedMultiplier m2 = AISRV_TRY(smaller_than_one(ctx, real2, "input 2"));
  const QuantizedMultiplier mo = AISRV_TRY(any_multiplier(ctx, real_out, "squared input scale / output scale"));
  p.input1_multiplier = m1.multiplier;
  p.input1_shift = m1.shift;
  p.input2_multiplier = m2.multiplier;
  p.input2_shift = m2.shift;
  p.output_multiplier = mo.multiplier;
  p.output_shift = mo.shift;
  p.input1_offset = -q1.zero_point;
  p.input2_offset = -q2.zero_point;
  p.output_offset = qo.zero_point;
  p.act_min = type_min(type);
  p.act_max = type_max(type);
  return {};
}

// PRELU (TFLite Micro CalculatePreluParams; TensorFlow Lite for uint8 with float ratios): non-negative inputs are
// requantized by input scale / output scale (output_multiplier / output_shift), negative ones multiplied by the
// centred alpha and requantized by input scale * alpha scale / output scale (output_multiplier_2 / output_shift_2).
// int16 inputs take int8 alpha. Fields: input1_offset (input), input2_offset (alpha), output_offset, both
// multiplier pairs, act_min / act_max (the type's range).
Result<void> prepare_prelu_quantized(const PrepareContext& ctx, BinaryParams& p, DType type, Quant qi, Quant qa,
                                     Quant qo) {
  double real1 = 0, real2 = 0;
  if (type == DType::uint8) {
    real1 = static_cast<double>(qi.scale / qo.scale);
    real2 = static_cast<double>(qi.scale * qa.scale / qo.scale);
  } else {
    real1 = static_cast<double>(qi.scale) / static_cast<double>(qo.scale);
    real2 = static_cast<double>(qi.scale) * static_cast<double>(qa.scale) / static_cast<double>(qo.scale);
  }
  const QuantizedMultiplier m1 = AISRV_TRY(any_multiplier(ctx, real1, "input scale / output scale"));
  const QuantizedMultiplier m2 = AISRV_TRY(any_multiplier(ctx, real2, "input scale * alpha scale / output scale"));
  p.output_multiplier = m1.multiplier;
  p.output_shift = m1.shift;
  p.output_multiplier_2 = m2.multiplier;
  p.output_shift_2 = m2.shift;
  p.input1_offset = -qi.zero_point;
  p.input2_offset = -qa.zero_point;
  p.output_offset = qo.zero_point;
  p.act_min = type_min(type);
  p.act_max = type_max(type);
  return {};
}

bool same_quantization(const TensorSpec& a, const TensorSpec& b) {
  return a.quant.scale == b.quant.scale && a.quant.zero_point == b.quant.zero_point;
}

Result<BinaryOp> binary_op_of(const PrepareContext& ctx) {
  switch (static_cast<BuiltinOp>(ctx.op().code)) {
    case BuiltinOp::add: return BinaryOp::add;
    case BuiltinOp::sub: return BinaryOp::sub;
    case BuiltinOp::mul: return BinaryOp::mul;
    case BuiltinOp::div: return BinaryOp::div;
    case BuiltinOp::squared_difference: return BinaryOp::squared_difference;
    case BuiltinOp::maximum: return BinaryOp::maximum;
    case BuiltinOp::minimum: return BinaryOp::minimum;
    case BuiltinOp::floor_div: return BinaryOp::floor_div;
    case BuiltinOp::prelu: return BinaryOp::prelu;
    default: return ctx.error("is not a binary element-wise operator");
  }
}

// The element types each operator supports (TFLite Micro's, plus uint8 where TensorFlow Lite has it; int8 / uint8
// ADD is ops/add.cpp's own kernel).
Result<void> check_input_type(const PrepareContext& ctx, BinaryOp op, const TensorSpec& in) {
  using D = DType;
  switch (op) {
    case BinaryOp::add: return ctx.expect_type(in, {D::float32, D::int32, D::int16}, "input 1");
    case BinaryOp::sub:
    case BinaryOp::mul: return ctx.expect_type(in, {D::float32, D::int32, D::int8, D::uint8, D::int16}, "input 1");
    case BinaryOp::div: return ctx.expect_type(in, {D::float32, D::int32, D::int8, D::uint8}, "input 1");
    case BinaryOp::squared_difference:
      return ctx.expect_type(in, {D::float32, D::int32, D::int8, D::int16}, "input 1");
    case BinaryOp::maximum:
    case BinaryOp::minimum:
      return ctx.expect_type(in, {D::float32, D::int32, D::int64, D::int8, D::uint8, D::int16}, "input 1");
    case BinaryOp::floor_div: return ctx.expect_type(in, {D::float32, D::int32}, "input 1");
    case BinaryOp::prelu: return ctx.expect_type(in, {D::float32, D::int8, D::uint8, D::int16}, "input");
  }
  return ctx.error("unknown binary operator");
}

Result<void> prepare_quantized(const PrepareContext& ctx, BinaryParams& p, Activation act, const TensorSpec& a,
                               const TensorSpec& b, const TensorSpec& out) {
  const DType type = a.type;
  const Quant q1 = AISRV_TRY(quant_of(ctx, a, p.op == BinaryOp::prelu ? "input" : "input 1"));
  const Quant q2 = AISRV_TRY(quant_of(ctx, b, p.op == BinaryOp::prelu ? "alpha" : "input 2"));
  const Quant qo = AISRV_TRY(quant_of(ctx, out, "output"));
  switch (p.op) {
    case BinaryOp::add:
    case BinaryOp::sub:
      AISRV_TRY(prepare_add_sub_quantized(ctx, p, type, q1, q2, qo, p.op == BinaryOp::sub));
      return set_quantized_activation(ctx, act, type, qo, p);
    case BinaryOp::mul:
      AISRV_TRY(prepare_mul_quantized(ctx, p, type, q1, q2, qo));
      return set_quantized_activation(ctx, act, type, qo, p);
    case BinaryOp::div:
      AISRV_TRY(prepare_div_quantized(ctx, p, q1, q2, qo));
      return set_quantized_activation(ctx, act, type, qo, p);
    case BinaryOp::squared_difference: return prepare_squared_difference_quantized(ctx, p, type, q1, q2, qo);
    case BinaryOp::prelu: return prepare_prelu_quantized(ctx, p, type, q1, q2, qo);
    default: return ctx.error("has no quantized form for {}", protocol::dtype_name(type));
  }
}

}  // namespace

Result<OpParams> prepare_binary(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(2, 2, 1));
  BinaryParams p;
  p.op = AISRV_TRY(binary_op_of(ctx));
  const bool is_prelu = p.op == BinaryOp::prelu;
  const TensorSpec& a = *AISRV_TRY(ctx.input(0, is_prelu ? "input" : "input 1"));
  const TensorSpec& b = *AISRV_TRY(ctx.input(1, is_prelu ? "alpha" : "input 2"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(check_input_type(ctx, p.op, a));
  if (is_prelu && a.type == DType::int16) AISRV_TRY(ctx.expect_type(b, {DType::int8}, "alpha of an int16 input"));
  else AISRV_TRY(ctx.expect_same_type(a, b, "inputs"));
  AISRV_TRY(ctx.expect_same_type(a, out, "input and output"));
  AISRV_TRY(set_broadcast_shapes(ctx, a, b, out, p));
  if (is_prelu && !(a.shape == out.shape))
    return ctx.error("alpha '{}' does not broadcast into the input's shape", b.name);
  p.dtype = a.type;
  const Activation act = fused_activation(ctx);

  switch (a.type) {
    case DType::float32:
      if (p.op == BinaryOp::add || p.op == BinaryOp::sub || p.op == BinaryOp::mul || p.op == BinaryOp::div)
        AISRV_TRY(set_float_activation(ctx, act, p));
      break;
    case DType::int32:
      // TFLite Micro accepts only plain int32 for ADD, SUB and DIV.
      if (p.op == BinaryOp::add || p.op == BinaryOp::sub || p.op == BinaryOp::div) {
        AISRV_TRY(expect_unquantized(ctx, a, "input 1"));
        AISRV_TRY(expect_unquantized(ctx, b, "input 2"));
      }
      if (p.op == BinaryOp::sub) AISRV_TRY(expect_unquantized(ctx, out, "output"));
      // TFLite Micro's int32 ADD ignores the fused activation while TensorFlow Lite applies it: refused rather than
      // guessed.
      if (p.op == BinaryOp::add && act != Activation::none)
        return ctx.error("int32 ADD with a fused activation is not supported");
      AISRV_TRY(set_int32_activation(ctx, act, p));
      break;
    case DType::int64: break;
    default:
      if (p.op == BinaryOp::maximum || p.op == BinaryOp::minimum) {
        // The kernel compares raw values, which is only right when all three share one quantization.
        if (!same_quantization(a, out) || !same_quantization(b, out))
          return ctx.error("inputs and output must have the same quantization");
        if (a.quant.per_channel()) return ctx.error("per-channel quantization is not supported");
        break;
      }
      AISRV_TRY(prepare_quantized(ctx, p, act, a, b, out));
      break;
  }
  p.input1 = ctx.read_input(0);
  p.input2 = ctx.read_input(1);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
