// aisrv image — a picture as a model input tensor: geometry and layout from the tensor's shape (NHWC or NCHW, batch
// 1, 1 or 3 channels), channel conversion, crop/resize, then the values of the tensor's element type:
//   no --mean/--std : uint8 takes the resized pixel truncated to an integer (libcoral's convention: a uint8 image
//                     model is fed raw pixels), int8 takes that minus 128, float32 takes pixel / 255;
//   mean/std given  : real = (pixel - mean[c]) / std[c]; float32 takes it, integer types quantize it with the
//                     tensor's scale and zero point (round half away from zero, saturate).
// docs/cli.md ("Images as inputs") is the user-facing description of these rules.
#pragma once

#include <optional>
#include <vector>

#include "aisrv/image/image.hpp"
#include "aisrv/image/resize.hpp"
#include "aisrv/protocol/payloads.hpp"

namespace aisrv::image {

enum class Layout { nhwc, nchw };

struct InputGeometry {
  uint32_t width = 0, height = 0, channels = 0;
  Layout layout = Layout::nhwc;
};

// How an input tensor lays out a picture; `forced` overrides the guess for shapes where both layouts fit.
Result<InputGeometry> input_geometry(const protocol::TensorInfo& tensor, std::optional<Layout> forced = {});

struct Preprocess {
  std::vector<float> mean;  // empty, one value, or one per channel
  std::vector<float> std;   // same
  bool bgr = false;         // channel order B, G, R (Caffe-style models)
  std::optional<Layout> layout;
  std::optional<Crop> crop;  // window of the source picture; default: all of it
};

// The tensor's bytes for this picture.
Result<std::vector<uint8_t>> image_to_tensor(const Image& picture, const protocol::TensorInfo& tensor,
                                             const Preprocess& options = {});

}  // namespace aisrv::image
