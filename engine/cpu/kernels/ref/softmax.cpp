// aisrv CPU engine, reference kernels — SOFTMAX: TFLite's fixed-point algorithm for int8 / uint8. Differences to
// the row maximum are scaled to Q5.26, exponentiated in Q0.31, summed in Q12.19, and each exp is multiplied by the
// reciprocal of the sum; differences below diff_min contribute nothing and give the lowest output value. float32 as
// TFLite's float reference: row maximum, exp(beta * (x - max)) in float, their float sum in order, one division each.
#include <algorithm>
#include <cmath>
#include <limits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

constexpr int kScaledDiffIntegerBits = 5;
constexpr int kAccumulationIntegerBits = 12;

template <typename T>
void softmax_typed(const SoftmaxParams& p) {
  const T* input = static_cast<const T*>(p.input);
  T* output = static_cast<T*>(p.output);
  constexpr int32_t kOutMin = std::numeric_limits<T>::min();
  constexpr int32_t kOutMax = std::numeric_limits<T>::max();
  for (int32_t i = 0; i < p.outer_size; ++i) {
    const T* in = input + int64_t{i} * p.depth;
    T* out = output + int64_t{i} * p.depth;
    const int32_t max_in_row = *std::max_element(in, in + p.depth);

    int32_t sum_of_exps = 0;  // Q12.19
    for (int32_t c = 0; c < p.depth; ++c) {
      const int32_t diff = int32_t{in[c]} - max_in_row;
      if (diff >= p.diff_min) {
        const int32_t scaled = fp::multiply_by_quantized_multiplier_greater_than_one(diff, p.input_multiplier,
                                                                                     p.input_left_shift);
        const int32_t e = fp::exp_on_negative_values(scaled, kScaledDiffIntegerBits);
        sum_of_exps = fp::add_wrapping(sum_of_exps, fp::rescale(e, 0, kAccumulationIntegerBits));
      }
    }

    int num_bits_over_unit = 0;
    const int32_t shifted_scale = fp::get_reciprocal(sum_of_exps, kAccumulationIntegerBits, &num_bits_over_unit);
    const int exponent = num_bits_over_unit + 31 - static_cast<int>(sizeof(T) * 8);

    for (int32_t c = 0; c < p.depth; ++c) {
      const int32_t diff = int32_t{in[c]} - max_in_row;
      if (diff >= p.diff_min) {
        const int32_t scaled = fp::multiply_by_quantized_multiplier_greater_than_one(diff, p.input_multiplier,
                                                                                     p.input_left_shift);
        const int32_t e = fp::exp_on_negative_values(scaled, kScaledDiffIntegerBits);
        const int32_t product = fp::saturating_rounding_doubling_high_mul(shifted_scale, e);
        // TFLite requires exponent <= 31; beyond that (a sum of exps of 512 or more) every probability is below
        // half an output step and rounds to 0.
        const int32_t unsat = exponent <= 31 ? fp::rounding_divide_by_pot(product, std::max(exponent, 0)) : 0;
        out[c] = static_cast<T>(std::clamp(unsat + kOutMin, kOutMin, kOutMax));
      } else {
        out[c] = static_cast<T>(kOutMin);
      }
    }
  }
}

void softmax_float(const SoftmaxParams& p) {
  const auto* input = static_cast<const float*>(p.input);
  auto* output = static_cast<float*>(p.output);
  for (int32_t i = 0; i < p.outer_size; ++i) {
    const float* in = input + int64_t{i} * p.depth;
    float* out = output + int64_t{i} * p.depth;
    float max_in_row = std::numeric_limits<float>::lowest();
    for (int32_t c = 0; c < p.depth; ++c) max_in_row = std::max(max_in_row, in[c]);
    float sum = 0.0f;
    for (int32_t c = 0; c < p.depth; ++c) {
      const float e = std::exp((in[c] - max_in_row) * p.beta);
      out[c] = e;
      sum += e;
    }
    for (int32_t c = 0; c < p.depth; ++c) out[c] = out[c] / sum;
  }
}

}  // namespace

void ReferenceKernelBackend::softmax(const SoftmaxParams& p) {
  switch (p.dtype) {
    case DType::int8: softmax_typed<int8_t>(p); break;
    case DType::uint8: softmax_typed<uint8_t>(p); break;
    default: softmax_float(p); break;
  }
}

}  // namespace aisrv::engine::cpu
