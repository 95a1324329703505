// aisrv hailo8/transform — host ↔ hardware frame layouts for uint8/uint16 streams (HailoRT transform.cpp
// v4.23, facts §4.2). The host frame is the dense [height][width][features] array; the device frame uses the
// stream's hardware order and its padded shape `hw` from the HEF (padded_height/width/features) and is rounded up
// to whole 8-byte words. Element index of host (r, c, f) in the device frame:
//   NHWC, FCR  ((r·hwW + c)·hwF + f)
//   NHCW       ((r·hwF + f)·hwW + c)
//   F8CR       r·hwW·hwF + (f / 8)·hwW·8 + c·8 + f % 8        (hwF a multiple of 8)
//   NC         f                                              (height = width = 1)
//   NHW        r·hwW + c                                      (features = 1)
// Host → device writes every padding element (padded width, features, height and the 8-byte tail) as zero;
// device → host drops them. Input order of operations is HailoRT's: quantize → reorder/pad; output: unpad → dequantize.
#pragma once

#include <cstdint>
#include <span>

#include "aisrv/engine/hailo8/transform/types.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::transform {

// Elements of the dense host frame (h·w·f), checked against kMaxFrameBytes.
Result<size_t> host_frame_elements(const Shape& shape);
// Bytes of the device frame: hef::hw_frame_bytes(hw, element bytes), i.e. hwH·hwW·hwF·element bytes rounded up to
// 8. Checks the (shape, hw) pair for `order`: a layout order (is_layout_order), UINT8 or UINT16 elements, non-zero
// dimensions, hw ≥ shape in every dimension, F8CR hwF % 8 == 0, NC height = width = 1, NHW features = 1.
// Errc::invalid_argument naming the problem otherwise (every function below runs the same checks).
Result<size_t> device_frame_bytes(FormatOrder order, const Shape& shape, const Shape& hw, FormatType type);

// Host (dense) → device layout. host.size() must be host_frame_elements(shape); device.size() must be
// device_frame_bytes(...) / sizeof(T).
Status host_to_device(std::span<const uint8_t> host, const Shape& shape, FormatOrder order, const Shape& hw,
                      std::span<uint8_t> device);
Status host_to_device(std::span<const uint16_t> host, const Shape& shape, FormatOrder order, const Shape& hw,
                      std::span<uint16_t> device);

// Device layout → host (dense).
Status device_to_host(std::span<const uint8_t> device, FormatOrder order, const Shape& hw, const Shape& shape,
                      std::span<uint8_t> host);
Status device_to_host(std::span<const uint16_t> device, FormatOrder order, const Shape& hw, const Shape& shape,
                      std::span<uint16_t> host);

// Fused input path: quantize a float32 host frame (see quantize.hpp for the rounding rules) and lay it out for the
// device in one pass over the frame.
Status quantize_to_device(std::span<const float> host, const Shape& shape, const QuantInfo& qp, FormatOrder order,
                          const Shape& hw, std::span<uint8_t> device);
Status quantize_to_device(std::span<const float> host, const Shape& shape, const QuantInfo& qp, FormatOrder order,
                          const Shape& hw, std::span<uint16_t> device);

// Fused output path: drop the padding and de-quantize to a float32 host frame. `qps` holds one entry (per tensor)
// or shape.features entries (per feature, indexed by the host feature). NHW frames are only cast (HailoRT never
// de-quantizes argmax outputs).
Status dequantize_from_device(std::span<const uint8_t> device, FormatOrder order, const Shape& hw,
                              const Shape& shape, std::span<const QuantInfo> qps, std::span<float> host);
Status dequantize_from_device(std::span<const uint16_t> device, FormatOrder order, const Shape& hw,
                              const Shape& shape, std::span<const QuantInfo> qps, std::span<float> host);

}  // namespace aisrv::engine::hailo8::transform
