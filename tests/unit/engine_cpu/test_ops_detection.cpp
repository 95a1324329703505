// aisrv tests — the custom operator TFLite_Detection_PostProcess on hand-built scenes whose detections are worked
// out by hand (fast and regular NMS, several classes per detection, background column, thresholds at equality,
// ties, degenerate boxes, uint8 / int8 / float operands), randomized scenes against a naive re-derivation of
// TensorFlow Lite's algorithm, and refusals of malformed options and operands. Decoded boxes are computed here
// with TFLite's formula in double (centre and half sizes rounded to float, corners in float).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "op_test_util.hpp"

using namespace aisrv;
using namespace aisrv::test;
using engine::cpu::DetectionPostProcessOptions;

namespace {

using Box = std::array<float, 4>;     // ymin, xmin, ymax, xmax
using Center = std::array<float, 4>;  // y, x, h, w

DetectionPostProcessOptions default_options() {
  DetectionPostProcessOptions o;
  o.max_detections = 3;
  o.max_classes_per_detection = 1;
  o.detections_per_class = 100;
  o.use_regular_nms = false;
  o.nms_score_threshold = 0.3f;
  o.nms_iou_threshold = 0.5f;
  o.num_classes = 2;
  o.y_scale = 10.0f;
  o.x_scale = 10.0f;
  o.h_scale = 5.0f;
  o.w_scale = 5.0f;
  return o;
}

// An operand: its type, shape, quantization and bytes.
struct Operand {
  DType type = DType::float32;
  std::vector<int32_t> shape;
  std::optional<tw::Quant> quant;
  Bytes bytes;
};

Operand float_operand(std::vector<int32_t> shape, const std::vector<float>& values) {
  return Operand{DType::float32, std::move(shape), std::nullopt, bytes_of(values)};
}

Operand quantized_operand(DType type, std::vector<int32_t> shape, float scale, int64_t zero_point,
                          const std::vector<int32_t>& values) {
  Bytes b;
  for (int32_t v : values) b.push_back(static_cast<uint8_t>(v));  // int8 as two's complement
  return Operand{type, std::move(shape), q(scale, zero_point), b};
}

// Operand values as float, dequantized as (q - zero_point) * scale (exact product in double, rounded once).
std::vector<float> real_values(const Operand& op) {
  std::vector<float> out;
  if (op.type == DType::float32) return values_of<float>(op.bytes);
  for (uint8_t b : op.bytes) {
    const int32_t v = op.type == DType::uint8 ? int32_t{b} : int32_t{static_cast<int8_t>(b)};
    out.push_back(static_cast<float>((v - op.quant->zero_point[0]) * static_cast<double>(op.quant->scale[0])));
  }
  return out;
}

struct Spec {
  DetectionPostProcessOptions options = default_options();
  Operand boxes, scores, anchors;
  bool anchors_constant = true;
  std::array<std::vector<int32_t>, 4> output_shapes{};  // [] lets the model reader size them
  DType output_type = DType::float32;
  bool drop_anchor_input = false;
};

Bytes build(const Spec& s) {
  tw::ModelBuilder b;
  const int32_t boxes = b.add_tensor(tw::TensorDef{"box_encodings", s.boxes.type, s.boxes.shape, s.boxes.quant, {},
                                                   std::nullopt, false});
  const int32_t scores = b.add_tensor(tw::TensorDef{"class_predictions", s.scores.type, s.scores.shape,
                                                    s.scores.quant, {}, std::nullopt, false});
  const int32_t anchors =
      b.add_tensor(tw::TensorDef{"anchors", s.anchors.type, s.anchors.shape, s.anchors.quant,
                                 s.anchors_constant ? s.anchors.bytes : Bytes{}, std::nullopt, false});
  std::vector<int32_t> outs;
  const char* names[4] = {"detection_boxes", "detection_classes", "detection_scores", "num_detections"};
  for (size_t k = 0; k < 4; ++k)
    outs.push_back(b.add_tensor(tw::TensorDef{names[k], s.output_type, s.output_shapes[k],
                                              s.output_type == DType::float32 ? std::nullopt
                                                                              : std::optional<tw::Quant>(q(1.0f, 0)),
                                              {}, std::nullopt, false}));
  std::vector<int32_t> inputs{boxes, scores};
  if (!s.drop_anchor_input) inputs.push_back(anchors);
  b.add_custom_operator("TFLite_Detection_PostProcess", inputs, outs, s.options);
  std::vector<int32_t> graph_inputs{boxes, scores};
  if (!s.anchors_constant) graph_inputs.push_back(anchors);
  b.set_inputs(graph_inputs);
  b.set_outputs(outs);
  return b.finish("detection post-process test");
}

// TFLite's centre-size decoding: centre and half sizes in double, rounded to float; corners in float.
Box decoded(const Center& code, const Center& anchor, const DetectionPostProcessOptions& o) {
  const auto ycenter = static_cast<float>(double{code[0]} / double{o.y_scale} * double{anchor[2]} + double{anchor[0]});
  const auto xcenter = static_cast<float>(double{code[1]} / double{o.x_scale} * double{anchor[3]} + double{anchor[1]});
  const auto half_h = static_cast<float>(0.5 * std::exp(double{code[2]} / double{o.h_scale}) * double{anchor[2]});
  const auto half_w = static_cast<float>(0.5 * std::exp(double{code[3]} / double{o.w_scale}) * double{anchor[3]});
  return Box{ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w};
}

// The decoded box of every anchor of a spec.
std::vector<Box> decoded_boxes(const Spec& s) {
  const std::vector<float> codes = real_values(s.boxes);
  const std::vector<float> anchors = real_values(s.anchors);
  const size_t n = anchors.size() / 4, code_size = codes.size() / n;
  std::vector<Box> out;
  for (size_t a = 0; a < n; ++a)
    out.push_back(decoded({codes[a * code_size], codes[a * code_size + 1], codes[a * code_size + 2],
                           codes[a * code_size + 3]},
                          {anchors[a * 4], anchors[a * 4 + 1], anchors[a * 4 + 2], anchors[a * 4 + 3]}, s.options));
  return out;
}

// One expected output row.
struct Row {
  int anchor;
  int class_index;
  float score;
};

std::vector<Bytes> run(const Spec& s) { return run_everywhere(build(s), {s.boxes.bytes, s.scores.bytes}); }

// Runs the spec and checks every output row: `rows` has one entry per output row (nullopt: all zeros).
void check(const Spec& s, const std::vector<std::optional<Row>>& rows, float count) {
  const std::vector<Bytes> out = run(s);
  REQUIRE(out.size() == 4);
  const std::vector<Box> boxes = decoded_boxes(s);
  const auto got_boxes = values_of<float>(out[0]);
  const auto got_classes = values_of<float>(out[1]);
  const auto got_scores = values_of<float>(out[2]);
  const auto got_count = values_of<float>(out[3]);
  const auto n =
      static_cast<size_t>(s.options.max_detections) * static_cast<size_t>(s.options.max_classes_per_detection);
  REQUIRE(rows.size() == n);
  REQUIRE(got_boxes.size() == n * 4);
  REQUIRE(got_classes.size() == n);
  REQUIRE(got_scores.size() == n);
  REQUIRE(got_count.size() == 1);
  CHECK(got_count[0] == count);
  for (size_t r = 0; r < n; ++r) {
    INFO("row " << r);
    const Box want = rows[r] ? boxes[static_cast<size_t>(rows[r]->anchor)] : Box{0, 0, 0, 0};
    for (size_t k = 0; k < 4; ++k) CHECK(got_boxes[r * 4 + k] == want[k]);
    CHECK(got_classes[r] == (rows[r] ? static_cast<float>(rows[r]->class_index) : 0.0f));
    const float want_score = rows[r] ? rows[r]->score : 0.0f;
    CHECK((std::isnan(want_score) ? std::isnan(got_scores[r]) : got_scores[r] == want_score));
  }
}

// Six anchors with zero encodings: A0 [0,0,1,1]; A1 [0,0.1,1,1.1] (IoU 0.82 with A0); A2 [0,2,1,3]; A3 [0,2.5,1,3.5]
// (IoU 1/3 with A2); A4 and A5 [5,5,6,6]. Scores (background, class 0, class 1).
Spec six_anchor_scene() {
  Spec s;
  s.boxes = float_operand({1, 6, 4}, std::vector<float>(24, 0.0f));
  s.anchors = float_operand({6, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 0.5f, 2.5f, 1, 1,  //
                                     0.5f, 3.0f, 1, 1, 5.5f, 5.5f, 1, 1, 5.5f, 5.5f, 1, 1});
  s.scores = float_operand({1, 6, 3}, {0, 0.9f, 0.2f,     //
                                       0, 0.95f, 0.1f,    //
                                       0, 0.1f, 0.8f,     //
                                       0, 0.7f, 0.75f,    //
                                       0, 0.2f, 0.25f,    //
                                       0.9f, 0.05f, 0.31f});
  return s;
}

constexpr std::nullopt_t none = std::nullopt;

}  // namespace

TEST_CASE("detection post-process: decoding of a box against its anchor") {
  // Hand values: zero encodings give the anchor's corners; y/x shift by code / scale * anchor size; the sizes
  // scale by exp(code / scale).
  const DetectionPostProcessOptions o = default_options();
  CHECK(decoded({0, 0, 0, 0}, {0.5f, 0.5f, 1, 1}, o) == Box{0, 0, 1, 1});
  CHECK(decoded({10, -20, 0, 0}, {1, 2, 2, 4}, o) == Box{2, -8, 4, -4});  // centre (3, -6), half sizes (1, 2)
  Spec s;
  s.options.num_classes = 1;
  s.options.max_detections = 2;
  s.options.nms_score_threshold = 0.0f;
  const float log2_5 = static_cast<float>(5 * std::log(2.0));  // exp(log2_5 / 5) == 2 (up to rounding)
  s.boxes = float_operand({1, 2, 4}, {10, -20, 0, 0, 0, 0, log2_5, -log2_5});
  s.anchors = float_operand({2, 4}, {1, 2, 2, 4, 10, 20, 2, 4});
  s.scores = float_operand({1, 2, 1}, {0.5f, 0.75f});
  const std::vector<Box> boxes = decoded_boxes(s);
  CHECK(boxes[0] == Box{2, -8, 4, -4});
  CHECK(boxes[1][0] == doctest::Approx(8.0));  // half height 2 (doubled), half width 1 (halved)
  CHECK(boxes[1][1] == doctest::Approx(19.0));
  CHECK(boxes[1][2] == doctest::Approx(12.0));
  CHECK(boxes[1][3] == doctest::Approx(21.0));
  check(s, {Row{1, 0, 0.75f}, Row{0, 0, 0.5f}}, 2);
}

TEST_CASE("detection post-process: fast NMS keeps each anchor's best class and suppresses overlaps") {
  Spec s = six_anchor_scene();
  // Best scores: A0 0.9, A1 0.95, A2 0.8, A3 0.75, A4 0.25 (under 0.3), A5 0.31 (its background 0.9 is ignored).
  // A1 suppresses A0; A3 overlaps A2 with IoU 1/3 only.
  check(s, {Row{1, 0, 0.95f}, Row{2, 1, 0.8f}, Row{3, 1, 0.75f}}, 3);
  s.options.max_detections = 5;
  check(s, {Row{1, 0, 0.95f}, Row{2, 1, 0.8f}, Row{3, 1, 0.75f}, Row{5, 1, 0.31f}, none}, 4);
}

TEST_CASE("detection post-process: fast NMS with several classes per detection") {
  Spec s = six_anchor_scene();
  s.options.max_classes_per_detection = 2;
  // Each selected anchor lists its two classes by decreasing score, whatever the threshold says of the second.
  check(s,
        {Row{1, 0, 0.95f}, Row{1, 1, 0.1f}, Row{2, 1, 0.8f}, Row{2, 0, 0.1f}, Row{3, 1, 0.75f}, Row{3, 0, 0.7f}},
        3);
  // More classes per detection than classes: rows of max_classes_per_detection per anchor, the extra one zero.
  s.options.max_classes_per_detection = 3;
  s.options.max_detections = 2;
  check(s, {Row{1, 0, 0.95f}, Row{1, 1, 0.1f}, none, Row{2, 1, 0.8f}, Row{2, 0, 0.1f}, none}, 2);
}

TEST_CASE("detection post-process: scores with and without a background column") {
  Spec s = six_anchor_scene();
  // The same classes without the background column give the same detections.
  std::vector<float> two;
  const std::vector<float> three = values_of<float>(s.scores.bytes);
  for (size_t a = 0; a < 6; ++a) two.insert(two.end(), {three[a * 3 + 1], three[a * 3 + 2]});
  Spec no_background = s;
  no_background.scores = float_operand({1, 6, 2}, two);
  check(no_background, {Row{1, 0, 0.95f}, Row{2, 1, 0.8f}, Row{3, 1, 0.75f}}, 3);
  // Three real classes: the first column is class 0. A5's best is now class 0 (0.9), tied with A0's 0.9: the lower
  // anchor comes first (and is suppressed by A1), then A5, then A2.
  s.options.num_classes = 3;
  check(s, {Row{1, 1, 0.95f}, Row{5, 0, 0.9f}, Row{2, 2, 0.8f}}, 3);
}

TEST_CASE("detection post-process: fast NMS ties") {
  // Four disjoint unit boxes at x = 0, 2, 4, 6. Scores (background, class 0, class 1).
  Spec s;
  s.boxes = float_operand({1, 4, 4}, std::vector<float>(16, 0.0f));
  s.anchors = float_operand({4, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 2.5f, 1, 1, 0.5f, 4.5f, 1, 1, 0.5f, 6.5f, 1, 1});
  s.scores = float_operand({1, 4, 3}, {0, 0.2f, 0.6f, 0, 0.6f, 0.2f, 0, 0.6f, 0.6f, 0, 0.7f, 0.6f});
  // Best class: B2's classes tie, the first (class 0) wins. Equal best scores go by anchor.
  check(s, {Row{3, 0, 0.7f}, Row{0, 1, 0.6f}, Row{1, 0, 0.6f}}, 3);
  s.options.max_detections = 4;
  s.options.max_classes_per_detection = 2;
  check(s,
        {Row{3, 0, 0.7f}, Row{3, 1, 0.6f}, Row{0, 1, 0.6f}, Row{0, 0, 0.2f}, Row{1, 0, 0.6f}, Row{1, 1, 0.2f},
         Row{2, 0, 0.6f}, Row{2, 1, 0.6f}},
        4);

  // Two overlapping boxes with equal scores: the lower anchor is selected and suppresses the other.
  Spec overlap;
  overlap.options.num_classes = 1;
  overlap.boxes = float_operand({1, 2, 4}, std::vector<float>(8, 0.0f));
  overlap.anchors = float_operand({2, 4}, {0.5f, 0.6f, 1, 1, 0.5f, 0.5f, 1, 1});
  overlap.scores = float_operand({1, 2, 1}, {0.7f, 0.7f});
  check(overlap, {Row{0, 0, 0.7f}, none, none}, 1);

  // Several best classes with ties: TensorFlow Lite's std::partial_sort as libc++ runs it (heap of the first k
  // classes, the others pushed through it, then a heap sort), traced by hand. Classes 1 and 2 tie: heap {0, 1},
  // class 2 replaces class 0 at the top, the sort pops class 1 last: (2, 1).
  Spec three;
  three.options.num_classes = 3;
  three.options.max_detections = 1;
  three.options.max_classes_per_detection = 2;
  three.boxes = float_operand({1, 1, 4}, std::vector<float>(4, 0.0f));
  three.anchors = float_operand({1, 4}, {0.5f, 0.5f, 1, 1});
  three.scores = float_operand({1, 1, 3}, {0.3f, 0.6f, 0.6f});
  check(three, {Row{0, 2, 0.6f}, Row{0, 1, 0.6f}}, 1);
  three.scores = float_operand({1, 1, 3}, {0.6f, 0.3f, 0.6f});  // heap {1, 0}; 2 replaces 1: (2, 0)
  check(three, {Row{0, 2, 0.6f}, Row{0, 0, 0.6f}}, 1);
  // Four equal classes, three wanted: the heap of {0, 1, 2} becomes (1, 0, 2), class 3 stays out, the sort gives
  // (2, 0, 1).
  three.options.num_classes = 4;
  three.options.max_classes_per_detection = 3;
  three.scores = float_operand({1, 1, 4}, {0.5f, 0.5f, 0.5f, 0.5f});
  check(three, {Row{0, 2, 0.5f}, Row{0, 0, 0.5f}, Row{0, 1, 0.5f}}, 1);
}

TEST_CASE("detection post-process: thresholds at equality") {
  // E0 [0,0,1,1] and E1 [0,0,1,2] have IoU exactly 0.5; E2 [5,5,6,6] is apart. One class, no background.
  Spec s;
  s.options.num_classes = 1;
  s.boxes = float_operand({1, 3, 4}, std::vector<float>(12, 0.0f));
  s.anchors = float_operand({3, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 1.0f, 1, 2, 5.5f, 5.5f, 1, 1});
  s.scores = float_operand({1, 3, 1}, {0.9f, 0.8f, 0.25f});
  REQUIRE(decoded_boxes(s)[1] == Box{0, 0, 1, 2});
  s.options.nms_score_threshold = 0.25f;  // a score equal to the threshold is kept
  s.options.nms_iou_threshold = 0.5f;     // an IoU equal to the threshold does not suppress
  check(s, {Row{0, 0, 0.9f}, Row{1, 0, 0.8f}, Row{2, 0, 0.25f}}, 3);
  s.options.nms_iou_threshold = 0.49f;
  check(s, {Row{0, 0, 0.9f}, Row{2, 0, 0.25f}, none}, 2);
  s.options.nms_iou_threshold = 0.5f;
  s.options.nms_score_threshold = 0.26f;
  check(s, {Row{0, 0, 0.9f}, Row{1, 0, 0.8f}, none}, 2);
  s.options.use_regular_nms = true;
  check(s, {Row{0, 0, 0.9f}, Row{1, 0, 0.8f}, none}, 2);
  s.options.nms_iou_threshold = 0.49f;
  check(s, {Row{0, 0, 0.9f}, none, none}, 1);
  // An IoU threshold of 1 suppresses nothing, not even a duplicate.
  s.anchors = float_operand({3, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 0.5f, 1, 1, 5.5f, 5.5f, 1, 1});
  s.options.nms_iou_threshold = 1.0f;
  check(s, {Row{0, 0, 0.9f}, Row{1, 0, 0.8f}, none}, 2);
}

TEST_CASE("detection post-process: boxes without area neither suppress nor are suppressed") {
  // D0 has height 0 inside A [0,0,1,1]: its IoU with anything is 0 (TensorFlow Lite accepts such boxes).
  Spec s;
  s.options.num_classes = 1;
  s.boxes = float_operand({1, 3, 4}, std::vector<float>(12, 0.0f));
  s.anchors = float_operand({3, 4}, {0.5f, 0.5f, 0, 1, 0.5f, 0.5f, 1, 1, 0.5f, 0.5f, 1, 1});
  s.scores = float_operand({1, 3, 1}, {0.9f, 0.8f, 0.7f});
  check(s, {Row{0, 0, 0.9f}, Row{1, 0, 0.8f}, none}, 2);
}

TEST_CASE("detection post-process: fewer candidates than max_detections") {
  Spec s = six_anchor_scene();
  s.options.nms_score_threshold = 0.96f;
  check(s, {none, none, none}, 0);
  s.options.use_regular_nms = true;
  check(s, {none, none, none}, 0);
  s.options.nms_score_threshold = 0.92f;
  check(s, {Row{1, 0, 0.95f}, none, none}, 1);
  s.options.use_regular_nms = false;
  s.options.max_classes_per_detection = 2;
  check(s, {Row{1, 0, 0.95f}, Row{1, 1, 0.1f}, none, none, none, none}, 1);
}

TEST_CASE("detection post-process: regular NMS per class, merged by score") {
  Spec s = six_anchor_scene();
  s.options.use_regular_nms = true;
  s.options.max_detections = 4;
  // Class 0: candidates A1 0.95, A0 0.9 (suppressed by A1), A3 0.7. Class 1: A2 0.8, A3 0.75, A5 0.31.
  check(s, {Row{1, 0, 0.95f}, Row{2, 1, 0.8f}, Row{3, 1, 0.75f}, Row{3, 0, 0.7f}}, 4);
  s.options.max_detections = 6;
  check(s, {Row{1, 0, 0.95f}, Row{2, 1, 0.8f}, Row{3, 1, 0.75f}, Row{3, 0, 0.7f}, Row{5, 1, 0.31f}, none}, 5);
  s.options.max_detections = 4;
  s.options.detections_per_class = 1;
  check(s, {Row{1, 0, 0.95f}, Row{2, 1, 0.8f}, none, none}, 2);
  // Rows past max_detections (max_classes_per_detection does not apply to regular NMS) stay zero.
  s.options.detections_per_class = 100;
  s.options.max_detections = 3;
  s.options.max_classes_per_detection = 2;
  check(s, {Row{1, 0, 0.95f}, Row{2, 1, 0.8f}, Row{3, 1, 0.75f}, none, none, none}, 3);
}

TEST_CASE("detection post-process: regular NMS ties") {
  Spec s;
  s.options.use_regular_nms = true;
  s.options.max_detections = 5;
  s.boxes = float_operand({1, 4, 4}, std::vector<float>(16, 0.0f));
  s.anchors = float_operand({4, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 2.5f, 1, 1, 0.5f, 4.5f, 1, 1, 0.5f, 6.5f, 1, 1});
  s.scores = float_operand({1, 4, 3}, {0, 0.2f, 0.6f, 0, 0.6f, 0.2f, 0, 0.6f, 0.6f, 0, 0.7f, 0.6f});
  // Class 0: B3 0.7, B1 0.6, B2 0.6 (equal scores by anchor). Class 1: B0, B2, B3, all 0.6. Equal scores of a later
  // class come after the earlier class's.
  check(s, {Row{3, 0, 0.7f}, Row{1, 0, 0.6f}, Row{2, 0, 0.6f}, Row{0, 1, 0.6f}, Row{2, 1, 0.6f}}, 5);
  s.options.max_detections = 7;
  check(s,
        {Row{3, 0, 0.7f}, Row{1, 0, 0.6f}, Row{2, 0, 0.6f}, Row{0, 1, 0.6f}, Row{2, 1, 0.6f}, Row{3, 1, 0.6f}, none},
        6);
  s.options.max_detections = 5;
  s.options.detections_per_class = 2;
  check(s, {Row{3, 0, 0.7f}, Row{1, 0, 0.6f}, Row{0, 1, 0.6f}, Row{2, 1, 0.6f}, none}, 4);
}

namespace {

// Four anchors in uint8 (scale 1/64): Q0 (0.5,0.5,1,1), Q1 (0.5,0.59375,1,1), Q2 (0.5,2.5,1,1), Q3 (2.5,2.5,.5,.5);
// encodings uint8 (scale 0.1, zero point 128): Q1's box overlaps Q0's (IoU about 0.83), Q2 and Q3 are apart (Q3 is
// a flat, wide box at y 2.5). Scores uint8 (scale 1/256, zero point 10), (background, class 0, class 1).
Spec quantized_scene() {
  Spec s;
  s.options.nms_score_threshold = 0.1f;
  s.options.max_detections = 4;
  s.anchors = quantized_operand(DType::uint8, {4, 4}, 1.0f / 64, 0,
                                {32, 32, 64, 64, 32, 38, 64, 64, 32, 160, 64, 64, 160, 160, 32, 32});
  s.boxes = quantized_operand(DType::uint8, {1, 4, 4}, 0.1f, 128,
                              {128, 128, 128, 128, 133, 123, 131, 126, 100, 150, 140, 110, 128, 128, 0, 255});
  s.scores = quantized_operand(DType::uint8, {1, 4, 3}, 1.0f / 256, 10,
                               {0, 200, 10, 0, 230, 5, 0, 50, 120, 255, 60, 60});
  return s;
}

// The same scene with every operand in int8 (values shifted by -128, zero points too).
Spec as_int8(Spec s) {
  for (Operand* op : {&s.boxes, &s.scores, &s.anchors}) {
    op->type = DType::int8;
    for (uint8_t& b : op->bytes) b = static_cast<uint8_t>(static_cast<int8_t>(int32_t{b} - 128));
    op->quant->zero_point[0] -= 128;
  }
  return s;
}

float s256(int q) { return static_cast<float>(q) / 256; }

}  // namespace

TEST_CASE("detection post-process: uint8 operands") {
  Spec s = quantized_scene();
  const std::vector<Box> boxes = decoded_boxes(s);
  REQUIRE(boxes[0] == Box{0, 0, 1, 1});
  CHECK(boxes[1][0] == doctest::Approx(0.55 - 0.5 * std::exp(0.06)));  // hand values of the decoding
  CHECK(boxes[1][3] == doctest::Approx(0.59375 - 0.05 + 0.5 * std::exp(-0.04)));
  CHECK(boxes[3][0] == doctest::Approx(2.5 - 0.25 * std::exp(-2.56)));
  CHECK(boxes[3][3] == doctest::Approx(2.5 + 0.25 * std::exp(2.54)));
  // Best: Q0 class 0 190/256, Q1 class 0 220/256 (suppresses Q0), Q2 class 1 110/256, Q3 50/256 (tie: class 0).
  check(s, {Row{1, 0, s256(220)}, Row{2, 1, s256(110)}, Row{3, 0, s256(50)}, none}, 3);
  // Regular: class 0 keeps Q1, Q3, Q2 (40/256); class 1 keeps Q2 and Q3 (Q0's is 0, Q1's negative).
  s.options.use_regular_nms = true;
  check(s, {Row{1, 0, s256(220)}, Row{2, 1, s256(110)}, Row{3, 0, s256(50)}, Row{3, 1, s256(50)}}, 4);
}

TEST_CASE("detection post-process: int8 and mixed operands give the same detections") {
  const Spec base = quantized_scene();
  const std::vector<std::optional<Row>> fast{Row{1, 0, s256(220)}, Row{2, 1, s256(110)}, Row{3, 0, s256(50)}, none};
  Spec s = as_int8(base);
  REQUIRE(decoded_boxes(s) == decoded_boxes(base));
  check(s, fast, 3);
  // Float encodings and anchors (the dequantized values) with int8 scores; uint8 encodings with float anchors.
  Spec mixed = s;
  mixed.boxes = float_operand({1, 4, 4}, real_values(base.boxes));
  mixed.anchors = float_operand({4, 4}, real_values(base.anchors));
  check(mixed, fast, 3);
  mixed.boxes = base.boxes;
  check(mixed, fast, 3);
  // Float scores.
  mixed.scores = float_operand({1, 4, 3}, real_values(base.scores));
  mixed.options.use_regular_nms = true;
  check(mixed, {Row{1, 0, s256(220)}, Row{2, 1, s256(110)}, Row{3, 0, s256(50)}, Row{3, 1, s256(50)}}, 4);
}

TEST_CASE("detection post-process: box encodings wider than 4 use their first four values") {
  Spec s = quantized_scene();
  Spec wide = s;
  const std::vector<float> codes = real_values(s.boxes);
  std::vector<float> six;
  for (size_t a = 0; a < 4; ++a) {
    six.insert(six.end(), codes.begin() + static_cast<long>(a * 4), codes.begin() + static_cast<long>(a * 4 + 4));
    six.insert(six.end(), {1000.0f, -1000.0f});  // key points: ignored
  }
  wide.boxes = float_operand({1, 4, 6}, six);
  REQUIRE(decoded_boxes(wide) == decoded_boxes(s));
  check(wide, {Row{1, 0, s256(220)}, Row{2, 1, s256(110)}, Row{3, 0, s256(50)}, none}, 3);
}

namespace {

// A naive re-derivation of TensorFlow Lite's algorithm for the randomized scenes (IoU in double; the scenes keep
// IoUs away from the threshold): per pass, candidates >= threshold stable-sorted by decreasing score, greedily
// kept unless their IoU with a kept box exceeds the threshold.
double iou(const Box& a, const Box& b) {
  const double area_a = (double{a[2]} - a[0]) * (double{a[3]} - a[1]);
  const double area_b = (double{b[2]} - b[0]) * (double{b[3]} - b[1]);
  if (area_a <= 0 || area_b <= 0) return 0;
  const double h = std::max(0.0, std::min<double>(a[2], b[2]) - std::max<double>(a[0], b[0]));
  const double w = std::max(0.0, std::min<double>(a[3], b[3]) - std::max<double>(a[1], b[1]));
  return h * w / (area_a + area_b - h * w);
}

std::vector<int> greedy(const std::vector<Box>& boxes, const std::vector<float>& score, float score_threshold,
                        float iou_threshold, int limit) {
  std::vector<int> order;
  for (int a = 0; a < static_cast<int>(score.size()); ++a)
    if (score[static_cast<size_t>(a)] >= score_threshold) order.push_back(a);
  std::stable_sort(order.begin(), order.end(),
                   [&](int i, int j) { return score[static_cast<size_t>(i)] > score[static_cast<size_t>(j)]; });
  std::vector<int> kept;
  for (int a : order) {
    if (static_cast<int>(kept.size()) == limit) break;
    bool suppressed = false;
    for (int k : kept)
      suppressed = suppressed || iou(boxes[static_cast<size_t>(k)], boxes[static_cast<size_t>(a)]) > iou_threshold;
    if (!suppressed) kept.push_back(a);
  }
  return kept;
}

// Expected rows of a float spec with a background column.
std::pair<std::vector<std::optional<Row>>, float> naive_detections(const Spec& s) {
  const auto& o = s.options;
  const std::vector<Box> boxes = decoded_boxes(s);
  const std::vector<float> scores = values_of<float>(s.scores.bytes);
  const size_t cb = static_cast<size_t>(o.num_classes) + 1, n = boxes.size();
  auto score = [&](size_t a, int c) { return scores[a * cb + 1 + static_cast<size_t>(c)]; };
  std::vector<std::optional<Row>> rows(static_cast<size_t>(o.max_detections * o.max_classes_per_detection));
  if (!o.use_regular_nms) {
    const int per_anchor = std::min(o.max_classes_per_detection, o.num_classes);
    std::vector<std::vector<int>> classes(n);
    std::vector<float> best(n);
    for (size_t a = 0; a < n; ++a) {
      for (int c = 0; c < o.num_classes; ++c) classes[a].push_back(c);
      std::stable_sort(classes[a].begin(), classes[a].end(), [&](int i, int j) { return score(a, i) > score(a, j); });
      best[a] = score(a, classes[a][0]);
    }
    const std::vector<int> kept = greedy(boxes, best, o.nms_score_threshold, o.nms_iou_threshold, o.max_detections);
    for (size_t k = 0; k < kept.size(); ++k)
      for (int c = 0; c < per_anchor; ++c) {
        const auto a = static_cast<size_t>(kept[k]);
        rows[k * static_cast<size_t>(o.max_classes_per_detection) + static_cast<size_t>(c)] =
            Row{kept[k], classes[a][static_cast<size_t>(c)], score(a, classes[a][static_cast<size_t>(c)])};
      }
    return {rows, static_cast<float>(kept.size())};
  }
  std::vector<Row> all;  // by class, then by rank within the class
  for (int c = 0; c < o.num_classes; ++c) {
    std::vector<float> column;
    for (size_t a = 0; a < n; ++a) column.push_back(score(a, c));
    for (int a : greedy(boxes, column, o.nms_score_threshold, o.nms_iou_threshold,
                        std::min(o.detections_per_class, o.max_detections)))
      all.push_back(Row{a, c, column[static_cast<size_t>(a)]});
  }
  std::stable_sort(all.begin(), all.end(), [](const Row& x, const Row& y) { return x.score > y.score; });
  if (all.size() > static_cast<size_t>(o.max_detections)) all.resize(static_cast<size_t>(o.max_detections));
  for (size_t k = 0; k < all.size(); ++k) rows[k] = all[k];
  return {rows, static_cast<float>(all.size())};
}

// A random float scene: anchors with centres in [0, spread) and sizes in [0.3, 1.3), small encodings, scores on a
// grid of 1/16, distinct within an anchor (the order of an anchor's equal classes is libc++'s, tested by hand
// above) but often equal across anchors, num_classes real classes plus background.
Spec random_scene(std::mt19937& rng, int anchors, int num_classes, float spread) {
  std::uniform_real_distribution<float> centre(0.0f, spread), size(0.3f, 1.3f), code(-1.0f, 1.0f);
  std::uniform_int_distribution<int> grid(0, 16);
  std::vector<float> anchor_values, codes, scores;
  for (int a = 0; a < anchors; ++a) {
    anchor_values.insert(anchor_values.end(), {centre(rng), centre(rng), size(rng), size(rng)});
    codes.insert(codes.end(), {code(rng), code(rng), code(rng), code(rng)});
    std::vector<int> values;
    while (static_cast<int>(values.size()) <= num_classes) {
      const int v = grid(rng);
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
    for (int v : values) scores.push_back(static_cast<float>(v) / 16);
  }
  Spec s;
  s.options.num_classes = num_classes;
  s.anchors = float_operand({anchors, 4}, anchor_values);
  s.boxes = float_operand({1, anchors, 4}, codes);
  s.scores = float_operand({1, anchors, num_classes + 1}, scores);
  return s;
}

}  // namespace

TEST_CASE("detection post-process: randomized scenes against a naive re-derivation") {
  std::mt19937 rng(20240611);
  int checked = 0;
  for (int round = 0; round < 24; ++round) {
    INFO("round " << round);
    Spec s = random_scene(rng, 12 + round % 5 * 7, 1 + round % 4, round % 3 == 0 ? 40.0f : 4.0f);
    s.options.use_regular_nms = round % 2 == 1;
    s.options.max_detections = 3 + round % 6;
    s.options.max_classes_per_detection = 1 + round % 3;
    s.options.detections_per_class = 1 + round % 5;
    s.options.nms_score_threshold = 0.25f + 0.05f * static_cast<float>(round % 4);
    s.options.nms_iou_threshold = 0.3f + 0.1f * static_cast<float>(round % 5);
    // Keep the scene away from IoU ties with the threshold (the naive IoU is in double).
    const std::vector<Box> boxes = decoded_boxes(s);
    bool near = false;
    for (size_t i = 0; i < boxes.size(); ++i)
      for (size_t j = i + 1; j < boxes.size(); ++j)
        near = near || std::abs(iou(boxes[i], boxes[j]) - s.options.nms_iou_threshold) < 1e-5;
    if (near) continue;
    const auto [rows, count] = naive_detections(s);
    check(s, rows, count);
    ++checked;
  }
  CHECK(checked >= 20);
}

TEST_CASE("detection post-process: NaN and infinite scores") {
  // A NaN score is never a candidate; +inf is the best; a NaN first class stays the anchor's best (TFLite's
  // ArgMaxVector keeps the first element unless a later one compares greater), so that anchor is dropped.
  Spec s;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  s.boxes = float_operand({1, 4, 4}, std::vector<float>(16, 0.0f));
  s.anchors = float_operand({4, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 2.5f, 1, 1, 0.5f, 4.5f, 1, 1, 0.5f, 6.5f, 1, 1});
  s.scores = float_operand({1, 4, 3}, {0, nan, 0.9f, 0, 0.5f, nan, 0, inf, 0.4f, 0, -inf, 0.6f});
  check(s, {Row{2, 0, inf}, Row{3, 1, 0.6f}, Row{1, 0, 0.5f}}, 3);
  // Regular: class 0 keeps B2 (inf) and B1; class 1 keeps B0 (0.9), B3, B2.
  s.options.use_regular_nms = true;
  check(s, {Row{2, 0, inf}, Row{0, 1, 0.9f}, Row{3, 1, 0.6f}}, 3);
  s.options.max_detections = 5;
  check(s, {Row{2, 0, inf}, Row{0, 1, 0.9f}, Row{3, 1, 0.6f}, Row{1, 0, 0.5f}, Row{2, 1, 0.4f}}, 5);
  // Two classes wanted (libc++'s partial sort, traced): a comparison with NaN is false, so both orders keep the
  // classes as they are unless the second compares greater: B0 (NaN, 0.9) keeps NaN first and is dropped, B3 puts
  // 0.6 before -inf.
  s.options.use_regular_nms = false;
  s.options.max_detections = 4;
  s.options.max_classes_per_detection = 2;
  check(s,
        {Row{2, 0, inf}, Row{2, 1, 0.4f}, Row{3, 1, 0.6f}, Row{3, 0, -inf}, Row{1, 0, 0.5f}, Row{1, 1, nan}, none,
         none},
        3);
}

TEST_CASE("detection post-process: refusals") {
  auto error_of = [](const Spec& s) { return load_error(build(s)); };
  auto refused = [&](const Spec& s, const std::string& needle) {
    const std::string e = error_of(s);
    INFO("error: " << e);
    CHECK(e.find(needle) != std::string::npos);
  };
  const Spec good = six_anchor_scene();
  REQUIRE(error_of(good).empty());

  {  // options
    Spec s = good;
    s.options.num_classes = 0;
    refused(s, "num_classes");
    s = good;
    s.options.max_detections = 0;
    refused(s, "max_detections");
    s = good;
    s.options.max_classes_per_detection = 0;
    refused(s, "max_classes_per_detection");
    s = good;
    s.options.use_regular_nms = true;
    s.options.detections_per_class = 0;
    refused(s, "detections_per_class");
    s.options.use_regular_nms = false;  // unused by fast NMS
    CHECK(error_of(s).empty());
    s = good;
    for (float bad : {0.0f, -0.5f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
      s.options.nms_iou_threshold = bad;
      refused(s, "nms_iou_threshold");
    }
    s = good;
    for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      s.options.nms_score_threshold = bad;
      refused(s, "nms_score_threshold");
    }
    for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity()}) {
      s = good;
      s.options.y_scale = bad;
      refused(s, "y_scale");
      s = good;
      s.options.w_scale = bad;
      refused(s, "w_scale");
    }
  }
  {  // shapes
    Spec s = good;
    s.boxes = float_operand({6, 4}, std::vector<float>(24, 0.0f));
    refused(s, "box encodings");
    s.boxes = float_operand({1, 6, 3}, std::vector<float>(18, 0.0f));
    refused(s, "box encodings");
    s.boxes = float_operand({2, 3, 4}, std::vector<float>(24, 0.0f));
    refused(s, "box encodings");
    s = good;
    s.scores = float_operand({1, 5, 3}, std::vector<float>(15, 0.0f));
    refused(s, "class scores");
    s.scores = float_operand({1, 6, 4}, std::vector<float>(24, 0.0f));  // num_classes 2 needs 2 or 3 columns
    refused(s, "class scores");
    s.scores = float_operand({1, 6, 1}, std::vector<float>(6, 0.0f));
    refused(s, "class scores");
    s = good;
    s.anchors = float_operand({6, 5}, std::vector<float>(30, 0.5f));
    refused(s, "anchors");
    s.anchors = float_operand({5, 4}, std::vector<float>(20, 0.5f));
    refused(s, "anchors");
    s = good;
    s.output_shapes = {std::vector<int32_t>{1, 3, 4}, {1, 3}, {1, 3}, {1}};  // declared as computed: accepted
    CHECK(error_of(s).empty());
    s.output_shapes[0] = {1, 4, 4};
    refused(s, "output 0");
    s = good;
    s.output_shapes[3] = {2};
    refused(s, "output 3");
    s = good;
    s.output_type = DType::uint8;
    refused(s, "type");
  }
  {  // anchors
    Spec s = good;
    s.anchors_constant = false;
    refused(s, "anchors");
    s = good;
    std::vector<float> a = values_of<float>(good.anchors.bytes);
    a[2 * 4 + 2] = -1.0f;  // anchor 2's height
    s.anchors = float_operand({6, 4}, a);
    refused(s, "negative height");
    a[2 * 4 + 2] = 1.0f;
    a[4 * 4 + 3] = -0.5f;
    s.anchors = float_operand({6, 4}, a);
    refused(s, "negative width");
    a[4 * 4 + 3] = 1.0f;
    a[1] = std::numeric_limits<float>::infinity();
    s.anchors = float_operand({6, 4}, a);
    refused(s, "not finite");
  }
  {  // types and quantization
    Spec s = quantized_scene();
    REQUIRE(error_of(s).empty());
    s.scores.quant.reset();
    refused(s, "class scores");
    s = quantized_scene();
    s.boxes.quant->scale[0] = 0.0f;
    refused(s, "box encodings");
    s = quantized_scene();
    s.anchors.quant->zero_point[0] = 300;
    refused(s, "anchors");
    s = quantized_scene();
    s.boxes.type = DType::int16;
    s.boxes.bytes.resize(s.boxes.bytes.size() * 2);
    refused(s, "box encodings");
    s = good;
    s.drop_anchor_input = true;
    refused(s, "inputs");
  }
  {  // sizes (the tensors are declared, never allocated: preparation refuses them first)
    Spec s = good;
    s.anchors_constant = false;
    s.boxes = float_operand({1, 1 << 22, 4}, {});
    s.scores = float_operand({1, 1 << 22, 3}, {});
    s.anchors = float_operand({1 << 22, 4}, {});
    refused(s, "accepts 1 to");
    s.options.num_classes = 16;
    s.boxes = float_operand({1, 1 << 20, 4}, {});
    s.scores = float_operand({1, 1 << 20, 17}, {});
    s.anchors = float_operand({1 << 20, 4}, {});
    refused(s, "more scores than");
    s.options.num_classes = 2;
    s.options.max_detections = 1 << 18;
    s.boxes = float_operand({1, 1 << 19, 4}, {});
    s.scores = float_operand({1, 1 << 19, 2}, {});
    s.anchors = float_operand({1 << 19, 4}, {});
    refused(s, "more work");
  }
}
