// aisrv tests — the CPU engine's fixed-point arithmetic and load-time quantization math, on hand-computed values
// (rounding directions, saturation, double rounding, the Q-format exp / reciprocal, int16 sigmoid / tanh).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "quant_math.hpp"

namespace fp = aisrv::engine::cpu::fp;
using namespace aisrv::engine::cpu;

TEST_CASE("saturating rounding doubling high multiply") {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  CHECK(fp::saturating_rounding_doubling_high_mul(kMin, kMin) == std::numeric_limits<int32_t>::max());
  CHECK(fp::saturating_rounding_doubling_high_mul(1 << 30, 1 << 30) == 1 << 29);  // 0.5 * 0.5
  CHECK(fp::saturating_rounding_doubling_high_mul(1, 1 << 30) == 1);              // 0.5 rounds up
  CHECK(fp::saturating_rounding_doubling_high_mul(-1, 1 << 30) == 0);             // -0.5 rounds up
  CHECK(fp::saturating_rounding_doubling_high_mul(-3, 1 << 30) == -1);            // -1.5 rounds up
  CHECK(fp::saturating_rounding_doubling_high_mul(1000, kMin) == -1000);           // x * -1
}

TEST_CASE("rounding divide by power of two rounds halves away from zero") {
  CHECK(fp::rounding_divide_by_pot(5, 1) == 3);
  CHECK(fp::rounding_divide_by_pot(-5, 1) == -3);
  CHECK(fp::rounding_divide_by_pot(4, 1) == 2);
  CHECK(fp::rounding_divide_by_pot(-4, 1) == -2);
  CHECK(fp::rounding_divide_by_pot(7, 2) == 2);    // 1.75
  CHECK(fp::rounding_divide_by_pot(-7, 2) == -2);
  CHECK(fp::rounding_divide_by_pot(123, 0) == 123);
  CHECK(fp::rounding_divide_by_pot(-1, 31) == 0);
}

TEST_CASE("multiply by quantized multiplier: shifts and double rounding") {
  CHECK(fp::multiply_by_quantized_multiplier(100, 1 << 30, 0) == 50);   // x 0.5
  CHECK(fp::multiply_by_quantized_multiplier(100, 1 << 30, 1) == 100);  // x 1
  CHECK(fp::multiply_by_quantized_multiplier(100, 1 << 30, 3) == 400);  // x 4
  // 3 x 0.25: the high multiply rounds 1.5 up to 2, the shift rounds 1.0 -> 1 (single rounding would give 1 too,
  // but 5 x 0.25 = 1.25 gives srdhm 2.5 -> 3, then 3/2 = 1.5 -> 2: double rounding).
  CHECK(fp::multiply_by_quantized_multiplier(3, 1 << 30, -1) == 1);
  CHECK(fp::multiply_by_quantized_multiplier(5, 1 << 30, -1) == 2);
  CHECK(fp::multiply_by_quantized_multiplier(-5, 1 << 30, -1) == -1);
  CHECK(fp::requantize(1000, 1 << 30, 1, 5, -128, 127) == 127);     // saturates high
  CHECK(fp::requantize(-1000, 1 << 30, 1, 5, -128, 127) == -128);   // saturates low
  CHECK(fp::requantize(10, 1 << 30, 1, 5, 0, 6) == 6);              // activation clamp
}

TEST_CASE("saturating float to int32 conversion") {
  CHECK(fp::saturating_float_to_int32(3.0f) == 3);
  CHECK(fp::saturating_float_to_int32(-3.0f) == -3);
  CHECK(fp::saturating_float_to_int32(1e20f) == std::numeric_limits<int32_t>::max());
  CHECK(fp::saturating_float_to_int32(-1e20f) == std::numeric_limits<int32_t>::min());
  CHECK(fp::saturating_float_to_int32(std::nanf("")) == 0);
}

TEST_CASE("Q-format exp of negative values tracks std::exp") {
  CHECK(fp::exp_on_negative_values(0, 5) == std::numeric_limits<int32_t>::max());
  for (double x = -0.01; x > -31.0; x *= 1.3) {
    const auto raw = static_cast<int32_t>(std::lround(x * (1 << 26)));  // Q5.26
    const double got = fp::exp_on_negative_values(raw, 5) / 2147483648.0;
    CHECK_MESSAGE(std::abs(got - std::exp(x)) < 2e-6, "x=" << x);
  }
}

TEST_CASE("Q0.31 reciprocal of 1 + x") {
  for (double x : {0.0, 0.25, 0.5, 0.75, 0.999}) {
    const auto raw = static_cast<int32_t>(std::llround(x * 2147483647.0));
    const double got = fp::one_over_one_plus_x_for_x_in_0_1(raw) / 2147483648.0;
    CHECK_MESSAGE(std::abs(got - 1.0 / (1.0 + x)) < 1e-8, "x=" << x);
  }
  int bits = 0;
  const int32_t r = fp::get_reciprocal(3 << 19, 12, &bits);  // 3.0 in Q12.19
  CHECK(bits == 1);  // 3 = 1.5 * 2^1
  CHECK(std::abs(r / 2147483648.0 - 1.0 / 1.5) < 1e-8);
}

TEST_CASE("int16 sigmoid and tanh (Q3.12 in, Q0.15 out)") {
  CHECK(fp::logistic_int16(0, 0, 0) == 16384);  // 0.5
  CHECK(fp::tanh_int16(0, 0, 0) == 0);
  CHECK(fp::logistic_int16(32767, 0, 0) == 32757);  // sigmoid(8) = 0.99966 -> 32757
  CHECK(fp::logistic_int16(-32768, 0, 0) <= 12);
  CHECK(fp::tanh_int16(32767, 0, 0) == 32767);
  CHECK(fp::tanh_int16(-32768, 0, 0) == -32767);
  for (int q = -32768; q <= 32767; q += 97) {
    const double x = q / 4096.0;
    const auto in = static_cast<int16_t>(q);
    CHECK_MESSAGE(std::abs(fp::logistic_int16(in, 0, 0) / 32768.0 - 1.0 / (1.0 + std::exp(-x))) < 2e-4, "x=" << x);
    CHECK_MESSAGE(std::abs(fp::tanh_int16(in, 0, 0) / 32768.0 - std::tanh(x)) < 4e-4, "x=" << x);
  }
  // A cell state in Q4.11 (scale 2^-11): the input is scaled by 2 first (left shift 1).
  CHECK(std::abs(fp::tanh_int16(2048, 0, 1) / 32768.0 - std::tanh(1.0)) < 4e-4);
}

TEST_CASE("the sigmoid table is generated at compile time from the midpoint-bias formula") {
  constexpr auto& t = fp::kSigmoidTableQ16;
  static_assert(t[0] == 32768 && t[255] == 65535);  // sigmoid(0) = 1/2; the saturated end
  for (int x = -30; x <= 30; ++x)  // the constant-expression exp behind it
    CHECK(std::abs(fp::detail::exp_constexpr(x * 0.5) / std::exp(x * 0.5) - 1.0) < 1e-14);
  int above_rounded = 0;
  for (size_t i = 0; i < 255; ++i) {
    CHECK(t[i] <= t[i + 1]);
    const double exact = 65536.0 / (1.0 + std::exp(-static_cast<double>(i) / 24.0));
    // Biased upwards by at most about two thirds of a step (half the chord's midpoint error, 1.37 at most) ...
    CHECK_MESSAGE(t[i] - exact > -0.5, "entry " << i);
    CHECK_MESSAGE(t[i] - exact < 1.2, "entry " << i);
    if (t[i] > std::lround(exact)) ++above_rounded;
  }
  // ... which is why 43 entries (and the saturated last one) are one above plain rounding; the LSTM test cases are
  // bit-exact only with them.
  CHECK(above_rounded == 43);
  // Spot values of TFLite's table (sigmoid(i/24) in 0.16): entries 1, 28, 100, 254.
  CHECK(t[1] == 33451);
  CHECK(t[28] == 49975);
  CHECK(t[100] == 64536);
  CHECK(t[254] == 65534);
}

TEST_CASE("quantize_multiplier decomposes real multipliers") {
  auto q = quantize_multiplier(0.5);
  CHECK(q.multiplier == (1 << 30));
  CHECK(q.shift == 0);
  q = quantize_multiplier(1.0);
  CHECK(q.multiplier == (1 << 30));
  CHECK(q.shift == 1);
  q = quantize_multiplier(0.75);
  CHECK(q.multiplier == 1610612736);
  CHECK(q.shift == 0);
  q = quantize_multiplier(1.0 - std::ldexp(1.0, -33));  // mantissa rounds up to 2^31: renormalised
  CHECK(q.multiplier == (1 << 30));
  CHECK(q.shift == 1);
  q = quantize_multiplier(std::ldexp(1.0, -40));  // below 2^-31: flushed to zero
  CHECK(q.multiplier == 0);
  CHECK(q.shift == 0);
  CHECK_FALSE(checked_multiplier(std::ldexp(1.0, 31), "x").ok());
  CHECK_FALSE(checked_multiplier(-1.0, "x").ok());
  CHECK_FALSE(checked_multiplier(std::nan(""), "x").ok());
}

TEST_CASE("activation ranges follow the output quantization") {
  // relu6 on scale 6/255, zero point -128: [0, 6] covers the whole int8 range.
  auto r = activation_range(Activation::relu6, DType::int8, 6.0f / 255.0f, -128);
  REQUIRE(r.ok());
  CHECK(r->min == -128);
  CHECK(r->max == 127);
  // relu6 on scale 0.1, zero point 0: [0, 60].
  r = activation_range(Activation::relu6, DType::int8, 0.1f, 0);
  REQUIRE(r.ok());
  CHECK(r->min == 0);
  CHECK(r->max == 60);
  r = activation_range(Activation::relu, DType::uint8, 0.5f, 10);
  REQUIRE(r.ok());
  CHECK(r->min == 10);
  CHECK(r->max == 255);
  CHECK_FALSE(activation_range(Activation::tanh, DType::int8, 0.1f, 0).ok());
}

TEST_CASE("softmax input scaling") {
  auto s = softmax_scaling(1.0, 0.1, 5);  // 0.1 * 2^26 = 6710886.4 -> multiplier * 2^(shift-31)
  REQUIRE(s.ok());
  CHECK(s->left_shift == 23);
  CHECK(std::abs(s->multiplier * std::ldexp(1.0, s->left_shift - 31) - 0.1 * (1 << 26)) < 1.0);
  CHECK(s->diff_min == -static_cast<int32_t>(std::floor(31.0 * (1 << 26) / (1 << 23))));
  CHECK_FALSE(softmax_scaling(0.0, 0.1, 5).ok());
  CHECK_FALSE(softmax_scaling(-1.0, 0.1, 5).ok());
}
