// aisrv results — a model's raw output tensors turned into what people read: the top classes of a classifier,
// boxes of a detector (TFLite_Detection_PostProcess outputs, a YOLOv8 raw head with non-maximum suppression as
// Ultralytics does it, the Hailo-8 HAILO_NMS_BY_CLASS frame), a segmentation mask, or single-pose keypoints, in the
// coordinates of the original picture (undoing the stretch or letterbox the picture went through on its way into
// the input tensor). One decoder for every user: the `aisrv` CLI, the C++ client and the daemon; the Python client
// has the same rules (host/python/aisrv/results.py) and both are tested on the same cases.
//
// The kind of output is recognised from the model's description — output shapes and names, the metadata the engine
// read from the model (ModelDescription::metadata: task, labels, Hailo NMS layout) — or forced with Options::task.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aisrv/image/tensor_image.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::results {

enum class Task { classification, detection, segmentation, pose };
std::string_view task_name(Task task);                 // "classification", "detection", "segmentation", "pose"
std::optional<Task> task_from_name(std::string_view);  // the names above, plus "classify", "detect", "segment";
                                                       // any letter case

// What the decoder knows about the model: its tensors and the engine's metadata entries (GET_MODEL_METADATA; keys
// in docs/protocol.md). Keys read: "task" (a task name; a hint that wins when that task's shapes fit), "labels"
// (a label file's text, parse_labels()), "hailo.nms.output" (output index), "hailo.nms.classes" and
// "hailo.nms.max_bboxes_per_class" (the HAILO_NMS_BY_CLASS frame's layout). Other keys are ignored.
struct ModelDescription {
  std::vector<protocol::TensorInfo> inputs, outputs;
  std::vector<std::pair<std::string, std::string>> metadata;
};

struct Options {
  std::optional<Task> task;         // force the kind of output (--task)
  std::vector<std::string> labels;  // class names by index; empty: the model's own (metadata "labels"), else none
  float threshold = -1;             // minimum score (kept when >=); < 0: the task's default (detection 0.25,
                                    // classification none: every score, logits too); not applied to keypoints
  float iou_threshold = 0.7f;       // YOLO non-maximum suppression: IoU above it suppresses (Ultralytics' default)
  size_t max_results = 0;           // 0: the task's default (classification top 5, detection 300)
  // Where the picture went in input 0 (image::placement). Absent: coordinates are reported in input pixels.
  std::optional<image::Placement> placement;
};

struct Box {  // picture pixels, x right, y down; (x0, y0) top left
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

struct ClassScore {
  int32_t index = 0;
  std::string label;  // "" when no label is known
  double score = 0;
};

struct Detection {
  int32_t class_id = 0;
  std::string label;
  double score = 0;
  Box box;
};

struct ClassArea {
  int32_t class_id = 0;
  std::string label;
  uint64_t pixels = 0;  // of the mask
  double fraction = 0;  // of the mask's area
};

struct Segmentation {
  uint32_t width = 0, height = 0;   // of the mask (the model's output grid)
  std::vector<int32_t> classes;     // row-major class index per mask cell; -1 where every score was NaN
  std::vector<ClassArea> present;   // classes that occur, largest area first
  // Where the picture lies in the input the mask covers: Options::placement, else (no picture) the input itself
  // when input 0 is a picture, else none.
  std::optional<image::Placement> placement;
};

// The class the mask gives a picture pixel (nearest mask cell; the mask spans the whole input, so a pixel maps
// through the placement to input coordinates and then to the mask grid); -1 outside the mask. The pixel's centre
// (x + 0.5, y + 0.5) is mapped; without a placement, (x, y) are mask cells.
int32_t class_at(const Segmentation& mask, double picture_x, double picture_y);

struct Keypoint {
  std::string name;  // COCO keypoint name for 17-keypoint models ("nose", "left_eye", ...), else "k<index>"
  double x = 0, y = 0;  // picture pixels
  double score = 0;
};

// The skeleton edges between COCO keypoints (pairs of indices), for drawing.
std::span<const std::pair<int, int>> coco_skeleton();

struct Decoded {
  Task task = Task::classification;
  std::string decoder;  // which rule recognised the output: "top_k", "tflite_detection_postprocess", "yolov8",
                        // "hailo_nms_by_class", "class_mask" (argmax in the model), "argmax_mask" (argmax here),
                        // "movenet"
  std::vector<ClassScore> classes;
  std::vector<Detection> detections;
  std::optional<Segmentation> mask;
  std::vector<Keypoint> keypoints;
};

// The decoder that applies to this model (for messages and `--task auto`), or why none does.
Result<Task> recognise(const ModelDescription& model, const Options& options = {});

// Decodes the outputs of one inference (one byte buffer per output, in output order).
Result<Decoded> decode(const ModelDescription& model, std::span<const std::vector<uint8_t>> outputs,
                       const Options& options = {});

// Class names from a label file's text: one per line, either "label" or "ID label" (an integer, whitespace or ':',
// then the name; IDs place the names, gaps stay ""); blank lines and a trailing newline are ignored.
Result<std::vector<std::string>> parse_labels(std::string_view text);

// The labels of a model's metadata entries ("labels"), if any; empty when absent or unreadable.
std::vector<std::string> metadata_labels(const ModelDescription& model);

}  // namespace aisrv::results
