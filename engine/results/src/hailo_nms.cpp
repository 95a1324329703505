// aisrv results — the Hailo-8 HAILO_NMS_BY_CLASS frame (float32, classes · (1 + 5 · max boxes) values): for each
// class in turn a box count, then count × {y_min, x_min, y_max, x_max, score} normalised to the input, classes back
// to back, the rest of the frame zero. The class count and room per class come from the metadata
// ("hailo.nms.classes", "hailo.nms.max_bboxes_per_class"). Hostile frames are refused: a count that is not a whole
// number 0..max boxes, or a non-finite value in a counted box. Boxes with a score at least the threshold (default
// 0.25) are kept, highest score first (equal scores: class order, then frame order), cut to max_results (300).
#include <cmath>

#include "decoders.hpp"

namespace aisrv::results::detail {

Status decode_hailo_nms(const Context& c, Decoded& out) {
  const Tensor& t = c.tensors[c.plan.output];
  const Frame frame = AISRV_TRY(make_frame(c.model, c.options));
  const double threshold = c.options.threshold >= 0 ? c.options.threshold : kDetectionThreshold;
  size_t pos = 0;
  for (uint32_t cls = 0; cls < c.plan.classes; ++cls) {
    if (pos >= t.size()) return make_error(Errc::invalid_argument, "the Hailo NMS frame ends before class {}", cls);
    const double count = t.at(pos++);
    if (!std::isfinite(count) || count < 0 || count > c.plan.max_boxes || count != std::floor(count))
      return make_error(Errc::invalid_argument,
                        "the Hailo NMS frame gives class {} a box count of {}; the frame has room for 0..{}", cls,
                        count, c.plan.max_boxes);
    const size_t boxes = static_cast<size_t>(count);
    if (boxes * 5 > t.size() - pos)
      return make_error(Errc::invalid_argument, "the Hailo NMS frame ends inside the boxes of class {}", cls);
    for (size_t b = 0; b < boxes; ++b, pos += 5) {
      double v[5];
      for (size_t k = 0; k < 5; ++k) {
        v[k] = t.at(pos + k);
        if (!std::isfinite(v[k]))
          return make_error(Errc::invalid_argument, "the Hailo NMS frame has a non-finite value in box {} of class {}",
                            b, cls);
      }
      if (!(v[4] >= threshold)) continue;
      Detection d;
      d.class_id = static_cast<int32_t>(cls);
      d.label = label_of(c.labels, cls);
      d.score = v[4];
      d.box = frame.box(v[1] * frame.input_width, v[0] * frame.input_height, v[3] * frame.input_width,
                        v[2] * frame.input_height);
      out.detections.push_back(std::move(d));
    }
  }
  sort_and_cut(out.detections, c.options.max_results ? c.options.max_results : kDetectionMax);
  return ok();
}

}  // namespace aisrv::results::detail
