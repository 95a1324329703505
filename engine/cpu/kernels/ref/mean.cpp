// aisrv CPU engine, reference kernels — MEAN: sums over the reduced dimensions in input order (int32 for quantized
// types, float for float32), then requantized (or divided by the count).
#include <algorithm>
#include <cstring>
#include <limits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

// Calls fn(input_index, output_index) for every input element in row-major order; the output index counts the
// kept dimensions only.
template <typename Fn>
void for_each_reduced(const MeanParams& p, Fn&& fn) {
  const Shape& s = p.input_shape;
  std::array<int32_t, kMaxRank> idx{};
  const int64_t n = s.elements();
  for (int64_t i = 0; i < n; ++i) {
    int64_t out = 0;
    for (int d = 0; d < s.rank; ++d)
      if (!p.reduced[static_cast<size_t>(d)]) out = out * s[d] + idx[static_cast<size_t>(d)];
    fn(i, out);
    for (int d = s.rank - 1; d >= 0; --d) {  // advance the multi-index
      if (++idx[static_cast<size_t>(d)] < s[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

template <typename T>
void mean_quantized(const MeanParams& p) {
  const T* input = static_cast<const T*>(p.input);
  T* output = static_cast<T*>(p.output);
  auto* sums = reinterpret_cast<int32_t*>(p.scratch.data());
  std::fill(sums, sums + p.output_elements, 0);
  for_each_reduced(p, [&](int64_t i, int64_t o) { sums[o] += input[i]; });
  constexpr int32_t kMin = std::numeric_limits<T>::min(), kMax = std::numeric_limits<T>::max();
  for (int64_t o = 0; o < p.output_elements; ++o) {
    const auto shifted = static_cast<int32_t>(int64_t{sums[o]} - int64_t{p.input_zero_point} * p.reduced_elements);
    const int64_t v = int64_t{fp::multiply_by_quantized_multiplier(shifted, p.multiplier, p.shift)} +
                      p.output_zero_point;
    output[o] = static_cast<T>(std::clamp<int64_t>(v, kMin, kMax));
  }
}

void mean_float(const MeanParams& p) {
  const auto* input = static_cast<const float*>(p.input);
  auto* output = static_cast<float*>(p.output);
  auto* sums = reinterpret_cast<float*>(p.scratch.data());
  std::fill(sums, sums + p.output_elements, 0.0f);
  for_each_reduced(p, [&](int64_t i, int64_t o) { sums[o] += input[i]; });
  for (int64_t o = 0; o < p.output_elements; ++o) output[o] = sums[o] / static_cast<float>(p.reduced_elements);
}

}  // namespace

void ReferenceKernelBackend::mean(const MeanParams& p) {
  switch (p.dtype) {
    case DType::int8: mean_quantized<int8_t>(p); break;
    case DType::uint8: mean_quantized<uint8_t>(p); break;
    default: mean_float(p); break;
  }
}

}  // namespace aisrv::engine::cpu
