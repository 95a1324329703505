// aisrv image — a picture as a model input tensor: geometry and layout from the tensor's shape (NHWC or NCHW, batch
// 1, 1 or 3 channels), channel conversion, crop/resize, then the values of the tensor's element type:
//   no --mean/--std : uint8 takes the resized pixel truncated to an integer (libcoral's convention: a uint8 image
//                     model is fed raw pixels), int8 takes that minus 128, float32 takes pixel / 255;
//   mean/std given  : real = (pixel - mean[c]) / std[c]; float32 takes it, integer types quantize it with the
//                     tensor's scale and zero point (round half away from zero, saturate).
// docs/cli.md ("Images as inputs") is the user-facing description of these rules.
#pragma once

#include <optional>
#include <span>
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

// How the picture fills the input: stretched to the input's size, or resized keeping its aspect ratio and centred
// on a background of `pad_value` (Ultralytics' "letterbox": scale min(W/w, H/h), size rounded, padding split in
// half with the odd pixel after).
enum class Fit { stretch, letterbox };

struct Preprocess {
  std::vector<float> mean;  // empty, one value, or one per channel
  std::vector<float> std;   // same
  bool bgr = false;         // channel order B, G, R (Caffe-style models)
  std::optional<Layout> layout;
  std::optional<Crop> crop;  // window of the source picture; default: all of it
  Fit fit = Fit::stretch;
  float pad_value = 114.0f;  // letterbox background, on the pixels' 0..255 scale
};

// Where the picture lies in the input tensor, to map what a model found back onto the picture: input pixel
// (x, y) shows picture pixel (crop_x + (x - left) / scale_x, crop_y + (y - top) / scale_y).
struct Placement {
  uint32_t input_width = 0, input_height = 0;    // the tensor's picture size
  uint32_t picture_width = 0, picture_height = 0;  // the whole source picture
  double scale_x = 1, scale_y = 1;   // input pixels per picture pixel
  double left = 0, top = 0;          // letterbox padding before the picture, in input pixels
  uint32_t crop_x = 0, crop_y = 0;   // the window of the picture used (0, 0 without --crop)

  // Picture coordinates of input coordinates (continuous; clamp as needed).
  double picture_x(double input_x) const { return crop_x + (input_x - left) / scale_x; }
  double picture_y(double input_y) const { return crop_y + (input_y - top) / scale_y; }
};

// Where `picture` goes in an input of geometry `g` with these options (checks the crop).
Result<Placement> placement(const Image& picture, const InputGeometry& g, const Preprocess& options = {});

// The tensor's bytes for this picture.
Result<std::vector<uint8_t>> image_to_tensor(const Image& picture, const protocol::TensorInfo& tensor,
                                             const Preprocess& options = {});
// The same, written straight into `out` (the tensor's size, else Errc::bad_length), e.g. a session's input tensor.
Status image_to_tensor(const Image& picture, const protocol::TensorInfo& tensor, const Preprocess& options,
                       std::span<uint8_t> out);

}  // namespace aisrv::image
