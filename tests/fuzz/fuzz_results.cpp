// aisrv fuzzing — the result decoder (engine/results) on hostile model descriptions and outputs: the first bytes
// choose the number of outputs (1 to 4), each one's element type, a shape of rank 1 to 4 with small dimensions and
// a quantization, the task to force (or none), a placement and metadata entries (labels, a task hint, a Hailo NMS
// layout with counts that may lie); the rest of the input fills the output tensors. decode() must answer with a
// result or an error, never read out of bounds, and keep its detections inside the picture.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "aisrv/results/results.hpp"

namespace {

using aisrv::protocol::DType;

struct Bytes {
  const uint8_t* p;
  size_t n;
  uint8_t take() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
};

constexpr DType kTypes[] = {DType::float32, DType::int8, DType::uint8, DType::int16, DType::int32, DType::int64};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  aisrv::results::ModelDescription model;
  aisrv::protocol::TensorInfo picture;
  picture.name = "input";
  picture.dtype = DType::uint8;
  picture.shape = {1, 1 + in.take() % 64, 1 + in.take() % 64, 3};
  picture.bytes = static_cast<uint32_t>(picture.shape[1] * picture.shape[2] * 3);
  model.inputs.push_back(picture);
  const size_t outputs = 1 + in.take() % 4;
  for (size_t k = 0; k < outputs; ++k) {
    aisrv::protocol::TensorInfo t;
    t.name = (in.take() & 1) ? "TFLite_Detection_PostProcess:" + std::to_string(k) : "out" + std::to_string(k);
    t.dtype = kTypes[in.take() % std::size(kTypes)];
    const int rank = 1 + in.take() % 4;
    uint64_t elements = 1;
    for (int d = 0; d < rank; ++d) {
      const int32_t dim = 1 + in.take() % 90;
      t.shape.push_back(dim);
      elements *= static_cast<uint64_t>(dim);
    }
    if (elements > (1u << 16)) return 0;
    t.bytes = static_cast<uint32_t>(elements * aisrv::protocol::dtype_size(t.dtype));
    if (t.dtype != DType::float32 && (in.take() & 1)) {
      t.scale = {static_cast<float>(1 + in.take()) / 256.0f};
      t.zero_point = {static_cast<int32_t>(static_cast<int8_t>(in.take()))};
    }
    model.outputs.push_back(std::move(t));
  }
  const uint8_t meta = in.take();
  if (meta & 1) model.metadata.emplace_back("labels", "background\nperson\ncar\n");
  if (meta & 2) model.metadata.emplace_back("task", (meta & 4) ? "detection" : "segmentation");
  if (meta & 8) {
    model.metadata.emplace_back("hailo.nms.output", std::to_string(in.take() % 5));
    model.metadata.emplace_back("hailo.nms.classes", std::to_string(in.take()));
    model.metadata.emplace_back("hailo.nms.max_bboxes_per_class", std::to_string(in.take()));
  }
  aisrv::results::Options options;
  const uint8_t task = in.take();
  if (task >= 128) options.task = static_cast<aisrv::results::Task>(task % 4);  // else recognised
  if (in.take() & 1) {
    aisrv::image::Placement where;
    where.input_width = static_cast<uint32_t>(picture.shape[2]);
    where.input_height = static_cast<uint32_t>(picture.shape[1]);
    where.picture_width = 1 + in.take();
    where.picture_height = 1 + in.take();
    where.scale_x = static_cast<double>(where.input_width) / where.picture_width;
    where.scale_y = static_cast<double>(where.input_height) / where.picture_height;
    options.placement = where;
  }
  options.threshold = (in.take() & 1) ? -1.0f : 0.0f;
  std::vector<std::vector<uint8_t>> tensors;
  for (const auto& t : model.outputs) {
    std::vector<uint8_t> bytes(t.bytes);
    for (auto& b : bytes) b = in.take();
    tensors.push_back(std::move(bytes));
  }
  auto found = aisrv::results::decode(model, tensors, options);
  if (found && options.placement)
    for (const auto& d : found->detections)
      if (!(d.box.x0 >= 0 && d.box.x1 <= options.placement->picture_width && d.box.y0 >= 0 &&
            d.box.y1 <= options.placement->picture_height))
        __builtin_trap();
  (void)aisrv::results::recognise(model, options);
  return 0;
}
