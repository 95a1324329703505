// aisrv CPU engine, reference kernels — PAD / PADV2: every output row (innermost dimension) is either entirely
// padding, or padding + the input row it covers + padding (element-size agnostic).
#include <cstring>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

void fill(uint8_t* out, int64_t elements, const PadParams& p) {
  for (int64_t i = 0; i < elements; ++i)
    std::memcpy(out + i * static_cast<int64_t>(p.element_size), p.pad_value.data(), p.element_size);
}

}  // namespace

void ReferenceKernelBackend::pad(const PadParams& p) {
  const auto* input = static_cast<const uint8_t*>(p.input);
  auto* output = static_cast<uint8_t*>(p.output);
  const auto es = static_cast<int64_t>(p.element_size);
  const Shape& os = p.output_shape;
  const Shape& is = p.input_shape;
  if (os.rank == 0) {  // a scalar: nothing to pad
    std::memcpy(output, input, p.element_size);
    return;
  }
  const int last = os.rank - 1;
  const int64_t out_row = os[last], in_row = is[last];
  const int64_t before = p.before[static_cast<size_t>(last)], after = p.after[static_cast<size_t>(last)];
  const int64_t rows = os.elements() / out_row;
  std::array<int32_t, kMaxRank> idx{};  // index of the current output row over dimensions 0..last-1
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* out = output + r * out_row * es;
    bool inside = true;
    int64_t in_r = 0;  // input row index
    for (int d = 0; d < last; ++d) {
      const int32_t i = idx[static_cast<size_t>(d)] - p.before[static_cast<size_t>(d)];
      if (i < 0 || i >= is[d]) inside = false;
      in_r = in_r * is[d] + i;
    }
    if (inside) {
      fill(out, before, p);
      std::memcpy(out + before * es, input + in_r * in_row * es, static_cast<size_t>(in_row * es));
      fill(out + (before + in_row) * es, after, p);
    } else {
      fill(out, out_row, p);
    }
    for (int d = last - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < os[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace aisrv::engine::cpu
