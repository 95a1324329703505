// aisrv CPU engine, reference kernels — FULLY_CONNECTED: one dot product per (batch, output) pair.
#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"

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

}  // namespace

void ReferenceKernelBackend::fully_connected(const FullyConnectedParams& p) {
  if (p.dtype == DType::int8) fully_connected_typed<int8_t>(p);
  else fully_connected_typed<uint8_t>(p);
}

}  // namespace aisrv::engine::cpu
