// aisrv CPU engine, reference kernels — TRANSPOSE: output[i0..ik] = input[j] with input dimension perm[d] indexed
// by output index d (element-size agnostic).
#include <cstring>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

void ReferenceKernelBackend::transpose(const TransposeParams& p) {
  const auto* input = static_cast<const uint8_t*>(p.input);
  auto* output = static_cast<uint8_t*>(p.output);
  const size_t es = p.element_size;
  const Shape& is = p.input_shape;
  const Shape& os = p.output_shape;
  std::array<int64_t, kMaxRank> in_strides{};
  int64_t s = 1;
  for (int d = is.rank - 1; d >= 0; --d) {
    in_strides[static_cast<size_t>(d)] = s;
    s *= is[d];
  }
  std::array<int32_t, kMaxRank> idx{};
  const int64_t n = os.elements();
  for (int64_t o = 0; o < n; ++o) {
    int64_t in_index = 0;
    for (int d = 0; d < os.rank; ++d)
      in_index += idx[static_cast<size_t>(d)] * in_strides[static_cast<size_t>(p.perm[static_cast<size_t>(d)])];
    std::memcpy(output + o * static_cast<int64_t>(es), input + in_index * static_cast<int64_t>(es), es);
    for (int d = os.rank - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < os[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace aisrv::engine::cpu
