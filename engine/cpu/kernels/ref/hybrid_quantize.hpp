// aisrv CPU engine, reference kernels — the run-time quantization of a float32 input that TensorFlow Lite's
// dynamic-range ("hybrid") kernels share: CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED quantize each batch (or
// the whole input) to int8 before their integer dot products.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aisrv::engine::cpu::ref {

// TFLite's SymmetricQuantizeFloats / AsymmetricQuantizeFloats (portable_tensor_utils) of n >= 1 values: quantized
// value q stands for scaling_factor * (q - offset) (offset 0 when symmetric). Where TFLite converts a non-finite
// float to an integer (undefined there; only non-finite inputs get there) we saturate, NaN giving 0.
void hybrid_quantize(const float* values, size_t n, bool asymmetric, int8_t* quantized, float& scaling_factor,
                     int32_t& offset);

}  // namespace aisrv::engine::cpu::ref
