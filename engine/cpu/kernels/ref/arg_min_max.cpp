// aisrv CPU engine, reference kernels — ARG_MAX / ARG_MIN along one axis (TensorFlow Lite Micro's ArgMinMax with its
// plain Greater / Less comparators): the candidate at index 0 is replaced only by a strictly greater (smaller) value,
// so the first of equal values wins, and a NaN neither replaces nor is replaced by ordered comparisons.
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

template <typename In, typename Out, bool kMax>
void arg_min_max_typed(const ArgMinMaxParams& p) {
  const In* input = static_cast<const In*>(p.input);
  Out* output = static_cast<Out*>(p.output);
  const int64_t inner = p.inner_size;
  for (int64_t outer = 0; outer < p.outer_size; ++outer) {
    const In* block = input + outer * p.axis_size * inner;
    for (int64_t j = 0; j < inner; ++j) {
      In best = block[j];
      int32_t best_index = 0;
      for (int32_t i = 1; i < p.axis_size; ++i) {
        const In v = block[int64_t{i} * inner + j];
        if (kMax ? v > best : v < best) {
          best = v;
          best_index = i;
        }
      }
      output[outer * inner + j] = static_cast<Out>(best_index);
    }
  }
}

template <typename In>
void dispatch_output(const ArgMinMaxParams& p) {
  if (p.output_type == DType::int64) {
    if (p.is_max) arg_min_max_typed<In, int64_t, true>(p);
    else arg_min_max_typed<In, int64_t, false>(p);
  } else {
    if (p.is_max) arg_min_max_typed<In, int32_t, true>(p);
    else arg_min_max_typed<In, int32_t, false>(p);
  }
}

}  // namespace

void ReferenceKernelBackend::arg_min_max(const ArgMinMaxParams& p) {
  switch (p.input_type) {
    case DType::int8: dispatch_output<int8_t>(p); break;
    case DType::uint8: dispatch_output<uint8_t>(p); break;
    case DType::int16: dispatch_output<int16_t>(p); break;
    case DType::int32: dispatch_output<int32_t>(p); break;
    default: dispatch_output<float>(p); break;
  }
}

}  // namespace aisrv::engine::cpu
