// aisrv CPU engine, reference kernels — the backend's scratch needs (MEAN: one 32-bit sum per output element;
// LSTM: four int16 gate buffers; the others from their kernels, scratch.hpp) and the construction of kernel
// backends by name.
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

size_t ReferenceKernelBackend::scratch_bytes(const OpParams& op) const {
  if (const auto* m = std::get_if<MeanParams>(&op)) return static_cast<size_t>(m->output_elements) * 4;
  if (const auto* l = std::get_if<LstmParams>(&op)) {
    const size_t rows = l->time_major ? static_cast<size_t>(l->batches) : 1;
    return 4 * rows * static_cast<size_t>(l->state_dim) * sizeof(int16_t);
  }
  return std::visit(
      [](const auto& p) -> size_t {
        if constexpr (requires { ref::scratch_bytes(p); }) return ref::scratch_bytes(p);
        else return 0;
      },
      op);
}

std::unique_ptr<KernelBackend> make_kernel_backend(std::string_view name, size_t threads) {
  if (name == "ref") return std::make_unique<ReferenceKernelBackend>();
  if (name == "opt") return make_optimized_kernel_backend(detect_simd_level(), threads);
  return nullptr;
}

}  // namespace aisrv::engine::cpu
