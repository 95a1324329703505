// aisrv CPU engine, reference kernels — PAD / PADV2: every output element is either the input element it covers or
// the pad value (element-size agnostic).
#include <cstring>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

void ReferenceKernelBackend::pad(const PadParams& p) {
  const auto* input = static_cast<const uint8_t*>(p.input);
  auto* output = static_cast<uint8_t*>(p.output);
  const size_t es = p.element_size;
  const Shape& os = p.output_shape;
  const Shape& is = p.input_shape;
  std::array<int32_t, kMaxRank> idx{};
  const int64_t n = os.elements();
  for (int64_t o = 0; o < n; ++o) {
    bool inside = true;
    int64_t in_index = 0;
    for (int d = 0; d < os.rank; ++d) {
      const int32_t i = idx[static_cast<size_t>(d)] - p.before[static_cast<size_t>(d)];
      if (i < 0 || i >= is[d]) inside = false;
      in_index = in_index * is[d] + i;
    }
    if (inside) std::memcpy(output + o * static_cast<int64_t>(es), input + in_index * static_cast<int64_t>(es), es);
    else std::memcpy(output + o * static_cast<int64_t>(es), p.pad_value.data(), es);
    for (int d = os.rank - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < os[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace aisrv::engine::cpu
