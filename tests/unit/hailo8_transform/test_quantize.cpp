// aisrv tests — Hailo-8 quantization / de-quantization against hand-computed values (HailoRT rules: clip, divide by
// scale, add zero point, round half to even; identity qp rounds only; dequantize (q - zp) * scale, per tensor and per
// feature). Scales are powers of two so every expected value is exact.
#include <doctest/doctest.h>

#include <cfenv>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "aisrv/engine/hailo8/transform/quantize.hpp"

using namespace aisrv;
using namespace aisrv::engine::hailo8::transform;

namespace {
const float kNaN = std::numeric_limits<float>::quiet_NaN();
}

TEST_CASE("identity qp rounds half to even and ignores the limits") {
  // scale 1, zp 0 → HailoRT skips clipping entirely; we saturate what does not fit the type.
  const QuantInfo qp{0.0f, 1.0f, 0.0f, 10.0f};
  const std::vector<float> in{0.5f, 1.5f, 2.5f, -0.5f, 254.5f, 255.5f, 3.49999f, 300.0f, -7.0f, kNaN, 20.0f};
  const std::vector<uint8_t> want{0, 2, 2, 0, 254, 255, 3, 255, 0, 0, 20};
  std::vector<uint8_t> out(in.size(), 0xAA);
  REQUIRE(quantize(in, out, qp));
  CHECK(out == want);
}

TEST_CASE("quantize u8: clip, divide, add zero point, ties to even") {
  // zp 128, scale 0.5, limits [-64, 63.5]:
  //   1.0 → 2 + 128 = 130;  0.25 → 128.5 → 128 (even);  0.75 → 129.5 → 130;  -0.25 → 127.5 → 128
  //   -100 → clip -64 → -128 + 128 = 0;  100 → clip 63.5 → 127 + 128 = 255;  NaN → 0
  const QuantInfo qp{128.0f, 0.5f, -64.0f, 63.5f};
  const std::vector<float> in{1.0f, 0.25f, 0.75f, -0.25f, -100.0f, 100.0f, kNaN, 0.0f};
  const std::vector<uint8_t> want{130, 128, 130, 128, 0, 255, 0, 128};
  std::vector<uint8_t> out(in.size());
  REQUIRE(quantize(in, out, qp));
  CHECK(out == want);
}

TEST_CASE("quantize u16") {
  // zp 1000, scale 0.25, limits [-250, 17000]:
  //   1.0 → 4 + 1000 = 1004; 0.125 → 1000.5 → 1000; 0.375 → 1001.5 → 1002; 16000 → 64000 + 1000 = 65000
  //   17000 → 68000 + 1000 = 69000 → saturates to 65535; 20000 → clip 17000 → 65535; -300 → clip -250 → 0
  const QuantInfo qp{1000.0f, 0.25f, -250.0f, 17000.0f};
  const std::vector<float> in{1.0f, 0.125f, 0.375f, 16000.0f, 17000.0f, 20000.0f, -300.0f, kNaN, 2.0f};
  const std::vector<uint16_t> want{1004, 1000, 1002, 65000, 65535, 65535, 0, 0, 1008};
  std::vector<uint16_t> out(in.size());
  REQUIRE(quantize(in, out, qp));
  CHECK(out == want);
}

TEST_CASE("quantize keeps its rounding when the caller's rounding mode is upward, and restores it") {
  REQUIRE(std::fesetround(FE_UPWARD) == 0);
  const QuantInfo qp{128.0f, 0.5f, -64.0f, 63.5f};
  const std::vector<float> in{0.25f, 0.75f};  // 128.5 → 128, 129.5 → 130 regardless of the caller's mode
  std::vector<uint8_t> out(2);
  const bool ok = quantize(in, out, qp).ok();
  const int mode = std::fegetround();
  std::fesetround(FE_TONEAREST);
  REQUIRE(ok);
  CHECK(out == std::vector<uint8_t>{128, 130});
  CHECK(mode == FE_UPWARD);
}

TEST_CASE("vector and tail paths agree with the element formula on long random frames") {
  // The kernel processes 16 (u8) or 8 (u16) elements per step and the rest one by one; 1021 is prime so every
  // step/tail split is exercised. The reference is the formula written out in scalar float arithmetic.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.5f, 1.5f);
  std::vector<float> in(1021);
  for (auto& x : in) x = dist(rng);
  in[3] = kNaN;
  in[100] = 0.5f / 255.0f;  // exact half steps are unlikely at random; add a few near-ties explicitly
  const QuantInfo qp{3.0f, 1.0f / 255.0f, -1.0f, 1.0f};
  auto reference = [&](float x, float qmax) {
    float v = x;
    if (v >= qp.limit_max) v = qp.limit_max;
    else if (v <= qp.limit_min) v = qp.limit_min;
    v = v / qp.scale + qp.zero_point;
    if (!(v > 0.0f)) v = 0.0f;
    if (!(v < qmax)) v = qmax;
    return std::nearbyint(v);
  };
  std::vector<uint8_t> out8(in.size());
  REQUIRE(quantize(in, out8, qp));
  std::vector<uint16_t> out16(in.size());
  const QuantInfo qp16{30000.0f, 1.0f / 8192.0f, -1.0f, 1.0f};
  REQUIRE(quantize(in, out16, qp16));
  for (size_t i = 0; i < in.size(); ++i) {
    CHECK(out8[i] == static_cast<uint8_t>(reference(in[i], 255.0f)));
    float v = in[i];
    if (v >= qp16.limit_max) v = qp16.limit_max;
    else if (v <= qp16.limit_min) v = qp16.limit_min;
    v = v / qp16.scale + qp16.zero_point;
    const float want16 = std::isnan(v) ? 0.0f : std::nearbyint(std::min(std::max(v, 0.0f), 65535.0f));
    CHECK(out16[i] == static_cast<uint16_t>(want16));
  }
}

TEST_CASE("quantize refuses mismatched lengths and unusable parameters") {
  std::vector<float> in(4, 0.0f);
  std::vector<uint8_t> out(3);
  auto r = quantize(in, out, QuantInfo{0.0f, 0.5f, -1.0f, 1.0f});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::bad_length);
  CHECK(r.error().message.find("4 input elements but 3 output") != std::string::npos);

  out.resize(4);
  auto zero_scale = quantize(in, out, QuantInfo{0.0f, 0.0f, 0.0f, 0.0f});  // HailoRT's INVALID_QP (per-feature HEF)
  REQUIRE_FALSE(zero_scale);
  CHECK(zero_scale.error().code == Errc::invalid_argument);
  auto inverted = quantize(in, out, QuantInfo{0.0f, 0.5f, 1.0f, -1.0f});
  REQUIRE_FALSE(inverted);
  CHECK(inverted.error().code == Errc::invalid_argument);
  auto nan_zp = quantize(in, out, QuantInfo{kNaN, 0.5f, -1.0f, 1.0f});
  CHECK_FALSE(nan_zp);
}

TEST_CASE("dequantize per tensor") {
  // (q - zp) · scale: zp 128, scale 0.5: 0 → -64, 128 → 0, 255 → 63.5
  std::vector<uint8_t> in8{0, 128, 255};
  std::vector<float> out(3);
  REQUIRE(dequantize(in8, out, QuantInfo{128.0f, 0.5f, 0, 0}));
  CHECK(out == std::vector<float>{-64.0f, 0.0f, 63.5f});
  // u16: zp 1000, scale 0.25: 1000 → 0, 65535 → 64535 · 0.25 = 16133.75
  std::vector<uint16_t> in16{1000, 65535};
  std::vector<float> out16(2);
  REQUIRE(dequantize(in16, out16, QuantInfo{1000.0f, 0.25f, 0, 0}));
  CHECK(out16 == std::vector<float>{0.0f, 16133.75f});
  // identity: plain cast
  REQUIRE(dequantize(in8, out, QuantInfo{0.0f, 1.0f, 0, 0}));
  CHECK(out == std::vector<float>{0.0f, 128.0f, 255.0f});
  std::vector<float> wrong(2);
  CHECK(dequantize(in8, wrong, QuantInfo{}).error().code == Errc::bad_length);
}

TEST_CASE("dequantize per feature, features innermost (repetition 1)") {
  // 2 pixels × 3 features; qps f0 {0, 1}, f1 {10, 2}, f2 {30, 0.5}
  //   f0: 10, 40;  f1: (20-10)·2 = 20, (50-10)·2 = 80;  f2: (30-30)·0.5 = 0, (60-30)·0.5 = 15
  const std::vector<uint8_t> in{10, 20, 30, 40, 50, 60};
  const std::vector<QuantInfo> qps{{0.0f, 1.0f, 0, 0}, {10.0f, 2.0f, 0, 0}, {30.0f, 0.5f, 0, 0}};
  std::vector<float> out(6);
  REQUIRE(dequantize_per_feature(in, out, qps, 1));
  CHECK(out == std::vector<float>{10, 20, 0, 40, 80, 15});
}

TEST_CASE("dequantize per feature with repetition (NHCW rows)") {
  // width 2: elements [f0 f0 f1 f1 f2 f2]; qps {0,1}, {0,10}, {1,1} → 1 2 | 30 40 | 4 5
  const std::vector<uint16_t> in{1, 2, 3, 4, 5, 6};
  const std::vector<QuantInfo> qps{{0.0f, 1.0f, 0, 0}, {0.0f, 10.0f, 0, 0}, {1.0f, 1.0f, 0, 0}};
  std::vector<float> out(6);
  REQUIRE(dequantize_per_feature(in, out, qps, 2));
  CHECK(out == std::vector<float>{1, 2, 30, 40, 4, 5});
  // 5 elements is not a whole number of 3 × 2 periods
  std::vector<uint16_t> odd(5);
  std::vector<float> odd_out(5);
  auto r = dequantize_per_feature(odd, odd_out, qps, 2);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::bad_length);
  CHECK_FALSE(dequantize_per_feature(in, out, std::span<const QuantInfo>{}, 1));
  CHECK_FALSE(dequantize_per_feature(in, out, qps, 0));
}

TEST_CASE("cast to float") {
  const std::vector<uint16_t> in{0, 7, 65535};
  std::vector<float> out(3);
  REQUIRE(cast_to_float(in, out));
  CHECK(out == std::vector<float>{0.0f, 7.0f, 65535.0f});
}
