// aisrv CPU engine, reference kernels — STRIDED_SLICE and SLICE: the elements of the input visited from start
// towards stop in steps of `step` in every dimension (outermost first), written to the output in that order, as
// TensorFlow Lite's reference StridedSlice writes them. Any element type (bytes are moved).
#include <array>
#include <cstring>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

int64_t visited(int32_t start, int32_t stop, int32_t step) {
  const int64_t a = start, b = stop, s = step;
  if (s > 0) return a < b ? (b - a + s - 1) / s : 0;
  return a > b ? (a - b - s - 1) / -s : 0;
}

}  // namespace

void ReferenceKernelBackend::strided_slice(const StridedSliceParams& p) {
  constexpr size_t kInner = kMaxRank - 1;
  const auto es = static_cast<int64_t>(p.element_size);
  std::array<int64_t, kMaxRank> stride{};  // input elements between neighbours of each dimension
  std::array<int64_t, kMaxRank> count{};
  int64_t total = 1;
  stride[kInner] = 1;
  for (size_t d = kInner; d-- > 0;) stride[d] = stride[d + 1] * p.input_shape.dims[d + 1];
  for (size_t d = 0; d < static_cast<size_t>(kMaxRank); ++d) {
    count[d] = visited(p.start[d], p.stop[d], p.step[d]);
    total *= count[d];
  }
  if (total == 0) return;

  const auto* in = static_cast<const uint8_t*>(p.input);
  auto* out = static_cast<uint8_t*>(p.output);
  const int64_t inner_count = count[kInner], inner_step = p.step[kInner];
  std::array<int64_t, kMaxRank> k{};  // position (in steps) within each outer dimension
  for (;;) {
    int64_t base = p.start[kInner];  // input element of the row's first visited element
    for (size_t d = 0; d < kInner; ++d) base += (p.start[d] + k[d] * p.step[d]) * stride[d];
    if (inner_step == 1) {
      std::memcpy(out, in + base * es, static_cast<size_t>(inner_count * es));
      out += inner_count * es;
    } else {
      for (int64_t j = 0; j < inner_count; ++j, out += es)
        std::memcpy(out, in + (base + j * inner_step) * es, static_cast<size_t>(es));
    }
    // Next row: advance the outer dimensions like an odometer.
    size_t d = kInner;
    while (d > 0) {
      --d;
      if (++k[d] < count[d]) break;
      k[d] = 0;
      if (d == 0) return;
    }
  }
}

size_t ref::scratch_bytes(const StridedSliceParams&) { return 0; }

}  // namespace aisrv::engine::cpu
