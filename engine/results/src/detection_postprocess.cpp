// aisrv results — TFLite_Detection_PostProcess outputs: boxes [1,N,4] (y_min, x_min, y_max, x_max normalised to the
// input), classes [1,N], scores [1,N], count [1]. The first `count` entries are read; the threshold (default 0.25)
// is a minimum score and NaN scores are never kept. Errors: a count that is not a number 0..N, and kept entries
// whose class is not a whole number >= 0 or whose box is not finite.
#include <cmath>

#include "decoders.hpp"

namespace aisrv::results::detail {

Status decode_detection_postprocess(const Context& c, Decoded& out) {
  const auto [bi, ci, si, ni] = c.plan.postprocess;
  const Tensor& boxes = c.tensors[bi];
  const Tensor& classes = c.tensors[ci];
  const Tensor& scores = c.tensors[si];
  const size_t n = scores.size();
  const double count = c.tensors[ni].at(0);
  if (!std::isfinite(count) || count < 0 || count > static_cast<double>(n))
    return make_error(Errc::invalid_argument, "the detection count (output {}) is {}; the outputs hold {} entries",
                      tensor_text(ni, c.model.outputs[ni]), count, n);
  const Frame frame = AISRV_TRY(make_frame(c.model, c.options));
  const double threshold = c.options.threshold >= 0 ? c.options.threshold : kDetectionThreshold;
  for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
    const double score = scores.at(i);
    if (!(score >= threshold)) continue;
    auto cls = classes.index_at(i);
    if (!cls)
      return make_error(Errc::invalid_argument, "detection {} has class {}, not a class index", i, classes.at(i));
    double v[4];
    for (size_t k = 0; k < 4; ++k) v[k] = boxes.at(i * 4 + k);
    if (!std::isfinite(v[0]) || !std::isfinite(v[1]) || !std::isfinite(v[2]) || !std::isfinite(v[3]))
      return make_error(Errc::invalid_argument, "detection {} has a box that is not finite", i);
    Detection d;
    d.class_id = *cls;
    d.label = label_of(c.labels, *cls);
    d.score = score;
    d.box = frame.box(v[1] * frame.input_width, v[0] * frame.input_height, v[3] * frame.input_width,
                      v[2] * frame.input_height);
    out.detections.push_back(std::move(d));
  }
  sort_and_cut(out.detections, c.options.max_results ? c.options.max_results : kDetectionMax);
  return ok();
}

}  // namespace aisrv::results::detail
