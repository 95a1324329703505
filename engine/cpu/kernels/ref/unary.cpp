// aisrv CPU engine, reference kernels — unary element-wise operators (LOGISTIC, TANH, HARD_SWISH, RELU, RELU6,
// RELU_N1_TO_1, LEAKY_RELU, FLOOR, SQRT, RSQRT, EXP): float32 with the reference formulas, int8 / int16 with the
// fixed-point arithmetic of TensorFlow Lite Micro's reference kernels, uint8 as TensorFlow Lite's (a table lookup
// for LOGISTIC / TANH). Where the reference relies on int32 wrap-around, the sums here wrap the same way.
#include <algorithm>
#include <cmath>
#include <limits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();

// ---- gemmlowp's logistic / tanh on a Q4.27 input, Q0.31 result ----

// (1 - x) / (1 + x) for x in [0, 1], Q0.31 in and out (Newton-Raphson division, as gemmlowp's
// one_minus_x_over_one_plus_x_for_x_in_0_1).
int32_t one_minus_x_over_one_plus_x(int32_t a) {
  const int32_t half_denominator = fp::rounding_half_sum(a, kInt32Max);
  const int32_t one_q2 = int32_t{1} << 29;  // 1.0 with 2 integer bits
  int32_t x = fp::add_wrapping(1515870810, fp::saturating_rounding_doubling_high_mul(half_denominator, -1010580540));
  for (int i = 0; i < 3; ++i) {
    const int32_t half_denominator_times_x = fp::saturating_rounding_doubling_high_mul(half_denominator, x);
    const int32_t one_minus = fp::sub_wrapping(one_q2, half_denominator_times_x);
    x = fp::add_wrapping(x, fp::rescale(fp::saturating_rounding_doubling_high_mul(x, one_minus), 4, 2));
  }
  return fp::rescale(fp::sub_wrapping(x, one_q2), 2, 0);
}

int32_t logistic_q4(int32_t a) {
  if (a == 0) return int32_t{1} << 30;  // one half
  const bool positive = a > 0;
  const int32_t magnitude = positive ? a : -a;  // |a| < 2^31: the caller's radius keeps a far from INT32_MIN
  const int32_t of_positive =
      fp::one_over_one_plus_x_for_x_in_0_1(fp::exp_on_negative_values(-magnitude, 4));
  return positive ? of_positive : kInt32Max - of_positive;
}

int32_t tanh_q4(int32_t a) {
  if (a == 0) return 0;
  const bool negative = a < 0;
  const int32_t non_positive = negative ? a : -a;
  // -tanh(n) for n <= 0 is (1 - exp(2n)) / (1 + exp(2n)); 2n is the same raw value read with 5 integer bits.
  const int32_t t = one_minus_x_over_one_plus_x(fp::exp_on_negative_values(non_positive, 5));
  return negative ? -t : t;
}

// int8 LOGISTIC (output 1/256, -128) and TANH (output 1/128, 0), TFLite Micro reference_integer_ops.
template <bool kTanh>
void sigmoid_like_int8(const UnaryParams& p) {
  const auto* in = static_cast<const int8_t*>(p.input);
  auto* out = static_cast<int8_t*>(p.output);
  for (int64_t i = 0; i < p.elements; ++i) {
    const int32_t centered = int32_t{in[i]} - p.input_zero_point;
    if (centered <= -p.input_range_radius) {
      out[i] = std::numeric_limits<int8_t>::min();
    } else if (centered >= p.input_range_radius) {
      out[i] = std::numeric_limits<int8_t>::max();
    } else {
      const int32_t q4 = fp::multiply_by_quantized_multiplier(centered, p.input_multiplier, p.input_shift);
      int32_t v;
      if constexpr (kTanh) v = fp::rounding_divide_by_pot(tanh_q4(q4), 31 - 7);
      else v = fp::rounding_divide_by_pot(logistic_q4(q4), 31 - 8) - 128;
      out[i] = static_cast<int8_t>(std::clamp<int32_t>(v, -128, 127));
    }
  }
}

template <bool kTanh>
void sigmoid_like_int16(const UnaryParams& p) {
  const auto* in = static_cast<const int16_t*>(p.input);
  auto* out = static_cast<int16_t*>(p.output);
  for (int64_t i = 0; i < p.elements; ++i)
    out[i] = kTanh ? fp::tanh_int16(in[i], p.input_multiplier, p.input_shift)
                   : fp::logistic_int16(in[i], p.input_multiplier, p.input_shift);
}

// ---- HARD_SWISH on 16-bit fixed point (TFLite reference_ops::HardSwish) ----

// gemmlowp's int16 SaturatingRoundingDoublingHighMul.
int16_t rounding_doubling_high_mul16(int16_t a, int16_t b) {
  if (a == b && a == std::numeric_limits<int16_t>::min()) return std::numeric_limits<int16_t>::max();
  const int32_t ab = int32_t{a} * int32_t{b};
  const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return static_cast<int16_t>((ab + nudge) / (1 << 15));
}

// The same rounding toward zero (TFLite's SaturatingDoublingHighMul, ARM SQDMULH).
int16_t doubling_high_mul16(int16_t a, int16_t b) {
  if (a == b && a == std::numeric_limits<int16_t>::min()) return std::numeric_limits<int16_t>::max();
  return static_cast<int16_t>((int32_t{a} * int32_t{b}) / (1 << 15));
}

// gemmlowp's RoundingDivideByPOT instantiated for int16, exponent in [0, 31]: the mask is (2^e - 1) narrowed to 16
// bits, so for e >= 16 it is all ones and the result is 1 for x >= 0, -1 for x < 0 (what the reference computes).
int16_t rounding_divide_by_pot16(int16_t x, int exponent) {
  const auto mask = static_cast<int16_t>((int64_t{1} << exponent) - 1);
  const auto remainder = static_cast<int16_t>(x & mask);
  const auto threshold = static_cast<int16_t>((mask >> 1) + (x < 0 ? 1 : 0));
  return static_cast<int16_t>((int32_t{x} >> exponent) + (remainder > threshold ? 1 : 0));
}

int16_t saturating_left_shift16(int16_t value, int amount) {
  const int64_t r = int64_t{value} * (int64_t{1} << amount);
  return static_cast<int16_t>(std::clamp<int64_t>(r, std::numeric_limits<int16_t>::min(),
                                                  std::numeric_limits<int16_t>::max()));
}

template <typename T>
void hard_swish_quantized(const UnaryParams& p) {
  const auto* in = static_cast<const T*>(p.input);
  auto* out = static_cast<T*>(p.output);
  for (int64_t i = 0; i < p.elements; ++i) {
    const auto centered = static_cast<int16_t>(int32_t{in[i]} - p.input_zero_point);
    const auto hires = static_cast<int16_t>(centered * (1 << 7));
    const int16_t preshift_output_scale = rounding_doubling_high_mul16(hires, p.output_multiplier_q15);
    // Map [-3, 3] to the int16 range (saturating), then to [0, 1] in Q0.15.
    int16_t reluish = hires;
    if (p.reluish_exponent > 0) reluish = saturating_left_shift16(reluish, p.reluish_exponent - 1);
    reluish = rounding_doubling_high_mul16(reluish, p.reluish_multiplier_q15);
    if (p.reluish_exponent > 0) reluish = saturating_left_shift16(reluish, 1);
    if (p.reluish_exponent < 0) reluish = rounding_divide_by_pot16(reluish, -p.reluish_exponent);
    reluish = static_cast<int16_t>((int32_t{reluish} + (1 << 15)) >> 1);
    const int16_t preshift_output = doubling_high_mul16(reluish, preshift_output_scale);
    int16_t v = rounding_divide_by_pot16(preshift_output, -p.output_exponent);
    v = static_cast<int16_t>(int32_t{v} + p.output_zero_point);  // int16 arithmetic, as the reference
    v = std::min<int16_t>(v, std::numeric_limits<T>::max());
    v = std::max<int16_t>(v, std::numeric_limits<T>::min());
    out[i] = static_cast<T>(v);
  }
}

// ---- requantizing activations ----

template <typename T>
void relu_quantized(const UnaryParams& p) {
  const auto* in = static_cast<const T*>(p.input);
  auto* out = static_cast<T*>(p.output);
  for (int64_t i = 0; i < p.elements; ++i) {
    const int32_t scaled =
        fp::multiply_by_quantized_multiplier(int32_t{in[i]} - p.input_zero_point, p.output_multiplier, p.output_shift);
    const int32_t v = fp::add_wrapping(p.output_zero_point, scaled);
    out[i] = static_cast<T>(std::min(p.act_max, std::max(p.act_min, v)));
  }
}

template <typename T>
void leaky_relu_quantized(const UnaryParams& p) {
  const auto* in = static_cast<const T*>(p.input);
  auto* out = static_cast<T*>(p.output);
  // A negative alpha multiplies by |multiplier| and negates afterwards, as the reference does.
  const bool alpha_negative = p.output_multiplier_2 < 0;
  const int32_t alpha_magnitude = alpha_negative ? -p.output_multiplier_2 : p.output_multiplier_2;
  for (int64_t i = 0; i < p.elements; ++i) {
    const int32_t centered = int32_t{in[i]} - p.input_zero_point;
    int32_t v = p.output_zero_point;
    if (centered >= 0) {
      v = fp::add_wrapping(v, fp::multiply_by_quantized_multiplier(centered, p.output_multiplier, p.output_shift));
    } else {
      const int32_t scaled = fp::multiply_by_quantized_multiplier(centered, alpha_magnitude, p.output_shift_2);
      v = alpha_negative ? fp::sub_wrapping(v, scaled) : fp::add_wrapping(v, scaled);
    }
    out[i] = static_cast<T>(std::clamp<int32_t>(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  }
}

// ---- int8 RSQRT (TFLite Micro RsqrtEvalQuantized) ----

// TFLite's GetInvSqrtQuantizedMultiplierExp for input >= 2: 1/sqrt(input) as a Q0.31 multiplier and a left shift,
// by five Newton-Raphson steps in Q3.28 on the input normalised to [2^27, 2^29).
void inverse_sqrt_multiplier(int32_t input, int32_t* multiplier, int* left_shift) {
  int shift = 11;
  while (input >= (1 << 29)) {
    input /= 4;
    ++shift;
  }
  const int max_left_shift_bits = __builtin_clz(static_cast<uint32_t>(input)) - 1;
  const int left_shift_bit_pairs = max_left_shift_bits / 2 - 1;
  shift -= left_shift_bit_pairs;
  input <<= 2 * left_shift_bit_pairs;
  const int32_t fixed_input = input >> 1;                              // Q3.28
  const int32_t half_input = fp::rounding_divide_by_pot(fixed_input, 1);
  const int32_t three_halves = (1 << 28) + (1 << 27);                  // 1.5 in Q3.28
  int32_t x = 1 << 28;                                                 // 1.0 in Q3.28
  for (int i = 0; i < 5; ++i) {
    const int32_t x3 = fp::rescale(fp::saturating_rounding_doubling_high_mul(
                                       fp::saturating_rounding_doubling_high_mul(x, x), x),
                                   9, 3);
    x = fp::rescale(fp::sub_wrapping(fp::saturating_rounding_doubling_high_mul(three_halves, x),
                                     fp::saturating_rounding_doubling_high_mul(half_input, x3)),
                    6, 3);
  }
  x = fp::saturating_rounding_doubling_high_mul(x, 1518500250);  // times sqrt(2) / 2 in Q0.31
  if (shift < 0) {
    x = fp::shift_left_wrapping(x, -shift);
    shift = 0;
  }
  *multiplier = x;
  *left_shift = -shift;
}

void rsqrt_int8(const UnaryParams& p) {
  const auto* in = static_cast<const int8_t*>(p.input);
  auto* out = static_cast<int8_t*>(p.output);
  constexpr int kShift = 20;  // keeps the inverse square root integral
  for (int64_t i = 0; i < p.elements; ++i) {
    const int32_t value = int32_t{in[i]} - p.input_zero_point;  // >= 0: the zero point is -128
    if (value == 0) {
      out[i] = std::numeric_limits<int8_t>::max();
      continue;
    }
    int32_t inv_multiplier = kInt32Max;
    int inv_shift = 0;
    if (value > 1) inverse_sqrt_multiplier(value, &inv_multiplier, &inv_shift);
    const int32_t data = fp::multiply_by_quantized_multiplier(1, inv_multiplier, inv_shift + kShift);
    const int32_t v = fp::add_wrapping(
        fp::multiply_by_quantized_multiplier(data, p.output_multiplier, p.output_shift - kShift), p.output_zero_point);
    out[i] = static_cast<int8_t>(std::clamp<int32_t>(v, -128, 127));
  }
}

// ---- float32 ----

float logistic_float(float v) {
  // TFLite's reference: exact 1 above the cutoff, exp(v) below -9, 1 / (1 + exp(-v)) between.
  const float cutoff_upper = 16.619047164916992188f;
  const float cutoff_lower = -9.f;
  if (v > cutoff_upper) return 1.0f;
  if (v < cutoff_lower) return std::exp(v);
  return 1.f / (1.f + std::exp(-v));
}

float hard_swish_float(float v) {
  return v * std::min(6.0f, std::max(0.0f, v + 3)) / 6;
}

template <typename Fn>
void map_float(const UnaryParams& p, Fn fn) {
  const auto* in = static_cast<const float*>(p.input);
  auto* out = static_cast<float*>(p.output);
  for (int64_t i = 0; i < p.elements; ++i) out[i] = fn(in[i]);
}

void unary_float(const UnaryParams& p) {
  switch (p.op) {
    case UnaryOp::logistic: map_float(p, logistic_float); break;
    case UnaryOp::tanh: map_float(p, [](float v) { return std::tanh(v); }); break;
    case UnaryOp::hard_swish: map_float(p, hard_swish_float); break;
    case UnaryOp::relu: map_float(p, [](float v) { return v < 0.0f ? 0.0f : v; }); break;
    case UnaryOp::relu6: map_float(p, [](float v) { return v > 6.0f ? 6.0f : v < 0.0f ? 0.0f : v; }); break;
    case UnaryOp::relu_n1_to_1: map_float(p, [](float v) { return v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v; }); break;
    case UnaryOp::leaky_relu: {
      const float alpha = p.alpha;
      map_float(p, [alpha](float v) { return v > 0 ? v : v * alpha; });
      break;
    }
    case UnaryOp::floor: map_float(p, [](float v) { return std::floor(v); }); break;
    case UnaryOp::sqrt: map_float(p, [](float v) { return std::sqrt(v); }); break;
    case UnaryOp::rsqrt: map_float(p, [](float v) { return 1.f / std::sqrt(v); }); break;
    case UnaryOp::exp: map_float(p, [](float v) { return std::exp(v); }); break;
  }
}

template <typename T>
void unary_quantized(const UnaryParams& p) {
  switch (p.op) {
    case UnaryOp::hard_swish: hard_swish_quantized<T>(p); break;
    case UnaryOp::relu:
    case UnaryOp::relu6:
    case UnaryOp::relu_n1_to_1: relu_quantized<T>(p); break;
    case UnaryOp::leaky_relu: leaky_relu_quantized<T>(p); break;
    default: break;
  }
}

}  // namespace

void ReferenceKernelBackend::unary(const UnaryParams& p) {
  if (p.use_table) {
    const auto* in = static_cast<const uint8_t*>(p.input);
    auto* out = static_cast<uint8_t*>(p.output);
    for (int64_t i = 0; i < p.elements; ++i) out[i] = p.table[in[i]];
    return;
  }
  switch (p.dtype) {
    case DType::float32: unary_float(p); return;
    case DType::int8:
      if (p.op == UnaryOp::logistic) sigmoid_like_int8<false>(p);
      else if (p.op == UnaryOp::tanh) sigmoid_like_int8<true>(p);
      else if (p.op == UnaryOp::rsqrt) rsqrt_int8(p);
      else unary_quantized<int8_t>(p);
      return;
    case DType::int16:
      if (p.op == UnaryOp::logistic) sigmoid_like_int16<false>(p);
      else if (p.op == UnaryOp::tanh) sigmoid_like_int16<true>(p);
      else unary_quantized<int16_t>(p);
      return;
    case DType::uint8: unary_quantized<uint8_t>(p); return;
    default: return;
  }
}

size_t ref::scratch_bytes(const UnaryParams&) { return 0; }

}  // namespace aisrv::engine::cpu
