// aisrv CPU engine, reference kernels — CONCATENATION: for every outer index, each input's slab in turn; quantized
// slabs with a different scale / zero point are rescaled as round(q * s + b) + zero_point (TFLite's float rescale).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

template <typename T>
void rescale_slab(const T* in, T* out, int64_t n, const ConcatenationParams::Input& e, const ConcatenationParams& p) {
  const float inverse_output_scale = 1.0f / p.output_scale;
  const float scale = e.scale * inverse_output_scale;
  const float bias = static_cast<float>(-e.zero_point) * scale;
  constexpr int32_t kMin = std::numeric_limits<T>::min(), kMax = std::numeric_limits<T>::max();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t v =
        int64_t{fp::saturating_float_to_int32(std::round(static_cast<float>(in[j]) * scale + bias))} +
        p.output_zero_point;
    out[j] = static_cast<T>(std::clamp<int64_t>(v, kMin, kMax));
  }
}

}  // namespace

void ReferenceKernelBackend::concatenation(const ConcatenationParams& p) {
  auto* out = static_cast<uint8_t*>(p.output);
  const auto es = static_cast<int64_t>(p.element_size);
  for (int64_t k = 0; k < p.outer_size; ++k) {
    for (const auto& e : p.inputs) {
      const int64_t n = int64_t{e.axis_size} * p.inner_size;  // elements of this slab
      const auto* in = static_cast<const uint8_t*>(e.data) + k * n * es;
      if (!e.rescale) std::memcpy(out, in, static_cast<size_t>(n * es));
      else if (p.dtype == DType::int8)
        rescale_slab(reinterpret_cast<const int8_t*>(in), reinterpret_cast<int8_t*>(out), n, e, p);
      else rescale_slab(in, out, n, e, p);
      out += n * es;
    }
  }
}

}  // namespace aisrv::engine::cpu
