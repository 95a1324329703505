// aisrv tests — the element-wise operators of the CPU engine through whole one-operator models (run on kernels=ref,
// kernels=opt at every SIMD level and verify mode, which must agree): the unary activations and math functions, the
// binary arithmetic with broadcasting up to 6-D, the float32 / int32 / int16 ADD, and CAST. Expected values come from
// the test's own re-derivation of TensorFlow Lite's formulas: 64-bit integer arithmetic with explicit rounding for
// the requantizing operators (exact), the mathematical function for the fixed-point transcendental ones (exact
// wherever the true value lies clearly away from a rounding tie, within one step otherwise), hand-made tables. Also:
// saturation, rounding ties, zero divisors (inference errors) and refusals of malformed operands (load errors).
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <tuple>

#include "op_test_util.hpp"

using namespace aisrv;
using namespace aisrv::engine::cpu;
namespace tw = aisrv::tflite_writer;
using test::Bytes;
using test::bytes_of;
using test::values_of;

namespace {

// ---------------------------------------------------------------------------------------------------------------
// Model building

struct Spec {
  DType type = DType::float32;
  std::vector<int32_t> shape;
  std::optional<tw::Quant> quant;
};

Spec plain(DType type, std::vector<int32_t> shape) { return Spec{type, std::move(shape), std::nullopt}; }
Spec quant(DType type, std::vector<int32_t> shape, float scale, int64_t zero_point) {
  return Spec{type, std::move(shape), test::q(scale, zero_point)};
}

int32_t tensor(tw::ModelBuilder& b, const char* name, const Spec& s, Bytes data = {}) {
  return b.add_tensor(tw::TensorDef{name, s.type, s.shape, s.quant, std::move(data), std::nullopt, false});
}

Bytes unary_model(tw::Op op, const Spec& in, const Spec& out, tw::Options options = {}) {
  tw::ModelBuilder b;
  const int32_t x = tensor(b, "x", in);
  const int32_t y = tensor(b, "y", out);
  b.add_operator(op, {x}, {y}, std::move(options));
  b.set_inputs({x});
  b.set_outputs({y});
  return b.finish("elementwise unary");
}

// Input 2 is a graph input, or a constant when `constant2` is given.
Bytes binary_model(tw::Op op, const Spec& a, const Spec& bspec, const Spec& out, tw::Options options = {},
                   std::optional<Bytes> constant2 = std::nullopt) {
  tw::ModelBuilder b;
  const int32_t x = tensor(b, "x", a);
  const int32_t y = constant2 ? tensor(b, "y_const", bspec, *constant2) : tensor(b, "y", bspec);
  const int32_t z = tensor(b, "z", out);
  b.add_operator(op, {x, y}, {z}, std::move(options));
  if (constant2)
    b.set_inputs({x});
  else
    b.set_inputs({x, y});
  b.set_outputs({z});
  return b.finish("elementwise binary");
}

template <typename T>
std::vector<T> run1(const Bytes& model, const std::vector<Bytes>& inputs) {
  const std::vector<Bytes> outs = test::run_everywhere(model, inputs);
  REQUIRE(outs.size() == 1);
  return values_of<T>(outs[0]);
}

template <typename T>
std::vector<T> iota_values(int32_t from, int32_t to) {  // from..to inclusive
  std::vector<T> v;
  for (int32_t i = from; i <= to; ++i) v.push_back(static_cast<T>(i));
  return v;
}

template <typename T>
std::vector<T> random_values(std::mt19937& rng, size_t n, int64_t lo = std::numeric_limits<T>::min(),
                             int64_t hi = std::numeric_limits<T>::max()) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------------------------------------------
// Independent re-derivation of TensorFlow Lite's integer arithmetic (64-bit, explicit rounding)

// QuantizeMultiplier: real = mantissa * 2^(exponent - 31), mantissa in [2^30, 2^31) (or negative for a negative real).
struct Multiplier {
  int64_t mantissa = 0;
  int exponent = 0;
};

Multiplier quantize(double real) {
  if (real == 0.0) return {};
  int e = 0;
  const double f = std::frexp(real, &e);
  int64_t m = std::llround(f * 2147483648.0);
  if (m == (int64_t{1} << 31)) {
    m /= 2;
    ++e;
  }
  if (e < -31) return {};
  return {m, e};
}

// round(a * b / 2^31), ties toward +infinity; (-2^31)^2 saturates.
int64_t high_mul(int64_t a, int64_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  const int64_t p = a * b;
  return p >= 0 ? (p + (int64_t{1} << 30)) >> 31 : -((-p + (int64_t{1} << 30) - 1) >> 31);
}

// round(x / 2^e), ties away from zero.
int64_t round_shift(int64_t x, int e) {
  if (e == 0) return x;
  const int64_t half = int64_t{1} << (e - 1);
  return x >= 0 ? (x + half) >> e : -((-x + half) >> e);
}

int64_t wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

// MultiplyByQuantizedMultiplier with its double rounding (left shift wrapping as two's complement).
int64_t requant(int64_t x, Multiplier m) {
  const int left = std::max(m.exponent, 0), right = std::max(-m.exponent, 0);
  return round_shift(high_mul(wrap32(x * (int64_t{1} << left)), m.mantissa), right);
}

// CalculateActivationRangeQuantized.
std::pair<int64_t, int64_t> act_bounds(Activation a, int64_t qmin, int64_t qmax, float scale, int64_t zp) {
  auto q = [&](float v) { return zp + static_cast<int64_t>(std::round(v / scale)); };
  switch (a) {
    case Activation::relu: return {std::max(qmin, q(0.0f)), qmax};
    case Activation::relu6: return {std::max(qmin, q(0.0f)), std::min(qmax, q(6.0f))};
    case Activation::relu_n1_to_1: return {std::max(qmin, q(-1.0f)), std::min(qmax, q(1.0f))};
    default: return {qmin, qmax};
  }
}

template <typename T>
T clamp_to(int64_t v, std::pair<int64_t, int64_t> b) {
  return static_cast<T>(std::clamp(v, b.first, b.second));
}

template <typename T>
std::pair<int64_t, int64_t> type_range() {
  return {std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
}

// Checks a fixed-point approximation against the exact real value `want` (in output steps, before rounding):
// where `want` lies at least `margin` away from a rounding tie the output must be round_half_away(want) clamped to
// the type; elsewhere it may be either neighbour. Returns how many elements were checked exactly.
template <typename T>
int check_near_exact(const std::vector<T>& got, const std::vector<double>& want, double margin,
                     const std::string& what) {
  REQUIRE(got.size() == want.size());
  int exact = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want[i];
    const double lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    const double rounded = std::clamp(w >= 0 ? std::floor(w + 0.5) : -std::floor(-w + 0.5), lo, hi);
    const double frac = std::abs(w - std::trunc(w));
    const bool near_tie = std::abs(frac - 0.5) < margin;
    if (!near_tie || w >= hi + 1 || w <= lo - 1) {
      ++exact;
      CHECK_MESSAGE(double(got[i]) == rounded, what << ": element " << i << " got " << double(got[i]) << ", want "
                                                    << rounded << " (exact " << w << ")");
    } else {
      CHECK_MESSAGE(std::abs(double(got[i]) - w) <= 1.0,
                    what << ": element " << i << " got " << double(got[i]) << ", exact " << w);
    }
  }
  return exact;
}

// ---------------------------------------------------------------------------------------------------------------
// Broadcasting: the input element feeding each output element (numpy rules, right-aligned shapes)

int64_t source_index(const std::vector<int32_t>& in, const std::vector<int32_t>& out, int64_t k) {
  std::vector<int64_t> coord(out.size());
  for (size_t d = out.size(); d-- > 0;) {
    coord[d] = k % out[d];
    k /= out[d];
  }
  int64_t index = 0;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) index = index * in[d] + (in[d] == 1 ? 0 : coord[lead + d]);
  return index;
}

int64_t elements(const std::vector<int32_t>& s) {
  int64_t n = 1;
  for (int32_t d : s) n *= d;
  return n;
}

}  // namespace

// =================================================================================================================
// Unary operators, float32

TEST_CASE("float32 unary operators follow the reference formulas") {
  const std::vector<float> x = {-20.0f, -9.5f, -3.0f, -1.5f, -0.0f, 0.0f, 0.25f, 1.0f, 2.5f, 5.9f, 6.5f, 17.0f, 0.7f};
  const Spec s = plain(DType::float32, {13});
  auto run = [&](tw::Op op, tw::Options o = {}) { return run1<float>(unary_model(op, s, s, o), {bytes_of(x)}); };

  SUBCASE("LOGISTIC: exp(x) below -9, exactly 1 above 16.619..., 1 / (1 + exp(-x)) between") {
    const auto y = run(tw::Op::logistic);
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = x[i] > 16.619047164916992188f ? 1.0f
                         : x[i] < -9.0f                ? std::exp(x[i])
                                                       : 1.0f / (1.0f + std::exp(-x[i]));
      CHECK(y[i] == want);
    }
    CHECK(y[0] == std::exp(-20.0f));
    CHECK(y[11] == 1.0f);
  }
  SUBCASE("TANH, EXP, FLOOR, SQRT, RSQRT") {
    const auto t = run(tw::Op::tanh);
    const auto e = run(tw::Op::exp);
    const auto f = run(tw::Op::floor);
    const auto q = run(tw::Op::sqrt);
    const auto r = run(tw::Op::rsqrt);
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(t[i] == std::tanh(x[i]));
      CHECK(e[i] == std::exp(x[i]));
      CHECK(f[i] == std::floor(x[i]));
      if (x[i] >= 0) {
        CHECK(q[i] == std::sqrt(x[i]));
        CHECK(r[i] == 1.0f / std::sqrt(x[i]));
      } else {
        CHECK(std::isnan(q[i]));
        CHECK(std::isnan(r[i]));
      }
    }
    CHECK(f[1] == -10.0f);
    CHECK(std::isinf(r[4]));
    CHECK(r[4] < 0);  // 1 / sqrt(-0) = -inf
  }
  SUBCASE("RELU, RELU6, RELU_N1_TO_1 clamp; -0 and NaN pass RELU unchanged as the reference's comparisons do") {
    const auto a = run(tw::Op::relu);
    const auto b = run(tw::Op::relu6);
    const auto c = run(tw::Op::relu_n1_to_1);
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(a[i] == (x[i] < 0 ? 0.0f : x[i]));
      CHECK(b[i] == std::min(6.0f, std::max(0.0f, x[i])));
      CHECK(c[i] == std::min(1.0f, std::max(-1.0f, x[i])));
    }
    CHECK(std::signbit(a[4]));  // -0 stays -0 (the reference tests x < 0)
    const std::vector<float> nan = {std::nanf("")};
    CHECK(std::isnan(run1<float>(unary_model(tw::Op::relu, plain(DType::float32, {1}), plain(DType::float32, {1})),
                                 {bytes_of(nan)})[0]));
  }
  SUBCASE("HARD_SWISH: x * min(6, max(0, x + 3)) / 6") {
    const auto y = run(tw::Op::hard_swish);
    for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == x[i] * std::min(6.0f, std::max(0.0f, x[i] + 3)) / 6);
    CHECK(y[2] == 0.0f);
    CHECK(y[10] == 6.5f);
  }
  SUBCASE("LEAKY_RELU with alpha 0.2 and alpha -1.5") {
    for (float alpha : {0.2f, -1.5f}) {
      const auto y = run(tw::Op::leaky_relu, LeakyReluOptions{alpha});
      for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == (x[i] > 0 ? x[i] : x[i] * alpha));
    }
  }
}

// =================================================================================================================
// LOGISTIC / TANH, quantized

TEST_CASE("int8 LOGISTIC: every input byte for several input scales and zero points (TFLite Micro fixed point)") {
  for (auto [scale, zp] : {std::pair{0.1f, 0}, std::pair{0.0625f, -10}, std::pair{0.02f, 50}, std::pair{0.35f, -128},
                           std::pair{1.0f / 256, 127}, std::pair{3.0f, 3}}) {
    CAPTURE(scale);
    CAPTURE(zp);
    const auto x = iota_values<int8_t>(-128, 127);
    const auto y = run1<int8_t>(unary_model(tw::Op::logistic, quant(DType::int8, {256}, scale, zp),
                                            quant(DType::int8, {256}, 1.0f / 256, -128)),
                                {bytes_of(x)});
    std::vector<double> want;
    for (int8_t v : x) want.push_back(256.0 / (1.0 + std::exp(-(double(v) - zp) * scale)) - 128.0);
    const int exact = check_near_exact(y, want, 0.01, "logistic");
    CHECK(exact > 240);
    CHECK(y[static_cast<size_t>(zp + 128)] == 0);  // sigmoid(0) = 1/2 exactly
  }
}

TEST_CASE("int8 LOGISTIC: inputs at and beyond the saturation radius") {
  // Scale 1: radius floor(15 * 2^27 / 2^28) = 7, so |x - zp| >= 7 saturates to -128 / 127.
  const std::vector<int8_t> x = {-128, -8, -7, -6, 0, 6, 7, 8, 127};
  const auto y = run1<int8_t>(
      unary_model(tw::Op::logistic, quant(DType::int8, {9}, 1.0f, 0), quant(DType::int8, {9}, 1.0f / 256, -128)),
      {bytes_of(x)});
  CHECK(y[0] == -128);
  CHECK(y[1] == -128);
  CHECK(y[2] == -128);
  CHECK(y[3] == -127);  // 256 * sigmoid(-6) = 0.63 -> 1 - 128
  CHECK(y[4] == 0);
  CHECK(y[5] == 127);  // 256 * sigmoid(6) = 255.37 -> 255 - 128
  CHECK(y[6] == 127);
  CHECK(y[8] == 127);
}

TEST_CASE("int8 TANH: every input byte, output (1/128, 0)") {
  for (auto [scale, zp] : {std::pair{0.05f, 0}, std::pair{0.03125f, -20}, std::pair{0.2f, 100}}) {
    CAPTURE(scale);
    const auto x = iota_values<int8_t>(-128, 127);
    const auto y = run1<int8_t>(
        unary_model(tw::Op::tanh, quant(DType::int8, {256}, scale, zp), quant(DType::int8, {256}, 1.0f / 128, 0)),
        {bytes_of(x)});
    std::vector<double> want;
    for (int8_t v : x) want.push_back(128.0 * std::tanh((double(v) - zp) * scale));
    CHECK(check_near_exact(y, want, 0.01, "tanh") > 240);
    CHECK(y[static_cast<size_t>(zp + 128)] == 0);
  }
}

TEST_CASE("uint8 LOGISTIC / TANH: TensorFlow Lite's float lookup table") {
  const auto x = iota_values<uint8_t>(0, 255);
  for (auto [scale, zp] : {std::pair{0.1f, 128}, std::pair{0.037f, 7}, std::pair{0.5f, 250}}) {
    CAPTURE(scale);
    const auto y = run1<uint8_t>(
        unary_model(tw::Op::logistic, quant(DType::uint8, {256}, scale, zp), quant(DType::uint8, {256}, 1.0f / 256, 0)),
        {bytes_of(x)});
    const auto t = run1<uint8_t>(
        unary_model(tw::Op::tanh, quant(DType::uint8, {256}, scale, zp), quant(DType::uint8, {256}, 0.0078125f, 128)),
        {bytes_of(x)});
    for (int v = 0; v < 256; ++v) {
      const float real = scale * static_cast<float>(v - zp);
      const float s = 1.0f / (1.0f + std::exp(-real));
      const int ws = std::clamp(static_cast<int>(std::round(s * 256.0f)), 0, 255);
      CHECK(int(y[static_cast<size_t>(v)]) == ws);
      const int wt = std::clamp(static_cast<int>(std::round(std::tanh(real) * 128.0f) + 128.0f), 0, 255);
      CHECK(int(t[static_cast<size_t>(v)]) == wt);
    }
  }
  // The output zero point moves the table (the reference adds it before clamping).
  const auto y = run1<uint8_t>(
      unary_model(tw::Op::logistic, quant(DType::uint8, {256}, 0.1f, 128), quant(DType::uint8, {256}, 1.0f / 256, 10)),
      {bytes_of(x)});
  CHECK(y[0] == 10);
  CHECK(y[128] == 138);
  CHECK(y[255] == 255);
}

TEST_CASE("int16 LOGISTIC / TANH: table interpolation, exact at 0 and in saturation, near the function elsewhere") {
  // Power-of-two input scale 2^-12 (the table's own), then a general scale through the integer multiplier.
  for (float scale : {1.0f / 4096, 0.001f, 1.0f / 2048}) {
    CAPTURE(scale);
    const std::vector<int16_t> x = {-32768, -20000, -4096, -1000, -1, 0, 1, 777, 4096, 12000, 32767};
    const Spec in = quant(DType::int16, {11}, scale, 0), out = quant(DType::int16, {11}, 1.0f / 32768, 0);
    const auto s = run1<int16_t>(unary_model(tw::Op::logistic, in, out), {bytes_of(x)});
    const auto t = run1<int16_t>(unary_model(tw::Op::tanh, in, out), {bytes_of(x)});
    for (size_t i = 0; i < x.size(); ++i) {
      const double r = double(x[i]) * scale;
      CHECK(std::abs(s[i] - 32768.0 / (1.0 + std::exp(-r))) <= 2.0);
      CHECK(std::abs(t[i] - 32768.0 * std::tanh(r)) <= 2.0);
    }
    CHECK(s[5] == 16384);
    CHECK(t[5] == 0);
  }
  const std::vector<int16_t> x = {-32768, 32767};
  const auto s = run1<int16_t>(unary_model(tw::Op::logistic, quant(DType::int16, {2}, 1.0f / 1024, 0),
                                           quant(DType::int16, {2}, 1.0f / 32768, 0)),
                               {bytes_of(x)});
  CHECK(s == std::vector<int16_t>{1, 32767});  // beyond the table: the reference's saturated ends
}

// =================================================================================================================
// HARD_SWISH, RELU family, LEAKY_RELU, RSQRT — quantized

TEST_CASE("int8 / uint8 HARD_SWISH: 16-bit fixed point, every input byte") {
  for (auto [in_scale, in_zp, out_scale, out_zp] :
       {std::tuple{0.05f, 0, 0.04f, -100}, std::tuple{0.1f, -30, 0.06f, -120}, std::tuple{0.02f, 40, 0.015f, -90}}) {
    CAPTURE(in_scale);
    const auto x = iota_values<int8_t>(-128, 127);
    const auto y = run1<int8_t>(unary_model(tw::Op::hard_swish, quant(DType::int8, {256}, in_scale, in_zp),
                                            quant(DType::int8, {256}, out_scale, out_zp)),
                                {bytes_of(x)});
    std::vector<double> want;
    for (int8_t v : x) {
      const double r = (double(v) - in_zp) * in_scale;
      want.push_back(r * std::min(6.0, std::max(0.0, r + 3)) / 6 / out_scale + out_zp);
    }
    CHECK(check_near_exact(y, want, 0.1, "hard_swish int8") > 200);
    const auto u = iota_values<uint8_t>(0, 255);
    const auto yu = run1<uint8_t>(unary_model(tw::Op::hard_swish, quant(DType::uint8, {256}, in_scale, in_zp + 128),
                                              quant(DType::uint8, {256}, out_scale, out_zp + 128)),
                                  {bytes_of(u)});
    for (size_t i = 0; i < 256; ++i) CHECK(int(yu[i]) == int(y[i]) + 128);  // the same arithmetic shifted by 128
  }
}

TEST_CASE("quantized RELU, RELU6, RELU_N1_TO_1: requantize then clamp, every input value") {
  struct Case {
    tw::Op op;
    Activation bounds;
    float in_scale, out_scale;
    int in_zp, out_zp;
  };
  const Case cases[] = {
      {tw::Op::relu, Activation::relu, 0.05f, 0.03f, -5, -128},
      {tw::Op::relu6, Activation::relu6, 0.1f, 6.0f / 255, 3, -128},
      {tw::Op::relu6, Activation::relu6, 0.05f, 0.05f, 10, 10},
      {tw::Op::relu_n1_to_1, Activation::relu_n1_to_1, 0.02f, 1.0f / 127, 0, 0},
      {tw::Op::relu, Activation::relu, 0.01f, 0.08f, 0, -100},
  };
  for (const Case& c : cases) {
    CAPTURE(static_cast<int>(c.op));
    const Multiplier m = quantize(static_cast<double>(c.in_scale / c.out_scale));
    {
      const auto x = iota_values<int8_t>(-128, 127);
      const auto y = run1<int8_t>(unary_model(c.op, quant(DType::int8, {256}, c.in_scale, c.in_zp),
                                              quant(DType::int8, {256}, c.out_scale, c.out_zp)),
                                  {bytes_of(x)});
      const auto b = act_bounds(c.bounds, -128, 127, c.out_scale, c.out_zp);
      for (size_t i = 0; i < 256; ++i)
        CHECK(int(y[i]) == int(clamp_to<int8_t>(c.out_zp + requant(x[i] - c.in_zp, m), b)));
    }
    {
      const auto x = iota_values<uint8_t>(0, 255);
      const auto y = run1<uint8_t>(unary_model(c.op, quant(DType::uint8, {256}, c.in_scale, c.in_zp + 128),
                                               quant(DType::uint8, {256}, c.out_scale, c.out_zp + 128)),
                                   {bytes_of(x)});
      const auto b = act_bounds(c.bounds, 0, 255, c.out_scale, c.out_zp + 128);
      for (size_t i = 0; i < 256; ++i)
        CHECK(int(y[i]) == int(clamp_to<uint8_t>(c.out_zp + 128 + requant(x[i] - (c.in_zp + 128), m), b)));
    }
  }
  // RELU6 with the same quantization in and out is the plain clamp TFLite Micro computes: [zp, zp + round(6 / s)].
  const auto x = iota_values<int8_t>(-128, 127);
  const auto y = run1<int8_t>(
      unary_model(tw::Op::relu6, quant(DType::int8, {256}, 0.05f, -20), quant(DType::int8, {256}, 0.05f, -20)),
      {bytes_of(x)});
  for (size_t i = 0; i < 256; ++i) CHECK(int(y[i]) == std::clamp(int(x[i]), -20, 100));
  // int16: zero points 0.
  const std::vector<int16_t> h = {-32768, -7, 0, 5, 12345, 32767};
  const auto yh = run1<int16_t>(
      unary_model(tw::Op::relu6, quant(DType::int16, {6}, 0.001f, 0), quant(DType::int16, {6}, 0.0005f, 0)),
      {bytes_of(h)});
  const Multiplier mh = quantize(static_cast<double>(0.001f / 0.0005f));
  const auto bh = act_bounds(Activation::relu6, -32768, 32767, 0.0005f, 0);
  for (size_t i = 0; i < h.size(); ++i) CHECK(yh[i] == clamp_to<int16_t>(requant(h[i], mh), bh));
  CHECK(yh[5] == 12000);
}

TEST_CASE("quantized LEAKY_RELU: identity and alpha multipliers, negative alpha, int8 / uint8 / int16") {
  for (float alpha : {0.1f, 0.3333f, -0.5f, 0.0f, 1.7f}) {
    CAPTURE(alpha);
    const float si = 0.05f, so = 0.04f;
    const Multiplier mi = quantize(static_cast<double>(si / so));
    const Multiplier ma = quantize(static_cast<double>(si * alpha / so));
    const Multiplier ma_abs{std::abs(ma.mantissa), ma.exponent};
    auto expect = [&](int64_t centred, int64_t out_zp) {
      if (centred >= 0) return out_zp + requant(centred, mi);
      const int64_t s = requant(centred, ma_abs);
      return out_zp + (ma.mantissa < 0 ? -s : s);
    };
    const auto x = iota_values<int8_t>(-128, 127);
    const auto y = run1<int8_t>(unary_model(tw::Op::leaky_relu, quant(DType::int8, {256}, si, 7),
                                            quant(DType::int8, {256}, so, -3), LeakyReluOptions{alpha}),
                                {bytes_of(x)});
    for (size_t i = 0; i < 256; ++i)
      CHECK(int(y[i]) == int(clamp_to<int8_t>(expect(x[i] - 7, -3), type_range<int8_t>())));
    const auto u = iota_values<uint8_t>(0, 255);
    const auto yu = run1<uint8_t>(unary_model(tw::Op::leaky_relu, quant(DType::uint8, {256}, si, 135),
                                              quant(DType::uint8, {256}, so, 125), LeakyReluOptions{alpha}),
                                  {bytes_of(u)});
    for (size_t i = 0; i < 256; ++i)
      CHECK(int(yu[i]) == int(clamp_to<uint8_t>(expect(u[i] - 135, 125), type_range<uint8_t>())));
    const std::vector<int16_t> h = {-32768, -30000, -3, -1, 0, 1, 999, 32767};
    const auto yh = run1<int16_t>(unary_model(tw::Op::leaky_relu, quant(DType::int16, {8}, si, 0),
                                              quant(DType::int16, {8}, so, 0), LeakyReluOptions{alpha}),
                                  {bytes_of(h)});
    for (size_t i = 0; i < h.size(); ++i) CHECK(yh[i] == clamp_to<int16_t>(expect(h[i], 0), type_range<int16_t>()));
  }
}

TEST_CASE("int8 RSQRT with zero point -128: Newton-Raphson inverse square root, 0 gives the maximum") {
  for (auto [si, so, zo] :
       {std::tuple{0.01f, 0.1f, -128}, std::tuple{1.0f, 1.0f / 128, -128}, std::tuple{0.1f, 0.02f, 0}}) {
    CAPTURE(si);
    const auto x = iota_values<int8_t>(-128, 127);
    const auto y =
        run1<int8_t>(unary_model(tw::Op::rsqrt, quant(DType::int8, {256}, si, -128), quant(DType::int8, {256}, so, zo)),
                     {bytes_of(x)});
    CHECK(y[0] == 127);
    std::vector<int8_t> got(y.begin() + 1, y.end());
    std::vector<double> want;
    for (int v = 1; v < 256; ++v) want.push_back(1.0 / std::sqrt(v * double(si)) / so + zo);
    CHECK(check_near_exact(got, want, 0.02, "rsqrt") > 200);
  }
}

// =================================================================================================================
// MUL

namespace {

// Expected quantized MUL of one pair (TFLite's MulElementwise), multiplier given.
int64_t mul_expect(int64_t x, int64_t y, int64_t zp1, int64_t zp2, int64_t zpo, Multiplier m) {
  return zpo + requant((x - zp1) * (y - zp2), m);
}

}  // namespace

TEST_CASE("int8 MUL: random values and scales, every fused activation (multiplier from a double product)") {
  std::mt19937 rng(11);
  for (Activation act : {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1}) {
    for (int trial = 0; trial < 3; ++trial) {
      const float s1 = std::uniform_real_distribution<float>(0.005f, 0.2f)(rng);
      const float s2 = std::uniform_real_distribution<float>(0.005f, 0.2f)(rng);
      const float so = std::uniform_real_distribution<float>(0.01f, 0.3f)(rng);
      const int zp1 = int(rng() % 256) - 128, zp2 = int(rng() % 256) - 128, zpo = int(rng() % 200) - 100;
      const auto a = random_values<int8_t>(rng, 60), b = random_values<int8_t>(rng, 60);
      const auto y = run1<int8_t>(
          binary_model(tw::Op::mul, quant(DType::int8, {3, 4, 5}, s1, zp1), quant(DType::int8, {3, 4, 5}, s2, zp2),
                       quant(DType::int8, {3, 4, 5}, so, zpo), MulOptions{act}),
          {bytes_of(a), bytes_of(b)});
      const Multiplier m = quantize(double(s1) * double(s2) / double(so));
      const auto bounds = act_bounds(act, -128, 127, so, zpo);
      for (size_t i = 0; i < a.size(); ++i)
        CHECK(int(y[i]) == int(clamp_to<int8_t>(mul_expect(a[i], b[i], zp1, zp2, zpo, m), bounds)));
    }
  }
}

TEST_CASE("quantized MUL rounding ties: TFLite's double rounding (high multiply ties up, then shift ties away)") {
  // Scales 0.5 * 0.5 / 1: multiplier 2^30 * 2^(-1 - 31), i.e. a rounding high multiply by 1/2 then a rounding
  // shift by 1. The product 1 (0.25) becomes 1 through two ties: 1/2 -> 1, then 1/2 -> 1. -1 (-0.25) becomes 0.
  const std::vector<int8_t> a = {1, -1, 1, -1, 3, -3, 2, -2, 127, -128};
  const std::vector<int8_t> b = {1, 1, -1, -1, 1, 1, 1, 1, 127, -128};
  const auto y = run1<int8_t>(binary_model(tw::Op::mul, quant(DType::int8, {10}, 0.5f, 0),
                                           quant(DType::int8, {10}, 0.5f, 0), quant(DType::int8, {10}, 1.0f, 0)),
                              {bytes_of(a), bytes_of(b)});
  CHECK(y == std::vector<int8_t>{1, 0, 0, 1, 1, -1, 1, -1, 127, 127});  // 127 * 127 / 4 and 128 * 128 / 4 saturate
}

TEST_CASE("quantized MUL with a degenerate output scale saturates every non-zero product (Coral traffic LSTM)") {
  // The traffic model's LSTM cell multiplies uint8 gates into an output of scale ~3e-35: a ratio near 2^101. Every
  // non-zero product is then far beyond the output range; zero stays at the zero point.
  const std::vector<uint8_t> a = {0, 1, 0, 200, 255, 3};
  const std::vector<uint8_t> b = {0, 0, 9, 1, 255, 7};
  const auto y = run1<uint8_t>(binary_model(tw::Op::mul, quant(DType::uint8, {6}, 0.0235294122f, 0),
                                            quant(DType::uint8, {6}, 0.00390625f, 0),
                                            quant(DType::uint8, {6}, 2.97212411e-35f, 0)),
                               {bytes_of(a), bytes_of(b)});
  CHECK(y == std::vector<uint8_t>{0, 0, 0, 255, 255, 255});
  const std::vector<int8_t> c = {0, 1, -1, 127, -128, 5};
  const std::vector<int8_t> d = {7, 1, 1, -128, -128, 0};
  const auto z = run1<int8_t>(binary_model(tw::Op::mul, quant(DType::int8, {6}, 0.02f, 0),
                                           quant(DType::int8, {6}, 0.004f, 0), quant(DType::int8, {6}, 1e-30f, 3)),
                              {bytes_of(c), bytes_of(d)});
  CHECK(z == std::vector<int8_t>{3, 127, -128, -128, 127, 3});  // by the sign of the product
  // A ratio that is not finite in float is still refused.
  CHECK(contains(test::load_error(binary_model(tw::Op::mul, quant(DType::uint8, {6}, 1e20f, 0),
                                               quant(DType::uint8, {6}, 1e20f, 0), quant(DType::uint8, {6}, 1e-20f, 0))),
                 "not finite"));
}

TEST_CASE("uint8 MUL takes TensorFlow Lite's float multiplier, int8 TFLite Micro's double one") {
  // Find scales whose float and double ratios quantize differently and inputs where that changes the output, so
  // that this test tells the two derivations apart.
  std::mt19937 rng(5);
  bool found = false;
  for (int attempt = 0; attempt < 2000 && !found; ++attempt) {
    const float s1 = std::uniform_real_distribution<float>(0.001f, 0.1f)(rng);
    const float s2 = std::uniform_real_distribution<float>(0.001f, 0.1f)(rng);
    const float so = std::uniform_real_distribution<float>(0.0005f, 0.05f)(rng);
    const Multiplier mf = quantize(static_cast<double>(s1 * s2 / so));
    const Multiplier md = quantize(double(s1) * double(s2) / double(so));
    if (mf.mantissa == md.mantissa && mf.exponent == md.exponent) continue;
    const int zp1 = 120, zp2 = 131, zpo = 128;
    std::vector<uint8_t> a, b;
    for (int x = 0; x < 256 && a.size() < 40; ++x)
      for (int y = 0; y < 256 && a.size() < 40; ++y) {
        const int64_t f = std::clamp<int64_t>(mul_expect(x, y, zp1, zp2, zpo, mf), 0, 255);
        const int64_t d = std::clamp<int64_t>(mul_expect(x, y, zp1, zp2, zpo, md), 0, 255);
        if (f != d) {
          a.push_back(uint8_t(x));
          b.push_back(uint8_t(y));
        }
      }
    if (a.empty()) continue;
    found = true;
    const int32_t n = static_cast<int32_t>(a.size());
    const auto yu = run1<uint8_t>(binary_model(tw::Op::mul, quant(DType::uint8, {n}, s1, zp1),
                                               quant(DType::uint8, {n}, s2, zp2), quant(DType::uint8, {n}, so, zpo)),
                                  {bytes_of(a), bytes_of(b)});
    std::vector<int8_t> a8, b8;
    for (int32_t i = 0; i < n; ++i) {
      CHECK(int(yu[size_t(i)]) ==
            int(std::clamp<int64_t>(mul_expect(a[size_t(i)], b[size_t(i)], zp1, zp2, zpo, mf), 0, 255)));
      a8.push_back(int8_t(a[size_t(i)] - 128));
      b8.push_back(int8_t(b[size_t(i)] - 128));
    }
    const auto y8 = run1<int8_t>(binary_model(tw::Op::mul, quant(DType::int8, {n}, s1, zp1 - 128),
                                              quant(DType::int8, {n}, s2, zp2 - 128), quant(DType::int8, {n}, so, 0)),
                                 {bytes_of(a8), bytes_of(b8)});
    for (int32_t i = 0; i < n; ++i)
      CHECK(int(y8[size_t(i)]) ==
            int(std::clamp<int64_t>(mul_expect(a8[size_t(i)], b8[size_t(i)], zp1 - 128, zp2 - 128, 0, md), -128, 127)));
  }
  CHECK(found);
}

TEST_CASE("int16 MUL (zero points 0), int32 MUL (wrapping, activation), float32 MUL (activation clamp)") {
  std::mt19937 rng(3);
  const auto a = random_values<int16_t>(rng, 40), b = random_values<int16_t>(rng, 40);
  const auto y = run1<int16_t>(
      binary_model(tw::Op::mul, quant(DType::int16, {40}, 0.001f, 0), quant(DType::int16, {40}, 0.002f, 0),
                   quant(DType::int16, {40}, 0.05f, 0), MulOptions{Activation::relu}),
      {bytes_of(a), bytes_of(b)});
  const Multiplier m = quantize(double(0.001f) * double(0.002f) / double(0.05f));
  const auto bounds = act_bounds(Activation::relu, -32768, 32767, 0.05f, 0);
  for (size_t i = 0; i < a.size(); ++i) CHECK(y[i] == clamp_to<int16_t>(requant(int64_t(a[i]) * b[i], m), bounds));

  const std::vector<int32_t> p = {65536, -7, 46341, INT32_MIN, 3, -5};
  const std::vector<int32_t> q = {65536, 6, 46341, -1, -4, -5};
  const auto yi = run1<int32_t>(
      binary_model(tw::Op::mul, plain(DType::int32, {6}), plain(DType::int32, {6}), plain(DType::int32, {6})),
      {bytes_of(p), bytes_of(q)});
  CHECK(yi == std::vector<int32_t>{0, -42, int32_t(uint32_t(46341) * 46341u), INT32_MIN, -12, 25});
  const auto yr = run1<int32_t>(binary_model(tw::Op::mul, plain(DType::int32, {6}), plain(DType::int32, {6}),
                                             plain(DType::int32, {6}), MulOptions{Activation::relu6}),
                                {bytes_of(p), bytes_of(q)});
  CHECK(yr == std::vector<int32_t>{0, 0, 0, 0, 0, 6});

  const float big = 3e38f;
  const std::vector<float> f = {1.5f, -2.0f, big, -big, 0.25f, std::nanf("")};
  const std::vector<float> g = {2.0f, 3.0f, 10.0f, 10.0f, -0.5f, 1.0f};
  const auto yf = run1<float>(
      binary_model(tw::Op::mul, plain(DType::float32, {6}), plain(DType::float32, {6}), plain(DType::float32, {6})),
      {bytes_of(f), bytes_of(g)});
  constexpr float kMax = std::numeric_limits<float>::max();
  CHECK(yf[0] == 3.0f);
  CHECK(yf[1] == -6.0f);
  CHECK(yf[2] == kMax);  // +inf clamped to the largest float (TFLite's NONE range is [lowest, max])
  CHECK(yf[3] == -kMax);
  CHECK(yf[4] == -0.125f);
  CHECK(std::isnan(yf[5]));
  const auto yn = run1<float>(binary_model(tw::Op::mul, plain(DType::float32, {6}), plain(DType::float32, {6}),
                                           plain(DType::float32, {6}), MulOptions{Activation::relu_n1_to_1}),
                              {bytes_of(f), bytes_of(g)});
  CHECK(std::vector<float>(yn.begin(), yn.begin() + 5) == std::vector<float>{1.0f, -1.0f, 1.0f, -1.0f, -0.125f});
}

// =================================================================================================================
// ADD (float32, int32, int16) and SUB

namespace {

// TFLite's general quantized ADD / SUB of one pair with given multipliers (input 2's may be negated: ADD form).
int64_t add_sub_expect(int64_t x, int64_t y, int left_shift, int64_t off1, int64_t off2, int64_t zpo, Multiplier m1,
                       Multiplier m2, Multiplier mo, bool subtract) {
  const int64_t a = requant((x + off1) * (int64_t{1} << left_shift), m1);
  const int64_t b = requant((y + off2) * (int64_t{1} << left_shift), m2);
  return zpo + requant(subtract ? a - b : a + b, mo);
}

}  // namespace

TEST_CASE("int8 and int16 SUB: TFLite Micro's rescaling with ratios formed in float") {
  std::mt19937 rng(21);
  for (DType type : {DType::int8, DType::int16}) {
    for (int trial = 0; trial < 4; ++trial) {
      const bool is16 = type == DType::int16;
      const float s1 = std::uniform_real_distribution<float>(0.01f, 0.1f)(rng);
      const float s2 = std::uniform_real_distribution<float>(0.01f, 0.1f)(rng);
      const float so = std::uniform_real_distribution<float>(0.02f, 0.2f)(rng);
      const int zp1 = is16 ? 0 : int(rng() % 256) - 128, zp2 = is16 ? 17 : int(rng() % 256) - 128;
      const int zpo = is16 ? -3 : int(rng() % 256) - 128;
      const Activation act = trial == 3 ? Activation::relu : Activation::none;
      const int ls = is16 ? 15 : 20;
      const float twice = 2 * std::max(s1, s2);
      const Multiplier m1 = quantize(double(s1 / twice)), m2 = quantize(double(s2 / twice));
      const Multiplier mo = quantize(double(twice / (float(1 << ls) * so)));
      const auto range = is16 ? type_range<int16_t>() : type_range<int8_t>();
      const auto bounds = act_bounds(act, range.first, range.second, so, zpo);
      const std::vector<int32_t> shape = {2, 3, 4};
      if (is16) {
        const auto a = random_values<int16_t>(rng, 24), b = random_values<int16_t>(rng, 24);
        const auto y = run1<int16_t>(binary_model(tw::Op::sub, quant(type, shape, s1, zp1), quant(type, shape, s2, zp2),
                                                  quant(type, shape, so, zpo), SubOptions{act, false}),
                                     {bytes_of(a), bytes_of(b)});
        for (size_t i = 0; i < a.size(); ++i)
          CHECK(y[i] == clamp_to<int16_t>(add_sub_expect(a[i], b[i], ls, -zp1, -zp2, zpo, m1, m2, mo, true), bounds));
      } else {
        const auto a = random_values<int8_t>(rng, 24), b = random_values<int8_t>(rng, 24);
        const auto y = run1<int8_t>(binary_model(tw::Op::sub, quant(type, shape, s1, zp1), quant(type, shape, s2, zp2),
                                                 quant(type, shape, so, zpo), SubOptions{act, true}),
                                    {bytes_of(a), bytes_of(b)});
        for (size_t i = 0; i < a.size(); ++i)
          CHECK(int(y[i]) ==
                int(clamp_to<int8_t>(add_sub_expect(a[i], b[i], ls, -zp1, -zp2, zpo, m1, m2, mo, true), bounds)));
      }
    }
  }
}

TEST_CASE("uint8 SUB runs as TensorFlow Lite's ADD with a negated input-2 multiplier (double ratios)") {
  std::mt19937 rng(8);
  const float s1 = 0.03f, s2 = 0.045f, so = 0.05f;
  const int zp1 = 100, zp2 = 140, zpo = 128;
  const double twice = 2 * double(std::max(s1, s2));
  const Multiplier m1 = quantize(double(s1) / twice), m2 = quantize(double(s2) / twice);
  const Multiplier mo = quantize(twice / (double(1 << 20) * double(so)));
  const Multiplier m2neg{-m2.mantissa, m2.exponent};
  const auto a = random_values<uint8_t>(rng, 100), b = random_values<uint8_t>(rng, 100);
  const auto y =
      run1<uint8_t>(binary_model(tw::Op::sub, quant(DType::uint8, {100}, s1, zp1), quant(DType::uint8, {100}, s2, zp2),
                                 quant(DType::uint8, {100}, so, zpo), SubOptions{Activation::relu6, true}),
                    {bytes_of(a), bytes_of(b)});
  const auto bounds = act_bounds(Activation::relu6, 0, 255, so, zpo);
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(int(y[i]) ==
          int(clamp_to<uint8_t>(add_sub_expect(a[i], b[i], 20, -zp1, -zp2, zpo, m1, m2neg, mo, false), bounds)));
}

TEST_CASE("int16 ADD: the general rescaling with 15 bits of headroom and double ratios (pot_scale_int16 ignored)") {
  std::mt19937 rng(4);
  const float s1 = 0.0003f, s2 = 0.0007f, so = 0.001f;
  const int zp1 = 5, zp2 = -9, zpo = 2;
  const double twice = 2 * double(std::max(s1, s2));
  const Multiplier m1 = quantize(double(s1) / twice), m2 = quantize(double(s2) / twice);
  const Multiplier mo = quantize(twice / (double(1 << 15) * double(so)));
  const auto a = random_values<int16_t>(rng, 50), b = random_values<int16_t>(rng, 50);
  for (bool pot : {false, true}) {
    const auto y = run1<int16_t>(
        binary_model(tw::Op::add, quant(DType::int16, {5, 10}, s1, zp1), quant(DType::int16, {5, 10}, s2, zp2),
                     quant(DType::int16, {5, 10}, so, zpo), AddOptions{Activation::none, pot}),
        {bytes_of(a), bytes_of(b)});
    for (size_t i = 0; i < a.size(); ++i)
      CHECK(y[i] == clamp_to<int16_t>(add_sub_expect(a[i], b[i], 15, -zp1, -zp2, zpo, m1, m2, mo, false),
                                      type_range<int16_t>()));
  }
}

TEST_CASE("float32 and int32 ADD / SUB: plain arithmetic, int32 wrapping, activations") {
  const std::vector<float> f = {1.5f, -2.0f, 3e38f, 0.1f, -7.0f};
  const std::vector<float> g = {2.25f, 0.5f, 3e38f, 0.2f, 1.0f};
  const Spec fs = plain(DType::float32, {5});
  const auto add = run1<float>(binary_model(tw::Op::add, fs, fs, fs), {bytes_of(f), bytes_of(g)});
  const auto sub = run1<float>(binary_model(tw::Op::sub, fs, fs, fs, SubOptions{Activation::relu, true}),
                               {bytes_of(f), bytes_of(g)});
  CHECK(add == std::vector<float>{3.75f, -1.5f, std::numeric_limits<float>::max(), 0.1f + 0.2f, -6.0f});
  CHECK(sub == std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f, 0.0f});
  const auto sub6 = run1<float>(binary_model(tw::Op::sub, fs, fs, fs, SubOptions{Activation::relu6, true}),
                                {bytes_of(g), bytes_of(f)});
  CHECK(sub6 == std::vector<float>{0.75f, 2.5f, 0.0f, 0.2f - 0.1f, 6.0f});

  const std::vector<int32_t> p = {INT32_MAX, INT32_MIN, -5, 7, 1000000};
  const std::vector<int32_t> q = {1, 1, -9, 7, -3};
  const Spec is = plain(DType::int32, {5});
  CHECK(run1<int32_t>(binary_model(tw::Op::add, is, is, is), {bytes_of(p), bytes_of(q)}) ==
        std::vector<int32_t>{INT32_MIN, INT32_MIN + 1, -14, 14, 999997});
  CHECK(run1<int32_t>(binary_model(tw::Op::sub, is, is, is), {bytes_of(p), bytes_of(q)}) ==
        std::vector<int32_t>{INT32_MAX - 1, INT32_MAX, 4, 0, 1000003});
  CHECK(run1<int32_t>(binary_model(tw::Op::sub, is, is, is, SubOptions{Activation::relu_n1_to_1, true}),
                      {bytes_of(p), bytes_of(q)}) == std::vector<int32_t>{1, 1, 1, 0, 1});
}

// =================================================================================================================
// DIV, FLOOR_DIV

TEST_CASE("float32 DIV: IEEE quotients (division by zero gives inf / NaN), activation clamp") {
  const std::vector<float> a = {1.0f, -3.0f, 0.0f, 7.0f, 5.0f, 1e30f};
  const std::vector<float> b = {4.0f, 0.0f, 0.0f, -2.0f, 3.0f, 1e-30f};
  const Spec s = plain(DType::float32, {6});
  const auto y = run1<float>(binary_model(tw::Op::div, s, s, s), {bytes_of(a), bytes_of(b)});
  CHECK(y[0] == 0.25f);
  CHECK(y[1] == -std::numeric_limits<float>::max());  // -inf, clamped by the NONE range
  CHECK(std::isnan(y[2]));
  CHECK(y[3] == -3.5f);
  CHECK(y[4] == 5.0f / 3.0f);
  CHECK(y[5] == std::numeric_limits<float>::max());
  const auto r =
      run1<float>(binary_model(tw::Op::div, s, s, s, DivOptions{Activation::relu}), {bytes_of(a), bytes_of(b)});
  CHECK(r[3] == 0.0f);
}

TEST_CASE("int32 DIV truncates toward zero; a zero divisor fails the inference") {
  const std::vector<int32_t> a = {7, -7, 7, -7, INT32_MIN, 0, 100};
  const std::vector<int32_t> b = {2, 2, -2, -2, -1, 5, 7};
  const Spec s = plain(DType::int32, {7});
  CHECK(run1<int32_t>(binary_model(tw::Op::div, s, s, s), {bytes_of(a), bytes_of(b)}) ==
        std::vector<int32_t>{3, -3, -3, 3, INT32_MIN, 0, 14});
  CHECK(run1<int32_t>(binary_model(tw::Op::div, s, s, s, DivOptions{Activation::relu6}), {bytes_of(a), bytes_of(b)}) ==
        std::vector<int32_t>{3, 0, 0, 3, 0, 0, 6});
  std::vector<int32_t> z = b;
  z[5] = 0;
  const std::string err = test::invoke_error(binary_model(tw::Op::div, s, s, s), {bytes_of(a), bytes_of(z)});
  CHECK(contains(err, "DIV"));
  CHECK(contains(err, "division by zero"));
  CHECK(test::invoke_error(binary_model(tw::Op::div, s, s, s), {bytes_of(a), bytes_of(z)}, "opt") == err);
}

TEST_CASE("int8 / uint8 DIV: reciprocal fixed point, near the exact quotient; zero divisor fails") {
  // TFLite's DivElementwise ends with a rounding shift by headroom(numerator) + log2(divisor) - output_shift bits.
  // Beyond 31 bits its 32-bit mask and shift are out of range; on the ARM targets of TensorFlow Lite Micro (whose
  // register shifts saturate) the result is then +1 for a non-negative and -1 for a negative numerator, and the
  // engine reproduces that. Elsewhere the output is the rounded exact quotient (up to the fixed-point error).
  auto headroom = [](int64_t v) { return v == 0 ? 31 : std::countl_zero(uint32_t(v >= 0 ? v : ~v)) - 1; };
  auto log2_floor = [](int64_t v) { return 31 - std::countl_zero(uint32_t(v)); };
  std::mt19937 rng(17);
  for (auto [s1, s2, so, zp1, zp2, zpo] :
       {std::tuple{0.05f, 0.02f, 0.1f, 3, -4, -10}, std::tuple{0.1f, 0.1f, 0.05f, 0, 0, 0},
        std::tuple{0.01f, 0.2f, 0.004f, -100, 20, 5}}) {
    CAPTURE(s1);
    std::vector<int8_t> a = random_values<int8_t>(rng, 300), b = random_values<int8_t>(rng, 300);
    for (auto& v : b)
      if (v == zp2) v = static_cast<int8_t>(zp2 + 1);
    const Multiplier m = quantize(static_cast<double>(s1 / (s2 * so)));
    const double real = double(m.mantissa) * std::ldexp(1.0, m.exponent - 31);
    const auto y = run1<int8_t>(binary_model(tw::Op::div, quant(DType::int8, {300}, s1, zp1),
                                             quant(DType::int8, {300}, s2, zp2), quant(DType::int8, {300}, so, zpo)),
                                {bytes_of(a), bytes_of(b)});
    std::vector<int8_t> got;
    std::vector<double> want;
    int wide_shifts = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      int64_t n = a[i] - zp1, d = b[i] - zp2;
      if (d < 0) n = -n, d = -d;
      if (headroom(n) + log2_floor(d) - m.exponent > 31) {
        ++wide_shifts;
        CHECK(int(y[i]) == std::clamp<int>(zpo + (n >= 0 ? 1 : -1), -128, 127));
        continue;
      }
      got.push_back(y[i]);
      want.push_back(double(n) / double(d) * real + zpo);
    }
    CHECK(check_near_exact(got, want, 0.01, "div") + wide_shifts > 250);
    // uint8 is the same kernel on the same centred values.
    std::vector<uint8_t> au, bu;
    for (size_t i = 0; i < a.size(); ++i) {
      au.push_back(uint8_t(a[i] + 128));
      bu.push_back(uint8_t(b[i] + 128));
    }
    const auto yu = run1<uint8_t>(
        binary_model(tw::Op::div, quant(DType::uint8, {300}, s1, zp1 + 128), quant(DType::uint8, {300}, s2, zp2 + 128),
                     quant(DType::uint8, {300}, so, zpo + 128)),
        {bytes_of(au), bytes_of(bu)});
    for (size_t i = 0; i < a.size(); ++i) CHECK(int(yu[i]) == int(y[i]) + 128);
  }
  {
    // Zero numerators: ratio 20 (output_shift 5), so divisors of 64 and more take the wide shift.
    const std::vector<int8_t> a = {0, 0, 0, 0, 0, 0, 40};
    const std::vector<int8_t> b = {1, 31, 32, 63, 64, -100, 80};
    const auto y =
        run1<int8_t>(binary_model(tw::Op::div, quant(DType::int8, {7}, 0.05f, 0), quant(DType::int8, {7}, 0.05f, 0),
                                  quant(DType::int8, {7}, 0.05f, -7), DivOptions{Activation::none}),
                     {bytes_of(a), bytes_of(b)});
    CHECK(y == std::vector<int8_t>{-7, -7, -7, -7, -6, -6, 3});  // 40 / 80 * 20 = 10
  }
  const std::vector<int8_t> a = {1, 2, 3};
  const std::vector<int8_t> b = {4, -3, 6};  // -3 is input 2's zero point: a zero divisor
  const Bytes model = binary_model(tw::Op::div, quant(DType::int8, {3}, 0.1f, 0), quant(DType::int8, {3}, 0.1f, -3),
                                   quant(DType::int8, {3}, 0.1f, 0));
  CHECK(contains(test::invoke_error(model, {bytes_of(a), bytes_of(b)}), "division by zero"));
}

TEST_CASE("FLOOR_DIV: int32 floors toward -infinity, float32 floors the quotient; any zero divisor fails") {
  const std::vector<int32_t> a = {7, -7, 7, -7, 6, INT32_MIN, 0, INT32_MAX};
  const std::vector<int32_t> b = {2, 2, -2, -2, 3, -1, -5, 2};
  const Spec s = plain(DType::int32, {8});
  CHECK(run1<int32_t>(binary_model(tw::Op::floor_div, s, s, s), {bytes_of(a), bytes_of(b)}) ==
        std::vector<int32_t>{3, -4, -4, 3, 2, INT32_MIN, 0, 1073741823});
  const std::vector<float> f = {7.0f, -7.5f, 1.0f, -0.5f};
  const std::vector<float> g = {2.0f, 2.0f, 3.0f, 4.0f};
  const Spec fs = plain(DType::float32, {4});
  CHECK(run1<float>(binary_model(tw::Op::floor_div, fs, fs, fs), {bytes_of(f), bytes_of(g)}) ==
        std::vector<float>{3.0f, -4.0f, 0.0f, -1.0f});
  // TensorFlow Lite checks every divisor element, float ones (-0 included) too.
  const std::vector<float> gz = {2.0f, -0.0f, 3.0f, 4.0f};
  CHECK(contains(test::invoke_error(binary_model(tw::Op::floor_div, fs, fs, fs), {bytes_of(f), bytes_of(gz)}),
                 "FLOOR_DIV"));
  std::vector<int32_t> bz = b;
  bz[3] = 0;
  CHECK(contains(test::invoke_error(binary_model(tw::Op::floor_div, s, s, s), {bytes_of(a), bytes_of(bz)}),
                 "division by zero"));
  // MoveNet's form: an int32 tensor divided by a constant scalar.
  const std::vector<int32_t> idx = {0, 47, 48, 95, 2303, -1};
  CHECK(run1<int32_t>(binary_model(tw::Op::floor_div, plain(DType::int32, {6}), plain(DType::int32, {}),
                                   plain(DType::int32, {6}), {}, bytes_of(std::vector<int32_t>{48})),
                      {bytes_of(idx)}) == std::vector<int32_t>{0, 0, 1, 1, 47, -1});
}

// =================================================================================================================
// SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, PRELU

TEST_CASE("SQUARED_DIFFERENCE: int8 (left shift 7), int16 (left shift 0), int32 wrapping, float32") {
  std::mt19937 rng(9);
  {
    const float s1 = 0.04f, s2 = 0.07f, so = 0.3f;
    const int zp1 = -20, zp2 = 33, zpo = -128;
    const double twice = 2.0 * double(std::max(s1, s2));
    const Multiplier m1 = quantize(double(s1) / twice), m2 = quantize(double(s2) / twice);
    const Multiplier mo = quantize(twice * twice / double(float(1 << 14) * so));
    const auto a = random_values<int8_t>(rng, 64), b = random_values<int8_t>(rng, 64);
    const auto y = run1<int8_t>(binary_model(tw::Op::squared_difference, quant(DType::int8, {8, 8}, s1, zp1),
                                             quant(DType::int8, {8, 8}, s2, zp2), quant(DType::int8, {8, 8}, so, zpo)),
                                {bytes_of(a), bytes_of(b)});
    for (size_t i = 0; i < a.size(); ++i) {
      const int64_t d = requant((a[i] - zp1) * 128, m1) - requant((b[i] - zp2) * 128, m2);
      CHECK(int(y[i]) == int(clamp_to<int8_t>(zpo + requant(d * d, mo), type_range<int8_t>())));
    }
  }
  {
    const float s1 = 0.001f, s2 = 0.0005f, so = 0.01f;
    const double twice = 2.0 * double(std::max(s1, s2));
    const Multiplier m1 = quantize(double(s1) / twice), m2 = quantize(double(s2) / twice);
    const Multiplier mo = quantize(twice * twice / double(so));
    const auto a = random_values<int16_t>(rng, 64), b = random_values<int16_t>(rng, 64);
    const auto y = run1<int16_t>(binary_model(tw::Op::squared_difference, quant(DType::int16, {64}, s1, 0),
                                              quant(DType::int16, {64}, s2, 0), quant(DType::int16, {64}, so, 0)),
                                 {bytes_of(a), bytes_of(b)});
    for (size_t i = 0; i < a.size(); ++i) {
      const int64_t d = requant(a[i], m1) - requant(b[i], m2);
      CHECK(y[i] == clamp_to<int16_t>(requant(d * d, mo), type_range<int16_t>()));
    }
  }
  const std::vector<int32_t> p = {5, -3, 70000, INT32_MIN};
  const std::vector<int32_t> q = {2, 4, 0, 1};
  const Spec is = plain(DType::int32, {4});
  CHECK(run1<int32_t>(binary_model(tw::Op::squared_difference, is, is, is), {bytes_of(p), bytes_of(q)}) ==
        std::vector<int32_t>{9, 49, int32_t(uint32_t(70000) * 70000u), 1});
  const std::vector<float> f = {1.5f, -2.0f};
  const std::vector<float> g = {-0.5f, 0.25f};
  const Spec fs = plain(DType::float32, {2});
  CHECK(run1<float>(binary_model(tw::Op::squared_difference, fs, fs, fs), {bytes_of(f), bytes_of(g)}) ==
        std::vector<float>{4.0f, 2.25f * 2.25f});
}

TEST_CASE("MAXIMUM / MINIMUM: raw comparisons for every type, NaN handled as the reference's a > b ? a : b") {
  const Spec f = plain(DType::float32, {4});
  const std::vector<float> a = {1.0f, std::nanf(""), 2.0f, -0.0f};
  const std::vector<float> b = {std::nanf(""), 1.0f, -2.0f, 0.0f};
  const auto mx = run1<float>(binary_model(tw::Op::maximum, f, f, f), {bytes_of(a), bytes_of(b)});
  const auto mn = run1<float>(binary_model(tw::Op::minimum, f, f, f), {bytes_of(a), bytes_of(b)});
  CHECK(std::isnan(mx[0]));  // 1 > NaN is false: the second operand
  CHECK(mx[1] == 1.0f);
  CHECK(mx[2] == 2.0f);
  CHECK(!std::signbit(mx[3]));  // -0 > 0 is false: +0
  CHECK(std::isnan(mn[0]));
  CHECK(mn[1] == 1.0f);
  CHECK(mn[2] == -2.0f);
  CHECK(!std::signbit(mn[3]));
  const std::vector<int8_t> c = {-128, 5, 127, 0};
  const std::vector<int8_t> d = {-1, 5, -128, 1};
  const Spec q8 = quant(DType::int8, {4}, 0.1f, 3);
  CHECK(run1<int8_t>(binary_model(tw::Op::maximum, q8, q8, q8), {bytes_of(c), bytes_of(d)}) ==
        std::vector<int8_t>{-1, 5, 127, 1});
  CHECK(run1<int8_t>(binary_model(tw::Op::minimum, q8, q8, q8), {bytes_of(c), bytes_of(d)}) ==
        std::vector<int8_t>{-128, 5, -128, 0});
  const std::vector<uint8_t> u = {0, 200, 7};
  const std::vector<uint8_t> v = {255, 100, 7};
  const Spec qu = quant(DType::uint8, {3}, 0.5f, 128);
  CHECK(run1<uint8_t>(binary_model(tw::Op::maximum, qu, qu, qu), {bytes_of(u), bytes_of(v)}) ==
        std::vector<uint8_t>{255, 200, 7});
  const std::vector<int16_t> h = {-32768, 300};
  const std::vector<int16_t> k = {32767, -300};
  const Spec q16 = quant(DType::int16, {2}, 0.001f, 0);
  CHECK(run1<int16_t>(binary_model(tw::Op::minimum, q16, q16, q16), {bytes_of(h), bytes_of(k)}) ==
        std::vector<int16_t>{-32768, -300});
  const std::vector<int32_t> i = {INT32_MIN, 9};
  const std::vector<int32_t> j = {INT32_MAX, -9};
  const Spec is = plain(DType::int32, {2});
  CHECK(run1<int32_t>(binary_model(tw::Op::maximum, is, is, is), {bytes_of(i), bytes_of(j)}) ==
        std::vector<int32_t>{INT32_MAX, 9});
  const std::vector<int64_t> l = {INT64_MIN, int64_t{1} << 40};
  const std::vector<int64_t> m = {-1, (int64_t{1} << 40) + 1};
  const Spec ls = plain(DType::int64, {2});
  CHECK(run1<int64_t>(binary_model(tw::Op::minimum, ls, ls, ls), {bytes_of(l), bytes_of(m)}) ==
        std::vector<int64_t>{INT64_MIN, int64_t{1} << 40});
  // The YOLO / clip form: a tensor against a constant scalar.
  const std::vector<float> x = {-3.0f, 0.5f, 9.0f};
  CHECK(run1<float>(binary_model(tw::Op::maximum, plain(DType::float32, {3}), plain(DType::float32, {}),
                                 plain(DType::float32, {3}), {}, bytes_of(std::vector<float>{0.0f})),
                    {bytes_of(x)}) == std::vector<float>{0.0f, 0.5f, 9.0f});
}

TEST_CASE("PRELU: float32, int8 and uint8 with per-channel alpha, int16 input with int8 alpha") {
  std::mt19937 rng(31);
  const std::vector<int32_t> shape = {1, 2, 3, 4}, alpha_shape = {1, 1, 4};
  {
    const auto x = random_floats(rng, 24, -3.0f, 3.0f);
    const std::vector<float> alpha = {0.0f, 0.25f, -1.0f, 2.0f};
    const auto y =
        run1<float>(binary_model(tw::Op::prelu, plain(DType::float32, shape), plain(DType::float32, alpha_shape),
                                 plain(DType::float32, shape), {}, bytes_of(alpha)),
                    {bytes_of(x)});
    for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == (x[i] >= 0 ? x[i] : x[i] * alpha[i % 4]));
  }
  const float si = 0.05f, sa = 0.01f, so = 0.04f;
  {
    const int zi = -3, za = 10, zo = 4;
    const Multiplier m1 = quantize(double(si) / double(so)), m2 = quantize(double(si) * double(sa) / double(so));
    const auto x = random_values<int8_t>(rng, 24);
    const std::vector<int8_t> alpha = {-128, 35, 127, 10};
    const auto y = run1<int8_t>(
        binary_model(tw::Op::prelu, quant(DType::int8, shape, si, zi), quant(DType::int8, alpha_shape, sa, za),
                     quant(DType::int8, shape, so, zo), {}, bytes_of(alpha)),
        {bytes_of(x)});
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t c = x[i] - zi;
      const int64_t v = c >= 0 ? requant(c, m1) : requant(c * (alpha[i % 4] - za), m2);
      CHECK(int(y[i]) == int(clamp_to<int8_t>(v + zo, type_range<int8_t>())));
    }
  }
  {
    const int zi = 120, za = 128, zo = 130;
    const Multiplier m1 = quantize(double(si / so)), m2 = quantize(double(si * sa / so));
    const auto x = random_values<uint8_t>(rng, 24);
    const std::vector<uint8_t> alpha = {0, 100, 255, 128};
    const auto y = run1<uint8_t>(
        binary_model(tw::Op::prelu, quant(DType::uint8, shape, si, zi), quant(DType::uint8, alpha_shape, sa, za),
                     quant(DType::uint8, shape, so, zo), {}, bytes_of(alpha)),
        {bytes_of(x)});
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t c = x[i] - zi;
      const int64_t v = c >= 0 ? requant(c, m1) : requant(c * (alpha[i % 4] - za), m2);
      CHECK(int(y[i]) == int(clamp_to<uint8_t>(v + zo, type_range<uint8_t>())));
    }
  }
  {
    const Multiplier m1 = quantize(double(0.001f) / double(0.002f)),
                     m2 = quantize(double(0.001f) * double(sa) / double(0.002f));
    const auto x = random_values<int16_t>(rng, 24);
    const std::vector<int8_t> alpha = {-128, -5, 64, 127};
    const auto y = run1<int16_t>(
        binary_model(tw::Op::prelu, quant(DType::int16, shape, 0.001f, 0), quant(DType::int8, alpha_shape, sa, 0),
                     quant(DType::int16, shape, 0.002f, 0), {}, bytes_of(alpha)),
        {bytes_of(x)});
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t v = x[i] >= 0 ? requant(x[i], m1) : requant(int64_t(x[i]) * alpha[i % 4], m2);
      CHECK(y[i] == clamp_to<int16_t>(v, type_range<int16_t>()));
    }
  }
}

// =================================================================================================================
// Broadcasting

TEST_CASE("broadcasting up to 6-D: every operator reads the numpy-broadcast source of each output element") {
  struct Shapes {
    std::vector<int32_t> a, b, out;
  };
  const Shapes cases[] = {
      {{2, 1, 3}, {4, 1}, {2, 4, 3}},
      {{1, 3, 1, 2, 1}, {2, 1, 4, 1, 5}, {2, 3, 4, 2, 5}},
      {{2, 1, 2, 1, 3, 1}, {1, 3, 1, 2, 1, 2}, {2, 3, 2, 2, 3, 2}},
      {{}, {2, 2, 1, 3}, {2, 2, 1, 3}},  // a scalar
      {{5}, {}, {5}},
      {{3, 1, 4}, {3, 1, 4}, {3, 1, 4}},
      {{1, 1, 1, 1, 1, 1}, {1}, {1, 1, 1, 1, 1, 1}},
  };
  std::mt19937 rng(77);
  for (const Shapes& c : cases) {
    CAPTURE(c.out.size());
    const int64_t n = elements(c.out);
    // float32 SUB, int32 MUL, int8 MUL, int8 SUB.
    const auto fa = random_floats(rng, size_t(elements(c.a)), -4, 4),
               fb = random_floats(rng, size_t(elements(c.b)), -4, 4);
    const auto fy = run1<float>(
        binary_model(tw::Op::sub, plain(DType::float32, c.a), plain(DType::float32, c.b), plain(DType::float32, c.out)),
        {bytes_of(fa), bytes_of(fb)});
    REQUIRE(int64_t(fy.size()) == n);
    for (int64_t k = 0; k < n; ++k)
      CHECK(fy[size_t(k)] == fa[size_t(source_index(c.a, c.out, k))] - fb[size_t(source_index(c.b, c.out, k))]);
    const auto ia = random_values<int32_t>(rng, size_t(elements(c.a)), -1000, 1000);
    const auto ib = random_values<int32_t>(rng, size_t(elements(c.b)), -1000, 1000);
    const auto iy = run1<int32_t>(
        binary_model(tw::Op::mul, plain(DType::int32, c.a), plain(DType::int32, c.b), plain(DType::int32, c.out)),
        {bytes_of(ia), bytes_of(ib)});
    for (int64_t k = 0; k < n; ++k)
      CHECK(iy[size_t(k)] == ia[size_t(source_index(c.a, c.out, k))] * ib[size_t(source_index(c.b, c.out, k))]);
    const auto qa = random_values<int8_t>(rng, size_t(elements(c.a))),
               qb = random_values<int8_t>(rng, size_t(elements(c.b)));
    const Multiplier m = quantize(double(0.02f) * double(0.03f) / double(0.01f));
    const auto qy = run1<int8_t>(binary_model(tw::Op::mul, quant(DType::int8, c.a, 0.02f, 1),
                                              quant(DType::int8, c.b, 0.03f, -2), quant(DType::int8, c.out, 0.01f, 0)),
                                 {bytes_of(qa), bytes_of(qb)});
    for (int64_t k = 0; k < n; ++k) {
      const int8_t x = qa[size_t(source_index(c.a, c.out, k))], y = qb[size_t(source_index(c.b, c.out, k))];
      CHECK(int(qy[size_t(k)]) == int(clamp_to<int8_t>(mul_expect(x, y, 1, -2, 0, m), type_range<int8_t>())));
    }
    const float twice = 2 * 0.03f;
    const Multiplier m1 = quantize(double(0.02f / twice)), m2 = quantize(double(0.03f / twice));
    const Multiplier mo = quantize(double(twice / (float(1 << 20) * 0.04f)));
    const auto sy = run1<int8_t>(binary_model(tw::Op::sub, quant(DType::int8, c.a, 0.02f, 1),
                                              quant(DType::int8, c.b, 0.03f, -2), quant(DType::int8, c.out, 0.04f, 3)),
                                 {bytes_of(qa), bytes_of(qb)});
    for (int64_t k = 0; k < n; ++k) {
      const int8_t x = qa[size_t(source_index(c.a, c.out, k))], y = qb[size_t(source_index(c.b, c.out, k))];
      CHECK(int(sy[size_t(k)]) ==
            int(clamp_to<int8_t>(add_sub_expect(x, y, 20, -1, 2, 3, m1, m2, mo, true), type_range<int8_t>())));
    }
  }
}

TEST_CASE("the models' forms: uint8 MUL by a constant, int8 SUB of a constant, int32 SUB / MUL with scalars") {
  // Coral SSD style: uint8 tensor times a uint8 constant vector broadcast over the last dimension.
  std::mt19937 rng(2);
  const auto x = random_values<uint8_t>(rng, 2 * 3 * 4);
  const std::vector<uint8_t> w = {0, 77, 128, 255};
  const auto y = run1<uint8_t>(
      binary_model(tw::Op::mul, quant(DType::uint8, {2, 3, 4}, 0.0235f, 0), quant(DType::uint8, {4}, 0.0039f, 128),
                   quant(DType::uint8, {2, 3, 4}, 0.05f, 10), MulOptions{Activation::relu6}, bytes_of(w)),
      {bytes_of(x)});
  const Multiplier m = quantize(static_cast<double>(0.0235f * 0.0039f / 0.05f));
  const auto bounds = act_bounds(Activation::relu6, 0, 255, 0.05f, 10);
  for (size_t i = 0; i < x.size(); ++i)
    CHECK(int(y[i]) == int(clamp_to<uint8_t>(mul_expect(x[i], w[i % 4], 0, 128, 10, m), bounds)));
  // YOLOv8 style: int8 constant minus a tensor.
  const auto t = random_values<int8_t>(rng, 8);
  const std::vector<int8_t> c = {100};
  const auto z =
      run1<int8_t>(binary_model(tw::Op::sub, quant(DType::int8, {8}, 0.1f, -5), quant(DType::int8, {1}, 0.2f, 0),
                                quant(DType::int8, {8}, 0.25f, 2), SubOptions{}, bytes_of(c)),
                   {bytes_of(t)});
  const float twice = 2 * 0.2f;
  const Multiplier m1 = quantize(double(0.1f / twice)), m2 = quantize(double(0.2f / twice));
  const Multiplier mo = quantize(double(twice / (float(1 << 20) * 0.25f)));
  for (size_t i = 0; i < t.size(); ++i)
    CHECK(int(z[i]) ==
          int(clamp_to<int8_t>(add_sub_expect(t[i], 100, 20, 5, 0, 2, m1, m2, mo, true), type_range<int8_t>())));
  // MoveNet style: int32 index arithmetic with scalar constants.
  const std::vector<int32_t> idx = {0, 5, 47, 48, 2303};
  CHECK(run1<int32_t>(binary_model(tw::Op::sub, plain(DType::int32, {5}), plain(DType::int32, {}),
                                   plain(DType::int32, {5}), SubOptions{}, bytes_of(std::vector<int32_t>{48})),
                      {bytes_of(idx)}) == std::vector<int32_t>{-48, -43, -1, 0, 2255});
  CHECK(run1<int32_t>(binary_model(tw::Op::mul, plain(DType::int32, {5}), plain(DType::int32, {1}),
                                   plain(DType::int32, {5}), MulOptions{}, bytes_of(std::vector<int32_t>{-3})),
                      {bytes_of(idx)}) == std::vector<int32_t>{0, -15, -141, -144, -6909});
}

TEST_CASE("8-bit ADD keeps its own kernel; float32 / int32 / int16 ADD go through the binary kernel") {
  const std::vector<int8_t> a = {-128, 0, 50, 127};
  const std::vector<int8_t> b = {-128, 1, 50, 127};
  const Spec q = quant(DType::int8, {4}, 0.5f, 0);
  CHECK(run1<int8_t>(binary_model(tw::Op::add, q, q, q), {bytes_of(a), bytes_of(b)}) ==
        std::vector<int8_t>{-128, 1, 100, 127});
  const std::vector<float> f = {1.0f, 2.0f};
  CHECK(run1<float>(
            binary_model(tw::Op::add, plain(DType::float32, {2}), plain(DType::float32, {}), plain(DType::float32, {2}),
                         AddOptions{Activation::relu6, true}, bytes_of(std::vector<float>{4.5f})),
            {bytes_of(f)}) == std::vector<float>{5.5f, 6.0f});
}

// =================================================================================================================
// CAST

TEST_CASE("CAST: the models' uint8 / int32 -> float32, and static_cast semantics between all types") {
  const auto u = iota_values<uint8_t>(0, 255);
  const auto fu =
      run1<float>(unary_model(tw::Op::cast, plain(DType::uint8, {256}), plain(DType::float32, {256})), {bytes_of(u)});
  for (size_t i = 0; i < 256; ++i) CHECK(fu[i] == float(i));
  const std::vector<int32_t> i32 = {0, -1, 16777217, INT32_MIN, INT32_MAX};
  CHECK(run1<float>(unary_model(tw::Op::cast, plain(DType::int32, {5}), plain(DType::float32, {5})), {bytes_of(i32)}) ==
        std::vector<float>{0.0f, -1.0f, 16777216.0f, -2147483648.0f, 2147483648.0f});
  // float -> integers: truncation toward zero; out of range and NaN as x86's conversion (32-bit "integer indefinite"
  // INT32_MIN, narrowed for the smaller types).
  const std::vector<float> f = {2.9f, -2.9f, 300.0f, -129.5f, 70000.0f, 3e9f, std::nanf(""), -0.0f};
  const Spec fs = plain(DType::float32, {8});
  CHECK(run1<int32_t>(unary_model(tw::Op::cast, fs, plain(DType::int32, {8})), {bytes_of(f)}) ==
        std::vector<int32_t>{2, -2, 300, -129, 70000, INT32_MIN, INT32_MIN, 0});
  CHECK(run1<int8_t>(unary_model(tw::Op::cast, fs, plain(DType::int8, {8})), {bytes_of(f)}) ==
        std::vector<int8_t>{2, -2, 44, 127, 112, 0, 0, 0});
  CHECK(run1<uint8_t>(unary_model(tw::Op::cast, fs, plain(DType::uint8, {8})), {bytes_of(f)}) ==
        std::vector<uint8_t>{2, 254, 44, 127, 112, 0, 0, 0});
  CHECK(run1<int16_t>(unary_model(tw::Op::cast, fs, plain(DType::int16, {8})), {bytes_of(f)}) ==
        std::vector<int16_t>{2, -2, 300, -129, 4464, 0, 0, 0});
  CHECK(run1<int64_t>(unary_model(tw::Op::cast, fs, plain(DType::int64, {8})), {bytes_of(f)}) ==
        std::vector<int64_t>{2, -2, 300, -129, 70000, 3000000000, INT64_MIN, 0});
  CHECK(run1<uint8_t>(unary_model(tw::Op::cast, fs, plain(DType::boolean, {8})), {bytes_of(f)}) ==
        std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1, 0});
  // integer -> integer wraps; bool reads any non-zero byte as true.
  const std::vector<int32_t> w = {-1, 256, 65535, -32769, 0};
  CHECK(run1<uint8_t>(unary_model(tw::Op::cast, plain(DType::int32, {5}), plain(DType::uint8, {5})), {bytes_of(w)}) ==
        std::vector<uint8_t>{255, 0, 255, 255, 0});
  CHECK(run1<int16_t>(unary_model(tw::Op::cast, plain(DType::int32, {5}), plain(DType::int16, {5})), {bytes_of(w)}) ==
        std::vector<int16_t>{-1, 256, -1, 32767, 0});
  const std::vector<uint8_t> bools = {0, 1, 2, 255};
  CHECK(run1<float>(unary_model(tw::Op::cast, plain(DType::boolean, {4}), plain(DType::float32, {4})),
                    {bytes_of(bools)}) == std::vector<float>{0.0f, 1.0f, 1.0f, 1.0f});
  CHECK(run1<int64_t>(unary_model(tw::Op::cast, plain(DType::int8, {3}), plain(DType::int64, {3})),
                      {bytes_of(std::vector<int8_t>{-128, 0, 127})}) == std::vector<int64_t>{-128, 0, 127});
  const std::vector<int64_t> big = {int64_t{1} << 40, -5};
  CHECK(run1<int32_t>(unary_model(tw::Op::cast, plain(DType::int64, {2}), plain(DType::int32, {2})), {bytes_of(big)}) ==
        std::vector<int32_t>{0, -5});
}

// =================================================================================================================
// Refusals

TEST_CASE("malformed or unsupported element-wise operands are refused at load with a clear message") {
  const Spec f4 = plain(DType::float32, {4});
  const Spec q8 = quant(DType::int8, {4}, 0.1f, 0);
  auto refused = [](const Bytes& model, std::initializer_list<const char*> parts) {
    const std::string e = test::load_error(model);
    CHECK_MESSAGE(!e.empty(), "expected a load error");
    for (const char* p : parts) CHECK_MESSAGE(contains(e, p), "'" << e << "' lacks '" << std::string(p) << "'");
  };
  // Types.
  refused(unary_model(tw::Op::exp, q8, q8), {"EXP", "INT8", "supported: FLOAT32"});
  refused(unary_model(tw::Op::floor, plain(DType::int32, {4}), plain(DType::int32, {4})), {"FLOOR", "INT32"});
  refused(unary_model(tw::Op::logistic, f4, q8), {"LOGISTIC", "input and output"});
  refused(unary_model(tw::Op::hard_swish, quant(DType::int16, {4}, 0.1f, 0), quant(DType::int16, {4}, 0.1f, 0)),
          {"HARD_SWISH", "INT16"});
  refused(binary_model(tw::Op::mul, q8, f4, q8), {"MUL", "inputs"});
  refused(binary_model(tw::Op::floor_div, q8, q8, q8), {"FLOOR_DIV", "INT8"});
  refused(binary_model(tw::Op::div, quant(DType::int16, {4}, 0.1f, 0), quant(DType::int16, {4}, 0.1f, 0),
                       quant(DType::int16, {4}, 0.1f, 0)),
          {"DIV", "INT16"});
  refused(binary_model(tw::Op::add, plain(DType::int64, {4}), plain(DType::int64, {4}), plain(DType::int64, {4})),
          {"ADD", "INT64"});
  refused(unary_model(tw::Op::cast, f4, plain(DType::float16, {4})), {"FLOAT16"});  // the reader's refusal
  refused(binary_model(tw::Op::prelu, quant(DType::int16, {4}, 0.1f, 0), quant(DType::int16, {4}, 0.1f, 0),
                       quant(DType::int16, {4}, 0.1f, 0)),
          {"PRELU", "alpha"});
  // Shapes.
  refused(unary_model(tw::Op::relu, f4, plain(DType::float32, {2, 2})), {"RELU", "shape"});
  refused(binary_model(tw::Op::mul, plain(DType::float32, {2, 3}), plain(DType::float32, {2, 4}),
                       plain(DType::float32, {2, 4})),
          {"MUL", "do not broadcast"});
  refused(binary_model(tw::Op::sub, plain(DType::float32, {2, 1}), plain(DType::float32, {1, 3}),
                       plain(DType::float32, {2, 2})),
          {"SUB", "broadcast to 3"});
  refused(binary_model(tw::Op::sub, plain(DType::float32, {2, 1}), plain(DType::float32, {3}),
                       plain(DType::float32, {1, 2, 3})),
          {"SUB", "rank"});
  refused(binary_model(tw::Op::prelu, plain(DType::float32, {1, 3}), plain(DType::float32, {2, 3}),
                       plain(DType::float32, {2, 3}), {}, bytes_of(std::vector<float>(6, 0.1f))),
          {"PRELU", "alpha"});
  refused(
      binary_model(tw::Op::add, plain(DType::float32, {3}), plain(DType::float32, {3}), plain(DType::float32, {3, 1})),
      {"ADD", "rank"});
  // Quantization.
  refused(unary_model(tw::Op::logistic, q8, quant(DType::int8, {4}, 1.0f / 256, 0)),
          {"LOGISTIC", "output quantization"});
  refused(unary_model(tw::Op::tanh, q8, quant(DType::int8, {4}, 1.0f / 256, 0)), {"TANH", "output quantization"});
  refused(unary_model(tw::Op::logistic, quant(DType::uint8, {4}, 0.1f, 0), quant(DType::uint8, {4}, 0.01f, 0)),
          {"LOGISTIC", "1/256"});
  refused(unary_model(tw::Op::logistic, quant(DType::int16, {4}, 1.0f / 4096, 3),
                      quant(DType::int16, {4}, 1.0f / 32768, 0)),
          {"LOGISTIC", "zero point 0"});
  refused(unary_model(tw::Op::tanh, quant(DType::int16, {4}, 1.0f / 4096, 0), quant(DType::int16, {4}, 1.0f / 1000, 0)),
          {"TANH", "2^-15"});
  refused(unary_model(tw::Op::logistic, quant(DType::int16, {4}, 5.0f, 0), quant(DType::int16, {4}, 1.0f / 32768, 0)),
          {"LOGISTIC", "too large"});
  refused(unary_model(tw::Op::relu, quant(DType::int16, {4}, 0.1f, 1), quant(DType::int16, {4}, 0.1f, 0)),
          {"RELU", "zero point 0"});
  refused(unary_model(tw::Op::rsqrt, q8, q8), {"RSQRT", "zero point"});
  refused(unary_model(tw::Op::hard_swish, quant(DType::int8, {4}, 1.0f, 0), quant(DType::int8, {4}, 0.001f, 0)),
          {"HARD_SWISH", "too small"});
  refused(unary_model(tw::Op::relu, q8, plain(DType::int8, {4})), {"RELU", "not quantized"});
  refused(binary_model(tw::Op::mul, quant(DType::int16, {4}, 0.1f, 1), quant(DType::int16, {4}, 0.1f, 0),
                       quant(DType::int16, {4}, 0.1f, 0)),
          {"MUL", "zero point 0"});
  refused(binary_model(tw::Op::maximum, q8, quant(DType::int8, {4}, 0.2f, 0), q8), {"MAXIMUM", "same quantization"});
  refused(binary_model(tw::Op::minimum, q8, q8, quant(DType::int8, {4}, 0.1f, 1)), {"MINIMUM", "same quantization"});
  refused(binary_model(tw::Op::sub, q8, q8, quant(DType::int8, {4}, 1e-9f, 0)), {"SUB", "outside (0, 1)"});
  refused(binary_model(tw::Op::div, q8, quant(DType::int8, {4}, 1e-9f, 0), q8), {"DIV", "too large"});
  refused(
      binary_model(tw::Op::sub, plain(DType::int32, {4}), quant(DType::int32, {4}, 1.0f, 0), plain(DType::int32, {4})),
      {"SUB", "quantized int32"});
  refused(
      binary_model(tw::Op::mul, q8, Spec{DType::int8, {4}, tw::Quant{{0.1f, 0.2f, 0.1f, 0.1f}, {0, 0, 0, 0}, 0}}, q8),
      {"MUL", "per-channel"});
  // Fused activations.
  refused(binary_model(tw::Op::add, plain(DType::int32, {4}), plain(DType::int32, {4}), plain(DType::int32, {4}),
                       AddOptions{Activation::relu, true}),
          {"ADD", "int32 ADD with a fused activation"});
  refused(binary_model(tw::Op::mul, f4, f4, f4, MulOptions{Activation::tanh}), {"MUL", "fused activation"});
  refused(binary_model(tw::Op::sub, q8, q8, q8, SubOptions{Activation::sign_bit, true}), {"fused activation"});
  // Operand counts.
  {
    tw::ModelBuilder b;
    const int32_t x = tensor(b, "x", f4), y = tensor(b, "y", f4);
    b.add_operator(tw::Op::mul, {x}, {y}, MulOptions{});
    b.set_inputs({x});
    b.set_outputs({y});
    refused(b.finish(), {"MUL", "inputs"});
  }
}

TEST_CASE("kernels handle every output element exactly once on larger random tensors (int8 MUL, uint8 LOGISTIC)") {
  std::mt19937 rng(1234);
  const std::vector<int32_t> shape = {1, 20, 20, 16};
  const auto a = random_values<int8_t>(rng, 6400), b = random_values<int8_t>(rng, 16);
  const auto y =
      run1<int8_t>(binary_model(tw::Op::mul, quant(DType::int8, shape, 0.03f, -4), quant(DType::int8, {16}, 0.01f, 6),
                                quant(DType::int8, shape, 0.02f, 1), MulOptions{}, bytes_of(b)),
                   {bytes_of(a)});
  const Multiplier m = quantize(double(0.03f) * double(0.01f) / double(0.02f));
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(int(y[i]) == int(clamp_to<int8_t>(mul_expect(a[i], b[i % 16], -4, 6, 1, m), type_range<int8_t>())));
  const auto u = random_values<uint8_t>(rng, 6400);
  const auto s = run1<uint8_t>(
      unary_model(tw::Op::logistic, quant(DType::uint8, shape, 0.08f, 128), quant(DType::uint8, shape, 1.0f / 256, 0)),
      {bytes_of(u)});
  for (size_t i = 0; i < u.size(); ++i) {
    const float sig = 1.0f / (1.0f + std::exp(-(0.08f * static_cast<float>(int(u[i]) - 128))));
    CHECK(int(s[i]) == std::clamp(static_cast<int>(std::round(sig * 256.0f)), 0, 255));
  }
}

// =================================================================================================================
// Optimised kernels (kernels/opt/unary.cpp, binary.cpp) against the reference kernels, called directly with the
// parameters the loader makes for one-operator models: randomized 8-bit unary operators of every kind with random
// (often extreme) quantization, 8-bit MUL / SUB with random quantization (the saturating MUL and power-of-two scales
// with exact rounding ties included), float32 ADD / SUB / MUL / MAXIMUM / MINIMUM with NaN and infinities; same
// shapes, scalars, repeating (per-channel) operands, outer products and general broadcasts on either side, odd
// lengths — byte for byte, at every SIMD level of this processor on 1 and 3 threads (the pool hands out even the
// smallest operator). Every buffer is its own exact-size heap allocation, so AddressSanitizer sees any access outside
// it. Each case checks that the optimised path is the one that runs: a usable prepared table (and a poisoned table
// changes the result), or the binary fast-path predicate.

#include <functional>
#include <memory>

#include "interpreter.hpp"
#include "optimized_backend.hpp"

namespace {

struct OptRng {
  std::mt19937 g;
  explicit OptRng(uint32_t seed) : g(seed) {}
  int32_t uniform(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(g); }
  bool chance(double p) { return std::bernoulli_distribution(p)(g); }
  // A scale spread over many octaves: 2^[lo, hi] times a mantissa in [1, 2).
  float scale(int lo, int hi) {
    const float mantissa = std::uniform_real_distribution<float>(1.0f, 2.0f)(g);
    return std::ldexp(mantissa, uniform(lo, hi));
  }
  int32_t zero_point(DType t) {
    const int32_t lo = t == DType::uint8 ? 0 : -128, hi = t == DType::uint8 ? 255 : 127;
    if (chance(0.25)) return chance(0.5) ? lo : hi;
    return uniform(lo, hi);
  }
};

// The parameters the loader makes for the single operator of `model`; nullopt when the model is refused.
std::optional<OpParams> loaded_params(const Bytes& model) {
  ReferenceKernelBackend ref;
  InterpreterConfig config;
  config.arena_budget = uint64_t{1} << 28;
  config.primary = &ref;
  auto loaded = Interpreter::load(model, config);
  if (!loaded.ok()) return std::nullopt;
  REQUIRE((*loaded)->operators().size() == 1);
  return (*loaded)->operators()[0].params;
}

// The optimised backends: every level on 1 and on 3 threads, splitting even the smallest operator.
std::vector<std::unique_ptr<OptimizedKernelBackend>> elementwise_opt_backends() {
  std::vector<std::unique_ptr<OptimizedKernelBackend>> v;
  for (SimdLevel level : available_simd_levels())
    for (size_t threads : {size_t{1}, size_t{3}})
      v.push_back(std::make_unique<OptimizedKernelBackend>(level, threads, /*min_parallel_work=*/0));
  return v;
}

size_t element_size(DType t) { return t == DType::int8 || t == DType::uint8 ? 1 : t == DType::int16 ? 2 : 4; }

std::string first_difference_of(const Bytes& a, const Bytes& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return "byte " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
  return "none";
}

// ----- unary

// Runs `p` on `b` with its own prepared block (when the backend asks for one; `poison` may alter it) and an
// exact-size output; `fast` receives whether the table path ran.
Bytes run_unary(KernelBackend& b, UnaryParams p, const Bytes& input, bool* fast = nullptr,
                const std::function<void(std::vector<uint8_t>&)>& poison = {}) {
  Bytes out(input.size(), 0xA5);
  std::vector<uint8_t> prepared(b.prepared_bytes(OpParams{p}));
  if (!prepared.empty()) b.prepare(OpParams{p}, prepared);
  if (poison) poison(prepared);
  p.input = input.data();
  p.output = out.data();
  p.scratch = {};
  p.prepared = std::span<const uint8_t>(prepared);
  REQUIRE(run_kernel(b, OpParams{p}).ok());
  if (fast) *fast = opt::unary_fast_path(p);
  return out;
}

struct UnaryCase {
  Bytes model;
  DType type = DType::int8;
  int32_t elements = 0;
  std::string what;
};

UnaryCase random_unary(OptRng& r, DType type) {
  static const tw::Op kOps[] = {tw::Op::logistic, tw::Op::tanh,         tw::Op::hard_swish, tw::Op::relu,
                                tw::Op::relu6,    tw::Op::relu_n1_to_1, tw::Op::leaky_relu, tw::Op::rsqrt};
  const int32_t last = type == DType::int8 ? 7 : 6;  // RSQRT is int8 only
  const tw::Op op = kOps[r.uniform(0, last)];
  UnaryCase c;
  c.type = type;
  c.elements = r.chance(0.2) ? r.uniform(1, 40) : r.uniform(256, 3000);
  const float in_scale = r.chance(0.15) ? r.scale(-30, 10) : r.scale(-9, 2);
  int32_t in_zp = r.zero_point(type);
  float out_scale = r.chance(0.15) ? r.scale(-30, 10) : r.scale(-9, 2);
  int32_t out_zp = r.zero_point(type);
  tw::Options options;
  if (op == tw::Op::logistic) {
    out_scale = 1.0f / 256;
    if (type == DType::int8) out_zp = -128;
  } else if (op == tw::Op::tanh && type == DType::int8) {
    out_scale = 1.0f / 128;
    out_zp = 0;
  } else if (op == tw::Op::rsqrt) {
    in_zp = -128;
  } else if (op == tw::Op::leaky_relu) {
    const float alpha = r.chance(0.2) ? static_cast<float>(r.uniform(-1, 1))
                                      : std::uniform_real_distribution<float>(-3.0f, 3.0f)(r.g);
    options = LeakyReluOptions{alpha};
  }
  if (r.chance(0.2)) {  // the same quantization in and out (RELU6 as models usually have it)
    out_scale = op == tw::Op::logistic || op == tw::Op::tanh ? out_scale : in_scale;
    out_zp = op == tw::Op::logistic || op == tw::Op::tanh ? out_zp : in_zp;
  }
  c.model = unary_model(op, quant(type, {c.elements}, in_scale, in_zp), quant(type, {c.elements}, out_scale, out_zp),
                        options);
  c.what = std::string(protocol::dtype_name(type)) + " op " + std::to_string(static_cast<int>(op)) + " in (" +
           std::to_string(in_scale) + ", " + std::to_string(in_zp) + ") out (" + std::to_string(out_scale) + ", " +
           std::to_string(out_zp) + ") elements " + std::to_string(c.elements);
  return c;
}

// Every byte value once (so every table entry is read; the values 0..n-1 when n < 256), then random bytes, shuffled.
Bytes unary_input(OptRng& r, int32_t n) {
  Bytes v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<uint8_t>(i < 256 ? i : r.uniform(0, 255));
  std::shuffle(v.begin(), v.end(), r.g);
  return v;
}

}  // namespace

TEST_CASE("optimised 8-bit unary operators equal the reference: every operator, random and extreme quantization") {
  OptRng r(20260301);
  ReferenceKernelBackend ref;
  const auto backends = elementwise_opt_backends();
  int loaded = 0, tried = 0;
  for (DType type : {DType::int8, DType::uint8}) {
    for (int i = 0; i < 220; ++i, ++tried) {
      const UnaryCase c = random_unary(r, type);
      const std::optional<OpParams> params = loaded_params(c.model);
      if (!params) continue;  // a quantization the operator refuses (e.g. HARD_SWISH's too-small output scale)
      ++loaded;
      const auto& p = std::get<UnaryParams>(*params);
      const Bytes input = unary_input(r, c.elements);
      const Bytes want = run_unary(ref, p, input);
      for (const auto& b : backends) {
        bool fast = false;
        const Bytes got = run_unary(*b, p, input, &fast);
        CHECK_MESSAGE(fast, c.what << " on " << b->description());
        CHECK_MESSAGE(got == want, c.what << " on " << b->description() << ": " << first_difference_of(got, want));
      }
    }
  }
  CHECK(tried == 440);
  CHECK(loaded >= 400);  // most random quantizations are accepted (430 with these seeds)
}

TEST_CASE("optimised unary: the table is what runs (a poisoned entry shows), int16 / float32 use the reference") {
  ReferenceKernelBackend ref;
  const auto backends = elementwise_opt_backends();
  OptRng r(7);
  // YOLOv8's SiLU half: int8 LOGISTIC, a large tensor (every level's vector loop and the thread split).
  const Bytes model = unary_model(tw::Op::logistic, quant(DType::int8, {1, 40, 40, 16}, 0.0823f, -93),
                                  quant(DType::int8, {1, 40, 40, 16}, 1.0f / 256, -128));
  const auto params = loaded_params(model);
  REQUIRE(params);
  const auto& p = std::get<UnaryParams>(*params);
  const Bytes input = unary_input(r, 40 * 40 * 16);
  const Bytes want = run_unary(ref, p, input);
  // The table sits after the prepared header, indexed by the input byte: entry 5 changed must change exactly the
  // outputs of input byte 5.
  auto poison = [](std::vector<uint8_t>& prepared) {
    REQUIRE(prepared.size() >= opt::kPreparedHeaderBytes + 256);
    prepared[opt::kPreparedHeaderBytes + 5] ^= 0x5A;
  };
  for (const auto& b : backends) {
    bool fast = false;
    CHECK(run_unary(*b, p, input, &fast) == want);
    CHECK(fast);
    const Bytes poisoned = run_unary(*b, p, input, nullptr, poison);
    for (size_t i = 0; i < input.size(); ++i)
      CHECK_MESSAGE((poisoned[i] != want[i]) == (input[i] == 5), "element " << i << " on " << b->description());
    // No prepared data (a caller that skipped prepare): the reference kernel, same bytes.
    UnaryParams bare = p;
    Bytes out(input.size(), 0);
    bare.input = input.data();
    bare.output = out.data();
    bare.prepared = {};
    CHECK_FALSE(opt::unary_fast_path(bare));
    REQUIRE(run_kernel(*b, OpParams{bare}).ok());
    CHECK(out == want);
  }
  // int16 and float32 ask for no table and run the reference kernel.
  const auto p16 = loaded_params(unary_model(tw::Op::logistic, quant(DType::int16, {300}, 1.0f / 4096, 0),
                                             quant(DType::int16, {300}, 1.0f / 32768, 0)));
  const auto pf =
      loaded_params(unary_model(tw::Op::logistic, plain(DType::float32, {300}), plain(DType::float32, {300})));
  REQUIRE(p16);
  REQUIRE(pf);
  for (const auto* params_other : {&*p16, &*pf}) {
    const auto& q = std::get<UnaryParams>(*params_other);
    Bytes in(300 * element_size(q.dtype));
    for (auto& x : in) x = static_cast<uint8_t>(r.uniform(0, 255));
    if (q.dtype == DType::float32)  // finite floats in a moderate range
      for (size_t i = 0; i < 300; ++i) {
        const float f = static_cast<float>(r.uniform(-2000, 2000)) / 100.0f;
        std::memcpy(in.data() + 4 * i, &f, 4);
      }
    const Bytes expected = run_unary(ref, q, in);
    for (const auto& b : backends) {
      CHECK(b->prepared_bytes(OpParams{q}) == 0);
      bool fast = true;
      CHECK(run_unary(*b, q, in, &fast) == expected);
      CHECK_FALSE(fast);
    }
  }
}

// ----- binary

namespace {

// Runs `p` on `b` with its own exact-size inputs and output.
Bytes run_binary(KernelBackend& b, BinaryParams p, const Bytes& in1, const Bytes& in2, size_t out_bytes) {
  Bytes out(out_bytes, 0xA5);
  p.input1 = in1.data();
  p.input2 = in2.data();
  p.output = out.data();
  p.scratch = {};
  REQUIRE(run_kernel(b, OpParams{p}).ok());
  return out;
}

// Operand shapes: 0 same shape, 1 / 2 input 2 / input 1 a scalar, 3 / 4 input 2 / input 1 repeating along the
// outer dimensions (per-channel and wider), 5 an outer product ([H, W, 1] against [1, 1, C], either way round), 6 any
// numpy broadcast (each dimension of each input the output's or 1, leading 1s sometimes dropped).
struct BinaryShapes {
  std::vector<int32_t> a, b, out;
  int kind = 0;
};

std::vector<int32_t> random_shape(OptRng& r) {
  switch (r.uniform(0, 3)) {
    case 0: return {r.uniform(1, 2500)};                                        // long 1-D, odd lengths
    case 1: return {1, r.uniform(1, 13), r.uniform(1, 13), r.uniform(1, 40)};  // NHWC
    case 2: return {r.uniform(1, 3), r.uniform(1, 9), r.uniform(1, 70)};
    default: return {1, r.uniform(1, 6), r.uniform(1, 6), r.uniform(1, 4), r.uniform(1, 5), r.uniform(1, 17)};
  }
}

// `s` without leading 1s, sometimes (numpy's implicit leading dimensions).
std::vector<int32_t> maybe_drop_leading_ones(OptRng& r, std::vector<int32_t> s) {
  if (r.chance(0.5))
    while (s.size() > 1 && s.front() == 1) s.erase(s.begin());
  return s;
}

BinaryShapes random_shapes(OptRng& r) {
  BinaryShapes s;
  s.kind = r.uniform(0, 6);
  s.out = random_shape(r);
  std::vector<int32_t> small;
  if (s.kind == 1 || s.kind == 2) {
    small = r.chance(0.5) ? std::vector<int32_t>{1} : std::vector<int32_t>(s.out.size(), 1);
  } else if (s.kind == 3 || s.kind == 4) {
    // The output's last k dimensions, with some leading 1s kept or dropped.
    const auto k = static_cast<size_t>(r.uniform(1, static_cast<int32_t>(s.out.size())));
    small.assign(s.out.end() - static_cast<std::ptrdiff_t>(k), s.out.end());
    if (r.chance(0.5)) small.insert(small.begin(), s.out.size() - k, 1);
  }
  if (s.kind == 0) {
    s.a = s.b = s.out;
  } else if (s.kind == 1 || s.kind == 3) {
    s.a = s.out;
    s.b = small;
  } else if (s.kind == 2 || s.kind == 4) {
    s.a = small;
    s.b = s.out;
  } else if (s.kind == 5) {
    const int32_t h = r.uniform(1, 30), w = r.uniform(1, 30), c = r.uniform(2, 40);
    s.out = {1, h, w, c};
    s.a = {1, h, w, 1};
    s.b = maybe_drop_leading_ones(r, {1, 1, 1, c});
    if (r.chance(0.5)) std::swap(s.a, s.b);
  } else {
    s.a = s.out;
    s.b = s.out;
    for (size_t d = 0; d < s.out.size(); ++d) {
      if (r.chance(0.4)) s.a[d] = 1;
      else if (r.chance(0.4)) s.b[d] = 1;
    }
    // The output is the broadcast of the two (a dimension set to 1 in both gives 1).
    for (size_t d = 0; d < s.out.size(); ++d) s.out[d] = std::max(s.a[d], s.b[d]);
    s.a = maybe_drop_leading_ones(r, s.a);
    s.b = maybe_drop_leading_ones(r, s.b);
    while (s.out.size() > std::max(s.a.size(), s.b.size())) s.out.erase(s.out.begin());  // those were 1s in both
  }
  return s;
}

std::string shape_text(const std::vector<int32_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

// Random bytes of a tensor: 8-bit values (extremes often) or float32 values with ties, signed zeros, huge
// magnitudes, denormals, infinities and one NaN bit pattern (two different NaNs in one element would leave the
// result's payload to the compiler's operand order, for the reference as much as for any other code).
Bytes binary_input(OptRng& r, DType type, int64_t n) {
  Bytes v(static_cast<size_t>(n) * element_size(type));
  if (type != DType::float32) {
    for (auto& x : v) x = static_cast<uint8_t>(r.chance(0.1) ? (r.chance(0.5) ? 0x80 : 0x7F) : r.uniform(0, 255));
    if (type == DType::uint8)
      for (auto& x : v)
        if (r.chance(0.05)) x = r.chance(0.5) ? 0 : 255;
    return v;
  }
  for (int64_t i = 0; i < n; ++i) {
    float f = static_cast<float>(r.uniform(-4000, 4000)) / 16.0f;
    switch (r.uniform(0, 24)) {
      case 0: f = 0.0f; break;
      case 1: f = -0.0f; break;
      case 2: f = (r.chance(0.5) ? 1.0f : -1.0f) * 3.0e38f; break;
      case 3: f = std::numeric_limits<float>::infinity(); break;
      case 4: f = -std::numeric_limits<float>::infinity(); break;
      case 5: f = std::numeric_limits<float>::quiet_NaN(); break;
      case 6: f = (r.chance(0.5) ? 1.0f : -1.0f) * std::numeric_limits<float>::denorm_min() * r.uniform(1, 1000); break;
      case 7: f = static_cast<float>(r.uniform(-1000000, 1000000)) * 1.0e-7f; break;
      default: break;
    }
    std::memcpy(v.data() + 4 * i, &f, 4);
  }
  return v;
}

struct BinaryCase {
  Bytes model;
  DType type = DType::int8;
  BinaryShapes shapes;
  bool supported = true;  // whether the fast path should run
  std::string what;
};

BinaryCase random_binary(OptRng& r, DType type, tw::Op op) {
  BinaryCase c;
  c.type = type;
  c.shapes = random_shapes(r);
  static const Activation kActs[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  const Activation act = r.chance(0.5) ? Activation::none : kActs[r.uniform(1, 3)];
  tw::Options options;
  if (op == tw::Op::mul) options = MulOptions{act};
  else if (op == tw::Op::sub) options = SubOptions{act, true};
  else if (op == tw::Op::add) options = AddOptions{act, false};
  std::string q;
  if (type == DType::float32) {
    c.model = binary_model(op, plain(type, c.shapes.a), plain(type, c.shapes.b), plain(type, c.shapes.out), options);
  } else {
    float s1 = r.chance(0.15) ? r.scale(-24, 8) : r.scale(-9, 0);
    float s2 = r.chance(0.15) ? r.scale(-24, 8) : r.scale(-9, 0);
    float so = r.chance(0.15) ? r.scale(-24, 8) : r.scale(-9, 0);
    if (r.chance(0.3)) {  // powers of two: exact rounding ties in every rescaling step
      s1 = std::ldexp(1.0f, r.uniform(-8, 0));
      s2 = std::ldexp(1.0f, r.uniform(-8, 0));
      so = std::ldexp(1.0f, r.uniform(-9, 1));
    }
    if (op == tw::Op::mul && r.chance(0.1)) so = r.scale(-120, -60);  // the saturating MUL (ratio beyond 2^30)
    const int32_t z1 = r.zero_point(type), z2 = r.zero_point(type), zo = r.zero_point(type);
    c.model = binary_model(op, quant(type, c.shapes.a, s1, z1), quant(type, c.shapes.b, s2, z2),
                           quant(type, c.shapes.out, so, zo), options);
    q = " scales " + std::to_string(s1) + " " + std::to_string(s2) + " " + std::to_string(so) + " zero points " +
        std::to_string(z1) + " " + std::to_string(z2) + " " + std::to_string(zo);
  }
  c.what = std::string(protocol::dtype_name(type)) + " op " + std::to_string(static_cast<int>(op)) + " " +
           shape_text(c.shapes.a) + " x " + shape_text(c.shapes.b) + " -> " + shape_text(c.shapes.out) + " act " +
           std::to_string(static_cast<int>(act)) + q;
  return c;
}

// Loads `c`, runs it on random inputs with the reference and every optimised backend; false when it is refused.
bool check_binary_case(OptRng& r, const BinaryCase& c, ReferenceKernelBackend& ref,
                       const std::vector<std::unique_ptr<OptimizedKernelBackend>>& backends) {
  const std::optional<OpParams> params = loaded_params(c.model);
  if (!params) return false;
  const auto& p = std::get<BinaryParams>(*params);
  CHECK_MESSAGE(opt::binary_fast_path(p) == c.supported, c.what);
  const Bytes in1 = binary_input(r, c.type, elements(c.shapes.a));
  const Bytes in2 = binary_input(r, c.type, elements(c.shapes.b));
  const size_t out_bytes = static_cast<size_t>(elements(c.shapes.out)) * element_size(c.type);
  const Bytes want = run_binary(ref, p, in1, in2, out_bytes);
  for (const auto& b : backends) {
    const Bytes got = run_binary(*b, p, in1, in2, out_bytes);
    CHECK_MESSAGE(got == want, c.what << " on " << b->description() << ": " << first_difference_of(got, want));
  }
  return true;
}

}  // namespace

TEST_CASE("optimised 8-bit MUL / SUB equal the reference: random quantization, saturation, scalar and per-channel") {
  OptRng r(20260302);
  ReferenceKernelBackend ref;
  const auto backends = elementwise_opt_backends();
  int loaded = 0, tried = 0;
  for (DType type : {DType::int8, DType::uint8})
    for (tw::Op op : {tw::Op::mul, tw::Op::sub})
      for (int i = 0; i < 120; ++i, ++tried) loaded += check_binary_case(r, random_binary(r, type, op), ref, backends);
  CHECK(tried == 480);
  CHECK(loaded >= 440);  // SUB refuses scale ratios of 1 or more (472 load with these seeds)
}

TEST_CASE("optimised float32 ADD / SUB / MUL / MAXIMUM / MINIMUM equal the reference: NaN, infinities, zeros") {
  OptRng r(20260303);
  ReferenceKernelBackend ref;
  const auto backends = elementwise_opt_backends();
  int loaded = 0;
  for (tw::Op op : {tw::Op::add, tw::Op::sub, tw::Op::mul, tw::Op::maximum, tw::Op::minimum})
    for (int i = 0; i < 60; ++i) loaded += check_binary_case(r, random_binary(r, DType::float32, op), ref, backends);
  CHECK(loaded == 300);
}

TEST_CASE("optimised binary: the models' forms, extreme MUL shifts and what stays on the reference kernel") {
  OptRng r(99);
  ReferenceKernelBackend ref;
  const auto backends = elementwise_opt_backends();
  auto expect = [&](const Bytes& model, DType type, std::vector<int32_t> a, std::vector<int32_t> b,
                    std::vector<int32_t> out, bool fast, const char* what) {
    BinaryCase c;
    c.model = model;
    c.type = type;
    c.shapes.a = std::move(a);
    c.shapes.b = std::move(b);
    c.shapes.out = std::move(out);
    c.supported = fast;
    c.what = what;
    CHECK_MESSAGE(check_binary_case(r, c, ref, backends), what);
  };
  // YOLOv8n's SiLU product: int8 LOGISTIC output times the convolution output, same shape, large (vector loops and
  // the thread split).
  const std::vector<int32_t> yolo = {1, 40, 40, 32};
  expect(binary_model(tw::Op::mul, quant(DType::int8, yolo, 0.0795f, -97), quant(DType::int8, yolo, 1.0f / 256, -128),
                      quant(DType::int8, yolo, 0.0412f, -122)),
         DType::int8, yolo, yolo, yolo, true, "YOLOv8 SiLU MUL");
  // Coral traffic SSD: uint8 MUL into a degenerate output scale (every non-zero product saturates), and a uint8
  // multiplication by a constant scalar.
  expect(binary_model(tw::Op::mul, quant(DType::uint8, {1, 77}, 0.0235294122f, 0),
                      quant(DType::uint8, {1, 77}, 0.00390625f, 0), quant(DType::uint8, {1, 77}, 2.97212411e-35f, 0)),
         DType::uint8, {1, 77}, {1, 77}, {1, 77}, true, "traffic saturating MUL");
  expect(binary_model(tw::Op::mul, quant(DType::uint8, {1, 19, 19, 12}, 0.05f, 131),
                      quant(DType::uint8, {1}, 0.004f, 0),
                      quant(DType::uint8, {1, 19, 19, 12}, 0.03f, 128)),
         DType::uint8, {1, 19, 19, 12}, {1}, {1, 19, 19, 12}, true, "uint8 MUL by a scalar");
  // MUL shifts at both ends: a ratio just above 2^29 (left shift 30: every product but 0 and +-1 saturates), one
  // just below 2^-31 (right shift 31), and a left shift of 14 that never saturates (|product| < 2^15).
  auto shift_of = [](const Bytes& model) {
    const auto params = loaded_params(model);
    REQUIRE(params);
    return std::get<BinaryParams>(*params).output_shift;
  };
  const std::pair<float, int> kShifts[] = {
      {std::ldexp(1.0f, -29) / 1.001f, 30}, {std::ldexp(1.0f, 31) * 1.5f, -31}, {1.0f / 8192, 14}};
  for (const auto& [out_scale, shift] : kShifts) {
    const Bytes model = binary_model(tw::Op::mul, quant(DType::int8, {333}, 1.0f, 3),
                                     quant(DType::int8, {333}, 1.0f, -5), quant(DType::int8, {333}, out_scale, 7));
    CHECK(shift_of(model) == shift);
    expect(model, DType::int8, {333}, {333}, {333}, true, "MUL extreme shift");
  }
  // MoveNet-style int8 SUB of a per-channel constant, on either side.
  expect(binary_model(tw::Op::sub, quant(DType::int8, {1, 48, 48, 17}, 0.02f, 3), quant(DType::int8, {17}, 0.03f, -9),
                      quant(DType::int8, {1, 48, 48, 17}, 0.06f, 1)),
         DType::int8, {1, 48, 48, 17}, {17}, {1, 48, 48, 17}, true, "int8 SUB per-channel second");
  expect(binary_model(tw::Op::sub, quant(DType::int8, {1, 1, 48, 17}, 0.03f, -9),
                      quant(DType::int8, {1, 48, 48, 17}, 0.02f, 3), quant(DType::int8, {1, 48, 48, 17}, 0.06f, 1)),
         DType::int8, {1, 1, 48, 17}, {1, 48, 48, 17}, {1, 48, 48, 17}, true, "int8 SUB repeating first");
  // MoveNet's outer-product SUB (a heatmap grid against per-keypoint coordinates) and a general broadcast.
  expect(binary_model(tw::Op::sub, quant(DType::int8, {1, 48, 48, 1}, 0.0157f, -128),
                      quant(DType::int8, {1, 1, 1, 17}, 0.0221f, -128),
                      quant(DType::int8, {1, 48, 48, 17}, 0.0266f, 1)),
         DType::int8, {1, 48, 48, 1}, {1, 1, 1, 17}, {1, 48, 48, 17}, true, "MoveNet outer-product SUB");
  expect(binary_model(tw::Op::mul, quant(DType::int8, {4, 1, 3}, 0.1f, 0), quant(DType::int8, {1, 5, 3}, 0.1f, 0),
                      quant(DType::int8, {4, 5, 3}, 0.1f, 0)),
         DType::int8, {4, 1, 3}, {1, 5, 3}, {4, 5, 3}, true, "general broadcast");
  // What runs on the reference kernel: int16, int32, DIV, 8-bit MAXIMUM.
  expect(binary_model(tw::Op::mul, quant(DType::int16, {70}, 0.001f, 0), quant(DType::int16, {70}, 0.002f, 0),
                      quant(DType::int16, {70}, 0.05f, 0)),
         DType::int16, {70}, {70}, {70}, false, "int16 MUL");
  expect(binary_model(tw::Op::sub, plain(DType::int32, {70}), plain(DType::int32, {70}), plain(DType::int32, {70})),
         DType::int32, {70}, {70}, {70}, false, "int32 SUB");
  expect(binary_model(tw::Op::div, plain(DType::float32, {70}), plain(DType::float32, {70}),
                      plain(DType::float32, {70})),
         DType::float32, {70}, {70}, {70}, false, "float32 DIV");
  expect(binary_model(tw::Op::maximum, quant(DType::int8, {70}, 0.1f, 2), quant(DType::int8, {70}, 0.1f, 2),
                      quant(DType::int8, {70}, 0.1f, 2)),
         DType::int8, {70}, {70}, {70}, false, "int8 MAXIMUM");
}

TEST_CASE("optimised SiLU (LOGISTIC then MUL) through whole models: large tensors split across the default pool") {
  // 64 K elements: enough work for the backends' default splitting threshold on 3 threads.
  std::mt19937 rng(31);
  const std::vector<int32_t> shape = {1, 64, 64, 16};
  tw::ModelBuilder b;
  const int32_t x = tensor(b, "x", quant(DType::int8, shape, 0.0823f, -93));
  const int32_t s = tensor(b, "sigmoid", quant(DType::int8, shape, 1.0f / 256, -128));
  const int32_t y = tensor(b, "y", quant(DType::int8, shape, 0.0412f, -122));
  b.add_operator(tw::Op::logistic, {x}, {s});
  b.add_operator(tw::Op::mul, {x, s}, {y}, MulOptions{});
  b.set_inputs({x});
  b.set_outputs({y});
  const auto in = random_values<int8_t>(rng, 64 * 64 * 16);
  const auto out = run1<int8_t>(b.finish("silu"), {bytes_of(in)});
  // Spot-check that the outputs follow the real function (clamped to the output's range) within the quantization
  // steps of the sigmoid (1/256, scaled by |x|) and of the output.
  for (size_t i = 0; i < in.size(); i += 97) {
    const double v = 0.0823 * (int(in[i]) + 93);
    const double silu = std::clamp(v / (1.0 + std::exp(-v)), (-128 + 122) * 0.0412, (127 + 122) * 0.0412);
    CHECK(std::abs((int(out[i]) + 122) * 0.0412 - silu) <= 0.0412 + 1.0 / 256 * std::abs(v) + 1e-9);
  }
}
