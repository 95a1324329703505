// aisrv results — decode(): the options checked, every output checked against its description, the decoder
// recognised (recognise.cpp), then the decoder of that kind run.
#include <cmath>

#include "decoders.hpp"

namespace aisrv::results {

Result<Decoded> decode(const ModelDescription& model, std::span<const std::vector<uint8_t>> outputs,
                       const Options& options) {
  if (std::isnan(options.threshold))
    return make_error(Errc::invalid_argument, "the score threshold is not a number");
  if (!(options.iou_threshold >= 0 && options.iou_threshold <= 1))
    return make_error(Errc::invalid_argument, "the IoU threshold {} is not within 0..1", options.iou_threshold);
  if (outputs.size() != model.outputs.size())
    return make_error(Errc::invalid_argument, "the model has {} output(s); {} were given", model.outputs.size(),
                      outputs.size());
  std::vector<detail::Tensor> tensors;
  tensors.reserve(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    tensors.push_back(AISRV_TRY(detail::Tensor::make(i, model.outputs[i], outputs[i])));
  const detail::Plan plan = AISRV_TRY(detail::make_plan(model, options));
  const auto labels = detail::labels_in_force(model, options);

  Decoded out;
  out.task = detail::decoder_task(plan.decoder);
  out.decoder = std::string(detail::decoder_name(plan.decoder));
  const detail::Context c{model, options, tensors, labels, plan};
  Status s;
  switch (plan.decoder) {
    case detail::Decoder::top_k: s = detail::decode_classification(c, out); break;
    case detail::Decoder::tflite_detection_postprocess: s = detail::decode_detection_postprocess(c, out); break;
    case detail::Decoder::yolov8: s = detail::decode_yolov8(c, out); break;
    case detail::Decoder::hailo_nms_by_class: s = detail::decode_hailo_nms(c, out); break;
    case detail::Decoder::class_mask:
    case detail::Decoder::argmax_mask: s = detail::decode_segmentation(c, out); break;
    case detail::Decoder::movenet: s = detail::decode_pose(c, out); break;
  }
  if (!s) return std::move(s).error();
  return out;
}

}  // namespace aisrv::results
