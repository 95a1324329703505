// aisrv tests — the on-chip NMS path: bbox word decoding, the device word stream → hardware frame (bbox and burst
// modes), and the hardware frame → HAILO_NMS_BY_CLASS float32 conversion, with hand-built words and frames.
#include <doctest/doctest.h>

#include <vector>

#include "aisrv/engine/hailo8/transform/nms_on_chip.hpp"

using namespace aisrv;
using namespace aisrv::engine::hailo8::transform;

namespace {

// The stream's NMS parameters as the HEF reader fills them (defaults: one chunk, 8-byte bboxes, no burst).
NmsInfo nms_params(uint32_t classes, uint32_t max_bboxes, uint32_t chunks = 1, uint32_t bbox_size = 8,
                   uint32_t burst_size = 1, NmsBurstType burst_type = NmsBurstType::h8_bbox) {
  NmsInfo n;
  n.number_of_classes = classes;
  n.max_bboxes_per_class = max_bboxes;
  n.chunks_per_frame = chunks;
  n.bbox_size = bbox_size;
  n.burst_size = burst_size;
  n.burst_type = burst_type;
  return n;
}

// Word from its fields: score 63..48, y_min 47..36, x_min 35..24, y_max 23..12, x_max 11..0.
uint64_t word(uint64_t y_min, uint64_t x_min, uint64_t y_max, uint64_t x_max, uint64_t score) {
  return (score << 48) | (y_min << 36) | (x_min << 24) | (y_max << 12) | x_max;
}

void put64(std::vector<uint8_t>& v, uint64_t w) {
  for (int i = 0; i < 8; ++i) v.push_back(static_cast<uint8_t>(w >> (8 * i)));
}

void put16(std::vector<uint8_t>& v, uint16_t x) {
  v.push_back(static_cast<uint8_t>(x));
  v.push_back(static_cast<uint8_t>(x >> 8));
}

constexpr uint64_t D = kNmsDelimiter;

}  // namespace

TEST_CASE("bbox word fields") {
  // The hex digits of 0xBEEF_123_456_789_ABC read off the field layout directly.
  const NmsBbox b = decode_nms_bbox(0xBEEF123456789ABCull);
  CHECK(b.score == 0xBEEF);
  CHECK(b.y_min == 0x123);
  CHECK(b.x_min == 0x456);
  CHECK(b.y_max == 0x789);
  CHECK(b.x_max == 0xABC);
  CHECK(word(0x123, 0x456, 0x789, 0xABC, 0xBEEF) == 0xBEEF123456789ABCull);
}

TEST_CASE("frame sizes follow HailoRT's formulas") {
  // 3 classes, max 2, no burst: per class 2 + 8·max(1, 2) = 18; 3·18 + 8·1 = 62
  CHECK(*nms_hw_frame_bytes(nms_params(3, 2, 1, 8, 1, NmsBurstType::h8_bbox)) == 62);
  // 2 chunks, burst 4: per class 2 + 8·max(4, 2) = 34; 2·3·34 + 8·4 = 236
  CHECK(*nms_hw_frame_bytes(nms_params(3, 2, 2, 8, 4, NmsBurstType::h8_per_class)) == 236);
  // by class: 3·(1 + 5·2) = 33 floats; with 2 chunks 3·(1 + 5·4) = 63
  CHECK(*nms_by_class_floats(nms_params(3, 2, 1)) == 33);
  CHECK(*nms_by_class_floats(nms_params(3, 2, 2)) == 63);
  // chunks 0 reads as 1
  CHECK(*nms_by_class_floats(nms_params(3, 2, 0)) == 33);
  CHECK_FALSE(nms_hw_frame_bytes(nms_params(0, 2)));
  CHECK_FALSE(nms_hw_frame_bytes(nms_params(3, 2, 1, 4)));  // bbox smaller than a word
  CHECK_FALSE(nms_by_class_floats(nms_params(100000, 65535)));
  // Hailo-15 burst types are not Hailo-8 wire formats.
  auto h15 = nms_hw_frame_bytes(nms_params(3, 2, 1, 8, 1, NmsBurstType::h15_per_class));
  REQUIRE_FALSE(h15);
  CHECK(h15.error().message == "NMS burst type H15_PER_CLASS is not a Hailo-8 type (H8_BBOX or H8_PER_CLASS)");
  // The checked size is the reader's formula (one implementation of get_nms_hw_frame_size).
  const NmsInfo p = nms_params(80, 100, 2, 8, 4, NmsBurstType::h8_per_class);
  CHECK(*nms_hw_frame_bytes(p) == p.hw_frame_size());
}

TEST_CASE("wire → hardware frame, bbox mode") {
  const NmsInfo shape = nms_params(3, 2, 1, 8, 1, NmsBurstType::h8_bbox);
  const uint64_t A = word(1, 2, 3, 4, 5), B = word(6, 7, 8, 9, 10), C = word(11, 12, 13, 14, 15);
  std::vector<uint8_t> wire;
  // class 0: A; class 1: none; class 2: B, image delimiter (skipped), C; then trailing data of the next frame
  for (uint64_t w : {A, D, D, B, kNmsImageDelimiter, C, D, A}) put64(wire, w);
  std::vector<uint8_t> hw(62, 0xCC);
  auto used = nms_wire_to_hw_frame(wire, shape, hw);
  REQUIRE(used.ok());
  CHECK(*used == 7 * 8);
  std::vector<uint8_t> want;
  put16(want, 1);
  put64(want, A);
  put16(want, 0);
  put16(want, 2);
  put64(want, B);
  put64(want, C);
  want.resize(62, 0);
  CHECK(hw == want);
}

TEST_CASE("wire → hardware frame, Hailo-8 per-class burst mode") {
  // bursts of 4 words; after a class delimiter the rest of the burst is padding (the delimiter value)
  const NmsInfo shape = nms_params(2, 3, 1, 8, 4, NmsBurstType::h8_per_class);
  const uint64_t A = word(1, 1, 2, 2, 9), B = word(3, 3, 4, 4, 8), C = word(5, 5, 6, 6, 7);
  std::vector<uint8_t> wire;
  for (uint64_t w : {A, D, D, D, /* burst 2 */ B, C, D, D}) put64(wire, w);
  std::vector<uint8_t> hw(*nms_hw_frame_bytes(shape));
  auto used = nms_wire_to_hw_frame(wire, shape, hw);
  REQUIRE(used.ok());
  CHECK(*used == 64);
  std::vector<uint8_t> want;
  put16(want, 1);
  put64(want, A);
  put16(want, 2);
  put64(want, B);
  put64(want, C);
  want.resize(hw.size(), 0);
  CHECK(hw == want);

  // a class that runs over a burst boundary: burst size 2 → [A B] [C D] [D D]
  const NmsInfo two = nms_params(2, 3, 1, 8, 2, NmsBurstType::h8_per_class);
  std::vector<uint8_t> wire2;
  for (uint64_t w : {A, B, C, D, D, D}) put64(wire2, w);
  std::vector<uint8_t> hw2(*nms_hw_frame_bytes(two));
  auto used2 = nms_wire_to_hw_frame(wire2, two, hw2);
  REQUIRE(used2.ok());
  CHECK(*used2 == 48);
  CHECK(hw2[0] == 3);  // class 0 count
  CHECK(hw2[2 + 24] == 0);  // class 1 count
}

TEST_CASE("wire errors: too many bboxes, truncated stream, image delimiter in burst mode") {
  const NmsInfo shape = nms_params(1, 2, 1, 8, 1, NmsBurstType::h8_bbox);
  std::vector<uint8_t> hw(*nms_hw_frame_bytes(shape));
  std::vector<uint8_t> three;
  for (uint64_t w : {word(1, 1, 1, 1, 1), word(2, 2, 2, 2, 2), word(3, 3, 3, 3, 3), D}) put64(three, w);
  auto r = nms_wire_to_hw_frame(three, shape, hw);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("more than 2 bboxes") != std::string::npos);

  std::vector<uint8_t> cut;
  put64(cut, word(1, 1, 1, 1, 1));
  auto t = nms_wire_to_hw_frame(cut, shape, hw);
  REQUIRE_FALSE(t);
  CHECK(t.error().message.find("after 0 of 1 class delimiters") != std::string::npos);

  const NmsInfo burst = nms_params(1, 2, 1, 8, 2, NmsBurstType::h8_per_class);
  std::vector<uint8_t> hw_b(*nms_hw_frame_bytes(burst));
  std::vector<uint8_t> image;
  for (uint64_t w : {kNmsImageDelimiter, D}) put64(image, w);
  CHECK_FALSE(nms_wire_to_hw_frame(image, burst, hw_b));
  // the last burst's padding missing: [A D] [D] (one word short)
  std::vector<uint8_t> short_pad;
  for (uint64_t w : {word(1, 1, 1, 1, 1), D}) put64(short_pad, w);
  const NmsInfo burst4 = nms_params(1, 2, 1, 8, 4, NmsBurstType::h8_per_class);
  std::vector<uint8_t> hw4(*nms_hw_frame_bytes(burst4));
  auto p = nms_wire_to_hw_frame(short_pad, burst4, hw4);
  REQUIRE_FALSE(p);
  CHECK(p.error().message.find("padding") != std::string::npos);
  std::vector<uint8_t> wrong_size(10);
  CHECK(nms_wire_to_hw_frame(three, shape, wrong_size).error().code == Errc::bad_length);
}

TEST_CASE("hardware frame → by-class float32, chunks merged per class, values de-quantized") {
  // 2 classes, max 2 per class, 2 chunks; qp zp 0, scale 0.5.
  //   chunk 0: class 0 {W1}, class 1 {};  chunk 1: class 0 {W2}, class 1 {W3}
  const NmsInfo shape = nms_params(2, 2, 2, 8, 1, NmsBurstType::h8_bbox);
  const uint64_t W1 = word(10, 20, 30, 40, 100), W2 = word(2, 4, 6, 8, 200), W3 = word(0, 0, 4095, 4095, 65535);
  std::vector<uint8_t> hw;
  put16(hw, 1);
  put64(hw, W1);
  put16(hw, 0);
  put16(hw, 1);
  put64(hw, W2);
  put16(hw, 1);
  put64(hw, W3);
  hw.resize(*nms_hw_frame_bytes(shape), 0);
  std::vector<float> out(*nms_by_class_floats(shape), -1.0f);
  REQUIRE(out.size() == 42);
  REQUIRE(nms_hw_frame_to_by_class(hw, shape, QuantInfo{0.0f, 0.5f, 0, 0}, out));
  std::vector<float> want{2, 5, 10, 15, 20, 50, 1, 2, 3, 4, 100,  // class 0: W1, W2
                          1, 0, 0, 2047.5f, 2047.5f, 32767.5f};   // class 1: W3
  want.resize(42, 0.0f);
  CHECK(out == want);

  // zero point applies to the fields but not to the count
  std::vector<float> out2(42);
  REQUIRE(nms_hw_frame_to_by_class(hw, shape, QuantInfo{2.0f, 1.0f, 0, 0}, out2));
  CHECK(out2[0] == 2.0f);
  CHECK(out2[1] == 8.0f);   // y_min 10 - 2
  CHECK(out2[5] == 98.0f);  // score 100 - 2
}

TEST_CASE("hardware frame errors: count above the maximum, counts running past the frame") {
  const NmsInfo shape = nms_params(1, 2, 1, 8, 1, NmsBurstType::h8_bbox);
  std::vector<float> out(*nms_by_class_floats(shape));
  std::vector<uint8_t> big;
  put16(big, 3);
  big.resize(64, 0);
  auto r = nms_hw_frame_to_by_class(big, shape, QuantInfo{}, out);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("reports 3 bboxes, the maximum is 2") != std::string::npos);
  std::vector<uint8_t> cut;
  put16(cut, 2);
  put64(cut, 1);  // one bbox of the two announced
  auto c = nms_hw_frame_to_by_class(cut, shape, QuantInfo{}, out);
  REQUIRE_FALSE(c);
  CHECK(c.error().message.find("run past") != std::string::npos);
  std::vector<uint8_t> none;
  CHECK_FALSE(nms_hw_frame_to_by_class(none, shape, QuantInfo{}, out));
  std::vector<float> wrong(5);
  CHECK(nms_hw_frame_to_by_class(big, shape, QuantInfo{}, wrong).error().code == Errc::bad_length);
}
