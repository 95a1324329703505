// aisrv CPU engine, optimised kernels — binary element-wise operators on contiguous streams: int8 / uint8 MUL, SUB
// (and the ADD form TensorFlow Lite's uint8 SUB takes: a negated input-2 multiplier), float32 ADD, SUB, MUL, MAXIMUM,
// MINIMUM, with any numpy broadcast. The output is walked as rows of its trailing dimensions along which each input
// is either a stream (the output's sizes) or one value (only 1s): same shapes are one row, a scalar operand is one
// value for the whole tensor, per-channel [1, 1, 1, C] against [1, H, W, C] gives rows of C, an outer product such as
// [48, 48, 1] - [1, 1, 17] rows of 17 with one value of the first input each. A row's scalar is centred or rescaled
// once. Everything else (int16, int32, int64, DIV, FLOOR_DIV, SQUARED_DIFFERENCE, PRELU, 8-bit MAXIMUM / MINIMUM,
// parameters outside the ranges proved below) runs the reference kernel.
//
// Exactness: per element the reference's integer operations (kernels/ref/binary.cpp) with the same roundings —
//   MUL      (x1 + offset1) * (x2 + offset2) in int32 (both factors fit int16: the offsets are checked to lie in
//            [-255, 255], so |product| < 2^18); for shift >= 0, x << shift saturating at the int32 range; the
//            rounding doubling high multiply round(x * m / 2^31) with ties upwards, which equals
//            floor((x * m + 2^30) / 2^31) for every x, m but m = x = INT32_MIN (m < 0 is refused); for shift < 0 the
//            rounding right shift (ties away from zero); + output offset and clamp (the reference's int64 sum and
//            clamp give the same value as a clamp to [act_min - offset, act_max - offset] plus offset, or as
//            saturating int16 arithmetic, since offset and bounds are byte-sized);
//   ADD/SUB  both inputs (value + offset) << left_shift (left_shift <= 20: |value| < 2^29), each rescaled by its
//            multiplier (any sign but INT32_MIN) and right shift, summed or subtracted, rescaled, offset, clamped;
//   float32  one IEEE operation per element in the reference's operand order, then its clamp
//            min(max(v, lo), hi) spelt as the same comparisons (MAXPS / MINPS and NEON compare-and-select keep the
//            reference's NaN and signed-zero choices); no fused multiply-add.
// Levels: portable (scalar loops on the reference's fixed-point helpers), AVX2 (16 elements per step: bytes widened
// to int16, products by VPMULLW / VPMULHW interleaved into int32 lanes, high multiply by VPMULDQ on even and odd
// lanes), NEON (SMULL, SQSHL, SQRDMULH, SRSHL). Large tensors are split across the worker pool.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "optimized_backend.hpp"
#include "scalar_ops.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AISRV_BINARY_AVX2 1
#define AISRV_AVX2_FN __attribute__((target("avx2")))
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace aisrv::engine::cpu {

namespace {

using opt::element;

constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();

// How the rescaled inputs of ADD / SUB combine. "Full" is the operand that streams along every row, "other" the
// second stream or the one value per row.
enum class Combine : uint8_t { sum, full_minus_other, other_minus_full };

// Everything one call needs, made once per operator invocation.
struct Plan;
using RunFn = void (*)(const Plan& plan, const uint8_t* full, const uint8_t* other, uint8_t* out, int64_t n);

struct Plan {
  // The output as rows of `inner` elements (its trailing dimensions), the rows indexed by the leading `outer_rank`
  // dimensions. Along a row the full operand is a stream; the other one is a stream too, or (other_scalar) one value
  // repeated. full_stride / other_stride: elements per step of each leading dimension (0 where it broadcasts).
  const uint8_t* full = nullptr;
  const uint8_t* other = nullptr;
  uint8_t* out = nullptr;
  int64_t count = 0;  // output elements
  int64_t inner = 0;
  int outer_rank = 0;
  std::array<int32_t, kMaxRank> outer_dims{};
  std::array<int64_t, kMaxRank> full_stride{}, other_stride{};
  bool other_scalar = false;
  size_t element_bytes = 1;
  // Cost of an element in the pool's measure (a convolution's multiply-accumulates, ~0.02 ns each with AVX2): MUL
  // ~0.23 ns, SUB ~0.5-0.8 ns, float32 ~0.25 ns (memory-bound).
  uint64_t work_per_element = 1;
  RunFn run = nullptr;  // on `n` elements of full and other (other unused when it is a scalar)

  // 8-bit
  bool is_unsigned = false, is_mul = false;
  int32_t full_offset = 0, other_offset = 0, output_offset = 0, act_min = 0, act_max = 0;
  int32_t multiplier = 0, shift = 0;  // MUL
  int32_t left_shift = 0;             // ADD / SUB: multipliers and right shifts (>= 0) of full, other, output
  int32_t full_multiplier = 0, full_right = 0, other_multiplier = 0, other_right = 0;
  int32_t output_multiplier = 0, output_right = 0;
  Combine combine = Combine::sum;
  // A scalar other operand, set per row (set_constant): MUL its value + offset; ADD / SUB its rescaled value,
  // negated for full - other (the loops compute constant + s or constant - s).
  int32_t constant = 0;

  // float32
  bool is_float = false;
  float lo = 0.0f, hi = 0.0f;
  float float_constant = 0.0f;
};

// ---- per-element formulas (the reference's), used by the portable level and every level's tail ----------------

// MultiplyByQuantizedMultiplier with a left shift that saturates (the reference's MUL requantization).
int32_t requantize_mul(int32_t product, int32_t multiplier, int32_t shift) {
  const int left = std::max(shift, 0);
  const int64_t shifted =
      std::clamp<int64_t>(int64_t{product} * (int64_t{1} << left), kInt32Min, kInt32Max);
  return fp::rounding_divide_by_pot(
      fp::saturating_rounding_doubling_high_mul(static_cast<int32_t>(shifted), multiplier), std::max(-shift, 0));
}

int32_t mul_element(const Plan& p, int32_t full_centred, int32_t other_centred) {
  const int32_t v = requantize_mul(full_centred * other_centred, p.multiplier, p.shift);
  return std::clamp(v, p.act_min - p.output_offset, p.act_max - p.output_offset) + p.output_offset;
}

int32_t rescale_input(int32_t centred, int32_t left_shift, int32_t multiplier, int32_t right) {
  return fp::rounding_divide_by_pot(fp::saturating_rounding_doubling_high_mul(centred * (1 << left_shift), multiplier),
                                    right);
}

int32_t add_sub_output(const Plan& p, int32_t raw) {
  const int32_t v =
      fp::rounding_divide_by_pot(fp::saturating_rounding_doubling_high_mul(raw, p.output_multiplier), p.output_right);
  return std::clamp(v + p.output_offset, p.act_min, p.act_max);
}

int32_t combine(Combine c, int32_t full, int32_t other) {
  switch (c) {
    case Combine::sum: return full + other;
    case Combine::full_minus_other: return full - other;
    default: return other - full;
  }
}

template <bool U>
int32_t rescale_full(const Plan& p, uint8_t v) {
  return rescale_input(element<U>(v) + p.full_offset, p.left_shift, p.full_multiplier, p.full_right);
}
template <bool U>
int32_t rescale_other(const Plan& p, uint8_t v) {
  return rescale_input(element<U>(v) + p.other_offset, p.left_shift, p.other_multiplier, p.other_right);
}

// The reference's float expressions: its clamp, MAXIMUM and MINIMUM as the comparisons std::max / std::min make.
inline float clamp_float(float v, float lo, float hi) {
  const float raised = v < lo ? lo : v;
  return hi < raised ? hi : raised;
}

template <BinaryOp Op>
inline float float_op(float a, float b, float lo, float hi) {
  if constexpr (Op == BinaryOp::add) return clamp_float(a + b, lo, hi);
  else if constexpr (Op == BinaryOp::sub) return clamp_float(a - b, lo, hi);
  else if constexpr (Op == BinaryOp::mul) return clamp_float(a * b, lo, hi);
  else if constexpr (Op == BinaryOp::maximum) return a > b ? a : b;
  else return a < b ? a : b;
}

// Element i of a float stream in the reference's operand order (input 1 first).
template <BinaryOp Op, bool kScalar, bool kOtherFirst>
inline float float_element(const Plan& p, const float* f, const float* o, int64_t i) {
  const float other = kScalar ? p.float_constant : o[i];
  return kOtherFirst ? float_op<Op>(other, f[i], p.lo, p.hi) : float_op<Op>(f[i], other, p.lo, p.hi);
}

template <bool U, bool kScalar>
inline uint8_t mul_tail(const Plan& p, const uint8_t* f, const uint8_t* o, int64_t i) {
  const int32_t other = kScalar ? p.constant : element<U>(o[i]) + p.other_offset;
  return static_cast<uint8_t>(mul_element(p, element<U>(f[i]) + p.full_offset, other));
}

// kScalar: constant + s (Combine::sum) or constant - s (other_minus_full); else the streams' combination.
template <bool U, Combine C, bool kScalar>
inline uint8_t add_sub_tail(const Plan& p, const uint8_t* f, const uint8_t* o, int64_t i) {
  const int32_t s = rescale_full<U>(p, f[i]);
  int32_t raw = 0;
  if constexpr (kScalar) raw = C == Combine::sum ? p.constant + s : p.constant - s;
  else raw = combine(C, s, rescale_other<U>(p, o[i]));
  return static_cast<uint8_t>(add_sub_output(p, raw));
}

// ---- portable level -------------------------------------------------------------------------------------------

struct Portable {
  template <bool U, bool kScalar, bool kLeft>
  static void mul(const Plan& p, const uint8_t* f, const uint8_t* o, uint8_t* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = mul_tail<U, kScalar>(p, f, o, i);
  }
  template <bool U, Combine C, bool kScalar>
  static void add_sub(const Plan& p, const uint8_t* f, const uint8_t* o, uint8_t* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = add_sub_tail<U, C, kScalar>(p, f, o, i);
  }
  template <BinaryOp Op, bool kScalar, bool kOtherFirst>
  static void arith_float(const Plan& p, const uint8_t* f, const uint8_t* o, uint8_t* out, int64_t n) {
    const auto* fv = reinterpret_cast<const float*>(f);
    const auto* ov = reinterpret_cast<const float*>(o);
    auto* dst = reinterpret_cast<float*>(out);
    for (int64_t i = 0; i < n; ++i) dst[i] = float_element<Op, kScalar, kOtherFirst>(p, fv, ov, i);
  }
};

// ---- AVX2 level -----------------------------------------------------------------------------------------------

#if defined(AISRV_BINARY_AVX2)

// round(x * m / 2^31) with ties upwards = floor((x * m + 2^30) / 2^31), m the same in every lane: VPMULDQ on the
// even lanes and (after moving them down) on the odd lanes; bits 31..62 of each 64-bit sum are the result, taken by
// a right shift (even) or a left shift by one into the upper half (odd).
AISRV_AVX2_FN inline __m256i high_mul(__m256i x, __m256i m) {
  const __m256i nudge = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, m), nudge), 31);
  const __m256i odd = _mm256_slli_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), m), nudge), 1);
  return _mm256_blend_epi32(even, odd, 0xAA);
}

// fp::rounding_divide_by_pot by the same exponent in every lane.
struct RightShift8 {
  __m256i mask, threshold;
  __m128i count;
};

AISRV_AVX2_FN inline RightShift8 right_shift8(int32_t exponent) {
  const auto mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  return {_mm256_set1_epi32(mask), _mm256_set1_epi32(mask >> 1), _mm_cvtsi32_si128(exponent)};
}

AISRV_AVX2_FN inline __m256i divide_by_pot(__m256i x, const RightShift8& r) {
  const __m256i remainder = _mm256_and_si256(x, r.mask);
  const __m256i threshold = _mm256_add_epi32(r.threshold, _mm256_srli_epi32(x, 31));
  return _mm256_sub_epi32(_mm256_sra_epi32(x, r.count), _mm256_cmpgt_epi32(remainder, threshold));
}

// 16 bytes -> 16 int16 lanes.
template <bool U>
AISRV_AVX2_FN inline __m256i widen16(const uint8_t* src) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  return U ? _mm256_cvtepu8_epi16(v) : _mm256_cvtepi8_epi16(v);
}

// Two groups of 16 int16 lanes (inside the byte range) -> 32 bytes in order.
template <bool U>
AISRV_AVX2_FN inline void store32(uint8_t* out, __m256i w0, __m256i w1) {
  const __m256i b = U ? _mm256_packus_epi16(w0, w1) : _mm256_packs_epi16(w0, w1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute4x64_epi64(b, 0xD8));
}

template <bool U>
AISRV_AVX2_FN inline void store16(uint8_t* out, __m256i w) {
  const __m256i b = U ? _mm256_packus_epi16(w, w) : _mm256_packs_epi16(w, w);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(_mm256_permute4x64_epi64(b, 0xD8)));
}

struct MulVectors {
  __m256i full_offset, other_offset, constant;  // int16 lanes
  __m256i multiplier;
  __m128i left, right;
  __m256i over, under, int_max, int_min;  // saturation of the left shift
  __m256i nudge;                          // 2^(right - 1)
  __m256i offset, low, high;              // int16 lanes: output offset, act_min, act_max
};

AISRV_AVX2_FN inline MulVectors mul_vectors(const Plan& p) {
  MulVectors v;
  v.full_offset = _mm256_set1_epi16(static_cast<int16_t>(p.full_offset));
  v.other_offset = _mm256_set1_epi16(static_cast<int16_t>(p.other_offset));
  v.constant = _mm256_set1_epi16(static_cast<int16_t>(p.constant));
  v.multiplier = _mm256_set1_epi32(p.multiplier);
  const int32_t left = std::max(p.shift, 0), right = std::max(-p.shift, 0);
  v.left = _mm_cvtsi32_si128(left);
  v.right = _mm_cvtsi32_si128(right);
  v.over = _mm256_set1_epi32(kInt32Max >> left);
  v.under = _mm256_set1_epi32(kInt32Min >> left);
  v.int_max = _mm256_set1_epi32(kInt32Max);
  v.int_min = _mm256_set1_epi32(kInt32Min);
  v.nudge = _mm256_set1_epi32(right > 0 ? int32_t{1} << (right - 1) : 0);
  v.offset = _mm256_set1_epi16(static_cast<int16_t>(p.output_offset));
  v.low = _mm256_set1_epi16(static_cast<int16_t>(p.act_min));
  v.high = _mm256_set1_epi16(static_cast<int16_t>(p.act_max));
  return v;
}

// The product requantized, before the output offset and clamp. kLeft (shift >= 0): the saturating left shift, then
// the high multiply. Otherwise (shift < 0) the high multiply, whose result is at most the product in magnitude
// (< 2^18), then the rounding right shift as (x + 2^(e-1) - [x < 0]) >> e: the same rounding (ties away from zero)
// as rounding_divide_by_pot, and no overflow at that magnitude.
template <bool kLeft>
AISRV_AVX2_FN inline __m256i requantize_mul8(__m256i product, const MulVectors& v) {
  if constexpr (kLeft) {
    __m256i x = _mm256_sll_epi32(product, v.left);
    x = _mm256_blendv_epi8(x, v.int_max, _mm256_cmpgt_epi32(product, v.over));
    x = _mm256_blendv_epi8(x, v.int_min, _mm256_cmpgt_epi32(v.under, product));
    return high_mul(x, v.multiplier);
  } else {
    const __m256i x = high_mul(product, v.multiplier);
    return _mm256_sra_epi32(_mm256_add_epi32(_mm256_add_epi32(x, v.nudge), _mm256_srai_epi32(x, 31)), v.right);
  }
}

// 16 outputs as int16 lanes in order. The 32-bit products come out of the low / high halves interleaved (elements
// 0-3, 8-11 and 4-7, 12-15); VPACKSSDW puts them back in order. The offset and clamp then run on int16 lanes with
// saturation: the offset is within [-255, 255] and the bounds within the byte range, so a saturated lane is beyond
// the bound it is clamped to either way (the reference's int64 sum and clamp give the same bound).
template <bool U, bool kScalar, bool kLeft>
AISRV_AVX2_FN inline __m256i mul16(const MulVectors& v, const uint8_t* f, const uint8_t* o) {
  const __m256i a = _mm256_add_epi16(widen16<U>(f), v.full_offset);
  const __m256i b = kScalar ? v.constant : _mm256_add_epi16(widen16<U>(o), v.other_offset);
  const __m256i lo = _mm256_mullo_epi16(a, b), hi = _mm256_mulhi_epi16(a, b);
  const __m256i w = _mm256_packs_epi32(requantize_mul8<kLeft>(_mm256_unpacklo_epi16(lo, hi), v),
                                       requantize_mul8<kLeft>(_mm256_unpackhi_epi16(lo, hi), v));
  return _mm256_min_epi16(_mm256_max_epi16(_mm256_adds_epi16(w, v.offset), v.low), v.high);
}

struct AddSubVectors {
  __m256i full_offset, other_offset;  // int16 lanes
  __m128i down, up;                   // (value << 16) >> down << up = value << left_shift
  __m256i full_multiplier, other_multiplier, output_multiplier;
  RightShift8 full_right, other_right, output_right;
  __m256i constant;
  __m256i low, high, offset;
};

AISRV_AVX2_FN inline AddSubVectors add_sub_vectors(const Plan& p) {
  AddSubVectors v;
  v.full_offset = _mm256_set1_epi16(static_cast<int16_t>(p.full_offset));
  v.other_offset = _mm256_set1_epi16(static_cast<int16_t>(p.other_offset));
  v.down = _mm_cvtsi32_si128(16 - std::min(p.left_shift, 16));
  v.up = _mm_cvtsi32_si128(std::max(p.left_shift - 16, 0));
  v.full_multiplier = _mm256_set1_epi32(p.full_multiplier);
  v.other_multiplier = _mm256_set1_epi32(p.other_multiplier);
  v.output_multiplier = _mm256_set1_epi32(p.output_multiplier);
  v.full_right = right_shift8(p.full_right);
  v.other_right = right_shift8(p.other_right);
  v.output_right = right_shift8(p.output_right);
  v.constant = _mm256_set1_epi32(p.constant);
  v.low = _mm256_set1_epi32(p.act_min - p.output_offset);
  v.high = _mm256_set1_epi32(p.act_max - p.output_offset);
  v.offset = _mm256_set1_epi32(p.output_offset);
  return v;
}

// int16 lanes placed in the upper half of int32 lanes (value * 2^16) -> value * 2^left_shift, rescaled.
AISRV_AVX2_FN inline __m256i rescale8(__m256i high_halves, const AddSubVectors& v, __m256i multiplier,
                                      const RightShift8& right) {
  const __m256i shifted = _mm256_sll_epi32(_mm256_sra_epi32(high_halves, v.down), v.up);
  return divide_by_pot(high_mul(shifted, multiplier), right);
}

template <Combine C, bool kScalar>
AISRV_AVX2_FN inline __m256i add_sub_output8(__m256i full, __m256i other, const AddSubVectors& v) {
  __m256i raw;
  if constexpr (kScalar)
    raw = C == Combine::sum ? _mm256_add_epi32(v.constant, full) : _mm256_sub_epi32(v.constant, full);
  else if constexpr (C == Combine::sum) raw = _mm256_add_epi32(full, other);
  else if constexpr (C == Combine::full_minus_other) raw = _mm256_sub_epi32(full, other);
  else raw = _mm256_sub_epi32(other, full);
  __m256i x = divide_by_pot(high_mul(raw, v.output_multiplier), v.output_right);
  x = _mm256_min_epi32(_mm256_max_epi32(x, v.low), v.high);
  return _mm256_add_epi32(x, v.offset);
}

// 16 outputs as int16 lanes in order (interleaved halves as in mul16).
template <bool U, Combine C, bool kScalar>
AISRV_AVX2_FN inline __m256i add_sub16(const AddSubVectors& v, const uint8_t* f, const uint8_t* o) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i a = _mm256_add_epi16(widen16<U>(f), v.full_offset);
  const __m256i a0 = rescale8(_mm256_unpacklo_epi16(zero, a), v, v.full_multiplier, v.full_right);
  const __m256i a1 = rescale8(_mm256_unpackhi_epi16(zero, a), v, v.full_multiplier, v.full_right);
  __m256i b0 = zero, b1 = zero;
  if constexpr (!kScalar) {
    const __m256i b = _mm256_add_epi16(widen16<U>(o), v.other_offset);
    b0 = rescale8(_mm256_unpacklo_epi16(zero, b), v, v.other_multiplier, v.other_right);
    b1 = rescale8(_mm256_unpackhi_epi16(zero, b), v, v.other_multiplier, v.other_right);
  }
  return _mm256_packs_epi32(add_sub_output8<C, kScalar>(a0, b0, v), add_sub_output8<C, kScalar>(a1, b1, v));
}

template <BinaryOp Op>
AISRV_AVX2_FN inline __m256 float_op8(__m256 a, __m256 b, __m256 lo, __m256 hi) {
  // VMAXPS(x, y) = x > y ? x : y and VMINPS(x, y) = x < y ? x : y, NaN and signed zeros included.
  if constexpr (Op == BinaryOp::maximum) return _mm256_max_ps(a, b);
  else if constexpr (Op == BinaryOp::minimum) return _mm256_min_ps(a, b);
  else {
    __m256 v;
    if constexpr (Op == BinaryOp::add) v = _mm256_add_ps(a, b);
    else if constexpr (Op == BinaryOp::sub) v = _mm256_sub_ps(a, b);
    else v = _mm256_mul_ps(a, b);
    return _mm256_min_ps(hi, _mm256_max_ps(lo, v));  // v < lo ? lo : v, then hi < that ? hi : that
  }
}

struct Avx2 {
  template <bool U, bool kScalar, bool kLeft>
  AISRV_AVX2_FN static void mul(const Plan& p, const uint8_t* f, const uint8_t* o, uint8_t* out, int64_t n) {
    const MulVectors v = mul_vectors(p);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
      store32<U>(out + i, mul16<U, kScalar, kLeft>(v, f + i, o + i),
                 mul16<U, kScalar, kLeft>(v, f + i + 16, o + i + 16));
    if (i + 16 <= n) {
      store16<U>(out + i, mul16<U, kScalar, kLeft>(v, f + i, o + i));
      i += 16;
    }
    for (; i < n; ++i) out[i] = mul_tail<U, kScalar>(p, f, o, i);
  }

  template <bool U, Combine C, bool kScalar>
  AISRV_AVX2_FN static void add_sub(const Plan& p, const uint8_t* f, const uint8_t* o, uint8_t* out, int64_t n) {
    const AddSubVectors v = add_sub_vectors(p);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
      store32<U>(out + i, add_sub16<U, C, kScalar>(v, f + i, o + i),
                 add_sub16<U, C, kScalar>(v, f + i + 16, o + i + 16));
    if (i + 16 <= n) {
      store16<U>(out + i, add_sub16<U, C, kScalar>(v, f + i, o + i));
      i += 16;
    }
    for (; i < n; ++i) out[i] = add_sub_tail<U, C, kScalar>(p, f, o, i);
  }

  template <BinaryOp Op, bool kScalar, bool kOtherFirst>
  AISRV_AVX2_FN static void arith_float(const Plan& p, const uint8_t* f, const uint8_t* o, uint8_t* out, int64_t n) {
    const auto* fv = reinterpret_cast<const float*>(f);
    const auto* ov = reinterpret_cast<const float*>(o);
    auto* dst = reinterpret_cast<float*>(out);
    const __m256 lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi), c = _mm256_set1_ps(p.float_constant);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const __m256 full = _mm256_loadu_ps(fv + i);
      const __m256 other = kScalar ? c : _mm256_loadu_ps(ov + i);
      _mm256_storeu_ps(dst + i, kOtherFirst ? float_op8<Op>(other, full, lo, hi) : float_op8<Op>(full, other, lo, hi));
    }
    for (; i < n; ++i) dst[i] = float_element<Op, kScalar, kOtherFirst>(p, fv, ov, i);
  }
};

#endif  // AISRV_BINARY_AVX2

// ---- NEON level ----------------------------------------------------------------------------------------------

#if defined(__aarch64__)

// fp::rounding_divide_by_pot lane-wise; `right` holds -exponent. SRSHL rounds ties upwards; adding -1 to negative
// lanes first (when the exponent is > 0) makes that away from zero (SQADD: INT32_MIN stays, its remainder is 0).
inline int32x4_t divide_by_pot4(int32x4_t x, int32x4_t right) {
  const int32x4_t fixup = vshrq_n_s32(vandq_s32(x, right), 31);
  return vrshlq_s32(vqaddq_s32(x, fixup), right);
}

template <bool U>
inline int16x8_t widen8(const uint8_t* src) {
  const uint8x8_t v = vld1_u8(src);
  if constexpr (U) return vreinterpretq_s16_u16(vmovl_u8(v));
  else return vmovl_s8(vreinterpret_s8_u8(v));
}

// 8 int32 lanes inside the byte range -> 8 bytes.
template <bool U>
inline void store8(uint8_t* out, int32x4_t lo, int32x4_t hi) {
  const int16x8_t w = vcombine_s16(vmovn_s32(lo), vmovn_s32(hi));
  if constexpr (U) vst1_u8(out, vqmovun_s16(w));
  else vst1_u8(out, vreinterpret_u8_s8(vqmovn_s16(w)));
}

struct NeonMul {
  int16x8_t full_offset, other_offset, constant;
  int32x4_t multiplier, left, right, low, high, offset;
};

template <bool kLeft>
inline int32x4_t requantize_mul4(int32x4_t product, const NeonMul& v) {
  // SQSHL saturates the left shift at the int32 range, as the reference's MUL does; SQRDMULH is the rounding
  // doubling high multiply (saturating only for INT32_MIN^2, as the reference).
  int32x4_t x = kLeft ? vqrdmulhq_s32(vqshlq_s32(product, v.left), v.multiplier)
                      : divide_by_pot4(vqrdmulhq_s32(product, v.multiplier), v.right);
  x = vminq_s32(vmaxq_s32(x, v.low), v.high);
  return vaddq_s32(x, v.offset);
}

struct NeonAddSub {
  int16x8_t full_offset, other_offset;
  int32x4_t left, full_multiplier, full_right, other_multiplier, other_right, output_multiplier, output_right;
  int32x4_t constant, low, high, offset;
};

inline int32x4_t rescale4(int16x4_t centred, const NeonAddSub& v, int32x4_t multiplier, int32x4_t right) {
  return divide_by_pot4(vqrdmulhq_s32(vshlq_s32(vmovl_s16(centred), v.left), multiplier), right);
}

template <Combine C, bool kScalar>
inline int32x4_t add_sub_output4(int32x4_t full, int32x4_t other, const NeonAddSub& v) {
  int32x4_t raw;
  if constexpr (kScalar) raw = C == Combine::sum ? vaddq_s32(v.constant, full) : vsubq_s32(v.constant, full);
  else if constexpr (C == Combine::sum) raw = vaddq_s32(full, other);
  else if constexpr (C == Combine::full_minus_other) raw = vsubq_s32(full, other);
  else raw = vsubq_s32(other, full);
  int32x4_t x = divide_by_pot4(vqrdmulhq_s32(raw, v.output_multiplier), v.output_right);
  x = vminq_s32(vmaxq_s32(x, v.low), v.high);
  return vaddq_s32(x, v.offset);
}

template <BinaryOp Op>
inline float32x4_t float_op4(float32x4_t a, float32x4_t b, float32x4_t lo, float32x4_t hi) {
  // Compare-and-select spells the reference's comparisons (FMAX / FMIN would return NaN for any NaN operand).
  if constexpr (Op == BinaryOp::maximum) return vbslq_f32(vcgtq_f32(a, b), a, b);
  else if constexpr (Op == BinaryOp::minimum) return vbslq_f32(vcltq_f32(a, b), a, b);
  else {
    float32x4_t v;
    if constexpr (Op == BinaryOp::add) v = vaddq_f32(a, b);
    else if constexpr (Op == BinaryOp::sub) v = vsubq_f32(a, b);
    else v = vmulq_f32(a, b);
    const float32x4_t raised = vbslq_f32(vcltq_f32(v, lo), lo, v);
    return vbslq_f32(vcltq_f32(hi, raised), hi, raised);
  }
}

struct Neon {
  template <bool U, bool kScalar, bool kLeft>
  static void mul(const Plan& p, const uint8_t* f, const uint8_t* o, uint8_t* out, int64_t n) {
    NeonMul v;
    v.full_offset = vdupq_n_s16(static_cast<int16_t>(p.full_offset));
    v.other_offset = vdupq_n_s16(static_cast<int16_t>(p.other_offset));
    v.constant = vdupq_n_s16(static_cast<int16_t>(p.constant));
    v.multiplier = vdupq_n_s32(p.multiplier);
    v.left = vdupq_n_s32(std::max(p.shift, 0));
    v.right = vdupq_n_s32(std::min(p.shift, 0));
    v.low = vdupq_n_s32(p.act_min - p.output_offset);
    v.high = vdupq_n_s32(p.act_max - p.output_offset);
    v.offset = vdupq_n_s32(p.output_offset);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const int16x8_t a = vaddq_s16(widen8<U>(f + i), v.full_offset);
      const int16x8_t b = kScalar ? v.constant : vaddq_s16(widen8<U>(o + i), v.other_offset);
      store8<U>(out + i, requantize_mul4<kLeft>(vmull_s16(vget_low_s16(a), vget_low_s16(b)), v),
                requantize_mul4<kLeft>(vmull_high_s16(a, b), v));
    }
    for (; i < n; ++i) out[i] = mul_tail<U, kScalar>(p, f, o, i);
  }

  template <bool U, Combine C, bool kScalar>
  static void add_sub(const Plan& p, const uint8_t* f, const uint8_t* o, uint8_t* out, int64_t n) {
    NeonAddSub v;
    v.full_offset = vdupq_n_s16(static_cast<int16_t>(p.full_offset));
    v.other_offset = vdupq_n_s16(static_cast<int16_t>(p.other_offset));
    v.left = vdupq_n_s32(p.left_shift);
    v.full_multiplier = vdupq_n_s32(p.full_multiplier);
    v.full_right = vdupq_n_s32(-p.full_right);
    v.other_multiplier = vdupq_n_s32(p.other_multiplier);
    v.other_right = vdupq_n_s32(-p.other_right);
    v.output_multiplier = vdupq_n_s32(p.output_multiplier);
    v.output_right = vdupq_n_s32(-p.output_right);
    v.constant = vdupq_n_s32(p.constant);
    v.low = vdupq_n_s32(p.act_min - p.output_offset);
    v.high = vdupq_n_s32(p.act_max - p.output_offset);
    v.offset = vdupq_n_s32(p.output_offset);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const int16x8_t a = vaddq_s16(widen8<U>(f + i), v.full_offset);
      const int32x4_t a0 = rescale4(vget_low_s16(a), v, v.full_multiplier, v.full_right);
      const int32x4_t a1 = rescale4(vget_high_s16(a), v, v.full_multiplier, v.full_right);
      int32x4_t b0 = vdupq_n_s32(0), b1 = b0;
      if constexpr (!kScalar) {
        const int16x8_t b = vaddq_s16(widen8<U>(o + i), v.other_offset);
        b0 = rescale4(vget_low_s16(b), v, v.other_multiplier, v.other_right);
        b1 = rescale4(vget_high_s16(b), v, v.other_multiplier, v.other_right);
      }
      store8<U>(out + i, add_sub_output4<C, kScalar>(a0, b0, v), add_sub_output4<C, kScalar>(a1, b1, v));
    }
    for (; i < n; ++i) out[i] = add_sub_tail<U, C, kScalar>(p, f, o, i);
  }

  template <BinaryOp Op, bool kScalar, bool kOtherFirst>
  static void arith_float(const Plan& p, const uint8_t* f, const uint8_t* o, uint8_t* out, int64_t n) {
    const auto* fv = reinterpret_cast<const float*>(f);
    const auto* ov = reinterpret_cast<const float*>(o);
    auto* dst = reinterpret_cast<float*>(out);
    const float32x4_t lo = vdupq_n_f32(p.lo), hi = vdupq_n_f32(p.hi), c = vdupq_n_f32(p.float_constant);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      const float32x4_t full = vld1q_f32(fv + i);
      const float32x4_t other = kScalar ? c : vld1q_f32(ov + i);
      vst1q_f32(dst + i, kOtherFirst ? float_op4<Op>(other, full, lo, hi) : float_op4<Op>(full, other, lo, hi));
    }
    for (; i < n; ++i) dst[i] = float_element<Op, kScalar, kOtherFirst>(p, fv, ov, i);
  }
};

#endif  // __aarch64__

// ---- choosing the loop ------------------------------------------------------------------------------------------

template <typename L, bool U, bool kScalar>
RunFn pick_mul(bool left) {
  return left ? &L::template mul<U, kScalar, true> : &L::template mul<U, kScalar, false>;
}

template <typename L, bool U>
RunFn pick_add_sub(Combine c, bool scalar) {
  if (scalar)  // the constant form: constant + s, or constant - s
    return c == Combine::other_minus_full ? &L::template add_sub<U, Combine::other_minus_full, true>
                                          : &L::template add_sub<U, Combine::sum, true>;
  switch (c) {
    case Combine::sum: return &L::template add_sub<U, Combine::sum, false>;
    case Combine::full_minus_other: return &L::template add_sub<U, Combine::full_minus_other, false>;
    default: return &L::template add_sub<U, Combine::other_minus_full, false>;
  }
}

template <typename L, BinaryOp Op>
RunFn pick_float_op(bool scalar, bool other_first) {
  if (scalar)
    return other_first ? &L::template arith_float<Op, true, true> : &L::template arith_float<Op, true, false>;
  return other_first ? &L::template arith_float<Op, false, true> : &L::template arith_float<Op, false, false>;
}

template <typename L>
RunFn pick(const BinaryParams& bp, const Plan& p, bool other_first) {
  const bool scalar = p.other_scalar;
  if (bp.dtype == DType::float32) {
    switch (bp.op) {
      case BinaryOp::add: return pick_float_op<L, BinaryOp::add>(scalar, other_first);
      case BinaryOp::sub: return pick_float_op<L, BinaryOp::sub>(scalar, other_first);
      case BinaryOp::mul: return pick_float_op<L, BinaryOp::mul>(scalar, other_first);
      case BinaryOp::maximum: return pick_float_op<L, BinaryOp::maximum>(scalar, other_first);
      default: return pick_float_op<L, BinaryOp::minimum>(scalar, other_first);
    }
  }
  const bool u = bp.dtype == DType::uint8;
  if (bp.op == BinaryOp::mul) {
    const bool left = p.shift >= 0;
    if (u) return scalar ? pick_mul<L, true, true>(left) : pick_mul<L, true, false>(left);
    return scalar ? pick_mul<L, false, true>(left) : pick_mul<L, false, false>(left);
  }
  return u ? pick_add_sub<L, true>(p.combine, scalar) : pick_add_sub<L, false>(p.combine, scalar);
}

bool in_range(int32_t v, int32_t lo, int32_t hi) { return v >= lo && v <= hi; }

// The parameters the 8-bit loops rely on (see the file comment); the loader's values always meet them.
bool quantized_ok(const BinaryParams& p) {
  const int32_t lowest = p.dtype == DType::int8 ? -128 : 0, highest = p.dtype == DType::int8 ? 127 : 255;
  if (!in_range(p.input1_offset, -255, 255) || !in_range(p.input2_offset, -255, 255) ||
      !in_range(p.output_offset, -255, 255) || !in_range(p.act_min, lowest, highest) ||
      !in_range(p.act_max, p.act_min, highest))
    return false;
  if (p.op == BinaryOp::mul) return p.output_multiplier >= 0 && in_range(p.output_shift, -31, 30);
  return in_range(p.left_shift, 0, 20) && p.input1_multiplier != kInt32Min && p.input2_multiplier != kInt32Min &&
         p.output_multiplier != kInt32Min && in_range(p.input1_shift, -31, 0) && in_range(p.input2_shift, -31, 0) &&
         in_range(p.output_shift, -31, 0);
}

bool op_supported(const BinaryParams& p) {
  switch (p.dtype) {
    case DType::int8:
    case DType::uint8:
      return (p.op == BinaryOp::mul || p.op == BinaryOp::sub || p.op == BinaryOp::add) && quantized_ok(p);
    case DType::float32:
      return p.op == BinaryOp::add || p.op == BinaryOp::sub || p.op == BinaryOp::mul || p.op == BinaryOp::maximum ||
             p.op == BinaryOp::minimum;
    default: return false;
  }
}

// The row decomposition of a broadcast (numpy rules, shapes of the loader's kMaxRank form): the inner block is the
// longest run of trailing dimensions along which each input either has the output's sizes (a stream) or only 1s
// (one value per row); the remaining leading dimensions index the rows. False for shapes that do not broadcast.
bool walk_of(const BinaryParams& bp, Plan* w, bool* other_first) {
  const Shape &s1 = bp.input1_shape, &s2 = bp.input2_shape, &so = bp.output_shape;
  if (s1.rank != kMaxRank || s2.rank != kMaxRank || so.rank != kMaxRank || so.elements() <= 0) return false;
  for (int d = 0; d < kMaxRank; ++d)
    if ((s1[d] != so[d] && s1[d] != 1) || (s2[d] != so[d] && s2[d] != 1)) return false;
  enum class Along { unknown, stream, repeat };
  Along a1 = Along::unknown, a2 = Along::unknown;
  int64_t inner = 1;
  int split = kMaxRank;
  for (; split > 0; --split) {
    const int d = split - 1;
    if (so[d] == 1) continue;  // both inputs are 1 there too
    const Along b1 = s1[d] == so[d] ? Along::stream : Along::repeat;
    const Along b2 = s2[d] == so[d] ? Along::stream : Along::repeat;
    if ((a1 != Along::unknown && b1 != a1) || (a2 != Along::unknown && b2 != a2)) break;
    a1 = b1;
    a2 = b2;
    inner *= so[d];
  }
  // At least one input is a stream wherever the output is not 1; that one is "full".
  *other_first = a1 == Along::repeat;
  w->other_scalar = a1 == Along::repeat || a2 == Along::repeat;
  w->inner = inner;
  w->outer_rank = split;
  const Shape& full = *other_first ? s2 : s1;
  const Shape& other = *other_first ? s1 : s2;
  int64_t full_step = 1, other_step = 1;
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d < split) {
      w->outer_dims[static_cast<size_t>(d)] = so[d];
      w->full_stride[static_cast<size_t>(d)] = full[d] == 1 ? 0 : full_step;
      w->other_stride[static_cast<size_t>(d)] = other[d] == 1 ? 0 : other_step;
    }
    full_step *= full[d];
    other_step *= other[d];
  }
  return true;
}

bool fast_path(const BinaryParams& bp) {
  Plan w;
  bool other_first = false;
  return op_supported(bp) && walk_of(bp, &w, &other_first);
}

// The plan of `bp` for level `L`'s loops; run == nullptr when the reference kernel must run.
template <typename L>
Plan plan_for(const BinaryParams& bp) {
  Plan p;
  bool other_first = false;  // whether the "other" operand is input 1
  if (!op_supported(bp) || !walk_of(bp, &p, &other_first)) return p;
  p.full = static_cast<const uint8_t*>(other_first ? bp.input2 : bp.input1);
  p.other = static_cast<const uint8_t*>(other_first ? bp.input1 : bp.input2);
  p.out = static_cast<uint8_t*>(bp.output);
  p.count = bp.output_shape.elements();

  if (bp.dtype == DType::float32) {
    p.is_float = true;
    p.element_bytes = sizeof(float);
    p.work_per_element = 8;
    p.lo = bp.float_act_min;
    p.hi = bp.float_act_max;
    p.run = pick<L>(bp, p, other_first);
    return p;
  }

  p.is_unsigned = bp.dtype == DType::uint8;
  p.full_offset = other_first ? bp.input2_offset : bp.input1_offset;
  p.other_offset = other_first ? bp.input1_offset : bp.input2_offset;
  p.output_offset = bp.output_offset;
  p.act_min = bp.act_min;
  p.act_max = bp.act_max;
  if (bp.op == BinaryOp::mul) {
    p.is_mul = true;
    p.work_per_element = 16;
    p.multiplier = bp.output_multiplier;
    p.shift = bp.output_shift;
  } else {
    p.work_per_element = 32;
    p.left_shift = bp.left_shift;
    p.full_multiplier = other_first ? bp.input2_multiplier : bp.input1_multiplier;
    p.full_right = -(other_first ? bp.input2_shift : bp.input1_shift);
    p.other_multiplier = other_first ? bp.input1_multiplier : bp.input2_multiplier;
    p.other_right = -(other_first ? bp.input1_shift : bp.input2_shift);
    p.output_multiplier = bp.output_multiplier;
    p.output_right = -bp.output_shift;
    if (bp.op == BinaryOp::add) p.combine = Combine::sum;
    else p.combine = other_first ? Combine::other_minus_full : Combine::full_minus_other;
  }
  p.run = pick<L>(bp, p, other_first);
  return p;
}

Plan plan_at(const BinaryParams& bp, SimdLevel level) {
#if defined(AISRV_BINARY_AVX2)
  if (opt::uses_avx2(level)) return plan_for<Avx2>(bp);
#endif
#if defined(__aarch64__)
  if (opt::uses_neon(level)) return plan_for<Neon>(bp);
#endif
  (void)level;
  return plan_for<Portable>(bp);
}

// The loops' constant for a scalar other operand `value` (see Plan::constant).
void set_constant(Plan& p, const uint8_t* value) {
  if (p.is_float) {
    std::memcpy(&p.float_constant, value, sizeof(float));
    return;
  }
  const int32_t v = p.is_unsigned ? int32_t{value[0]} : int32_t{static_cast<int8_t>(value[0])};
  if (p.is_mul) {
    p.constant = v + p.other_offset;
    return;
  }
  const int32_t c = rescale_input(v + p.other_offset, p.left_shift, p.other_multiplier, p.other_right);
  p.constant = p.combine == Combine::full_minus_other ? -c : c;
}

// Output elements [first, end), row by row (a row may be cut at either end).
void run_range(const Plan& plan, int64_t first, int64_t end) {
  const auto es = static_cast<int64_t>(plan.element_bytes);
  const int r = plan.outer_rank;
  std::array<int32_t, kMaxRank> at{};  // outer coordinates of the current row
  int64_t full_at = 0, other_at = 0;  // element offsets of the current row in each operand
  int64_t col = first % plan.inner;
  for (int64_t row = first / plan.inner, d = r - 1; d >= 0; --d) {
    const auto i = static_cast<size_t>(d);
    at[i] = static_cast<int32_t>(row % plan.outer_dims[i]);
    row /= plan.outer_dims[i];
    full_at += at[i] * plan.full_stride[i];
    other_at += at[i] * plan.other_stride[i];
  }
  Plan call = plan;  // a scalar operand's constant, per row
  const uint8_t* constant_of = nullptr;
  for (int64_t pos = first; pos < end;) {
    const int64_t n = std::min(end - pos, plan.inner - col);
    const uint8_t* f = plan.full + (full_at + col) * es;
    const uint8_t* o = plan.other + (other_at + (plan.other_scalar ? 0 : col)) * es;
    if (plan.other_scalar && o != constant_of) {
      set_constant(call, o);
      constant_of = o;
    }
    call.run(call, f, o, plan.out + pos * es, n);
    pos += n;
    col = 0;
    for (int d = r - 1; d >= 0; --d) {  // the next row
      const auto i = static_cast<size_t>(d);
      full_at += plan.full_stride[i];
      other_at += plan.other_stride[i];
      if (++at[i] < plan.outer_dims[i]) break;
      full_at -= plan.full_stride[i] * plan.outer_dims[i];
      other_at -= plan.other_stride[i] * plan.outer_dims[i];
      at[i] = 0;
    }
  }
}

}  // namespace

bool opt::binary_fast_path(const BinaryParams& p) { return fast_path(p); }

Result<void> OptimizedKernelBackend::binary(const BinaryParams& p) {
  const Plan plan = plan_at(p, level_);
  if (!plan.run) return ReferenceKernelBackend::binary(p);
  // Parts of whole 64-element blocks (the vector loops' steps stay aligned within a part).
  const auto blocks = static_cast<size_t>((plan.count + 63) / 64);
  const size_t parts = std::max<size_t>(std::min(blocks, 2 * pool_.size()), 1);
  if (parts == 1) {
    run_range(plan, 0, plan.count);
    return {};
  }
  pool_.run(parts, [&](size_t part, size_t) {
    const auto first = static_cast<int64_t>(blocks * part / parts * 64);
    const int64_t end = std::min(static_cast<int64_t>(blocks * (part + 1) / parts * 64), plan.count);
    if (first < end) run_range(plan, first, end);
  }, static_cast<uint64_t>(plan.count) * plan.work_per_element);
  return {};
}

}  // namespace aisrv::engine::cpu
