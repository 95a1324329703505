// aisrv results — recognition: which decoder applies to a model, from Options::task (forced), the metadata's
// "task" hint (wins when that task's shapes fit), the Hailo NMS metadata, then output shapes, dtypes and names.
// Rules, in order when nothing is forced:
//   hailo.nms.* metadata      → hailo_nms_by_class (the metadata must match the output, else an error)
//   outputs [1,N,4] [1,N] [1,N] [1]  → tflite_detection_postprocess (other outputs beside them, e.g. a recurrent
//                             model's state, are ignored when the four are told apart: see match_postprocess)
//   one output [1,1,K,3], K ≥ 2 → movenet (pose)
//   one output, every dimension 1 but the last ([C], [1,C], [1,1,1,C]) → top_k (classification)
//   one output [1,A,B], float or quantized, min(A,B) ≥ 5 → yolov8 (detection)
//   one output [1,H,W] or [1,H,W,1] of an integer type without quantization → class_mask (segmentation)
//   one output [1,H,W,C]      → argmax_mask (segmentation)
// A forced or hinted task also accepts [1,H,W] of any type as a class map and [1,A,B] of any type as a YOLOv8 head.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "decoders.hpp"

namespace aisrv::results {
namespace detail {

std::string_view decoder_name(Decoder d) {
  switch (d) {
    case Decoder::top_k: return "top_k";
    case Decoder::tflite_detection_postprocess: return "tflite_detection_postprocess";
    case Decoder::yolov8: return "yolov8";
    case Decoder::hailo_nms_by_class: return "hailo_nms_by_class";
    case Decoder::class_mask: return "class_mask";
    case Decoder::argmax_mask: return "argmax_mask";
    case Decoder::movenet: return "movenet";
  }
  return "";
}

Task decoder_task(Decoder d) {
  switch (d) {
    case Decoder::top_k: return Task::classification;
    case Decoder::tflite_detection_postprocess: case Decoder::yolov8: case Decoder::hailo_nms_by_class:
      return Task::detection;
    case Decoder::class_mask: case Decoder::argmax_mask: return Task::segmentation;
    case Decoder::movenet: return Task::pose;
  }
  return Task::classification;
}

namespace {

using Shape = std::vector<int32_t>;
using Match = Result<std::optional<Plan>>;

bool readable(const protocol::TensorInfo& t) { return protocol::dtype_size(t.dtype) > 0 && element_count(t.shape); }
bool integer_map(const protocol::TensorInfo& t) { return is_integer_type(t.dtype) && t.scale.empty(); }

Plan single(Decoder d, size_t output = 0) {
  Plan p;
  p.decoder = d;
  p.output = output;
  return p;
}

// ":3" → 3; none → -1.
int name_suffix(const std::string& name) {
  const auto colon = name.rfind(':');
  if (colon == std::string::npos) return -1;
  int v = -1;
  const char* b = name.data() + colon + 1;
  const char* e = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(b, e, v);
  return (ec == std::errc() && ptr == e && b != e) ? v : -1;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The outputs a TFLite_Detection_PostProcess may have written: all of them when there are four; with more (models
// that also output a recurrent state), the four named after the operator, else the four with its shapes.
std::vector<size_t> postprocess_candidates(const ModelDescription& m) {
  std::vector<size_t> all(m.outputs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (m.outputs.size() <= 4) return all;
  std::vector<size_t> named, shaped;
  for (size_t i : all) {
    const auto& t = m.outputs[i];
    if (lower(t.name).find("detection_postprocess") != std::string::npos) named.push_back(i);
    const Shape& s = t.shape;
    const bool fits = (s.size() == 3 && s[0] == 1 && s[2] == 4) || (s.size() == 2 && s[0] == 1) ||
                      (s.size() <= 1 && element_count(s) && *element_count(s) == 1);
    if (t.dtype == protocol::DType::float32 && fits) shaped.push_back(i);
  }
  if (named.size() == 4) return named;
  if (shaped.size() == 4) return shaped;
  return {};
}

// TFLite_Detection_PostProcess: boxes [1,N,4], two [1,N], count [1] (or a scalar), in any order. Classes vs scores
// (same shape): a name containing "class" / "score" first; then the ":k" name suffixes — TF2 signatures number the
// outputs count 0, scores 1, classes 2, boxes 3 (so boxes ending ":3" means ":1" scores, ":2" classes), TF1 graphs
// number the op's outputs boxes 0, classes 1, scores 2, count 3; last the op's own order: classes before scores.
Match match_postprocess(const ModelDescription& m) {
  const std::vector<size_t> candidates = postprocess_candidates(m);
  if (candidates.size() != 4) return std::optional<Plan>();
  int boxes = -1, count = -1;
  std::vector<size_t> pair;
  for (size_t i : candidates) {
    const auto& t = m.outputs[i];
    if (!readable(t)) return std::optional<Plan>();
    const Shape& s = t.shape;
    if (s.size() == 3 && s[0] == 1 && s[2] == 4 && s[1] >= 1 && boxes < 0) boxes = static_cast<int>(i);
    else if (s.size() <= 1 && *element_count(s) == 1 && count < 0) count = static_cast<int>(i);
    else if (s.size() == 2 && s[0] == 1 && s[1] >= 1) pair.push_back(i);
    else return std::optional<Plan>();
  }
  if (boxes < 0 || count < 0 || pair.size() != 2) return std::optional<Plan>();
  const int32_t n = m.outputs[static_cast<size_t>(boxes)].shape[1];
  if (m.outputs[pair[0]].shape[1] != n || m.outputs[pair[1]].shape[1] != n) return std::optional<Plan>();

  const auto& a = m.outputs[pair[0]].name;
  const auto& b = m.outputs[pair[1]].name;
  auto has = [](const std::string& name, const char* word) { return lower(name).find(word) != std::string::npos; };
  bool a_is_classes = true;  // the op's own order
  if (has(a, "class") != has(b, "class")) {
    a_is_classes = has(a, "class");
  } else if (has(a, "score") != has(b, "score")) {
    a_is_classes = has(b, "score");
  } else {
    const int sa = name_suffix(a), sb = name_suffix(b);
    if ((sa == 1 && sb == 2) || (sa == 2 && sb == 1)) {
      const bool tf2 = name_suffix(m.outputs[static_cast<size_t>(boxes)].name) == 3;
      const int classes_suffix = tf2 ? 2 : 1;
      a_is_classes = sa == classes_suffix;
    }
  }
  Plan p = single(Decoder::tflite_detection_postprocess);
  p.postprocess = {static_cast<size_t>(boxes), a_is_classes ? pair[0] : pair[1], a_is_classes ? pair[1] : pair[0],
                   static_cast<size_t>(count)};
  return std::optional<Plan>(p);
}

bool has_hailo_metadata(const ModelDescription& m) {
  return metadata_value(m, "hailo.nms.classes") || metadata_value(m, "hailo.nms.max_bboxes_per_class") ||
         metadata_value(m, "hailo.nms.output");
}

Result<uint32_t> metadata_number(const ModelDescription& m, std::string_view key, uint32_t min, uint32_t max) {
  auto v = metadata_value(m, key);
  if (!v) return make_error(Errc::invalid_argument, "the Hailo NMS metadata lacks \"{}\"", key);
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || ptr != v->data() + v->size() || v->empty() || n < min || n > max)
    return make_error(Errc::invalid_argument, "metadata \"{}\" is '{}'; a number {}..{} is needed", key, *v, min,
                      max);
  return n;
}

// The HAILO_NMS_BY_CLASS frame: float32, classes · (1 + 5 · max boxes) values.
Match match_hailo(const ModelDescription& m) {
  const uint32_t classes = AISRV_TRY(metadata_number(m, "hailo.nms.classes", 1, 100000));
  const uint32_t max_boxes = AISRV_TRY(metadata_number(m, "hailo.nms.max_bboxes_per_class", 1, 100000));
  uint32_t output = 0;
  if (metadata_value(m, "hailo.nms.output")) {
    if (m.outputs.empty()) return make_error(Errc::invalid_argument, "the model has no outputs");
    output = AISRV_TRY(metadata_number(m, "hailo.nms.output", 0, static_cast<uint32_t>(m.outputs.size() - 1)));
  } else if (m.outputs.size() != 1) {
    return make_error(Errc::invalid_argument, "the Hailo NMS metadata does not say which of the {} outputs is the NMS "
                      "frame (\"hailo.nms.output\")", m.outputs.size());
  }
  const auto& t = m.outputs[output];
  const uint64_t floats = uint64_t{classes} * (1 + 5 * uint64_t{max_boxes});
  auto count = element_count(t.shape);
  if (t.dtype != protocol::DType::float32 || !count || *count != floats)
    return make_error(Errc::invalid_argument,
                      "output {} is not the HAILO_NMS_BY_CLASS frame of {} classes x {} boxes (FLOAT32, {} values)",
                      tensor_text(output, t), classes, max_boxes, floats);
  Plan p = single(Decoder::hailo_nms_by_class, output);
  p.classes = classes;
  p.max_boxes = max_boxes;
  return std::optional<Plan>(p);
}

bool ones_but_last(const Shape& s) {
  if (s.empty() || s.size() > 4 || s.back() < 1) return false;
  return std::all_of(s.begin(), s.end() - 1, [](int32_t d) { return d == 1; });
}

Match match_classification(const ModelDescription& m) {
  if (m.outputs.size() != 1 || !readable(m.outputs[0]) || !ones_but_last(m.outputs[0].shape))
    return std::optional<Plan>();
  return std::optional<Plan>(single(Decoder::top_k));
}

Match match_pose(const ModelDescription& m) {
  if (m.outputs.size() != 1 || !readable(m.outputs[0])) return std::optional<Plan>();
  const Shape& s = m.outputs[0].shape;
  if (s.size() != 4 || s[0] != 1 || s[1] != 1 || s[2] < 2 || s[3] != 3) return std::optional<Plan>();
  return std::optional<Plan>(single(Decoder::movenet));
}

// [1, 4+C, N] (Ultralytics) or [1, N, 4+C]: the dimension that is labels + 4 when exactly one is, else the smaller
// one (the first when equal) holds the 4 + C rows.
Match match_yolov8(const ModelDescription& m, const Options& o, bool lenient) {
  if (m.outputs.size() != 1 || !readable(m.outputs[0])) return std::optional<Plan>();
  const auto& t = m.outputs[0];
  const Shape& s = t.shape;
  if (s.size() != 3 || s[0] != 1 || std::min(s[1], s[2]) < 5 || (!lenient && integer_map(t)))
    return std::optional<Plan>();
  const auto labels = labels_in_force(m, o).size();
  const bool first = labels > 0 && static_cast<size_t>(s[1]) == labels + 4;
  const bool second = labels > 0 && static_cast<size_t>(s[2]) == labels + 4;
  Plan p = single(Decoder::yolov8);
  p.transposed = first != second ? second : s[2] < s[1];
  p.classes = static_cast<uint32_t>((p.transposed ? s[2] : s[1]) - 4);
  return std::optional<Plan>(p);
}

Match match_segmentation(const ModelDescription& m, bool lenient) {
  if (m.outputs.size() != 1 || !readable(m.outputs[0])) return std::optional<Plan>();
  const auto& t = m.outputs[0];
  const Shape& s = t.shape;
  if (s.empty() || s[0] != 1 || !std::all_of(s.begin(), s.end(), [](int32_t d) { return d >= 1; }))
    return std::optional<Plan>();
  if (s.size() == 3 && (lenient || integer_map(t))) return std::optional<Plan>(single(Decoder::class_mask));
  if (s.size() == 4 && s[3] == 1 && integer_map(t)) return std::optional<Plan>(single(Decoder::class_mask));
  if (s.size() == 4) return std::optional<Plan>(single(Decoder::argmax_mask));
  return std::optional<Plan>();
}

// The decoders of one task, in order; the first that fits.
Match match_task(const ModelDescription& m, const Options& o, Task task) {
  switch (task) {
    case Task::classification: return match_classification(m);
    case Task::pose: return match_pose(m);
    case Task::segmentation: return match_segmentation(m, true);
    case Task::detection: {
      if (has_hailo_metadata(m)) return match_hailo(m);
      auto p = AISRV_TRY(match_postprocess(m));
      if (p) return std::optional<Plan>(p);
      return match_yolov8(m, o, true);
    }
  }
  return std::optional<Plan>();
}

std::string_view expected(Task task) {
  switch (task) {
    case Task::classification: return "one output [C], [1,C] or [1,1,1,C]";
    case Task::detection:
      return "TFLite_Detection_PostProcess's [1,N,4] [1,N] [1,N] [1], a YOLOv8 head [1,4+C,N], or Hailo NMS metadata";
    case Task::segmentation: return "one output [1,H,W] of class indices or [1,H,W,C] of scores";
    case Task::pose: return "one output [1,1,K,3] of (y, x, score), K >= 2";
  }
  return "";
}

}  // namespace

Result<Plan> make_plan(const ModelDescription& m, const Options& o) {
  if (o.task) {
    auto p = AISRV_TRY(match_task(m, o, *o.task));
    if (p) return *p;
    return make_error(Errc::invalid_argument, "the outputs do not fit a {} decoder ({} expected): {}",
                      task_name(*o.task), expected(*o.task), outputs_text(m));
  }
  if (auto hint = metadata_value(m, "task")) {
    if (auto task = task_from_name(*hint)) {
      auto p = AISRV_TRY(match_task(m, o, *task));
      if (p) return *p;
    }
  }
  if (has_hailo_metadata(m)) return *AISRV_TRY(match_hailo(m));
  for (auto match : {match_postprocess(m), match_pose(m), match_classification(m), match_yolov8(m, o, false),
                     match_segmentation(m, false)}) {
    auto p = AISRV_TRY(std::move(match));
    if (p) return *p;
  }
  return make_error(Errc::invalid_argument,
                    "cannot tell what the model's outputs hold ({}); --task classification|detection|segmentation|"
                    "pose forces a decoder",
                    outputs_text(m));
}

}  // namespace detail

Result<Task> recognise(const ModelDescription& model, const Options& options) {
  auto plan = AISRV_TRY(detail::make_plan(model, options));
  return detail::decoder_task(plan.decoder);
}

}  // namespace aisrv::results
