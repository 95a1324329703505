// aisrv CPU engine, reference kernels — FULLY_CONNECTED: one dot product per (batch, output) pair. 8-bit (TFLite's
// integer reference), float32 (reference_ops::FullyConnected: the sum in depth order, then + bias, then the clamp)
// and dynamic range (TFLite's EvalHybrid: each batch row quantized to int8 at run time (hybrid_quantize.hpp), integer
// dot products, scaled back by the row's scaling factor times the weight scale, added to the bias).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "hybrid_quantize.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

template <typename T>
void fully_connected_typed(const FullyConnectedParams& p) {
  const T* input = static_cast<const T*>(p.input);
  const T* weights = static_cast<const T*>(p.weights);
  T* output = static_cast<T*>(p.output);
  for (int32_t b = 0; b < p.batches; ++b) {
    const T* in_row = input + int64_t{b} * p.accum_depth;
    for (int32_t o = 0; o < p.output_depth; ++o) {
      const T* w_row = weights + int64_t{o} * p.accum_depth;
      int32_t acc = 0;
      for (int32_t d = 0; d < p.accum_depth; ++d)
        acc += (int32_t{w_row[d]} + p.filter_offset) * (int32_t{in_row[d]} + p.input_offset);
      if (p.bias) acc += p.bias[o];
      output[int64_t{b} * p.output_depth + o] = static_cast<T>(
          fp::requantize(acc, p.output_multiplier[static_cast<size_t>(o)], p.output_shift[static_cast<size_t>(o)],
                         p.output_offset, p.act_min, p.act_max));
    }
  }
}

void fully_connected_float(const FullyConnectedParams& p) {
  const auto* input = static_cast<const float*>(p.input);
  const auto* weights = static_cast<const float*>(p.weights);
  auto* output = static_cast<float*>(p.output);
  for (int32_t b = 0; b < p.batches; ++b) {
    const float* in_row = input + int64_t{b} * p.accum_depth;
    for (int32_t o = 0; o < p.output_depth; ++o) {
      const float* w_row = weights + int64_t{o} * p.accum_depth;
      float total = 0.0f;
      for (int32_t d = 0; d < p.accum_depth; ++d) total += in_row[d] * w_row[d];
      const float bias = p.float_bias ? p.float_bias[o] : 0.0f;
      output[int64_t{b} * p.output_depth + o] = std::min(std::max(total + bias, p.float_act_min), p.float_act_max);
    }
  }
}

// TFLite's ApplyActivationToVector with the bounds prepared for it: min(x, hi) unless hi is +inf, then max(lo, x)
// unless lo is -inf (so NONE leaves NaN and infinities alone, and RELU maps NaN to 0, as TFLite's std::max(0, x)).
float hybrid_activation(float x, float lo, float hi) {
  if (hi != std::numeric_limits<float>::infinity()) x = std::min(x, hi);
  if (lo != -std::numeric_limits<float>::infinity()) x = std::max(lo, x);
  return x;
}

// TFLite's EvalHybrid: the output starts as the bias (or 0); an all-zero input (every batch) skips the products;
// otherwise each row is quantized and each output gets float(dot) * (scaling_factor * weight_scale) added, the
// asymmetric dot product taken against (q - offset) (TFLite subtracts row_sum * offset: the same int32 value).
// The weight scale times the row's factor is one float product either way: TFLite's per-tensor path folds the
// scale into the row's factor first, its per-channel path multiplies the factor by the channel's scale.
void fully_connected_hybrid(const FullyConnectedParams& p) {
  const auto* input = static_cast<const float*>(p.input);
  const auto* weights = static_cast<const int8_t*>(p.weights);
  auto* output = static_cast<float*>(p.output);
  auto* quantized = reinterpret_cast<int8_t*>(p.scratch.data());
  const auto depth = static_cast<size_t>(p.accum_depth);
  const size_t total = static_cast<size_t>(p.batches) * depth;
  const bool all_zero = std::all_of(input, input + total, [](float v) { return v == 0.0f; });
  for (int32_t b = 0; b < p.batches; ++b) {
    float* out_row = output + int64_t{b} * p.output_depth;
    for (int32_t o = 0; o < p.output_depth; ++o) out_row[o] = p.float_bias ? p.float_bias[o] : 0.0f;
    if (!all_zero) {
      float scaling_factor = 1.0f;
      int32_t offset = 0;
      ref::hybrid_quantize(input + static_cast<size_t>(b) * depth, depth, p.asymmetric_quantize_inputs, quantized,
                           scaling_factor, offset);
      for (int32_t o = 0; o < p.output_depth; ++o) {
        const int8_t* w_row = weights + int64_t{o} * p.accum_depth;
        int32_t dot = 0;
        for (size_t d = 0; d < depth; ++d) dot += int32_t{w_row[d]} * (int32_t{quantized[d]} - offset);
        const float scale = scaling_factor * p.filter_scales[static_cast<size_t>(o)];
        out_row[o] += static_cast<float>(dot) * scale;
      }
    }
    for (int32_t o = 0; o < p.output_depth; ++o)
      out_row[o] = hybrid_activation(out_row[o], p.float_act_min, p.float_act_max);
  }
}

}  // namespace

void ReferenceKernelBackend::fully_connected(const FullyConnectedParams& p) {
  if (p.dtype == DType::int8) fully_connected_typed<int8_t>(p);
  else if (p.dtype == DType::uint8) fully_connected_typed<uint8_t>(p);
  else if (p.filter_type == DType::float32) fully_connected_float(p);
  else fully_connected_hybrid(p);
}

size_t ref::scratch_bytes(const FullyConnectedParams& p) {
  // Dynamic range: one batch row of quantized inputs (the rows are quantized and consumed one at a time).
  if (p.dtype == DType::float32 && p.filter_type == DType::int8) return static_cast<size_t>(p.accum_depth);
  return 0;
}

}  // namespace aisrv::engine::cpu
