// aisrv hailo8/transform — YOLOv8 post-process: threshold scan over the class outputs, DFL box decoding for
// the anchors that have a candidate (once per anchor), per-class greedy NMS, HAILO_NMS_BY_CLASS output.
// The score threshold is turned into a range of quantized values once per model (the de-quantization is monotonic
// in q), so the scan compares raw bytes and touches each class row with a max-reduction before looking closer.
#include "aisrv/engine/hailo8/transform/yolov8_nms.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

namespace aisrv::engine::hailo8::transform {
namespace {

template <typename Q>
inline Q load(const uint8_t* base, size_t index) {
  if constexpr (sizeof(Q) == 1) {
    return base[index];
  } else {
    return static_cast<Q>(base[2 * index] | (base[2 * index + 1] << 8));
  }
}

inline float dequant(uint32_t q, const QuantInfo& qp) { return (static_cast<float>(q) - qp.zero_point) * qp.scale; }

// HailoRT NmsPostProcessOp::compute_iou, same expression order.
inline float iou(float ay0, float ax0, float ay1, float ax1, float by0, float bx0, float by1, float bx1) {
  const float w = std::min(ax1, bx1) - std::max(ax0, bx0);
  const float h = std::min(ay1, by1) - std::max(ay0, by0);
  if (w <= 0.0f || h <= 0.0f) return 0.0f;
  const float inter = w * h;
  const float a = (ay1 - ay0) * (ax1 - ax0);
  const float b = (by1 - by0) * (bx1 - bx0);
  return inter / (a + b - inter);
}

Status check_qp(const QuantInfo& qp, const char* what, size_t branch) {
  if (!std::isfinite(qp.scale) || !std::isfinite(qp.zero_point)) {
    return make_error(Errc::invalid_argument, "YOLOv8 NMS branch {}: {} quantization (zp {}, scale {}) is not finite",
                      branch, what, qp.zero_point, qp.scale);
  }
  return ok();
}

uint64_t frame_elements(const Shape& s) { return uint64_t{s.height} * s.width * s.features; }

}  // namespace

Yolov8Nms::Yolov8Nms(Yolov8NmsConfig config) : config_(std::move(config)) {}

Result<Yolov8Nms> Yolov8Nms::create(Yolov8NmsConfig c) {
  if (c.classes == 0 || c.classes > 0xFFFF) {
    return make_error(Errc::invalid_argument, "YOLOv8 NMS: {} classes (must be 1..65535)", c.classes);
  }
  if (c.max_boxes_per_class == 0 || c.max_boxes_per_class > 0xFFFF) {
    return make_error(Errc::invalid_argument, "YOLOv8 NMS: {} boxes per class (must be 1..65535)",
                      c.max_boxes_per_class);
  }
  if (!std::isfinite(c.score_threshold) || !std::isfinite(c.iou_threshold)) {
    return make_error(Errc::invalid_argument, "YOLOv8 NMS: thresholds score {} / IoU {} must be finite",
                      c.score_threshold, c.iou_threshold);
  }
  if (!(c.image_height > 0.0f) || !(c.image_width > 0.0f) || !std::isfinite(c.image_height) ||
      !std::isfinite(c.image_width)) {
    return make_error(Errc::invalid_argument, "YOLOv8 NMS: image size {}x{} must be positive and finite",
                      c.image_height, c.image_width);
  }
  if (c.branches.empty()) return make_error(Errc::invalid_argument, "YOLOv8 NMS: no reg/cls output pairs");
  if (c.type != FormatType::uint8 && c.type != FormatType::uint16) {
    return make_error(Errc::invalid_argument, "YOLOv8 NMS: element type must be UINT8 or UINT16");
  }
  uint64_t anchors = 0;
  for (size_t i = 0; i < c.branches.size(); ++i) {
    const auto& b = c.branches[i];
    if (b.stride == 0) return make_error(Errc::invalid_argument, "YOLOv8 NMS branch {}: stride is 0", i);
    if (b.reg_shape.height == 0 || b.reg_shape.width == 0 || b.reg_shape.height != b.cls_shape.height ||
        b.reg_shape.width != b.cls_shape.width) {
      return make_error(Errc::invalid_argument, "YOLOv8 NMS branch {}: reg grid {}x{} and cls grid {}x{} differ", i,
                        b.reg_shape.height, b.reg_shape.width, b.cls_shape.height, b.cls_shape.width);
    }
    if (b.reg_shape.features == 0 || b.reg_shape.features % 4 != 0) {
      return make_error(Errc::invalid_argument, "YOLOv8 NMS branch {}: reg features {} is not a positive multiple of 4",
                        i, b.reg_shape.features);
    }
    if (b.cls_shape.features != c.classes) {
      return make_error(Errc::invalid_argument, "YOLOv8 NMS branch {}: cls features {} differ from {} classes", i,
                        b.cls_shape.features, c.classes);
    }
    for (auto [shape, padded, what] : {std::tuple{b.reg_shape, b.reg_padded, "reg"},
                                       std::tuple{b.cls_shape, b.cls_padded, "cls"}}) {
      if (padded.height < shape.height || padded.width < shape.width || padded.features < shape.features ||
          padded.height > (1u << 16) || padded.width > (1u << 16) || padded.features > (1u << 16) ||
          frame_elements(padded) * hef::format_type_bytes(c.type) > kMaxFrameBytes) {
        return make_error(Errc::invalid_argument, "YOLOv8 NMS branch {}: {} padded shape {}x{}x{} does not hold {}x{}x{}",
                          i, what, padded.height, padded.width, padded.features, shape.height, shape.width,
                          shape.features);
      }
    }
    if (auto s = check_qp(b.reg_qp, "reg", i); !s) return s.error();
    if (auto s = check_qp(b.cls_qp, "cls", i); !s) return s.error();
    anchors += uint64_t{b.cls_shape.height} * b.cls_shape.width;
  }
  if (anchors > (1u << 24)) return make_error(Errc::invalid_argument, "YOLOv8 NMS: {} anchors is too many", anchors);

  Yolov8Nms op(std::move(c));
  const uint32_t qmax = op.config_.type == FormatType::uint8 ? 0xFF : 0xFFFF;
  uint32_t base = 0;
  for (const auto& b : op.config_.branches) {
    // passes(q) is monotonic in q (float conversion, subtraction and scaling all round monotonically), so the
    // passing values form one interval; compute it with HailoRT's exact float expression and double comparison.
    PassRange range;
    bool inside = false, closed = false;
    for (uint32_t q = 0; q <= qmax; ++q) {
      const bool passes = static_cast<double>(dequant(q, b.cls_qp)) >= op.config_.score_threshold;
      if (passes && closed) {
        return make_error(Errc::internal, "YOLOv8 NMS: passing class values are not one interval (q {})", q);
      }
      if (passes && !inside) {
        range.lo = q;
        inside = true;
      }
      if (passes) range.hi = q;
      if (!passes && inside) closed = true;
    }
    op.pass_.push_back(range);
    op.anchor_base_.push_back(base);
    base += b.cls_shape.height * b.cls_shape.width;
  }
  op.boxes_.resize(base);
  op.box_stamp_.assign(base, 0);
  uint32_t max_bins = 0;
  for (const auto& b : op.config_.branches) max_bins = std::max(max_bins, b.reg_shape.features / 4);
  op.bins_.resize(max_bins);
  return op;
}

size_t Yolov8Nms::output_floats() const {
  return static_cast<size_t>(hef::nms_by_class_floats(config_.classes, config_.max_boxes_per_class));
}

size_t Yolov8Nms::reg_bytes(size_t i) const {
  if (i >= config_.branches.size()) return 0;
  return static_cast<size_t>(frame_elements(config_.branches[i].reg_padded)) * hef::format_type_bytes(config_.type);
}

size_t Yolov8Nms::cls_bytes(size_t i) const {
  if (i >= config_.branches.size()) return 0;
  return static_cast<size_t>(frame_elements(config_.branches[i].cls_padded)) * hef::format_type_bytes(config_.type);
}

template <typename Q>
void Yolov8Nms::scan(size_t bi, std::span<const uint8_t> cls) {
  const Yolov8Branch& b = config_.branches[bi];
  const PassRange range = pass_[bi];
  if (range.lo > range.hi) return;
  const uint32_t H = b.cls_shape.height, W = b.cls_shape.width, C = config_.classes;
  const size_t pad_w = b.cls_padded.width, row_elems = pad_w * b.cls_padded.features;
  const uint8_t* data = cls.data();
  const bool upper_open = range.hi == std::numeric_limits<Q>::max();
  for (uint32_t r = 0; r < H; ++r) {
    for (uint32_t k = 0; k < C; ++k) {
      const size_t start = r * row_elems + k * pad_w;
      if (upper_open) {
        // Common case (positive scale): the row has a candidate iff its maximum reaches lo.
        Q m = 0;
        for (uint32_t col = 0; col < W; ++col) m = std::max(m, load<Q>(data, start + col));
        if (m < range.lo) continue;
      }
      for (uint32_t col = 0; col < W; ++col) {
        const Q q = load<Q>(data, start + col);
        if (q < range.lo || q > range.hi) continue;
        const uint32_t anchor = anchor_base_[bi] + r * W + col;
        candidates_.push_back(Candidate{dequant(q, b.cls_qp), k, anchor, uint64_t{anchor} * C + k});
      }
    }
  }
}

template <typename Q>
Yolov8Nms::Box Yolov8Nms::decode(size_t bi, uint32_t row, uint32_t col, std::span<const uint8_t> reg) {
  const Yolov8Branch& b = config_.branches[bi];
  const uint32_t bins = b.reg_shape.features / 4;
  const size_t pad_w = b.reg_padded.width;
  const size_t first = size_t{row} * pad_w * b.reg_padded.features + col;
  float d[4];
  for (uint32_t j = 0; j < 4; ++j) {
    float m = -std::numeric_limits<float>::infinity();
    for (uint32_t t = 0; t < bins; ++t) {
      bins_[t] = dequant(load<Q>(reg.data(), first + size_t{j * bins + t} * pad_w), b.reg_qp);
      m = std::max(m, bins_[t]);
    }
    float sum = 0.0f;
    for (uint32_t t = 0; t < bins; ++t) {
      bins_[t] = std::exp(bins_[t] - m);
      sum += bins_[t];
    }
    float expectation = 0.0f, counter = 0.0f;
    for (uint32_t t = 0; t < bins; ++t) {
      expectation += counter * (bins_[t] / sum);
      counter += 1.0f;
    }
    d[j] = expectation;
  }
  const float stride = static_cast<float>(b.stride);
  const float iw = config_.image_width, ih = config_.image_height;
  const float x_center = (static_cast<float>(col) + 0.5f) * stride / iw;
  const float y_center = (static_cast<float>(row) + 0.5f) * stride / ih;
  return Box{y_center - (d[1] * stride / ih), x_center - (d[0] * stride / iw), y_center + (d[3] * stride / ih),
             x_center + (d[2] * stride / iw)};
}

Status Yolov8Nms::run(std::span<const std::span<const uint8_t>> reg, std::span<const std::span<const uint8_t>> cls,
                      std::span<float> out) {
  const size_t n = config_.branches.size();
  if (reg.size() != n || cls.size() != n) {
    return make_error(Errc::bad_length, "YOLOv8 NMS: {} reg and {} cls buffers for {} branches", reg.size(),
                      cls.size(), n);
  }
  for (size_t i = 0; i < n; ++i) {
    for (auto [buf, need, what] : {std::tuple{reg[i], reg_bytes(i), "reg"}, std::tuple{cls[i], cls_bytes(i), "cls"}}) {
      if (buf.size() != need && buf.size() != hef::align_to_hw_words(need)) {
        return make_error(Errc::bad_length, "YOLOv8 NMS branch {}: {} buffer is {} bytes, expected {}", i, what,
                          buf.size(), need);
      }
    }
  }
  if (out.size() != output_floats()) {
    return make_error(Errc::bad_length, "YOLOv8 NMS: output holds {} floats, expected {}", out.size(),
                      output_floats());
  }

  candidates_.clear();
  for (size_t i = 0; i < n; ++i) {
    if (config_.type == FormatType::uint8) {
      scan<uint8_t>(i, cls[i]);
    } else {
      scan<uint16_t>(i, cls[i]);
    }
  }
  std::sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
    if (a.cls != b.cls) return a.cls < b.cls;
    if (a.score != b.score) return a.score > b.score;
    return a.seq < b.seq;
  });

  if (++stamp_ == 0) {  // stamp wrapped: forget every cached box
    std::fill(box_stamp_.begin(), box_stamp_.end(), 0);
    stamp_ = 1;
  }
  auto box_of = [&](uint32_t anchor) -> const Box& {
    if (box_stamp_[anchor] != stamp_) {
      size_t bi = n - 1;
      while (anchor < anchor_base_[bi]) --bi;
      const uint32_t local = anchor - anchor_base_[bi];
      const uint32_t W = config_.branches[bi].cls_shape.width;
      boxes_[anchor] = config_.type == FormatType::uint8 ? decode<uint8_t>(bi, local / W, local % W, reg[bi])
                                                       : decode<uint16_t>(bi, local / W, local % W, reg[bi]);
      box_stamp_[anchor] = stamp_;
    }
    return boxes_[anchor];
  };

  const uint32_t max_keep = config_.max_boxes_per_class;
  const double iou_th = config_.iou_threshold;
  std::vector<uint32_t>& kept = kept_;
  size_t o = 0, next = 0, written = 0;
  for (uint32_t k = 0; k < config_.classes; ++k) {
    const size_t count_slot = o++;
    kept.clear();
    for (; next < candidates_.size() && candidates_[next].cls == k; ++next) {
      if (kept.size() == max_keep) continue;  // the class is full; later (lower) candidates change nothing
      const Box& bx = box_of(candidates_[next].anchor);
      bool suppressed = false;
      for (uint32_t idx : kept) {
        const Box& kb = box_of(candidates_[idx].anchor);
        if (static_cast<double>(iou(kb.y_min, kb.x_min, kb.y_max, kb.x_max, bx.y_min, bx.x_min, bx.y_max, bx.x_max)) >=
            iou_th) {
          suppressed = true;
          break;
        }
      }
      if (suppressed) continue;
      kept.push_back(static_cast<uint32_t>(next));
      out[o++] = bx.y_min;
      out[o++] = bx.x_min;
      out[o++] = bx.y_max;
      out[o++] = bx.x_max;
      out[o++] = candidates_[next].score;
    }
    out[count_slot] = static_cast<float>(kept.size());
    written += kept.size();
  }
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(o), out.end(), 0.0f);
  last_detections_ = written;
  return ok();
}

}  // namespace aisrv::engine::hailo8::transform
