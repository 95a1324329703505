// aisrv results — the YOLOv8 raw detection head of an Ultralytics TFLite export, decoded as Ultralytics'
// non_max_suppression does for predict:
//   rows 0-3 of each of the N candidates are the box centre x, centre y, width, height; rows 4.. the C class scores
//   (sigmoid already applied). Boxes are normalised to the input in recent exports and in input pixels in older
//   ones: normalised when every finite centre coordinate is within [-2, 2] (pixel centres spread over the input).
//   A candidate's class is its best score (first maximum; NaN never wins); it is kept when that score is at least
//   the threshold (default 0.25; Ultralytics keeps scores strictly above) and its box is finite; at most 30000
//   candidates, highest scores first, go on (Ultralytics' max_nms).
//   Per class, highest score first (equal scores: lower candidate index first), a box is suppressed when its IoU
//   with a box kept before it is above iou_threshold (default 0.7) — what the class-offset trick with
//   torchvision.ops.nms computes. The kept boxes, highest score first, are cut to max_results (default 300).
#include <algorithm>
#include <cmath>

#include "decoders.hpp"

namespace aisrv::results::detail {

namespace {

constexpr size_t kMaxNms = 30000;

struct Candidate {
  double score;
  int32_t cls;
  size_t anchor;
  double x0, y0, x1, y1;  // input pixels, x0 <= x1, y0 <= y1
};

bool before(const Candidate& a, const Candidate& b) {
  return a.score > b.score || (a.score == b.score && a.anchor < b.anchor);
}

double iou(const Candidate& a, const Candidate& b) {
  const double w = std::max(0.0, std::min(a.x1, b.x1) - std::max(a.x0, b.x0));
  const double h = std::max(0.0, std::min(a.y1, b.y1) - std::max(a.y0, b.y0));
  const double inter = w * h;
  const double uni = (a.x1 - a.x0) * (a.y1 - a.y0) + (b.x1 - b.x0) * (b.y1 - b.y0) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

}  // namespace

Status decode_yolov8(const Context& c, Decoded& out) {
  const Tensor& t = c.tensors[c.plan.output];
  const auto& shape = t.info().shape;
  const bool transposed = c.plan.transposed;
  const size_t rows = size_t{c.plan.classes} + 4;
  const size_t n = static_cast<size_t>(transposed ? shape[1] : shape[2]);
  auto at = [&](size_t row, size_t a) { return transposed ? t.at(a * rows + row) : t.at(row * n + a); };

  const Frame frame = AISRV_TRY(make_frame(c.model, c.options));
  double extent = 0;
  for (size_t a = 0; a < n; ++a)
    for (size_t r = 0; r < 2; ++r)
      if (const double v = at(r, a); std::isfinite(v)) extent = std::max(extent, std::fabs(v));
  const bool normalised = extent <= 2.0;
  const double sx = normalised ? frame.input_width : 1.0, sy = normalised ? frame.input_height : 1.0;

  const double threshold = c.options.threshold >= 0 ? c.options.threshold : kDetectionThreshold;
  std::vector<Candidate> cand;
  for (size_t a = 0; a < n; ++a) {
    int32_t best = -1;
    double best_score = 0;
    for (size_t k = 0; k < c.plan.classes; ++k) {
      const double v = at(4 + k, a);
      if (!std::isnan(v) && (best < 0 || v > best_score)) {
        best = static_cast<int32_t>(k);
        best_score = v;
      }
    }
    if (best < 0 || !(best_score >= threshold)) continue;
    const double cx = at(0, a) * sx, cy = at(1, a) * sy, w = at(2, a) * sx, h = at(3, a) * sy;
    if (!std::isfinite(cx) || !std::isfinite(cy) || !std::isfinite(w) || !std::isfinite(h)) continue;
    const double xa = cx - w / 2, xb = cx + w / 2, ya = cy - h / 2, yb = cy + h / 2;
    cand.push_back({best_score, best, a, std::min(xa, xb), std::min(ya, yb), std::max(xa, xb), std::max(ya, yb)});
  }
  if (cand.size() > kMaxNms) {
    std::partial_sort(cand.begin(), cand.begin() + kMaxNms, cand.end(), before);
    cand.resize(kMaxNms);
  }
  std::sort(cand.begin(), cand.end(), [](const Candidate& a, const Candidate& b) {
    return a.cls < b.cls || (a.cls == b.cls && before(a, b));
  });

  const size_t max = c.options.max_results ? c.options.max_results : kDetectionMax;
  std::vector<Candidate> kept;
  for (size_t begin = 0; begin < cand.size();) {
    size_t end = begin;
    while (end < cand.size() && cand[end].cls == cand[begin].cls) ++end;
    const size_t first = kept.size();
    // A class never needs more than `max` boxes: the final cut keeps the best `max` of all classes.
    for (size_t i = begin; i < end && kept.size() - first < max; ++i) {
      bool suppressed = false;
      for (size_t k = first; k < kept.size() && !suppressed; ++k)
        suppressed = iou(cand[i], kept[k]) > c.options.iou_threshold;
      if (!suppressed) kept.push_back(cand[i]);
    }
    begin = end;
  }
  std::stable_sort(kept.begin(), kept.end(), before);
  if (kept.size() > max) kept.resize(max);
  for (const auto& k : kept) {
    Detection d;
    d.class_id = k.cls;
    d.label = label_of(c.labels, k.cls);
    d.score = k.score;
    d.box = frame.box(k.x0, k.y0, k.x1, k.y1);
    out.detections.push_back(std::move(d));
  }
  return ok();
}

}  // namespace aisrv::results::detail
