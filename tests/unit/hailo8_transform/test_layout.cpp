// aisrv tests — host ↔ hardware layouts with hand-written device frames (HailoRT transform.cpp rules, facts §4.2):
// padding is zero on the way in and ignored on the way out; every device frame is a whole number of 8-byte words.
#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "aisrv/engine/hailo8/transform/layout.hpp"

using namespace aisrv;
using namespace aisrv::engine::hailo8::transform;

namespace {

std::vector<uint8_t> iota_u8(size_t n, uint8_t first = 1) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Host → device must give `want`; device → host on `want` with every padding byte replaced by 0xEE must give the
// host frame back (the padding is ignored, not copied).
void check_u8(FormatOrder order, Shape shape, Shape hw, const std::vector<uint8_t>& host,
              const std::vector<uint8_t>& want) {
  auto bytes = device_frame_bytes(order, shape, hw, FormatType::uint8);
  REQUIRE(bytes.ok());
  REQUIRE(*bytes == want.size());
  std::vector<uint8_t> dev(want.size(), 0xCC);
  REQUIRE(host_to_device(host, shape, order, hw, dev));
  CHECK(dev == want);
  // Poison the padding: positions where `want` is 0 and that do not carry a host 0.
  std::vector<uint8_t> poisoned = want;
  for (auto& b : poisoned) {
    if (b == 0) b = 0xEE;
  }
  std::vector<uint8_t> back(host.size(), 0);
  REQUIRE(device_to_host(poisoned, order, hw, shape, back));
  CHECK(back == host);
}

}  // namespace

TEST_CASE("NHWC: rows padded to the hardware width") {
  // 2×3×2 in a 2×4×2 frame: each row 6 values + 2 zero
  check_u8(FormatOrder::nhwc, {2, 3, 2}, {2, 4, 2}, iota_u8(12),
           {1, 2, 3, 4, 5, 6, 0, 0,  //
            7, 8, 9, 10, 11, 12, 0, 0});
}

TEST_CASE("NHWC: padded features per pixel and the 8-byte tail") {
  check_u8(FormatOrder::nhwc, {1, 2, 3}, {1, 2, 4}, iota_u8(6), {1, 2, 3, 0, 4, 5, 6, 0});
  // 1×1×3 → 3 bytes of data, frame rounded up to 8
  check_u8(FormatOrder::nhwc, {1, 1, 3}, {1, 1, 3}, {7, 8, 9}, {7, 8, 9, 0, 0, 0, 0, 0});
  // padded height: the second row is all padding
  check_u8(FormatOrder::nhwc, {1, 2, 1}, {2, 2, 1}, {5, 6}, {5, 6, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("NHCW: each channel row holds the width, padded") {
  // row 0 pixels (1,2) (3,4) (5,6); row 1 (7,8) (9,10) (11,12); hw width 4
  check_u8(FormatOrder::nhcw, {2, 3, 2}, {2, 4, 2}, iota_u8(12),
           {1, 3, 5, 0, 2, 4, 6, 0,  //
            7, 9, 11, 0, 8, 10, 12, 0});
  // padded features: a whole zero channel row
  check_u8(FormatOrder::nhcw, {1, 2, 1}, {1, 4, 2}, {9, 8}, {9, 8, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("NHCW RGB rows longer than one vector step (16 pixels) split into three channel rows") {
  // host byte of pixel c, channel f is 1 + 3c + f; channel row f holds those for c = 0..19, then 4 zeros (hw 24)
  const Shape shape{2, 20, 3}, hw{2, 24, 3};
  std::vector<uint8_t> host(2 * 20 * 3);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(1 + i);
  std::vector<uint8_t> want;
  for (size_t r = 0; r < 2; ++r) {
    for (size_t f = 0; f < 3; ++f) {
      for (size_t c = 0; c < 24; ++c) want.push_back(c < 20 ? static_cast<uint8_t>(1 + r * 60 + 3 * c + f) : 0);
    }
  }
  check_u8(FormatOrder::nhcw, shape, hw, host, want);
}

TEST_CASE("FCR: features padded per pixel, padded width zero") {
  check_u8(FormatOrder::fcr, {1, 2, 3}, {1, 3, 4}, iota_u8(6),
           {1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0, 0,  //
            0, 0, 0, 0});
}

TEST_CASE("F8CR: groups of 8 channels across the width, last group zero-padded") {
  // 1×2×10 in 1×2×16: group 0 = channels 0-7 of pixel 0 then pixel 1; group 1 = channels 8-9 + 6 zeros each
  std::vector<uint8_t> want;
  for (int v = 1; v <= 8; ++v) want.push_back(static_cast<uint8_t>(v));
  for (int v = 11; v <= 18; ++v) want.push_back(static_cast<uint8_t>(v));
  want.insert(want.end(), {9, 10, 0, 0, 0, 0, 0, 0, 19, 20, 0, 0, 0, 0, 0, 0});
  check_u8(FormatOrder::f8cr, {1, 2, 10}, {1, 2, 16}, iota_u8(20), want);
}

TEST_CASE("NC and NHW") {
  check_u8(FormatOrder::nc, {1, 1, 5}, {1, 1, 8}, iota_u8(5), {1, 2, 3, 4, 5, 0, 0, 0});
  check_u8(FormatOrder::nhw, {2, 3, 1}, {2, 8, 1}, iota_u8(6),
           {1, 2, 3, 0, 0, 0, 0, 0,  //
            4, 5, 6, 0, 0, 0, 0, 0});
}

TEST_CASE("uint16 NHCW") {
  const std::vector<uint16_t> host{0x0102, 0x0304, 0x0506, 0x0708};  // pixels (0x0102,0x0304) (0x0506,0x0708)
  const std::vector<uint16_t> want{0x0102, 0x0506, 0, 0, 0x0304, 0x0708, 0, 0};
  auto bytes = device_frame_bytes(FormatOrder::nhcw, {1, 2, 2}, {1, 4, 2}, FormatType::uint16);
  REQUIRE(bytes.ok());
  CHECK(*bytes == 16);
  std::vector<uint16_t> dev(8, 0xCCCC);
  REQUIRE(host_to_device(host, {1, 2, 2}, FormatOrder::nhcw, {1, 4, 2}, dev));
  CHECK(dev == want);
  std::vector<uint16_t> back(4);
  REQUIRE(device_to_host(dev, FormatOrder::nhcw, {1, 4, 2}, {1, 2, 2}, back));
  CHECK(back == host);
  // 1×1×3 u16 = 6 bytes → frame of 8 bytes = 4 elements
  CHECK(*device_frame_bytes(FormatOrder::nc, {1, 1, 3}, {1, 1, 3}, FormatType::uint16) == 8);
}

TEST_CASE("quantize_to_device: fused quantize + layout") {
  // identity qp: 1.5 → 2, 2.5 → 2, 3.4 → 3, 250.6 → 251; NHCW 1×2×2 in 1×4×2
  const std::vector<float> host{1.5f, 2.5f, 3.4f, 250.6f};
  std::vector<uint8_t> dev(8, 0xCC);
  REQUIRE(quantize_to_device(host, {1, 2, 2}, QuantInfo{0, 1, 0, 0}, FormatOrder::nhcw, {1, 4, 2}, dev));
  CHECK(dev == std::vector<uint8_t>{2, 3, 0, 0, 2, 251, 0, 0});
  // dense NHWC path with a real qp (zp 128, scale 0.5): 1 → 130, -1 → 126, 0.25 → 128.5 → 128; width padded 3 → 4
  const std::vector<float> rgb{1.0f, -1.0f, 0.25f};
  std::vector<uint8_t> dev2(8, 0xCC);
  REQUIRE(quantize_to_device(rgb, {1, 1, 3}, QuantInfo{128, 0.5f, -64, 63.5f}, FormatOrder::nhwc, {1, 2, 3}, dev2));
  CHECK(dev2 == std::vector<uint8_t>{130, 126, 128, 0, 0, 0, 0, 0});
  // u16 F8CR (scratch-row path): 1×1×2 in 1×1×8, zp 0 scale 0.25: 1 → 4, 2 → 8
  std::vector<uint16_t> dev3(8, 0xCCCC);
  REQUIRE(quantize_to_device(std::vector<float>{1.0f, 2.0f}, {1, 1, 2}, QuantInfo{0, 0.25f, 0, 100},
                             FormatOrder::f8cr, {1, 1, 8}, dev3));
  CHECK(dev3 == std::vector<uint16_t>{4, 8, 0, 0, 0, 0, 0, 0});
  // a bad qp is refused before anything is written
  std::vector<uint8_t> untouched(8, 0xCC);
  CHECK_FALSE(quantize_to_device(rgb, {1, 1, 3}, QuantInfo{0, 0, 0, 0}, FormatOrder::nhwc, {1, 2, 3}, untouched));
  CHECK(untouched == std::vector<uint8_t>(8, 0xCC));
}

TEST_CASE("dequantize_from_device: unpad + de-quantize, per tensor and per feature") {
  // NHCW 1×2×2 in 1×4×2: channel rows [10 20 x x] [30 40 x x] → host pixels (10,30) (20,40)
  const std::vector<uint8_t> dev{10, 20, 0xEE, 0xEE, 30, 40, 0xEE, 0xEE};
  std::vector<float> out(4);
  const std::vector<QuantInfo> one{{10.0f, 0.5f, 0, 0}};
  REQUIRE(dequantize_from_device(dev, FormatOrder::nhcw, {1, 4, 2}, {1, 2, 2}, one, out));
  CHECK(out == std::vector<float>{0.0f, 10.0f, 5.0f, 15.0f});
  // per feature: f0 {0, 1}, f1 {40, 2} → (10, -20) (20, 0)
  const std::vector<QuantInfo> two{{0.0f, 1.0f, 0, 0}, {40.0f, 2.0f, 0, 0}};
  REQUIRE(dequantize_from_device(dev, FormatOrder::nhcw, {1, 4, 2}, {1, 2, 2}, two, out));
  CHECK(out == std::vector<float>{10.0f, -20.0f, 20.0f, 0.0f});
  // NHW is only cast, whatever the qp
  const std::vector<uint8_t> argmax{3, 1, 0, 0, 0, 0, 0, 0};
  std::vector<float> cls(2);
  REQUIRE(dequantize_from_device(argmax, FormatOrder::nhw, {1, 8, 1}, {1, 2, 1}, one, cls));
  CHECK(cls == std::vector<float>{3.0f, 1.0f});
  // 3 qps for 2 features
  const std::vector<QuantInfo> three(3);
  auto r = dequantize_from_device(dev, FormatOrder::nhcw, {1, 4, 2}, {1, 2, 2}, three, out);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::invalid_argument);
}

TEST_CASE("layouts refuse inconsistent shapes and buffer sizes with the numbers in the message") {
  std::vector<uint8_t> host(6), dev(16);
  auto small = host_to_device(host, {1, 2, 3}, FormatOrder::nhwc, {1, 1, 3}, dev);
  REQUIRE_FALSE(small);
  CHECK(small.error().message.find("smaller than the frame shape") != std::string::npos);
  auto f8 = device_frame_bytes(FormatOrder::f8cr, {1, 2, 3}, {1, 2, 12}, FormatType::uint8);
  REQUIRE_FALSE(f8);
  CHECK(f8.error().message.find("multiple of 8") != std::string::npos);
  CHECK_FALSE(device_frame_bytes(FormatOrder::nc, {2, 1, 3}, {2, 1, 8}, FormatType::uint8));
  CHECK_FALSE(device_frame_bytes(FormatOrder::nhw, {2, 2, 2}, {2, 8, 2}, FormatType::uint8));
  CHECK_FALSE(device_frame_bytes(FormatOrder::nhwc, {0, 2, 2}, {1, 2, 2}, FormatType::uint8));
  auto huge = device_frame_bytes(FormatOrder::nhwc, {1, 1, 1}, {1u << 31, 1u << 31, 3}, FormatType::uint8);
  REQUIRE_FALSE(huge);
  CHECK(huge.error().message.find("exceeds") != std::string::npos);
  // buffer sizes: host 5 instead of 6, device 8 instead of 16
  std::vector<uint8_t> host5(5);
  auto r = host_to_device(host5, {1, 2, 3}, FormatOrder::nhwc, {1, 2, 4}, dev);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::bad_length);
  CHECK(r.error().message.find("host frame has 5 elements") != std::string::npos);
  auto d = host_to_device(host, {1, 2, 3}, FormatOrder::nhwc, {1, 2, 4}, dev);  // needs 8, given 16
  REQUIRE_FALSE(d);
  CHECK(d.error().message.find("device frame has 16 elements, hardware shape 1x2x4 needs 8") != std::string::npos);
}

