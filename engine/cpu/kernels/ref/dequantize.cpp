// aisrv CPU engine, reference kernels — DEQUANTIZE: (float)(scale * (q - zero_point)), the product in double.
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

template <typename T>
void dequantize_typed(const DequantizeParams& p) {
  const T* in = static_cast<const T*>(p.input);
  for (int64_t i = 0; i < p.elements; ++i)
    p.output[i] = static_cast<float>(p.scale * static_cast<double>(int32_t{in[i]} - p.zero_point));
}

}  // namespace

void ReferenceKernelBackend::dequantize(const DequantizeParams& p) {
  switch (p.input_type) {
    case DType::int8: dequantize_typed<int8_t>(p); break;
    case DType::uint8: dequantize_typed<uint8_t>(p); break;
    default: dequantize_typed<int16_t>(p); break;
  }
}

}  // namespace aisrv::engine::cpu
