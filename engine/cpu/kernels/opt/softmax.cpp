// aisrv CPU engine, optimised kernels — SOFTMAX (int8 / uint8; float32 runs the reference kernel): the reference's
// fixed-point algorithm with its exponentials looked up. An input differs from its row's maximum by 0..255, so the
// exponential of every possible difference (Q0.31, and rescaled to the Q12.19 accumulator) is computed once at load
// by the reference's own functions and stored in the prepared data; a row then costs a maximum, a sum of table
// entries (wrapping addition, as the reference's, so the order does not matter), one reciprocal, and a multiply per
// element.
#include <algorithm>
#include <cstring>
#include <limits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace opt {

namespace {

constexpr int kScaledDiffIntegerBits = 5;
constexpr int kAccumulationIntegerBits = 12;
constexpr size_t kDiffs = 256;  // differences 0..-255

struct SoftmaxTables {
  int32_t exp[kDiffs];       // exp of difference -d in Q0.31; 0 where d is below diff_min
  int32_t rescaled[kDiffs];  // the same in the accumulator's Q12.19
  uint8_t counted[kDiffs];   // 1 where the difference takes part (>= diff_min)
};

template <typename T>
void run_rows(const SoftmaxParams& p, const SoftmaxTables& t) {
  const T* input = static_cast<const T*>(p.input);
  T* output = static_cast<T*>(p.output);
  constexpr int32_t kOutMin = std::numeric_limits<T>::min();
  constexpr int32_t kOutMax = std::numeric_limits<T>::max();
  for (int32_t i = 0; i < p.outer_size; ++i) {
    const T* in = input + int64_t{i} * p.depth;
    T* out = output + int64_t{i} * p.depth;
    const int32_t max_in_row = *std::max_element(in, in + p.depth);
    uint32_t sum = 0;  // wrapping, as fp::add_wrapping
    for (int32_t c = 0; c < p.depth; ++c) sum += static_cast<uint32_t>(t.rescaled[max_in_row - in[c]]);
    int num_bits_over_unit = 0;
    const int32_t shifted_scale =
        fp::get_reciprocal(static_cast<int32_t>(sum), kAccumulationIntegerBits, &num_bits_over_unit);
    const int exponent = num_bits_over_unit + 31 - static_cast<int>(sizeof(T) * 8);
    for (int32_t c = 0; c < p.depth; ++c) {
      const auto d = static_cast<size_t>(max_in_row - in[c]);
      if (!t.counted[d]) {
        out[c] = static_cast<T>(kOutMin);
        continue;
      }
      const int32_t product = fp::saturating_rounding_doubling_high_mul(shifted_scale, t.exp[d]);
      const int32_t unsat = exponent <= 31 ? fp::rounding_divide_by_pot(product, std::max(exponent, 0)) : 0;
      out[c] = static_cast<T>(std::clamp(unsat + kOutMin, kOutMin, kOutMax));
    }
  }
}

}  // namespace

// Tables only for the 8-bit types; float32 keeps no prepared data and runs the reference kernel.
size_t softmax_prepared_bytes(const SoftmaxParams& p) {
  if (p.dtype != DType::int8 && p.dtype != DType::uint8) return 0;
  return kPreparedHeaderBytes + sizeof(SoftmaxTables);
}

void softmax_prepare(const SoftmaxParams& p, std::span<uint8_t> prepared) {
  if (p.dtype != DType::int8 && p.dtype != DType::uint8) return;
  if (prepared.size() < kPreparedHeaderBytes + sizeof(SoftmaxTables)) return;
  PreparedHeader h;
  h.magic = kPreparedMagic;
  h.usable = p.dtype == DType::int8 || p.dtype == DType::uint8;
  SoftmaxTables t{};
  for (size_t d = 0; d < kDiffs; ++d) {
    const int32_t diff = -static_cast<int32_t>(d);
    t.counted[d] = diff >= p.diff_min ? 1 : 0;
    if (!t.counted[d]) continue;
    const int32_t scaled =
        fp::multiply_by_quantized_multiplier_greater_than_one(diff, p.input_multiplier, p.input_left_shift);
    t.exp[d] = fp::exp_on_negative_values(scaled, kScaledDiffIntegerBits);
    t.rescaled[d] = fp::rescale(t.exp[d], 0, kAccumulationIntegerBits);
  }
  std::memcpy(prepared.data() + kPreparedHeaderBytes, &t, sizeof t);
  std::memcpy(prepared.data(), &h, sizeof h);
}

}  // namespace opt

void OptimizedKernelBackend::softmax(const SoftmaxParams& p) {
  const size_t need = opt::softmax_prepared_bytes(p);
  opt::PreparedHeader h;
  if (need > 0 && p.prepared.size() >= need) std::memcpy(&h, p.prepared.data(), sizeof h);
  if (h.magic != opt::kPreparedMagic || !h.usable || p.depth <= 0) {
    ReferenceKernelBackend::softmax(p);
    return;
  }
  const auto& t = *reinterpret_cast<const opt::SoftmaxTables*>(p.prepared.data() + opt::kPreparedHeaderBytes);
  if (p.dtype == DType::int8) opt::run_rows<int8_t>(p, t);
  else opt::run_rows<uint8_t>(p, t);
}

}  // namespace aisrv::engine::cpu
