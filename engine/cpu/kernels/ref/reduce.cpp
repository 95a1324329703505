// aisrv CPU engine, reference kernels — SUM and REDUCE_MAX: every input element, in row-major order, is folded into
// the output element of its kept coordinates (TensorFlow Lite's ReduceGeneric / QuantizedMeanOrSum order).
//   - REDUCE_MAX: from the type's lowest value, replaced by any greater input (NaN never replaces).
//   - SUM float32: from 0, input + current in float; int32: wrapping int32 addition, as TFLite's.
//   - SUM int8 / int16 (TFLite Micro): int32 sums in scratch, minus zero_point * count, requantized, clamped.
//   - SUM uint8 (TFLite): int32 sums, then round(sum * scale + bias) in float with scale = input_scale /
//     output_scale and bias = -zero_point * scale * count, plus the output zero point, converted to uint8 modulo
//     256 (TFLite does not clamp here).
#include <algorithm>
#include <cmath>
#include <limits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

// Calls fn(input_index, output_index) for every input element in row-major order; the output index counts the kept
// dimensions only. The output index is updated incrementally from per-dimension strides (0 for reduced ones).
template <typename Fn>
void for_each_element(const ReduceParams& p, Fn&& fn) {
  const Shape& s = p.input_shape;
  std::array<int64_t, kMaxRank> out_stride{};
  int64_t stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    if (p.reduced[static_cast<size_t>(d)]) continue;
    out_stride[static_cast<size_t>(d)] = stride;
    stride *= s[d];
  }
  std::array<int32_t, kMaxRank> idx{};
  const int64_t n = s.elements();
  int64_t out = 0;
  for (int64_t i = 0; i < n; ++i) {
    fn(i, out);
    for (int d = s.rank - 1; d >= 0; --d) {  // advance the multi-index and the output index with it
      const auto k = static_cast<size_t>(d);
      if (++idx[k] < s[d]) {
        out += out_stride[k];
        break;
      }
      out -= out_stride[k] * (s[d] - 1);
      idx[k] = 0;
    }
  }
}

template <typename T>
void reduce_max(const ReduceParams& p) {
  const T* input = static_cast<const T*>(p.input);
  T* output = static_cast<T*>(p.output);
  std::fill(output, output + p.output_elements, std::numeric_limits<T>::lowest());
  for_each_element(p, [&](int64_t i, int64_t o) {
    if (input[i] > output[o]) output[o] = input[i];
  });
}

void sum_float(const ReduceParams& p) {
  const auto* input = static_cast<const float*>(p.input);
  auto* output = static_cast<float*>(p.output);
  std::fill(output, output + p.output_elements, 0.0f);
  for_each_element(p, [&](int64_t i, int64_t o) { output[o] = input[i] + output[o]; });
}

void sum_int32(const ReduceParams& p) {
  const auto* input = static_cast<const int32_t*>(p.input);
  auto* output = static_cast<int32_t*>(p.output);
  std::fill(output, output + p.output_elements, 0);
  for_each_element(p, [&](int64_t i, int64_t o) { output[o] = fp::add_wrapping(input[i], output[o]); });
}

// int32 sums of the raw quantized values into scratch (cannot overflow: preparation bounds the count).
template <typename T>
int32_t* raw_sums(const ReduceParams& p) {
  const T* input = static_cast<const T*>(p.input);
  auto* sums = reinterpret_cast<int32_t*>(p.scratch.data());
  std::fill(sums, sums + p.output_elements, 0);
  for_each_element(p, [&](int64_t i, int64_t o) { sums[o] += input[i]; });
  return sums;
}

// TFLite Micro (int8, int16).
template <typename T>
void sum_requantized(const ReduceParams& p) {
  const int32_t* sums = raw_sums<T>(p);
  T* output = static_cast<T*>(p.output);
  constexpr int32_t kMin = std::numeric_limits<T>::min(), kMax = std::numeric_limits<T>::max();
  for (int64_t o = 0; o < p.output_elements; ++o) {
    const auto shifted = static_cast<int32_t>(int64_t{sums[o]} - int64_t{p.input_zero_point} * p.reduced_elements);
    const int32_t v = fp::multiply_by_quantized_multiplier(shifted, p.multiplier, p.shift) + p.output_zero_point;
    output[o] = static_cast<T>(std::clamp(v, kMin, kMax));
  }
}

// TensorFlow Lite (uint8, rescaling path).
void sum_uint8_float_rescaled(const ReduceParams& p) {
  const int32_t* sums = raw_sums<uint8_t>(p);
  auto* output = static_cast<uint8_t*>(p.output);
  const float scale = p.input_scale / p.output_scale;
  const float bias = static_cast<float>(-p.input_zero_point) * scale * static_cast<float>(p.reduced_elements);
  for (int64_t o = 0; o < p.output_elements; ++o) {
    const int32_t v = static_cast<int32_t>(std::round(static_cast<float>(sums[o]) * scale + bias)) +
                      p.output_zero_point;
    output[o] = static_cast<uint8_t>(v);  // modulo 256, as TFLite's cast
  }
}

}  // namespace

void ReferenceKernelBackend::reduce(const ReduceParams& p) {
  if (p.op == ReduceOp::max) {
    switch (p.dtype) {
      case DType::int8: reduce_max<int8_t>(p); break;
      case DType::uint8: reduce_max<uint8_t>(p); break;
      case DType::int16: reduce_max<int16_t>(p); break;
      case DType::int32: reduce_max<int32_t>(p); break;
      default: reduce_max<float>(p); break;
    }
    return;
  }
  switch (p.dtype) {
    case DType::int8: sum_requantized<int8_t>(p); break;
    case DType::int16: sum_requantized<int16_t>(p); break;
    case DType::uint8: sum_uint8_float_rescaled(p); break;
    case DType::int32: sum_int32(p); break;
    default: sum_float(p); break;
  }
}

// One int32 sum per output element for the quantized SUMs.
size_t ref::scratch_bytes(const ReduceParams& p) {
  const bool quantized_sum =
      p.op == ReduceOp::sum && (p.dtype == DType::int8 || p.dtype == DType::uint8 || p.dtype == DType::int16);
  return quantized_sum ? static_cast<size_t>(p.output_elements) * sizeof(int32_t) : 0;
}

}  // namespace aisrv::engine::cpu
