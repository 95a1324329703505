// aisrv CPU engine — kernel parameter structs: the custom operator TFLite_Detection_PostProcess.
// Included by kernel_params.hpp (which states the conventions every struct follows); not meant to be included alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace aisrv::engine::cpu {

// TFLite_Detection_PostProcess: box decoding against constant anchors, then fast or regular non-maximum
// suppression, as TensorFlow Lite's kernel. Inputs: box encodings [1, anchors, >= 4], class scores
// [1, anchors, classes (+ background)], anchors [anchors, 4] (uint8/int8 are dequantized, float32 read as is).
// Outputs (float32): boxes [1, N, 4], classes [1, N], scores [1, N], count [1]. Fields are filled by
// ops/detection_postprocess.cpp.
struct DetectionPostProcessParams {
  int32_t max_detections = 0, max_classes_per_detection = 1, detections_per_class = 100;
  bool use_regular_nms = false;
  float nms_score_threshold = 0.0f, nms_iou_threshold = 0.0f;
  int32_t num_classes = 0, num_anchors = 0, box_code_size = 4, num_classes_with_background = 0;
  float y_scale = 1.0f, x_scale = 1.0f, h_scale = 1.0f, w_scale = 1.0f;
  DType box_type = DType::float32, score_type = DType::float32, anchor_type = DType::float32;
  float box_scale = 1.0f, score_scale = 1.0f, anchor_scale = 1.0f;
  int32_t box_zero_point = 0, score_zero_point = 0, anchor_zero_point = 0;
  const void* boxes = nullptr;
  const void* scores = nullptr;
  const void* anchors = nullptr;
  std::vector<void*> outputs;  // boxes, classes, scores, count
  std::span<uint8_t> scratch;
};

}  // namespace aisrv::engine::cpu
