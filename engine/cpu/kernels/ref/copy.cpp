// aisrv CPU engine, reference kernels — byte copy (RESHAPE).
#include <cstring>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

void ReferenceKernelBackend::copy(const CopyParams& p) {
  if (p.bytes > 0 && p.output != p.input) std::memmove(p.output, p.input, p.bytes);
}

}  // namespace aisrv::engine::cpu
