// aisrv CPU engine, optimised kernels — MEAN when the reduced axes are adjacent (e.g. axes 1, 2 of NHWC, global
// average pooling): the input is [outer, reduced, inner]; the sums run over `reduced` in input order for every
// (outer, inner) — the reference kernel's order, which also keeps float32 sums identical — with `inner` as the
// vectorisable loop. Then the reference's requantization (or division) per output. Other axis sets use the
// reference kernel.
#include <algorithm>
#include <cstring>
#include <limits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

struct MeanSplit {
  size_t outer = 1, reduced = 1, inner = 1;
};

template <typename T, typename Acc>
void sum_rows(const T* input, Acc* sums, const MeanSplit& m) {
  std::fill(sums, sums + m.outer * m.inner, Acc{0});
  for (size_t o = 0; o < m.outer; ++o) {
    Acc* s = sums + o * m.inner;
    const T* in = input + o * m.reduced * m.inner;
    for (size_t r = 0; r < m.reduced; ++r, in += m.inner)
      for (size_t i = 0; i < m.inner; ++i) s[i] += static_cast<Acc>(in[i]);
  }
}

template <typename T>
void finish_quantized(const MeanParams& p, const int32_t* sums, T* output, size_t n) {
  constexpr int32_t kMin = std::numeric_limits<T>::min(), kMax = std::numeric_limits<T>::max();
  for (size_t o = 0; o < n; ++o) {
    const auto shifted = static_cast<int32_t>(int64_t{sums[o]} - int64_t{p.input_zero_point} * p.reduced_elements);
    const int64_t v = int64_t{fp::multiply_by_quantized_multiplier(shifted, p.multiplier, p.shift)} +
                      p.output_zero_point;
    output[o] = static_cast<T>(std::clamp<int64_t>(v, kMin, kMax));
  }
}

}  // namespace

void OptimizedKernelBackend::mean(const MeanParams& p) {
  const Shape& s = p.input_shape;
  // The reduced axes must be one run of adjacent dimensions.
  int first = -1, last = -1;
  bool adjacent = true;
  for (int d = 0; d < s.rank; ++d) {
    if (!p.reduced[static_cast<size_t>(d)]) continue;
    if (first < 0) first = d;
    else if (last != d - 1) adjacent = false;
    last = d;
  }
  const size_t outputs = static_cast<size_t>(p.output_elements);
  const size_t sum_bytes = outputs * 4;
  if (first < 0 || !adjacent || p.scratch.size() < sum_bytes) {
    ReferenceKernelBackend::mean(p);
    return;
  }
  MeanSplit m;
  for (int d = 0; d < s.rank; ++d) {
    const auto n = static_cast<size_t>(s[d]);
    if (d < first) m.outer *= n;
    else if (d <= last) m.reduced *= n;
    else m.inner *= n;
  }
  switch (p.dtype) {
    case DType::int8: {
      auto* sums = reinterpret_cast<int32_t*>(p.scratch.data());
      sum_rows(static_cast<const int8_t*>(p.input), sums, m);
      finish_quantized(p, sums, static_cast<int8_t*>(p.output), outputs);
      break;
    }
    case DType::uint8: {
      auto* sums = reinterpret_cast<int32_t*>(p.scratch.data());
      sum_rows(static_cast<const uint8_t*>(p.input), sums, m);
      finish_quantized(p, sums, static_cast<uint8_t*>(p.output), outputs);
      break;
    }
    default: {
      auto* sums = reinterpret_cast<float*>(p.scratch.data());
      sum_rows(static_cast<const float*>(p.input), sums, m);
      auto* out = static_cast<float*>(p.output);
      for (size_t o = 0; o < outputs; ++o) out[o] = sums[o] / static_cast<float>(p.reduced_elements);
      break;
    }
  }
}

}  // namespace aisrv::engine::cpu
