// aisrv hailo8/transform — quantization of float32 input frames to the device type and de-quantization of
// device outputs to float32, with HailoRT's rules (LH/include/hailo/quantization.hpp, v4.23):
//   quantize:   q = round_half_to_even(clip(x, limit_min, limit_max) / scale + zp)
//               identity qp (scale == 1 and zp == 0): q = round_half_to_even(x), no clipping
//   dequantize: y = (q - zp) · scale, per tensor or per feature (feature index = (i / repetition) % feature_count)
// Where HailoRT's behaviour is undefined (a rounded value outside the type's range is cast; NaN is cast) we saturate
// to [0, 255] / [0, 65535] and map NaN to 0, so the result is defined for every input.
// All functions work on caller-provided spans, allocate nothing, and check that the lengths match.
#pragma once

#include <cstdint>
#include <span>

#include "aisrv/engine/hailo8/transform/types.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::transform {

// Whether `qp` can quantize: Errc::invalid_argument for a zero or non-finite scale (HailoRT's "invalid qp" of
// per-feature HEFs), a non-finite zero point, or NaN / inverted limits. The identity qp is always usable.
Status validate_quant_info(const QuantInfo& qp);

// out.size() must equal in.size(); Errc::bad_length otherwise, Errc::invalid_argument for a qp that
// validate_quant_info() refuses.
Status quantize(std::span<const float> in, std::span<uint8_t> out, const QuantInfo& qp);
Status quantize(std::span<const float> in, std::span<uint16_t> out, const QuantInfo& qp);

Status dequantize(std::span<const uint8_t> in, std::span<float> out, const QuantInfo& qp);
Status dequantize(std::span<const uint16_t> in, std::span<float> out, const QuantInfo& qp);

// Per-feature de-quantization: element i uses qps[(i / repetition) % qps.size()]. Host NHWC/FCR/F8CR/NC frames use
// repetition 1 (features innermost); NHCW frames use repetition = width. in.size() must be a multiple of
// qps.size() · repetition. When all qps are equal this is exactly the per-tensor function (as in HailoRT).
Status dequantize_per_feature(std::span<const uint8_t> in, std::span<float> out, std::span<const QuantInfo> qps,
                              uint32_t repetition);
Status dequantize_per_feature(std::span<const uint16_t> in, std::span<float> out, std::span<const QuantInfo> qps,
                              uint32_t repetition);

// Plain widening cast (NHW argmax outputs are never de-quantized, only cast).
Status cast_to_float(std::span<const uint8_t> in, std::span<float> out);
Status cast_to_float(std::span<const uint16_t> in, std::span<float> out);

}  // namespace aisrv::engine::hailo8::transform
