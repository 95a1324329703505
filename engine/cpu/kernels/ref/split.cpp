// aisrv CPU engine, reference kernels — SPLIT, SPLIT_V and UNPACK: for every outer index, consecutive pieces of
// the input along the axis go to the outputs in turn (TFLite Micro's SplitImpl / UnpackImpl order). Any element
// type (bytes are moved).
#include <cstring>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

void ReferenceKernelBackend::split(const SplitParams& p) {
  const auto* in = static_cast<const uint8_t*>(p.input);
  const auto es = static_cast<int64_t>(p.element_size);
  for (int64_t k = 0; k < p.outer_size; ++k) {
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      const int64_t piece = int64_t{p.sizes[i]} * p.inner_size * es;  // bytes of output i per outer index
      std::memcpy(static_cast<uint8_t*>(p.outputs[i]) + k * piece, in, static_cast<size_t>(piece));
      in += piece;
    }
  }
}

}  // namespace aisrv::engine::cpu
