// aisrv CPU engine — integer fixed-point arithmetic with the exact rounding of TensorFlow Lite's reference kernels
// (gemmlowp's SaturatingRoundingDoublingHighMul / RoundingDivideByPOT, TFLite's double-rounding
// MultiplyByQuantizedMultiplier, the Q-format exp / reciprocal used by SOFTMAX, and the int16 sigmoid / tanh
// interpolation used by the integer LSTM). Written from the published formulas; every function is total (no
// undefined behaviour for any argument the loader lets through: shifts in [-31, 30]).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace aisrv::engine::cpu::fp {

// round(a * b / 2^31) to nearest with ties upward (ARM VQRDMULH); the one overflow case (min * min) saturates.
inline int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b) {
  if (a == b && a == std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::max();
  const int64_t ab = int64_t{a} * int64_t{b};
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : (1 - (int64_t{1} << 30));
  return static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));
}

// round(x / 2^exponent), ties away from zero; exponent in [0, 31].
inline int32_t rounding_divide_by_pot(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// x * 2^exponent for exponent in [0, 31], wrapping like the two's-complement multiply of the reference code.
inline int32_t shift_left_wrapping(int32_t x, int exponent) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) << exponent);
}

// x * multiplier * 2^(shift - 31) with TFLite's double rounding: a left shift for shift > 0, the rounding doubling
// high multiply, then a rounding right shift for shift < 0.
inline int32_t multiply_by_quantized_multiplier(int32_t x, int32_t multiplier, int shift) {
  const int left_shift = shift > 0 ? shift : 0;
  const int right_shift = shift > 0 ? 0 : -shift;
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shift_left_wrapping(x, left_shift), multiplier),
                                right_shift);
}

// Variants named as in the reference kernels (ADD uses the first, SOFTMAX the second).
inline int32_t multiply_by_quantized_multiplier_smaller_than_one_exp(int32_t x, int32_t multiplier, int left_shift) {
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), -left_shift);
}
inline int32_t multiply_by_quantized_multiplier_greater_than_one(int32_t x, int32_t multiplier, int left_shift) {
  return saturating_rounding_doubling_high_mul(shift_left_wrapping(x, left_shift), multiplier);
}

// requantize an int32 accumulator and clamp it to [act_min, act_max] (the tail of every conv / FC kernel).
inline int32_t requantize(int32_t acc, int32_t multiplier, int shift, int32_t output_offset, int32_t act_min,
                          int32_t act_max) {
  const int64_t v = int64_t{multiply_by_quantized_multiplier(acc, multiplier, shift)} + output_offset;
  return static_cast<int32_t>(std::clamp<int64_t>(v, act_min, act_max));
}

// A float that holds an integral value (already rounded) converted to int32, saturating at the int32 range; NaN
// gives 0. Equal to static_cast<int32_t> wherever that is defined.
inline int32_t saturating_float_to_int32(float r) {
  if (!(r == r)) return 0;
  if (r <= -2147483648.0f) return std::numeric_limits<int32_t>::min();
  if (r >= 2147483648.0f) return std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(r);
}

// ---- Q-format helpers on raw int32 values (a value with I integer bits has 31 - I fractional bits) ----

// Saturating multiply by 2^exponent (exponent may be negative: rounding right shift).
inline int32_t saturating_rounding_multiply_by_pot(int32_t x, int exponent) {
  if (exponent == 0) return x;
  if (exponent < 0) return rounding_divide_by_pot(x, -exponent);
  const int32_t threshold = static_cast<int32_t>((int64_t{1} << (31 - exponent)) - 1);
  if (x > threshold) return std::numeric_limits<int32_t>::max();
  if (x < -threshold) return std::numeric_limits<int32_t>::min();
  return shift_left_wrapping(x, exponent);
}

// Changes the number of integer bits of a raw value from `src_bits` to `dst_bits`.
inline int32_t rescale(int32_t x, int src_bits, int dst_bits) {
  return saturating_rounding_multiply_by_pot(x, src_bits - dst_bits);
}

inline int32_t rounding_half_sum(int32_t a, int32_t b) {
  const int64_t sum = int64_t{a} + int64_t{b};
  const int64_t sign = sum >= 0 ? 1 : -1;
  return static_cast<int32_t>((sum + sign) / 2);
}

// Wrapping add/sub as the reference fixed-point code does on int32 (it never relies on the wrap for valid input).
inline int32_t add_wrapping(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
inline int32_t sub_wrapping(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}

// exp(x) for x in [-1/4, 0), Q0.31 in and out (Taylor expansion around -1/8).
inline int32_t exp_on_interval_between_negative_one_quarter_and_0_excl(int32_t a) {
  const int32_t constant_term = 1895147668;      // exp(-1/8) in Q0.31
  const int32_t constant_1_over_3 = 715827883;   // 1/3 in Q0.31
  const int32_t x = add_wrapping(a, int32_t{1} << 28);  // a + 1/8
  const int32_t x2 = saturating_rounding_doubling_high_mul(x, x);
  const int32_t x3 = saturating_rounding_doubling_high_mul(x2, x);
  const int32_t x4 = saturating_rounding_doubling_high_mul(x2, x2);
  const int32_t x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2);
  const int32_t poly = saturating_rounding_multiply_by_pot(
      add_wrapping(saturating_rounding_doubling_high_mul(add_wrapping(x4_over_4, x3), constant_1_over_3), x2), -1);
  return add_wrapping(constant_term, saturating_rounding_doubling_high_mul(constant_term, add_wrapping(x, poly)));
}

// exp(a) for a <= 0, `a` with `integer_bits` integer bits, result Q0.31.
inline int32_t exp_on_negative_values(int32_t a, int integer_bits) {
  const int fractional_bits = 31 - integer_bits;
  const int32_t one_quarter = int32_t{1} << (fractional_bits - 2);
  const int32_t mask = one_quarter - 1;
  const int32_t a_mod_quarter_minus_one_quarter = sub_wrapping(a & mask, one_quarter);
  int32_t result = exp_on_interval_between_negative_one_quarter_and_0_excl(
      rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0));
  const int32_t remainder = sub_wrapping(a_mod_quarter_minus_one_quarter, a);
  // Multiply by exp(-2^k) for every bit k of the remainder (barrel shifter), k = -2 .. 4.
  struct Step {
    int exponent;
    int32_t multiplier;  // exp(-2^exponent) in Q0.31
  };
  static constexpr Step kSteps[] = {{-2, 1672461947}, {-1, 1302514674}, {0, 790015084}, {1, 290630308},
                                    {2, 39332535},    {3, 720401},      {4, 242}};
  for (const Step& s : kSteps) {
    if (integer_bits > s.exponent) {
      const int shift_amount = fractional_bits + s.exponent;
      if (remainder & (int32_t{1} << shift_amount))
        result = saturating_rounding_doubling_high_mul(result, s.multiplier);
    }
  }
  if (integer_bits > 5) {
    const int32_t clamp = -(int32_t{1} << (fractional_bits + 5));  // -32
    if (a < clamp) result = 0;
  }
  if (a == 0) result = std::numeric_limits<int32_t>::max();  // one
  return result;
}

// 1 / (1 + x) for x in [0, 1), Q0.31 in and out (Newton-Raphson division).
inline int32_t one_over_one_plus_x_for_x_in_0_1(int32_t a) {
  const int32_t half_denominator = rounding_half_sum(a, std::numeric_limits<int32_t>::max());
  const int32_t constant_48_over_17 = 1515870810;    // Q2.29
  const int32_t constant_neg_32_over_17 = -1010580540;  // Q2.29
  const int32_t one_q2 = int32_t{1} << 29;
  int32_t x = add_wrapping(constant_48_over_17,
                           saturating_rounding_doubling_high_mul(half_denominator, constant_neg_32_over_17));
  for (int i = 0; i < 3; ++i) {
    const int32_t half_denominator_times_x = saturating_rounding_doubling_high_mul(half_denominator, x);  // Q2
    const int32_t one_minus = sub_wrapping(one_q2, half_denominator_times_x);                               // Q2
    x = add_wrapping(x, rescale(saturating_rounding_doubling_high_mul(x, one_minus), 4, 2));
  }
  // x / 2 reinterpreted from Q2.29 (exactly: Q1 value) and rescaled to Q0.31.
  return rescale(x, 1, 0);
}

// Reciprocal of a positive Q(x_integer_digits) value: returns a Q0.31 scale and the number of bits above unity.
inline int32_t get_reciprocal(int32_t x, int x_integer_digits, int* num_bits_over_unit) {
  const int headroom_plus_one = x == 0 ? 32 : __builtin_clz(static_cast<uint32_t>(x));
  *num_bits_over_unit = x_integer_digits - headroom_plus_one;
  const int32_t shifted_sum_minus_one = static_cast<int32_t>(
      (static_cast<uint32_t>(x) << (headroom_plus_one & 31)) - (static_cast<uint32_t>(1) << 31));
  return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one);
}

// ---- int16 sigmoid / tanh of the integer LSTM (table interpolation) ----

namespace detail {

// exp(x) for |x| <= 32 in a constant expression: x = n ln 2 + r with |r| <= ln 2 / 2, exp(r) by its Taylor series
// (24 terms: relative error below 1e-16), times 2^n.
constexpr double exp_constexpr(double x) {
  constexpr double kLn2 = 0.693147180559945309417232121458176568;
  const double nf = x / kLn2;
  const auto n = static_cast<int>(nf >= 0 ? nf + 0.5 : nf - 0.5);
  const double r = x - n * kLn2;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 24; ++k) {
    term *= r / k;
    sum += term;
  }
  for (int i = 0; i < n; ++i) sum *= 2.0;
  for (int i = 0; i > n; --i) sum *= 0.5;
  return sum;
}

constexpr double sigmoid(double x) { return 1.0 / (1.0 + exp_constexpr(-x)); }

}  // namespace detail

// The table TensorFlow Lite's int16 logistic and tanh interpolate linearly: sigmoid on x = i / 24, i = 0..255, in
// 0.16 fixed point. Not plain round(65536 sigmoid(x)): like TFLite's LUT generators, each entry is biased by half
// the error linear interpolation makes at the midpoint of its interval [x, x + h], h = 1/24 (sigmoid is concave
// there, so the chord lies below the curve and the entries move up):
//   entry(i) = round(65536 * (s(x) + (s(x + h/2) - (s(x) + s(x + h)) / 2) / 2)),  i = 0..254,
// and the last entry is the saturated 1.0 (65535), where the kernels stop interpolating. Rounding is to nearest;
// every value lies at least 0.004 of a step away from a tie, so double arithmetic decides all of them. Computed at
// compile time. (A one-off comparison reproduced TFLite's published table exactly; the LSTM test cases depend on it.)
constexpr std::array<uint16_t, 256> make_sigmoid_table_q16() {
  std::array<uint16_t, 256> t{};
  constexpr double kStep = 1.0 / 24.0;
  for (int i = 0; i < 255; ++i) {
    const double x = i * kStep;
    const double s = detail::sigmoid(x);
    const double midpoint_error = detail::sigmoid(x + kStep / 2) - (s + detail::sigmoid(x + kStep)) / 2;
    t[static_cast<size_t>(i)] = static_cast<uint16_t>(65536.0 * (s + midpoint_error / 2) + 0.5);
  }
  t[255] = 65535;
  return t;
}

inline constexpr std::array<uint16_t, 256> kSigmoidTableQ16 = make_sigmoid_table_q16();

// Q3.12 input -> Q0.15 sigmoid, with the input scaled by multiplier / 2^left_shift first (multiplier 0: 3 <<
// left_shift, the power-of-two case).
int16_t logistic_int16(int16_t input, int32_t input_multiplier, int32_t input_left_shift);
// Same for tanh.
int16_t tanh_int16(int16_t input, int32_t input_multiplier, int32_t input_left_shift);

}  // namespace aisrv::engine::cpu::fp
