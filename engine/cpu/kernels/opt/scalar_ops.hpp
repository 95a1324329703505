// aisrv CPU engine, optimised kernels — the per-element formulas the vector loops fall back to for their tails,
// written with the same fixed-point primitives as the reference kernels (fixed_point.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "opt_kernels.hpp"

namespace aisrv::engine::cpu::opt {

// One element of ADD (TFLite's integer ADD: rescale both inputs with headroom, sum, rescale, clamp).
inline int32_t add_element(int32_t x, int32_t y, const AddSpan& s) {
  const int32_t a = (s.a_offset + x) * (1 << s.left_shift);
  const int32_t b = (s.b_offset + y) * (1 << s.left_shift);
  const int32_t sa = fp::multiply_by_quantized_multiplier_smaller_than_one_exp(a, s.a_multiplier, s.a_shift);
  const int32_t sb = fp::multiply_by_quantized_multiplier_smaller_than_one_exp(b, s.b_multiplier, s.b_shift);
  const int32_t raw =
      fp::multiply_by_quantized_multiplier_smaller_than_one_exp(sa + sb, s.output_multiplier, s.output_shift) +
      s.output_offset;
  return std::clamp(raw, s.act_min, s.act_max);
}

// Element i of an LSTM element-wise product (MulSpan), stored as int16 or int8.
inline void mul_element(const MulSpan& m, int64_t i) {
  const int32_t v =
      fp::requantize(int32_t{m.a[i]} * int32_t{m.b[i]}, m.multiplier, m.shift, m.offset, m.act_min, m.act_max);
  if (m.out16) m.out16[i] = static_cast<int16_t>(v);
  else m.out8[i] = static_cast<int8_t>(v);
}

// The value of byte `v` as element type T (int8 or uint8).
template <bool Unsigned>
inline int32_t element(uint8_t v) {
  if constexpr (Unsigned) return v;
  else return static_cast<int8_t>(v);
}

// Output o of a FULLY_CONNECTED row (FcRow): `acc` holds the products of depth entries [0, from), the rest are
// added here, then the bias and the requantization.
template <bool Unsigned>
inline void fc_element(const FcRow& f, int32_t o, int32_t acc, int32_t from) {
  const uint8_t* w = f.weights + static_cast<size_t>(o) * static_cast<size_t>(f.depth);
  for (int32_t k = from; k < f.depth; ++k) acc += (element<Unsigned>(w[k]) + f.filter_offset) * f.input[k];
  if (f.bias) acc += f.bias[o];
  f.out[o] = static_cast<uint8_t>(
      fp::requantize(acc, f.multiplier[o], f.shift[o], f.output_offset, f.act_min, f.act_max));
}

}  // namespace aisrv::engine::cpu::opt
