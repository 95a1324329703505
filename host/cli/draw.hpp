// aisrv CLI — `infer --draw OUT.png`: the picture with what the model found drawn on it (boxes with their labels and
// scores, the segmentation mask as a coloured overlay with a legend, the pose skeleton and keypoints, the top
// classes as a caption), written as PNG with cairo.
#pragma once

#include <string>

#include "aisrv/image/image.hpp"
#include "aisrv/protocol/result.hpp"
#include "aisrv/results/results.hpp"

namespace aisrv::cli {

Status draw_results(const image::Image& picture, const results::Decoded& found, const std::string& png_path);

}  // namespace aisrv::cli
