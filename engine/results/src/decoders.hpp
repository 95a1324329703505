// aisrv results (private) — what the decoders share: a checked, dequantizing view of one output tensor, the
// mapping of input coordinates to reported coordinates, the plan recognition makes (which decoder, which outputs),
// and one entry point per decoder. Nothing here is installed; results.hpp is the API.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "aisrv/results/results.hpp"

namespace aisrv::results::detail {

// "[1,84,8400]".
std::string shape_text(const std::vector<int32_t>& shape);
// "0 'name' INT8 [1,84,8400] (quantized)".
std::string tensor_text(size_t index, const protocol::TensorInfo& t);
// Every output described, for "cannot tell" messages.
std::string outputs_text(const ModelDescription& model);

// Elements of a shape; nullopt for a negative dimension or a count above 2^40.
std::optional<uint64_t> element_count(const std::vector<int32_t>& shape);
bool is_integer_type(protocol::DType t);
bool is_quantized(const protocol::TensorInfo& t);  // an integer type with a scale

// One output's bytes checked against its description (element type known, size = elements · element size,
// quantization parameters consistent), read as real values: (q - zero point) · scale for quantized integers
// (per tensor, or per channel along quant_axis), the value itself otherwise.
class Tensor {
 public:
  static Result<Tensor> make(size_t index, const protocol::TensorInfo& info, std::span<const uint8_t> bytes);

  size_t size() const { return count_; }
  const protocol::TensorInfo& info() const { return *info_; }
  double at(size_t i) const;  // i < size()
  // A finite value that is a whole number in [0, 2^31): the class index it holds.
  std::optional<int32_t> index_at(size_t i) const;

 private:
  double raw(size_t i) const;

  const protocol::TensorInfo* info_ = nullptr;
  std::span<const uint8_t> bytes_;
  size_t count_ = 0;
  size_t elem_ = 0;
  std::vector<double> scale_, zero_;  // empty: not quantized; size 1: per tensor
  size_t axis_stride_ = 1, axis_dim_ = 1;
};

// Input coordinates → reported coordinates: through the placement to picture pixels (clamped to the picture), or
// input pixels clamped to the input without one.
struct Frame {
  double input_width = 0, input_height = 0;
  std::optional<image::Placement> placement;

  double x(double input_x) const;
  double y(double input_y) const;
  Box box(double in_x0, double in_y0, double in_x1, double in_y1) const;  // corners ordered, mapped, clamped
};
// The input size comes from the placement, else from input 0's picture geometry.
Result<Frame> make_frame(const ModelDescription& model, const Options& options);

// Labels in force: the options' when given, else the model's metadata ones.
std::vector<std::string> labels_in_force(const ModelDescription& model, const Options& options);
std::string label_of(const std::vector<std::string>& labels, int64_t id);
// A metadata value by key (the first entry with that key).
std::optional<std::string_view> metadata_value(const ModelDescription& model, std::string_view key);

enum class Decoder {
  top_k,                         // classification
  tflite_detection_postprocess,  // 4 outputs: boxes, classes, scores, count
  yolov8,                        // raw head [1, 4+C, N] or [1, N, 4+C]
  hailo_nms_by_class,            // Hailo-8 on-chip / host NMS frame
  class_mask,                    // segmentation, class index per cell already in the model
  argmax_mask,                   // segmentation, scores per class, argmax here
  movenet,                       // single pose [1, 1, K, 3]
};
std::string_view decoder_name(Decoder d);
Task decoder_task(Decoder d);

struct Plan {
  Decoder decoder = Decoder::top_k;
  size_t output = 0;                     // the output of single-output decoders
  std::array<size_t, 4> postprocess{};   // boxes, classes, scores, count
  bool transposed = false;               // yolov8: [1, N, 4+C]
  uint32_t classes = 0;                  // yolov8: C; hailo: C
  uint32_t max_boxes = 0;                // hailo: boxes per class the frame has room for
};
Result<Plan> make_plan(const ModelDescription& model, const Options& options);

// The decoders. `tensors` holds every output (checked); each fills `out` past task and decoder.
struct Context {
  const ModelDescription& model;
  const Options& options;
  const std::vector<Tensor>& tensors;
  const std::vector<std::string>& labels;
  const Plan& plan;
};
Status decode_classification(const Context& c, Decoded& out);
Status decode_detection_postprocess(const Context& c, Decoded& out);
Status decode_yolov8(const Context& c, Decoded& out);
Status decode_hailo_nms(const Context& c, Decoded& out);
Status decode_segmentation(const Context& c, Decoded& out);
Status decode_pose(const Context& c, Decoded& out);

// Detections sorted by score (highest first; equal scores keep their order) and cut to `max` entries.
void sort_and_cut(std::vector<Detection>& detections, size_t max);

inline constexpr float kDetectionThreshold = 0.25f;
inline constexpr size_t kClassificationTop = 5;
inline constexpr size_t kDetectionMax = 300;

}  // namespace aisrv::results::detail
