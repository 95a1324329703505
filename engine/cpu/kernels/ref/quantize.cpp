// aisrv CPU engine, reference kernels — QUANTIZE: float -> integer as zero_point + round(x / scale) (float
// division, halves away from zero), integer -> integer by requantization; both clamped to the output type.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

int32_t lowest(DType t) { return t == DType::int8 ? -128 : t == DType::uint8 ? 0 : -32768; }
int32_t highest(DType t) { return t == DType::int8 ? 127 : t == DType::uint8 ? 255 : 32767; }

int32_t load(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::int8: return static_cast<const int8_t*>(base)[i];
    case DType::uint8: return static_cast<const uint8_t*>(base)[i];
    default: return static_cast<const int16_t*>(base)[i];
  }
}

void store(void* base, DType t, int64_t i, int32_t v) {
  switch (t) {
    case DType::int8: static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v); break;
    case DType::uint8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v); break;
    default: static_cast<int16_t*>(base)[i] = static_cast<int16_t>(v); break;
  }
}

}  // namespace

void ReferenceKernelBackend::quantize(const QuantizeParams& p) {
  const int32_t lo = lowest(p.output_type), hi = highest(p.output_type);
  if (p.input_type == DType::float32) {
    const auto* in = static_cast<const float*>(p.input);
    for (int64_t i = 0; i < p.elements; ++i) {
      // Values beyond int32 (and NaN) have no defined conversion: saturate them (NaN maps to the zero point).
      const int64_t v = int64_t{fp::saturating_float_to_int32(std::round(in[i] / p.output_scale))} +
                        p.output_zero_point;
      store(p.output, p.output_type, i, static_cast<int32_t>(std::clamp<int64_t>(v, lo, hi)));
    }
    return;
  }
  for (int64_t i = 0; i < p.elements; ++i) {
    const int32_t x = load(p.input, p.input_type, i) - p.input_zero_point;
    const int64_t v = int64_t{fp::multiply_by_quantized_multiplier(x, p.multiplier, p.shift)} + p.output_zero_point;
    store(p.output, p.output_type, i, static_cast<int32_t>(std::clamp<int64_t>(v, lo, hi)));
  }
}

}  // namespace aisrv::engine::cpu
