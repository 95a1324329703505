// aisrv image — crop and resize with TensorFlow Lite's RESIZE_BILINEAR semantics (align_corners = false,
// half_pixel_centers = true), computed in float exactly as TFLite's reference kernel does, so that a model sees what
// it saw in training pipelines built on TFLite (libcoral's test inputs are made this way).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "aisrv/image/image.hpp"

namespace aisrv::image {

// A window of the source picture, in pixels.
struct Crop {
  uint32_t x = 0, y = 0, width = 0, height = 0;
};
// Crop inside the picture and non-empty, or why not.
Status check_crop(const Image& in, const Crop& crop);
// The largest centred window of the picture with the aspect ratio width:height (a "centre crop").
Crop centre_crop(const Image& in, uint32_t width, uint32_t height);

struct FloatImage {
  uint32_t width = 0, height = 0, channels = 0;
  std::vector<float> values;  // row-major, channels interleaved, the 0..255 scale of the source
};

// Bilinear resize of `crop` (default: the whole picture) to width x height. The crop must be valid (check_crop).
FloatImage resize_bilinear(const Image& in, uint32_t width, uint32_t height, const std::optional<Crop>& crop = {});

}  // namespace aisrv::image
