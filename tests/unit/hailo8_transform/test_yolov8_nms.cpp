// aisrv tests — the YOLOv8 host NMS op on a hand-built 2×2 grid whose boxes, IoUs and scores are exact binary
// fractions: image 64×64, stride 16 (so stride/image = 0.25), 4 DFL bins per side, reg qp identity, cls qp scale 1/64.
// A bin value of 100 against 0 elsewhere makes the softmax one-hot within float precision, so d = that bin index.
//   cell (0,0) A: d = 1,1,1,1 → x,y ∈ [-0.125, 0.375]           area 0.25
//   cell (0,1) B: d = 1,1,1,1 → x ∈ [0.125, 0.625], y ∈ [-0.125, 0.375]
//   cell (1,0) C: d = 0,0,2,2 → x ∈ [0.125, 0.625], y ∈ [0.375, 0.875]
//   cell (1,1) D: d = 3,3,3,3 → x,y ∈ [-0.375, 1.125]           area 2.25
//   IoU(A,B) = 0.125 / 0.375 = 1/3, IoU(A,D) = 0.25 / 2.25 = 1/9, IoU(A,C) = IoU(B,C) = 0
//   class 0 scores A 64/64 = 1, B 48/64 = 0.75, C 16/64 = 0.25, D 40/64 = 0.625
//   class 1 scores A 32/64 = 0.5, B 31/64, C 63/64 = 0.984375, D 0
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "aisrv/engine/hailo8/transform/yolov8_nms.hpp"

using namespace aisrv;
using namespace aisrv::engine::hailo8::transform;

namespace {

constexpr uint32_t kPadW = 4;  // grid width 2 padded to 4, as the HEF pads narrow NHCW outputs

Yolov8NmsConfig base_config(double iou, uint32_t max_boxes, FormatType type = FormatType::uint8) {
  Yolov8NmsConfig c;
  c.score_threshold = 0.5;
  c.iou_threshold = iou;
  c.max_boxes_per_class = max_boxes;
  c.classes = 2;
  c.image_height = 64.0f;
  c.image_width = 64.0f;
  c.type = type;
  Yolov8Branch b;
  b.stride = 16;
  b.reg_shape = {2, 2, 16};
  b.reg_padded = {2, kPadW, 16};
  b.reg_qp = {0.0f, 1.0f, 0, 0};
  b.cls_shape = {2, 2, 2};
  b.cls_padded = {2, kPadW, 2};
  b.cls_qp = {0.0f, 1.0f / 64.0f, 0, 0};
  c.branches.push_back(b);
  return c;
}

struct Frame {
  std::vector<uint16_t> reg = std::vector<uint16_t>(2 * kPadW * 16, 0);
  std::vector<uint16_t> cls = std::vector<uint16_t>(2 * kPadW * 2, 0);
  void set_reg(uint32_t row, uint32_t col, uint32_t feature, uint16_t v) { reg[row * kPadW * 16 + feature * kPadW + col] = v; }
  void set_cls(uint32_t row, uint32_t col, uint32_t k, uint16_t v) { cls[row * kPadW * 2 + k * kPadW + col] = v; }
  // d_j = bin index for side j (j: 0 left, 1 top, 2 right, 3 bottom)
  void set_box(uint32_t row, uint32_t col, int d0, int d1, int d2, int d3) {
    const int d[4] = {d0, d1, d2, d3};
    for (uint32_t j = 0; j < 4; ++j) set_reg(row, col, j * 4 + static_cast<uint32_t>(d[j]), 100);
  }
};

Frame scene() {
  Frame f;
  f.set_box(0, 0, 1, 1, 1, 1);  // A
  f.set_box(0, 1, 1, 1, 1, 1);  // B
  f.set_box(1, 0, 0, 0, 2, 2);  // C
  f.set_box(1, 1, 3, 3, 3, 3);  // D
  f.set_cls(0, 0, 0, 64);
  f.set_cls(0, 1, 0, 48);
  f.set_cls(1, 0, 0, 16);
  f.set_cls(1, 1, 0, 40);
  f.set_cls(0, 0, 1, 32);
  f.set_cls(0, 1, 1, 31);
  f.set_cls(1, 0, 1, 63);
  // Padding columns hold large values: a scan or decode that reads them would invent detections.
  for (uint32_t r = 0; r < 2; ++r) {
    for (uint32_t col = 2; col < kPadW; ++col) {
      for (uint32_t k = 0; k < 2; ++k) f.set_cls(r, col, k, 255);
      for (uint32_t ft = 0; ft < 16; ++ft) f.set_reg(r, col, ft, 200);
    }
  }
  return f;
}

std::vector<uint8_t> bytes_u8(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> out;
  for (uint16_t x : v) out.push_back(static_cast<uint8_t>(x));
  return out;
}

std::vector<uint8_t> bytes_u16(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> out;
  for (uint16_t x : v) {
    out.push_back(static_cast<uint8_t>(x));
    out.push_back(static_cast<uint8_t>(x >> 8));
  }
  return out;
}

std::vector<float> run(Yolov8Nms& op, const std::vector<uint8_t>& reg, const std::vector<uint8_t>& cls) {
  std::vector<float> out(op.output_floats(), -1.0f);
  const std::span<const uint8_t> regs[] = {reg};
  const std::span<const uint8_t> clss[] = {cls};
  auto s = op.run(regs, clss, out);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? std::string() : s.error().message));
  return out;
}

// {y_min, x_min, y_max, x_max}
const std::vector<float> A{-0.125f, -0.125f, 0.375f, 0.375f};
const std::vector<float> B{-0.125f, 0.125f, 0.375f, 0.625f};
const std::vector<float> C{0.375f, 0.125f, 0.875f, 0.625f};
const std::vector<float> Dbox{-0.375f, -0.375f, 1.125f, 1.125f};

void append(std::vector<float>& v, const std::vector<float>& box, float score) {
  v.insert(v.end(), box.begin(), box.end());
  v.push_back(score);
}

}  // namespace

TEST_CASE("YOLOv8 NMS: decode, threshold, per-class suppression, by-class output") {
  auto op = Yolov8Nms::create(base_config(0.3, 3));
  REQUIRE(op.ok());
  CHECK(op->output_floats() == 2 * (1 + 5 * 3));
  const Frame f = scene();
  const auto out = run(*op, bytes_u8(f.reg), bytes_u8(f.cls));
  // class 0: A (1.0) kept; B (0.75) IoU 1/3 ≥ 0.3 with A → suppressed; C below 0.5; D (0.625) IoU 1/9 → kept
  // class 1: C (0.984375), then A (0.5 ≥ 0.5, IoU 0 with C); B 31/64 below threshold
  std::vector<float> want{2};
  append(want, A, 1.0f);
  append(want, Dbox, 0.625f);
  want.push_back(2);
  append(want, C, 0.984375f);
  append(want, A, 0.5f);
  want.resize(32, 0.0f);
  CHECK(out == want);
  CHECK(op->last_candidates() == 5);
  CHECK(op->last_detections() == 4);
}

TEST_CASE("YOLOv8 NMS: IoU just above 1/3 keeps B; max boxes per class caps each class") {
  auto op = Yolov8Nms::create(base_config(0.34, 3));
  REQUIRE(op.ok());
  const Frame f = scene();
  auto out = run(*op, bytes_u8(f.reg), bytes_u8(f.cls));
  std::vector<float> want{3};
  append(want, A, 1.0f);
  append(want, B, 0.75f);
  append(want, Dbox, 0.625f);
  want.push_back(2);
  append(want, C, 0.984375f);
  append(want, A, 0.5f);
  want.resize(32, 0.0f);
  CHECK(out == want);

  auto capped = Yolov8Nms::create(base_config(0.34, 1));
  REQUIRE(capped.ok());
  out = run(*capped, bytes_u8(f.reg), bytes_u8(f.cls));
  std::vector<float> want1{1};
  append(want1, A, 1.0f);
  want1.push_back(1);
  append(want1, C, 0.984375f);
  want1.resize(12, 0.0f);
  CHECK(out == want1);
}

TEST_CASE("YOLOv8 NMS: uint16 outputs give the same result") {
  auto op = Yolov8Nms::create(base_config(0.3, 3, FormatType::uint16));
  REQUIRE(op.ok());
  const Frame f = scene();
  auto op8 = Yolov8Nms::create(base_config(0.3, 3));
  REQUIRE(op8.ok());
  CHECK(run(*op, bytes_u16(f.reg), bytes_u16(f.cls)) == run(*op8, bytes_u8(f.reg), bytes_u8(f.cls)));
}

TEST_CASE("YOLOv8 NMS: equal scores keep grid order (row, col) deterministically") {
  // A and B both score 1.0 in class 0; IoU 1/3 ≥ 0.3: the earlier cell (0,0) wins, B is suppressed.
  auto op = Yolov8Nms::create(base_config(0.3, 3));
  REQUIRE(op.ok());
  Frame f;
  f.set_box(0, 0, 1, 1, 1, 1);
  f.set_box(0, 1, 1, 1, 1, 1);
  f.set_cls(0, 0, 0, 64);
  f.set_cls(0, 1, 0, 64);
  auto out = run(*op, bytes_u8(f.reg), bytes_u8(f.cls));
  std::vector<float> want{1};
  append(want, A, 1.0f);
  want.push_back(0);
  want.resize(32, 0.0f);
  CHECK(out == want);
}

TEST_CASE("YOLOv8 NMS: uniform DFL bins give the mean distance; width and height scale separately") {
  // all reg bins 0 → softmax 1/4 each → d = (0+1+2+3)/4 = 1.5 → offsets 1.5·16/64 = 0.375 (square image)
  auto cfg = base_config(0.5, 3);
  cfg.image_height = 32.0f;  // y scale 16/32 = 0.5: y offsets 0.75, y_center of row 1 = 1.5·0.5 = 0.75
  auto op = Yolov8Nms::create(cfg);
  REQUIRE(op.ok());
  Frame f;
  f.set_cls(1, 1, 1, 64);
  auto out = run(*op, bytes_u8(f.reg), bytes_u8(f.cls));
  // cell (1,1): x_center 0.375, y_center 0.75; x ± 0.375, y ± 0.75
  std::vector<float> want{0, 1, 0.0f, 0.0f, 1.5f, 0.75f, 1.0f};
  want.resize(32, 0.0f);
  CHECK(out == want);
}

TEST_CASE("YOLOv8 NMS: a frame with nothing above the threshold is all zeros; the op can run again") {
  auto op = Yolov8Nms::create(base_config(0.3, 3));
  REQUIRE(op.ok());
  Frame f = scene();
  (void)run(*op, bytes_u8(f.reg), bytes_u8(f.cls));
  Frame empty;
  auto out = run(*op, bytes_u8(empty.reg), bytes_u8(empty.cls));
  CHECK(out == std::vector<float>(32, 0.0f));
  CHECK(op->last_detections() == 0);
}

TEST_CASE("YOLOv8 NMS: configuration and buffer errors") {
  auto bad_reg = base_config(0.3, 3);
  bad_reg.branches[0].reg_shape.features = 10;
  bad_reg.branches[0].reg_padded.features = 10;
  auto r = Yolov8Nms::create(bad_reg);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("multiple of 4") != std::string::npos);

  auto bad_grid = base_config(0.3, 3);
  bad_grid.branches[0].cls_shape.width = 3;
  CHECK_FALSE(Yolov8Nms::create(bad_grid));
  auto bad_pad = base_config(0.3, 3);
  bad_pad.branches[0].cls_padded.width = 1;
  CHECK_FALSE(Yolov8Nms::create(bad_pad));
  auto bad_classes = base_config(0.3, 3);
  bad_classes.classes = 3;
  CHECK_FALSE(Yolov8Nms::create(bad_classes));
  auto bad_image = base_config(0.3, 3);
  bad_image.image_width = 0.0f;
  CHECK_FALSE(Yolov8Nms::create(bad_image));
  auto bad_qp = base_config(0.3, 3);
  bad_qp.branches[0].cls_qp.scale = std::numeric_limits<float>::infinity();
  CHECK_FALSE(Yolov8Nms::create(bad_qp));
  auto no_branch = base_config(0.3, 3);
  no_branch.branches.clear();
  CHECK_FALSE(Yolov8Nms::create(no_branch));

  auto op = Yolov8Nms::create(base_config(0.3, 3));
  REQUIRE(op.ok());
  CHECK(op->reg_bytes(0) == 2 * 4 * 16);
  CHECK(op->cls_bytes(0) == 2 * 4 * 2);
  std::vector<uint8_t> reg(op->reg_bytes(0)), cls(op->cls_bytes(0) - 1);
  std::vector<float> out(op->output_floats());
  const std::span<const uint8_t> regs[] = {reg};
  const std::span<const uint8_t> clss[] = {cls};
  auto s = op->run(regs, clss, out);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == Errc::bad_length);
  CHECK(s.error().message.find("cls buffer is 15 bytes, expected 16") != std::string::npos);
  std::vector<float> short_out(5);
  std::vector<uint8_t> cls_ok(op->cls_bytes(0));
  const std::span<const uint8_t> clss_ok[] = {cls_ok};
  CHECK_FALSE(op->run(regs, clss_ok, short_out));
}
