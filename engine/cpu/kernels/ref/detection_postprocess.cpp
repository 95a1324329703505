// aisrv CPU engine, reference kernels — TFLite_Detection_PostProcess, as TensorFlow Lite's
// kernels/detection_postprocess.cc (single-threaded): centre-size box decoding against the anchors (in double, as
// TFLite), dequantization of uint8/int8 operands, then fast NMS (each anchor's best classes, one suppression pass
// on its best score) or regular NMS (one pass per class, merged by score). Every temporary lives in scratch.
// Where TFLite leaves an output row unwritten (fast NMS: rows past the detections; any row past max_detections)
// we write zeros, so that the outputs never depend on what the arena held.
// Orders: candidates of a pass are sorted by decreasing score, equal scores by increasing anchor (TFLite's stable
// sort); an anchor's single best class is the first maximum (TFLite's ArgMaxVector), several best classes are
// ordered as TFLite's std::partial_sort does with libc++ (see best_classes); regular NMS merges each class's
// detections stably (earlier classes first on ties), as TFLite's std::inplace_merge.
#include <algorithm>
#include <cmath>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

struct CornerBox {
  float ymin, xmin, ymax, xmax;
};

struct Detection {
  float score;
  int32_t anchor;
  int32_t class_index;
};

constexpr size_t kScratchAlignment = 16;

size_t aligned(size_t bytes) { return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment; }

int32_t classes_per_anchor(const DetectionPostProcessParams& p) {
  return std::min(p.max_classes_per_detection, p.num_classes);
}
int32_t per_class_limit(const DetectionPostProcessParams& p) {
  return std::min(p.detections_per_class, p.max_detections);
}

// Byte offsets of the temporaries in scratch, and the total.
struct ScratchPlan {
  size_t boxes = 0, scores = 0;  // decoded boxes, dequantized scores
  size_t candidate_anchor = 0, candidate_score = 0, order = 0, active = 0, selected = 0;  // a suppression pass
  size_t best_score = 0, top_classes = 0, class_heap = 0;  // fast NMS
  size_t merged = 0, merge_out = 0;                        // regular NMS
  size_t total = 0;
};

ScratchPlan plan_scratch(const DetectionPostProcessParams& p) {
  ScratchPlan s;
  auto take = [&s](size_t bytes) {
    const size_t at = s.total;
    s.total += aligned(bytes);
    return at;
  };
  const auto anchors = static_cast<size_t>(p.num_anchors);
  const auto detections = static_cast<size_t>(p.max_detections);
  s.boxes = take(anchors * sizeof(CornerBox));
  if (p.score_type != DType::float32)
    s.scores = take(anchors * static_cast<size_t>(p.num_classes_with_background) * sizeof(float));
  s.candidate_anchor = take(anchors * sizeof(int32_t));
  s.candidate_score = take(anchors * sizeof(float));
  s.order = take(anchors * sizeof(int32_t));
  s.active = take(anchors);
  s.selected = take(std::min(anchors, detections) * sizeof(int32_t));
  if (p.use_regular_nms) {
    s.merged = take((detections + static_cast<size_t>(per_class_limit(p))) * sizeof(Detection));
    s.merge_out = take(detections * sizeof(Detection));
  } else {
    s.best_score = take(anchors * sizeof(float));
    s.top_classes = take(anchors * static_cast<size_t>(classes_per_anchor(p)) * sizeof(int32_t));
    s.class_heap = take(static_cast<size_t>(p.num_classes) * sizeof(int32_t));
  }
  return s;
}

template <typename T>
T* in_scratch(const DetectionPostProcessParams& p, size_t offset) {
  return reinterpret_cast<T*>(p.scratch.data() + offset);
}

// Element i of a uint8 / int8 / float32 operand as float. Quantized values as TFLite's box Dequantizer:
// (float(q) - zero_point) * scale in float (the difference is exact).
float operand_value(const void* data, DType type, int64_t i, float scale, int32_t zero_point) {
  switch (type) {
    case DType::uint8: return static_cast<float>(int32_t{static_cast<const uint8_t*>(data)[i]} - zero_point) * scale;
    case DType::int8: return static_cast<float>(int32_t{static_cast<const int8_t*>(data)[i]} - zero_point) * scale;
    default: return static_cast<const float*>(data)[i];
  }
}

// TFLite's DecodeCenterSizeBoxes: the centre and half sizes computed in double and rounded to float, the corners
// in float.
void decode_boxes(const DetectionPostProcessParams& p, CornerBox* boxes) {
  for (int64_t a = 0; a < p.num_anchors; ++a) {
    float code[4], anchor[4];  // both (y, x, h, w)
    for (int64_t k = 0; k < 4; ++k) {
      code[k] = operand_value(p.boxes, p.box_type, a * p.box_code_size + k, p.box_scale, p.box_zero_point);
      anchor[k] = operand_value(p.anchors, p.anchor_type, a * 4 + k, p.anchor_scale, p.anchor_zero_point);
    }
    const auto ycenter = static_cast<float>(static_cast<double>(code[0]) / static_cast<double>(p.y_scale) *
                                                static_cast<double>(anchor[2]) +
                                            static_cast<double>(anchor[0]));
    const auto xcenter = static_cast<float>(static_cast<double>(code[1]) / static_cast<double>(p.x_scale) *
                                                static_cast<double>(anchor[3]) +
                                            static_cast<double>(anchor[1]));
    const auto half_h = static_cast<float>(
        0.5 * std::exp(static_cast<double>(code[2]) / static_cast<double>(p.h_scale)) * static_cast<double>(anchor[2]));
    const auto half_w = static_cast<float>(
        0.5 * std::exp(static_cast<double>(code[3]) / static_cast<double>(p.w_scale)) * static_cast<double>(anchor[3]));
    boxes[a] = CornerBox{ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w};
  }
}

// The scores as float: the input itself, or its dequantization into `out` as TFLite's Dequantize
// (float(double(scale) * (q - zero_point))).
const float* float_scores(const DetectionPostProcessParams& p, float* out) {
  if (p.score_type == DType::float32) return static_cast<const float*>(p.scores);
  const int64_t n = int64_t{p.num_anchors} * p.num_classes_with_background;
  const double scale = p.score_scale;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t q = p.score_type == DType::uint8 ? int32_t{static_cast<const uint8_t*>(p.scores)[i]}
                                                   : int32_t{static_cast<const int8_t*>(p.scores)[i]};
    out[i] = static_cast<float>(scale * (q - p.score_zero_point));
  }
  return out;
}

// std::max / std::min as TFLite calls them (the first argument wins when the comparison is false, NaN included).
float larger(float a, float b) { return a < b ? b : a; }
float smaller(float a, float b) { return b < a ? b : a; }

// TFLite's ComputeIntersectionOverUnion, all in float; 0 when either box has no area.
float intersection_over_union(const CornerBox& a, const CornerBox& b) {
  const float area_a = (a.ymax - a.ymin) * (a.xmax - a.xmin);
  const float area_b = (b.ymax - b.ymin) * (b.xmax - b.xmin);
  if (area_a <= 0 || area_b <= 0) return 0.0f;
  const float top = larger(a.ymin, b.ymin);
  const float left = larger(a.xmin, b.xmin);
  const float bottom = smaller(a.ymax, b.ymax);
  const float right = smaller(a.xmax, b.xmax);
  const float intersection = larger(bottom - top, 0.0f) * larger(right - left, 0.0f);
  return intersection / (area_a + area_b - intersection);
}

struct SuppressionScratch {
  int32_t* candidate_anchor;
  float* candidate_score;
  int32_t* order;
  uint8_t* active;
  int32_t* selected;
};

// One greedy suppression pass (TFLite's NonMaxSuppressionSingleClassHelper) over the score of each anchor,
// scores[a * stride]: the candidates are the anchors whose score >= the threshold (NaN never is), visited by
// decreasing score (ties by increasing anchor); each one still active is selected and deactivates every later
// candidate whose IoU with it exceeds the IoU threshold. Stops after `limit` selections. Writes the selected
// anchors, best first, to w.selected and returns their count.
int32_t suppress(const DetectionPostProcessParams& p, const CornerBox* boxes, const float* scores, size_t stride,
                 int32_t limit, const SuppressionScratch& w) {
  int32_t kept = 0;
  for (int32_t a = 0; a < p.num_anchors; ++a) {
    const float s = scores[static_cast<size_t>(a) * stride];
    if (s >= p.nms_score_threshold) {
      w.candidate_anchor[kept] = a;
      w.candidate_score[kept] = s;
      ++kept;
    }
  }
  // Candidates are in increasing anchor order, so ordering equal scores by candidate index is TFLite's stable sort.
  for (int32_t i = 0; i < kept; ++i) w.order[i] = i;
  const float* score = w.candidate_score;
  std::sort(w.order, w.order + kept,
            [score](int32_t i, int32_t j) { return score[i] > score[j] || (score[i] == score[j] && i < j); });

  const int32_t wanted = std::min(kept, limit);
  std::fill(w.active, w.active + kept, uint8_t{1});
  int32_t count = 0;
  for (int32_t i = 0; i < kept && count < wanted; ++i) {
    if (!w.active[i]) continue;
    const CornerBox& chosen = boxes[w.candidate_anchor[w.order[i]]];
    w.selected[count++] = w.candidate_anchor[w.order[i]];
    w.active[i] = 0;
    if (count == wanted) break;  // later deactivations could no longer change anything
    for (int32_t j = i + 1; j < kept; ++j)
      if (w.active[j] &&
          intersection_over_union(chosen, boxes[w.candidate_anchor[w.order[j]]]) > p.nms_iou_threshold)
        w.active[j] = 0;
  }
  return count;
}

struct Outputs {
  float* boxes;
  float* classes;
  float* scores;
  float* count;
};

void write_detection(const Outputs& out, int64_t row, const CornerBox& box, int32_t class_index, float score) {
  out.boxes[row * 4 + 0] = box.ymin;
  out.boxes[row * 4 + 1] = box.xmin;
  out.boxes[row * 4 + 2] = box.ymax;
  out.boxes[row * 4 + 3] = box.xmax;
  out.classes[row] = static_cast<float>(class_index);
  out.scores[row] = score;
}

// libc++'s heap algorithms, move for move (see best_classes). `h` holds class indices; `before(a, b)` is TFLite's
// comparator "score of a > score of b", so the heap's top is the class that sorts last.
template <typename Before>
void heap_sift_down(int32_t* h, int64_t len, int64_t start, Before before) {
  if (len < 2 || (len - 2) / 2 < start) return;
  int64_t child = 2 * start + 1;
  if (child + 1 < len && before(h[child], h[child + 1])) ++child;
  if (before(h[child], h[start])) return;
  const int32_t moving = h[start];
  do {
    h[start] = h[child];
    start = child;
    if ((len - 2) / 2 < child) break;
    child = 2 * child + 1;
    if (child + 1 < len && before(h[child], h[child + 1])) ++child;
  } while (!before(h[child], moving));
  h[start] = moving;
}

// Moves the top to h[len - 1] (len > 1): the hole left at the top sinks to a leaf along the larger children
// (Floyd), the last element fills it and rises back.
template <typename Before>
void heap_pop(int32_t* h, int64_t len, Before before) {
  const int32_t top = h[0];
  int64_t hole = 0;
  for (;;) {
    int64_t child = 2 * hole + 1;
    if (child + 1 < len && before(h[child], h[child + 1])) ++child;
    h[hole] = h[child];
    hole = child;
    if (child > (len - 2) / 2) break;
  }
  const int64_t last = len - 1;
  if (hole == last) {
    h[hole] = top;
    return;
  }
  h[hole] = h[last];
  h[last] = top;
  if (hole == 0) return;
  int64_t parent = (hole - 1) / 2;
  if (!before(h[parent], h[hole])) return;
  const int32_t rising = h[hole];
  do {
    h[hole] = h[parent];
    hole = parent;
    if (parent == 0) break;
    parent = (parent - 1) / 2;
  } while (before(h[parent], rising));
  h[hole] = rising;
}

// An anchor's best classes, TFLite's DecreasingPartialArgSort over its class scores `row`. One class: as
// ArgMaxVector, the first maximum (a NaN in front stays there). Several: std::partial_sort with the comparator
// "greater score", whose placement of equal (or NaN) scores belongs to the C++ library; we reproduce libc++'s
// (heap select, then heap sort), the library of TensorFlow Lite for Android, iOS and the web. (TFLite Micro breaks
// ties by class instead.)
void best_classes(const float* row, int32_t num_classes, int32_t wanted, int32_t* heap, int32_t* best) {
  if (wanted == 1) {
    int32_t arg = 0;
    float max = row[0];
    for (int32_t c = 1; c < num_classes; ++c)
      if (row[c] > max) {
        max = row[c];
        arg = c;
      }
    best[0] = arg;
    return;
  }
  const auto before = [row](int32_t a, int32_t b) { return row[a] > row[b]; };
  for (int32_t c = 0; c < num_classes; ++c) heap[c] = c;
  for (int64_t start = (int64_t{wanted} - 2) / 2; start >= 0; --start) heap_sift_down(heap, wanted, start, before);
  for (int32_t c = wanted; c < num_classes; ++c)
    if (before(heap[c], heap[0])) {
      std::swap(heap[c], heap[0]);
      heap_sift_down(heap, wanted, 0, before);
    }
  for (int64_t len = wanted; len > 1; --len) heap_pop(heap, len, before);
  std::copy(heap, heap + wanted, best);
}

// TFLite's NonMaxSuppressionMultiClassFastHelper: one pass on each anchor's best score; a selected anchor fills
// max_classes_per_detection rows (its best min(max_classes_per_detection, num_classes) classes, in order, the
// first ones). The count is the number of selected anchors.
void fast_nms(const DetectionPostProcessParams& p, const ScratchPlan& plan, const CornerBox* boxes,
              const float* scores, const SuppressionScratch& w, const Outputs& out) {
  const int32_t per_anchor = classes_per_anchor(p);
  const int32_t label_offset = p.num_classes_with_background - p.num_classes;
  float* best_score = in_scratch<float>(p, plan.best_score);
  int32_t* top_classes = in_scratch<int32_t>(p, plan.top_classes);
  int32_t* class_heap = in_scratch<int32_t>(p, plan.class_heap);
  for (int64_t a = 0; a < p.num_anchors; ++a) {
    const float* row = scores + a * p.num_classes_with_background + label_offset;
    int32_t* best = top_classes + a * per_anchor;
    best_classes(row, p.num_classes, per_anchor, class_heap, best);
    best_score[a] = row[best[0]];
  }
  const int32_t selected = suppress(p, boxes, best_score, 1, p.max_detections, w);
  for (int32_t k = 0; k < selected; ++k) {
    const int64_t a = w.selected[k];
    const float* row = scores + a * p.num_classes_with_background + label_offset;
    for (int32_t c = 0; c < per_anchor; ++c) {
      const int32_t class_index = top_classes[a * per_anchor + c];
      write_detection(out, int64_t{p.max_classes_per_detection} * k + c, boxes[a], class_index, row[class_index]);
    }
  }
  out.count[0] = static_cast<float>(selected);
}

// TFLite's NonMaxSuppressionMultiClassRegularHelper (one thread): a pass per class keeping at most
// min(detections_per_class, max_detections) boxes, each class's detections merged into the running list by
// decreasing score (the list first on ties) and the list cut to max_detections.
void regular_nms(const DetectionPostProcessParams& p, const ScratchPlan& plan, const CornerBox* boxes,
                 const float* scores, const SuppressionScratch& w, const Outputs& out) {
  const int32_t label_offset = p.num_classes_with_background - p.num_classes;
  const auto stride = static_cast<size_t>(p.num_classes_with_background);
  Detection* merged = in_scratch<Detection>(p, plan.merged);
  Detection* merge_out = in_scratch<Detection>(p, plan.merge_out);
  int32_t size = 0;
  for (int32_t c = 0; c < p.num_classes; ++c) {
    const float* column = scores + label_offset + c;
    const int32_t selected = suppress(p, boxes, column, stride, per_class_limit(p), w);
    if (selected == 0) continue;
    for (int32_t k = 0; k < selected; ++k)
      merged[size + k] = Detection{column[static_cast<size_t>(w.selected[k]) * stride], w.selected[k], c};
    const int32_t total = std::min(size + selected, p.max_detections);
    int32_t older = 0, newer = size;
    for (int32_t k = 0; k < total; ++k) {
      const bool take_newer =
          older == size || (newer < size + selected && merged[newer].score > merged[older].score);
      merge_out[k] = take_newer ? merged[newer++] : merged[older++];
    }
    std::copy(merge_out, merge_out + total, merged);
    size = total;
  }
  for (int32_t k = 0; k < size; ++k)
    write_detection(out, k, boxes[merged[k].anchor], merged[k].class_index, merged[k].score);
  out.count[0] = static_cast<float>(size);
}

}  // namespace

void ReferenceKernelBackend::detection_postprocess(const DetectionPostProcessParams& p) {
  const Outputs out{static_cast<float*>(p.outputs[0]), static_cast<float*>(p.outputs[1]),
                    static_cast<float*>(p.outputs[2]), static_cast<float*>(p.outputs[3])};
  const int64_t rows = int64_t{p.max_detections} * p.max_classes_per_detection;
  std::fill(out.boxes, out.boxes + rows * 4, 0.0f);
  std::fill(out.classes, out.classes + rows, 0.0f);
  std::fill(out.scores, out.scores + rows, 0.0f);
  out.count[0] = 0.0f;
  const ScratchPlan plan = plan_scratch(p);
  if (p.scratch.size() < plan.total) return;  // never with the planned scratch

  auto* boxes = in_scratch<CornerBox>(p, plan.boxes);
  decode_boxes(p, boxes);
  const float* scores = float_scores(p, in_scratch<float>(p, plan.scores));
  const SuppressionScratch w{in_scratch<int32_t>(p, plan.candidate_anchor), in_scratch<float>(p, plan.candidate_score),
                             in_scratch<int32_t>(p, plan.order), in_scratch<uint8_t>(p, plan.active),
                             in_scratch<int32_t>(p, plan.selected)};
  if (p.use_regular_nms)
    regular_nms(p, plan, boxes, scores, w, out);
  else
    fast_nms(p, plan, boxes, scores, w, out);
}

size_t ref::scratch_bytes(const DetectionPostProcessParams& p) { return plan_scratch(p).total; }

}  // namespace aisrv::engine::cpu
