// aisrv CPU engine, reference kernels — ADD: both inputs rescaled to a common scale with 20 bits of headroom,
// summed, rescaled to the output; broadcasting over a 6-D index.
#include <algorithm>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

int32_t add_one(int32_t x, int32_t y, const AddParams& p) {
  const int32_t a = (p.input1_offset + x) * (1 << p.left_shift);
  const int32_t b = (p.input2_offset + y) * (1 << p.left_shift);
  const int32_t sa = fp::multiply_by_quantized_multiplier_smaller_than_one_exp(a, p.input1_multiplier, p.input1_shift);
  const int32_t sb = fp::multiply_by_quantized_multiplier_smaller_than_one_exp(b, p.input2_multiplier, p.input2_shift);
  const int32_t raw =
      fp::multiply_by_quantized_multiplier_smaller_than_one_exp(sa + sb, p.output_multiplier, p.output_shift) +
      p.output_offset;
  return std::clamp(raw, p.act_min, p.act_max);
}

// Element strides of a kMaxRank shape, 0 along dimensions of size 1 that the output broadcasts.
std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<int64_t, kMaxRank> strides{};
  int64_t s = 1;
  for (int d = kMaxRank - 1; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = (in[d] == 1 && out[d] != 1) ? 0 : s;
    s *= in[d];
  }
  return strides;
}

template <typename T>
void add_typed(const AddParams& p) {
  const T* in1 = static_cast<const T*>(p.input1);
  const T* in2 = static_cast<const T*>(p.input2);
  T* out = static_cast<T*>(p.output);
  if (p.input1_shape == p.output_shape && p.input2_shape == p.output_shape) {
    const int64_t n = p.output_shape.elements();
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(add_one(in1[i], in2[i], p));
    return;
  }
  const auto s1 = broadcast_strides(p.input1_shape, p.output_shape);
  const auto s2 = broadcast_strides(p.input2_shape, p.output_shape);
  const Shape& o = p.output_shape;
  int64_t k = 0;
  for (int32_t i0 = 0; i0 < o[0]; ++i0)
    for (int32_t i1 = 0; i1 < o[1]; ++i1)
      for (int32_t i2 = 0; i2 < o[2]; ++i2)
        for (int32_t i3 = 0; i3 < o[3]; ++i3)
          for (int32_t i4 = 0; i4 < o[4]; ++i4)
            for (int32_t i5 = 0; i5 < o[5]; ++i5) {
              const int64_t a = i0 * s1[0] + i1 * s1[1] + i2 * s1[2] + i3 * s1[3] + i4 * s1[4] + i5 * s1[5];
              const int64_t b = i0 * s2[0] + i1 * s2[1] + i2 * s2[2] + i3 * s2[3] + i4 * s2[4] + i5 * s2[5];
              out[k++] = static_cast<T>(add_one(in1[a], in2[b], p));
            }
}

}  // namespace

void ReferenceKernelBackend::add(const AddParams& p) {
  if (p.dtype == DType::int8) add_typed<int8_t>(p);
  else add_typed<uint8_t>(p);
}

}  // namespace aisrv::engine::cpu
