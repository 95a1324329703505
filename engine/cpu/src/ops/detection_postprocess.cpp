// aisrv CPU engine — preparation of the custom operator TFLite_Detection_PostProcess (SSD box decoding and
// non-maximum suppression, as TensorFlow Lite's kernels/detection_postprocess.cc). Validates the options and the
// operands so that the kernel can never fail where TensorFlow Lite fails at inference (IoU threshold outside
// (0, 1], boxes that decode with ymin > ymax because an anchor has a negative size), and bounds its memory and work.
// Departures from TensorFlow Lite, all refusals of what it would run badly or not at all: the anchors must be
// constant (so that their sizes can be checked here), scales positive and finite, thresholds finite.
#include <cmath>
#include <cstring>

#include "prepare.hpp"

namespace aisrv::engine::cpu {

namespace {

// Bounds of what the kernel accepts: scores (anchors x classes) held as float in scratch, and the worst-case count
// of IoU evaluations of one inference (each selected box is compared to every remaining candidate), a few seconds
// at most. Real SSD heads stay far below (e.g. 50k anchors x 90 classes x 100 detections is 2^29 with regular NMS).
constexpr int64_t kMaxAnchors = int64_t{1} << 21;
constexpr int64_t kMaxScoreElements = int64_t{1} << 24;
constexpr int64_t kMaxNmsWork = int64_t{1} << 32;

// The value of element i of a constant tensor, dequantized as the kernel does.
float dequantized_constant(const TensorSpec& t, int64_t i, float scale, int32_t zero_point) {
  switch (t.type) {
    case DType::uint8: return static_cast<float>(int32_t{t.data[i]} - zero_point) * scale;
    case DType::int8: {
      int8_t q;
      std::memcpy(&q, t.data + i, 1);
      return static_cast<float>(int32_t{q} - zero_point) * scale;
    }
    default: {
      float f;
      std::memcpy(&f, t.data + i * 4, 4);  // the model's bytes need not be aligned
      return f;
    }
  }
}

struct Quantization {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

Result<Quantization> quantization_of(const PrepareContext& ctx, const TensorSpec& t, std::string_view what) {
  if (t.type == DType::float32) return Quantization{};
  return Quantization{AISRV_TRY(ctx.scale(t, what)), AISRV_TRY(ctx.zero_point(t, what))};
}

Result<void> check_options(const PrepareContext& ctx, const DetectionPostProcessOptions& o) {
  if (o.num_classes < 1) return ctx.error("num_classes is {}; it must be at least 1", o.num_classes);
  if (o.max_detections < 1) return ctx.error("max_detections is {}; it must be at least 1", o.max_detections);
  // TensorFlow Lite accepts more classes per detection than there are classes: it reports min(both) classes per
  // box and leaves the rest of each box's rows unwritten (we write zeros there).
  if (o.max_classes_per_detection < 1)
    return ctx.error("max_classes_per_detection is {}; it must be at least 1", o.max_classes_per_detection);
  if (int64_t{o.max_detections} * o.max_classes_per_detection > (int64_t{1} << 20))
    return ctx.error("max_detections {} x max_classes_per_detection {} is too many detections", o.max_detections,
                     o.max_classes_per_detection);
  // Only regular NMS uses detections_per_class; TensorFlow Lite fails its inference when it is not positive.
  if (o.use_regular_nms ? o.detections_per_class < 1 : o.detections_per_class < 0)
    return ctx.error("detections_per_class is {}; it must be at least 1", o.detections_per_class);
  if (!std::isfinite(o.nms_score_threshold))
    return ctx.error("nms_score_threshold {} is not a finite number", o.nms_score_threshold);
  // TensorFlow Lite fails every inference otherwise.
  if (!(o.nms_iou_threshold > 0.0f && o.nms_iou_threshold <= 1.0f))
    return ctx.error("nms_iou_threshold {} is outside (0, 1]", o.nms_iou_threshold);
  const std::pair<const char*, float> scales[] = {
      {"y_scale", o.y_scale}, {"x_scale", o.x_scale}, {"h_scale", o.h_scale}, {"w_scale", o.w_scale}};
  for (const auto& [name, value] : scales)
    if (!std::isfinite(value) || !(value > 0.0f)) return ctx.error("{} {} is not a positive number", name, value);
  return {};
}

}  // namespace

Result<OpParams> prepare_detection_postprocess(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(3, 3, 4));
  const auto* options = std::get_if<DetectionPostProcessOptions>(&ctx.op().options);
  if (!options) return ctx.error("has no detection post-process options");
  const DetectionPostProcessOptions& o = *options;
  AISRV_TRY(check_options(ctx, o));

  const TensorSpec& boxes = *AISRV_TRY(ctx.input(0, "box encodings"));
  const TensorSpec& scores = *AISRV_TRY(ctx.input(1, "class scores"));
  const TensorSpec& anchors = *AISRV_TRY(ctx.input(2, "anchors"));
  AISRV_TRY(ctx.expect_type(boxes, {DType::float32, DType::uint8, DType::int8}, "box encodings"));
  AISRV_TRY(ctx.expect_type(scores, {DType::float32, DType::uint8, DType::int8}, "class scores"));
  AISRV_TRY(ctx.expect_type(anchors, {DType::float32, DType::uint8, DType::int8}, "anchors"));

  if (boxes.shape.rank != 3 || boxes.shape[0] != 1 || boxes.shape[2] < 4)
    return ctx.error("box encodings '{}' must have shape [1, anchors, >= 4]", boxes.name);
  const int32_t num_anchors = boxes.shape[1];
  if (num_anchors < 1 || num_anchors > kMaxAnchors)
    return ctx.error("box encodings '{}' have {} anchors; the cpu engine accepts 1 to {}", boxes.name, num_anchors,
                     kMaxAnchors);
  if (anchors.shape.rank != 2 || anchors.shape[0] != num_anchors || anchors.shape[1] != 4)
    return ctx.error("anchors '{}' must have shape [{}, 4]", anchors.name, num_anchors);
  if (scores.shape.rank != 3 || scores.shape[0] != 1 || scores.shape[1] != num_anchors)
    return ctx.error("class scores '{}' must have shape [1, {}, classes]", scores.name, num_anchors);
  const int32_t classes_with_background = scores.shape[2];
  if (classes_with_background != o.num_classes && classes_with_background != int64_t{o.num_classes} + 1)
    return ctx.error("class scores '{}' have {} classes; num_classes {} needs {} or {} (with background)", scores.name,
                     classes_with_background, o.num_classes, o.num_classes, int64_t{o.num_classes} + 1);
  if (int64_t{num_anchors} * classes_with_background > kMaxScoreElements)
    return ctx.error("{} anchors x {} classes are more scores than the {} the cpu engine accepts", num_anchors,
                     classes_with_background, kMaxScoreElements);
  // Worst case of the greedy suppression: every selected box (at most min(anchors, limit) per pass) is compared to
  // every other candidate; regular NMS makes one pass per class.
  const int64_t per_pass = o.use_regular_nms ? std::min(o.detections_per_class, o.max_detections) : o.max_detections;
  const int64_t passes = o.use_regular_nms ? o.num_classes : 1;
  if (std::min<int64_t>(per_pass, num_anchors) * num_anchors * passes > kMaxNmsWork)
    return ctx.error("{} anchors with {} detections in {} suppression passes are more work than the cpu engine "
                     "accepts",
                     num_anchors, per_pass, passes);

  const Quantization box_q = AISRV_TRY(quantization_of(ctx, boxes, "box encodings"));
  const Quantization score_q = AISRV_TRY(quantization_of(ctx, scores, "class scores"));
  const Quantization anchor_q = AISRV_TRY(quantization_of(ctx, anchors, "anchors"));

  // TensorFlow Lite fails its inference when a decoded box has ymin > ymax or xmin > xmax, which happens exactly
  // when an anchor's height or width is negative: refuse such anchors here (and any that are not finite).
  AISRV_TRY(ctx.expect_constant(anchors, "anchors"));
  for (int64_t a = 0; a < num_anchors; ++a)
    for (int64_t k = 0; k < 4; ++k) {
      const float v = dequantized_constant(anchors, a * 4 + k, anchor_q.scale, anchor_q.zero_point);
      if (!std::isfinite(v)) return ctx.error("anchor {} of '{}' has a value that is not finite", a, anchors.name);
      if (k >= 2 && v < 0.0f)
        return ctx.error("anchor {} of '{}' has a negative {} ({})", a, anchors.name, k == 2 ? "height" : "width", v);
    }

  const int32_t detections = o.max_detections * o.max_classes_per_detection;
  const Shape expected[4] = {Shape{3, {1, detections, 4}}, Shape{2, {1, detections}}, Shape{2, {1, detections}},
                             Shape{1, {1}}};
  const char* output_names[4] = {"boxes", "classes", "scores", "detection count"};
  for (size_t k = 0; k < 4; ++k) {
    const TensorSpec& out = ctx.output(k);
    AISRV_TRY(ctx.expect_type(out, {DType::float32}, output_names[k]));
    if (!(out.shape == expected[k])) {
      std::string want;
      for (int d = 0; d < expected[k].rank; ++d) want += (d ? ", " : "") + std::to_string(expected[k][d]);
      return ctx.error("output {} ({}) '{}' must have shape [{}]", k, output_names[k], out.name, want);
    }
  }

  DetectionPostProcessParams p;
  p.max_detections = o.max_detections;
  p.max_classes_per_detection = o.max_classes_per_detection;
  p.detections_per_class = o.detections_per_class;
  p.use_regular_nms = o.use_regular_nms;
  p.nms_score_threshold = o.nms_score_threshold;
  p.nms_iou_threshold = o.nms_iou_threshold;
  p.num_classes = o.num_classes;
  p.num_anchors = num_anchors;
  p.box_code_size = boxes.shape[2];
  p.num_classes_with_background = classes_with_background;
  p.y_scale = o.y_scale;
  p.x_scale = o.x_scale;
  p.h_scale = o.h_scale;
  p.w_scale = o.w_scale;
  p.box_type = boxes.type;
  p.score_type = scores.type;
  p.anchor_type = anchors.type;
  p.box_scale = box_q.scale;
  p.score_scale = score_q.scale;
  p.anchor_scale = anchor_q.scale;
  p.box_zero_point = box_q.zero_point;
  p.score_zero_point = score_q.zero_point;
  p.anchor_zero_point = anchor_q.zero_point;
  p.boxes = ctx.read_input(0);
  p.scores = ctx.read_input(1);
  p.anchors = ctx.read_input(2);
  for (size_t k = 0; k < 4; ++k) p.outputs.push_back(ctx.write_output(k));
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
