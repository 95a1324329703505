// aisrv hailo8/transform — internal element kernels shared by quantize.cpp and layout.cpp (not installed):
// unchecked loops over raw pointers; the public functions validate sizes and parameters before calling them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "aisrv/engine/hailo8/transform/quantize.hpp"
#include "aisrv/engine/hailo8/transform/types.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::transform {

struct QuantKernelParams {
  bool identity;  // scale == 1 && zp == 0: round only, no clip
  float min;
  float max;
  float scale;
  float zp;
};

QuantKernelParams make_kernel_params(const QuantInfo& qp);  // after validate_quant_info() (quantize.hpp)

// Vectorised (SSE2/NEON) quantization of n elements.
void quantize_kernel(const float* in, uint8_t* out, size_t n, const QuantKernelParams& p);
void quantize_kernel(const float* in, uint16_t* out, size_t n, const QuantKernelParams& p);

template <typename Q>
void dequantize_kernel(const Q* in, float* out, size_t n, const QuantInfo& qp);

}  // namespace aisrv::engine::hailo8::transform
