// aisrv hailo8/transform — the YOLOv8 host post-process op (HailoRT net_flow YOLOV8PostProcessOp, v4.23):
// box decoding from the DFL regression outputs and per-class non-maximum suppression, producing the
// HAILO_NMS_BY_CLASS float32 frame. It reads the raw device buffers of the core outputs (NHCW, padded shapes), as
// HailoRT does. For each branch (stride s, grid H×W) and each cell (row, col) and class k:
//   score = (cls[row][k][col] - zp_cls) · scale_cls;  a candidate when score ≥ score_threshold
//   reg features are 4 vectors of B = F/4 bins: v_j[b] = dequantized reg[row][j·B + b][col]
//   d_j = Σ_b b · softmax(v_j)[b]                      (distribution focal loss expectation)
//   x_center = (col + 0.5)·s / image_width,  y_center = (row + 0.5)·s / image_height
//   x_min = x_center − d_0·s/image_width,  y_min = y_center − d_1·s/image_height
//   x_max = x_center + d_2·s/image_width,  y_max = y_center + d_3·s/image_height
// Then, per class, candidates in descending score are kept greedily unless their IoU with a kept box of the same
// class is ≥ iou_threshold; at most max_boxes_per_class survive. Output per class: float count, then count ×
// {y_min, x_min, y_max, x_max, score}, classes back to back, the rest of the frame zero.
// Differences from HailoRT, all deliberate: ties in score keep the order branch → row → col → class (HailoRT's
// std::sort leaves it unspecified); the softmax subtracts the vector maximum first (HailoRT exponentiates raw values,
// which overflows for large de-quantized inputs); a removed detection is flagged, not marked by score 0 (HailoRT
// then miscounts classes when score_threshold is 0).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "aisrv/engine/hailo8/transform/types.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::transform {

struct Yolov8Branch {
  uint32_t stride = 0;  // pixels per grid cell (8, 16, 32)
  Shape reg_shape;     // H × W × 4·bins
  Shape reg_padded;    // hardware (padded) shape of the regression output, NHCW
  QuantInfo reg_qp;
  Shape cls_shape;     // H × W × classes
  Shape cls_padded;    // hardware (padded) shape of the class output, NHCW
  QuantInfo cls_qp;
};

struct Yolov8NmsConfig {
  double score_threshold = 0.0;
  double iou_threshold = 0.0;
  uint32_t max_boxes_per_class = 0;
  uint32_t classes = 0;
  float image_height = 0.0f;
  float image_width = 0.0f;
  FormatType type = FormatType::uint8;  // all core outputs of the op share one type
  std::vector<Yolov8Branch> branches;
};

class Yolov8Nms {
 public:
  // Validates the configuration: branch grids of reg and cls equal, reg features a positive multiple of 4, cls
  // features == classes, padded ≥ shape, positive finite image size and stride, finite thresholds.
  static Result<Yolov8Nms> create(Yolov8NmsConfig config);

  const Yolov8NmsConfig& config() const { return config_; }
  // Floats in the output frame: classes · (1 + 5 · max_boxes_per_class).
  size_t output_floats() const;
  // Bytes each branch's buffer must have (the padded NHCW frame; its 8-byte-aligned device size is accepted too);
  // 0 for a branch index out of range.
  size_t reg_bytes(size_t branch) const;
  size_t cls_bytes(size_t branch) const;

  // One frame. reg[i] / cls[i] are the raw device buffers of branch i (little-endian elements).
  Status run(std::span<const std::span<const uint8_t>> reg, std::span<const std::span<const uint8_t>> cls,
             std::span<float> out);

  // Figures of the last run: candidates above the score threshold, boxes written.
  size_t last_candidates() const { return candidates_.size(); }
  size_t last_detections() const { return last_detections_; }

 private:
  struct PassRange {  // quantized class values whose score passes the threshold: lo ≤ q ≤ hi (empty when lo > hi)
    uint32_t lo = 1, hi = 0;
  };
  struct Candidate {
    float score;
    uint32_t cls;
    uint32_t anchor;  // global anchor index: branch anchor base + row · W + col
    uint64_t seq;     // HailoRT emission order: anchor · classes + cls
  };
  struct Box {
    float y_min, x_min, y_max, x_max;
  };

  explicit Yolov8Nms(Yolov8NmsConfig config);
  template <typename Q>
  void scan(size_t b, std::span<const uint8_t> cls);
  template <typename Q>
  Box decode(size_t b, uint32_t row, uint32_t col, std::span<const uint8_t> reg);

  Yolov8NmsConfig config_;
  std::vector<PassRange> pass_;
  std::vector<uint32_t> anchor_base_;
  // Working memory kept across frames.
  std::vector<Candidate> candidates_;
  std::vector<Box> boxes_;                 // per global anchor, valid when box_stamp_ == stamp_
  std::vector<uint32_t> box_stamp_;
  uint32_t stamp_ = 0;
  std::vector<uint32_t> kept_;             // candidate indices kept for the current class
  std::vector<float> bins_;
  size_t last_detections_ = 0;
};

}  // namespace aisrv::engine::hailo8::transform
