// aisrv hailo8/transform — on-chip NMS outputs (facts §4.3; HailoRT nms_stream.cpp, transform.cpp,
// quantization.hpp v4.23). Two steps, as in HailoRT:
//  1. wire → hardware frame: the device streams 64-bit words, one bbox per word, each class terminated by the
//     delimiter 0xFFFFFFFFFFFFFFFF. In burst mode (H8_PER_CLASS) the words come in bursts of burst_size words and the
//     rest of a burst after a class delimiter is padding (same value). The hardware frame is, for each chunk and each
//     class: u16 count (little-endian) followed by count × bbox_size bytes.
//  2. hardware frame → HAILO_NMS_BY_CLASS float32: for each class, float bbox_count then bbox_count ×
//     {y_min, x_min, y_max, x_max, score}, classes back to back, bboxes of all chunks merged per class, every value
//     de-quantized with the stream's single qp. The buffer is sized for the maximum
//     (classes · (1 + 5 · chunks · max_bboxes_per_class) floats); unused space is zeroed.
// A bbox word holds x_max in bits 0-11, y_max 12-23, x_min 24-35, y_min 36-47, score 48-63.
#pragma once

#include <cstdint>
#include <span>

#include "aisrv/engine/hailo8/transform/types.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::transform {

// The NMS parameters are the stream's hef::NmsInfo as the HEF reader produces it (number_of_classes,
// max_bboxes_per_class, chunks_per_frame — 0 is read as 1 —, bbox_size, burst_size, burst_type). Only the Hailo-8
// burst types are handled: H8_BBOX (words one by one) and H8_PER_CLASS (bursts of burst_size words; after a class
// delimiter the rest of the burst is padding); the Hailo-15 types are refused with Errc::invalid_argument.

inline constexpr uint64_t kNmsDelimiter = 0xFFFFFFFFFFFFFFFFull;
inline constexpr uint64_t kNmsImageDelimiter = 0xFFFFFFFFFFFFFFFEull;

// A decoded bbox word (hailo_bbox_t).
struct NmsBbox {
  uint16_t y_min, x_min, y_max, x_max, score;
};
NmsBbox decode_nms_bbox(uint64_t word);

// NmsInfo::hw_frame_size() (HailoRT get_nms_hw_frame_size) after checking the parameters: Errc::invalid_argument
// for a zero class/bbox count, bbox_size < 8, a Hailo-15 burst type, or a size over kMaxFrameBytes.
Result<size_t> nms_hw_frame_bytes(const NmsInfo& nms);
// Floats in the HAILO_NMS_BY_CLASS frame: hef::nms_by_class_floats(classes, chunks · max_bboxes_per_class).
Result<size_t> nms_by_class_floats(const NmsInfo& nms);

// Step 1. Reads the device's word stream (little-endian 64-bit words) into `hw_frame` (nms_hw_frame_bytes long).
// Returns the number of wire bytes consumed. Errors name the problem: wire ended before the last class delimiter,
// a class with more than max_bboxes_per_class bboxes, an image delimiter on Hailo-8.
Result<size_t> nms_wire_to_hw_frame(std::span<const uint8_t> wire, const NmsInfo& nms,
                                    std::span<uint8_t> hw_frame);

// Step 2. `hw_frame` is the hardware frame of step 1 (at least the bytes its counts describe); `out` must hold
// exactly nms_by_class_floats(nms) floats.
Status nms_hw_frame_to_by_class(std::span<const uint8_t> hw_frame, const NmsInfo& nms, const QuantInfo& qp,
                                std::span<float> out);

}  // namespace aisrv::engine::hailo8::transform
