// aisrv CPU engine, reference kernels — run-time quantization of a dynamic-range kernel's float input
// (hybrid_quantize.hpp).
#include "hybrid_quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"

namespace aisrv::engine::cpu::ref {

void hybrid_quantize(const float* values, size_t n, bool asymmetric, int8_t* quantized, float& scaling_factor,
                     int32_t& offset) {
  // Same element choice as TFLite (std::minmax_element), which matters only when a NaN is present.
  const auto minmax = std::minmax_element(values, values + n);
  scaling_factor = 1.0f;
  offset = 0;
  if (!asymmetric) {
    constexpr int32_t kScale = 127;
    const float range = std::max(std::abs(*minmax.first), std::abs(*minmax.second));
    if (range == 0) {
      std::memset(quantized, 0, n);
      return;
    }
    scaling_factor = range / kScale;
    const float inverse = kScale / range;
    for (size_t i = 0; i < n; ++i) {
      const int32_t q = fp::saturating_float_to_int32(std::round(values[i] * inverse));
      quantized[i] = static_cast<int8_t>(std::min(kScale, std::max(-kScale, q)));
    }
    return;
  }
  // Asymmetric: the real range extended to include 0, mapped onto [-128, 127] with a nudged integer zero point
  // (double arithmetic as TFLite, the zero point chosen from the end with the smaller error).
  constexpr int32_t kMin = -128, kMax = 127;
  const double qmin = kMin, qmax = kMax;
  const double rmin = static_cast<double>(std::min(0.0f, *minmax.first));
  const double rmax = static_cast<double>(std::max(0.0f, *minmax.second));
  if (rmin == rmax) {
    std::memset(quantized, 0, n);
    return;
  }
  const double scale = (rmax - rmin) / (qmax - qmin);
  const double zero_point_from_min = qmin - rmin / scale;
  const double zero_point_from_max = qmax - rmax / scale;
  const double error_from_min = std::abs(qmin) + std::abs(rmin / scale);
  const double error_from_max = std::abs(qmax) + std::abs(rmax / scale);
  const double zero_point = error_from_min < error_from_max ? zero_point_from_min : zero_point_from_max;
  int32_t nudged = 0;  // a NaN zero point (infinite inputs) stays 0
  if (zero_point <= qmin) nudged = kMin;
  else if (zero_point >= qmax) nudged = kMax;
  else if (zero_point == zero_point) nudged = static_cast<int32_t>(std::round(zero_point));
  scaling_factor = static_cast<float>(scale);
  offset = nudged;
  const float inverse = 1.0f / scaling_factor;
  for (size_t i = 0; i < n; ++i) {
    const int32_t q = fp::saturating_float_to_int32(std::round(static_cast<float>(nudged) + values[i] * inverse));
    quantized[i] = static_cast<int8_t>(std::min(kMax, std::max(kMin, q)));
  }
}

}  // namespace aisrv::engine::cpu::ref
