// aisrv CPU engine, reference kernels — L2_NORMALIZATION over the last dimension.
//   - float32 (TensorFlow Lite's reference): x / max(sqrt(sum of squares), 1e-6) in float.
//   - int8 (TFLite Micro) and uint8 (TFLite): the int32 sum of squared differences to the zero point gives a
//     fixed-point 1/sqrt (TFLite's GetInvSqrtQuantizedMultiplierExp: five Newton-Raphson steps in Q3.28), which
//     scales every difference to an output in steps of 1/128 (int8: around 0; uint8: around 128).
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

struct InvSqrt {
  int32_t multiplier = 0;
  int shift = 0;  // power-of-two exponent of the multiplier (<= 0): value = multiplier * 2^(shift - 31)
};

// 1 / sqrt(sum) as a quantized multiplier (sum >= 0; 0 and 1 both give the largest multiplier). The sum is first
// brought into [2^27, 2^29) by an even shift, its inverse square root iterated in Q3.28 from 1, then scaled by
// sqrt(2)/2 to account for the halved input.
InvSqrt inverse_sqrt(int32_t sum) {
  if (sum <= 1) return {std::numeric_limits<int32_t>::max(), 0};
  int right_shift = 11;
  while (sum >= (1 << 29)) {
    sum /= 4;
    ++right_shift;
  }
  const int spare_bits = std::countl_zero(static_cast<uint32_t>(sum)) - 1;
  const int pairs = spare_bits / 2 - 1;
  right_shift -= pairs;
  sum = static_cast<int32_t>(static_cast<uint32_t>(sum) << (2 * pairs));

  // Q3.28 values (3 integer bits); a product of two is Q6.25, of three Q9.22.
  const int32_t input_q3 = sum >> 1;
  const int32_t half_input_q3 = fp::rounding_divide_by_pot(input_q3, 1);
  const int32_t three_halves_q3 = (1 << 28) + (1 << 27);
  int32_t x = 1 << 28;  // 1.0
  for (int i = 0; i < 5; ++i) {
    const int32_t x_cubed_q9 =
        fp::saturating_rounding_doubling_high_mul(fp::saturating_rounding_doubling_high_mul(x, x), x);
    const int32_t x_cubed = fp::rescale(x_cubed_q9, 9, 3);
    const int32_t step_q6 = fp::sub_wrapping(fp::saturating_rounding_doubling_high_mul(three_halves_q3, x),
                                             fp::saturating_rounding_doubling_high_mul(half_input_q3, x_cubed));
    x = fp::rescale(step_q6, 6, 3);
  }
  constexpr int32_t kHalfSqrt2 = 1518500250;  // sqrt(2)/2 in Q0.31
  int32_t multiplier = fp::saturating_rounding_doubling_high_mul(x, kHalfSqrt2);
  if (right_shift < 0) {
    multiplier = static_cast<int32_t>(static_cast<uint32_t>(multiplier) << -right_shift);
    right_shift = 0;
  }
  return {multiplier, -right_shift};
}

template <typename T>
int32_t sum_of_squares(const T* row, int32_t depth, int32_t zero_point) {
  int32_t acc = 0;  // cannot overflow: preparation bounds depth * max difference^2
  for (int32_t c = 0; c < depth; ++c) {
    const int32_t d = int32_t{row[c]} - zero_point;
    acc += d * d;
  }
  return acc;
}

void l2_norm_int8(const L2NormParams& p) {
  const auto* input = static_cast<const int8_t*>(p.input);
  auto* output = static_cast<int8_t*>(p.output);
  constexpr int kOutputBits = 7;  // outputs in steps of 1/128
  for (int64_t i = 0; i < p.outer_size; ++i) {
    const int8_t* in = input + i * p.depth;
    int8_t* out = output + i * p.depth;
    const InvSqrt inv = inverse_sqrt(sum_of_squares(in, p.depth, p.input_zero_point));
    for (int32_t c = 0; c < p.depth; ++c) {
      const int32_t d = int32_t{in[c]} - p.input_zero_point;
      const int32_t v = fp::multiply_by_quantized_multiplier(d, inv.multiplier, inv.shift + kOutputBits);
      out[c] = static_cast<int8_t>(std::clamp(v, -128, 127));
    }
  }
}

void l2_norm_uint8(const L2NormParams& p) {
  const auto* input = static_cast<const uint8_t*>(p.input);
  auto* output = static_cast<uint8_t*>(p.output);
  for (int64_t i = 0; i < p.outer_size; ++i) {
    const uint8_t* in = input + i * p.depth;
    uint8_t* out = output + i * p.depth;
    const InvSqrt inv = inverse_sqrt(sum_of_squares(in, p.depth, p.input_zero_point));
    for (int32_t c = 0; c < p.depth; ++c) {
      const int32_t d = int32_t{in[c]} - p.input_zero_point;
      const int32_t scaled = fp::multiply_by_quantized_multiplier_smaller_than_one_exp(128 * d, inv.multiplier,
                                                                                       inv.shift);
      out[c] = static_cast<uint8_t>(std::clamp(128 + scaled, 0, 255));
    }
  }
}

void l2_norm_float(const L2NormParams& p) {
  const auto* input = static_cast<const float*>(p.input);
  auto* output = static_cast<float*>(p.output);
  constexpr float kEpsilon = 1e-6f;
  for (int64_t i = 0; i < p.outer_size; ++i) {
    const float* in = input + i * p.depth;
    float* out = output + i * p.depth;
    float squares = 0.0f;
    for (int32_t c = 0; c < p.depth; ++c) squares += in[c] * in[c];
    const float norm = std::max(std::sqrt(squares), kEpsilon);
    for (int32_t c = 0; c < p.depth; ++c) out[c] = in[c] / norm;
  }
}

}  // namespace

void ReferenceKernelBackend::l2_normalization(const L2NormParams& p) {
  switch (p.dtype) {
    case DType::int8: l2_norm_int8(p); break;
    case DType::uint8: l2_norm_uint8(p); break;
    default: l2_norm_float(p); break;
  }
}

size_t ref::scratch_bytes(const L2NormParams&) { return 0; }

}  // namespace aisrv::engine::cpu
