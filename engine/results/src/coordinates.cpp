// aisrv results — where coordinates go: input pixels through the placement (undoing stretch, letterbox and crop)
// to picture pixels clamped to the picture, or input pixels clamped to the input when there is no placement.
#include <algorithm>
#include <cmath>

#include "decoders.hpp"

namespace aisrv::results::detail {

Result<Frame> make_frame(const ModelDescription& model, const Options& options) {
  Frame f;
  if (options.placement) {
    const auto& p = *options.placement;
    if (p.input_width == 0 || p.input_height == 0 || p.picture_width == 0 || p.picture_height == 0 ||
        !std::isfinite(p.scale_x) || !std::isfinite(p.scale_y) || p.scale_x <= 0 || p.scale_y <= 0 ||
        !std::isfinite(p.left) || !std::isfinite(p.top))
      return make_error(Errc::invalid_argument,
                        "the placement is unusable (input {}x{}, picture {}x{}, scale {} x {}, left {}, top {})",
                        p.input_width, p.input_height, p.picture_width, p.picture_height, p.scale_x, p.scale_y,
                        p.left, p.top);
    f.input_width = p.input_width;
    f.input_height = p.input_height;
    f.placement = p;
    return f;
  }
  if (model.inputs.empty())
    return make_error(Errc::invalid_argument, "the model has no input to place coordinates in; give a placement");
  auto g = image::input_geometry(model.inputs[0]);
  if (!g)
    return make_error(Errc::invalid_argument, "coordinates need the input's picture size: {}", g.error().message);
  f.input_width = g->width;
  f.input_height = g->height;
  return f;
}

double Frame::x(double input_x) const {
  if (placement) return std::clamp(placement->picture_x(input_x), 0.0, double(placement->picture_width));
  return std::clamp(input_x, 0.0, input_width);
}

double Frame::y(double input_y) const {
  if (placement) return std::clamp(placement->picture_y(input_y), 0.0, double(placement->picture_height));
  return std::clamp(input_y, 0.0, input_height);
}

Box Frame::box(double in_x0, double in_y0, double in_x1, double in_y1) const {
  return Box{x(std::min(in_x0, in_x1)), y(std::min(in_y0, in_y1)), x(std::max(in_x0, in_x1)),
             y(std::max(in_y0, in_y1))};
}

void sort_and_cut(std::vector<Detection>& detections, size_t max) {
  std::stable_sort(detections.begin(), detections.end(),
                   [](const Detection& a, const Detection& b) { return a.score > b.score; });
  if (detections.size() > max) detections.resize(max);
}

}  // namespace aisrv::results::detail
