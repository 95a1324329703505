// aisrv CPU engine, optimised kernels — the AVX2 building blocks shared by the AVX2 level (avx2_kernels.cpp) and the
// VNNI levels' 256-bit code (vnni_kernels.cpp): loads, the lane-wise requantization of fp::requantize, narrowing
// and partial stores. Every function carries __attribute__((target("avx2"))) and has internal linkage (an unnamed
// namespace in each file that includes this), so no copy compiled for AVX2 can stand in for a baseline one at link
// time. Include only from files compiled for x86-64 with GCC or Clang.
//
// Requantization (requantize8): the lane-wise formula of fp::requantize —
//   x << max(shift, 0)                       (wrapping, vpsllvd)
//   round(x * m / 2^31), ties up             ((x * m + 2^30) >> 31 in 64 bits; m >= 0; see srdhm)
//   rounding right shift by max(-shift, 0)   (ties away from zero, as rounding_divide_by_pot)
//   clamp to [act_min - offset, act_max - offset], + offset   (= clamp(v + offset, act_min, act_max))
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "opt_kernels.hpp"

#define AISRV_AVX2 __attribute__((target("avx2")))

namespace aisrv::engine::cpu::opt {

namespace {  // internal linkage on purpose: see the file comment

AISRV_AVX2 inline __m256i load8(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

AISRV_AVX2 inline int32_t load_pair(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// fp::saturating_rounding_doubling_high_mul(a, b) for b >= 0 (b is a requantization multiplier, never INT32_MIN, so
// the saturating case cannot occur). The reference value is floor((a*b + 2^30) / 2^31) for every a: for a*b >= 0
// that is its formula; for a*b < 0 it truncates (a*b + 1 - 2^30) / 2^31 towards zero, which for a negative
// numerator is ceil(n / 2^31) = floor((n + 2^31 - 1) / 2^31) = floor((a*b + 2^30) / 2^31). So: the signed 64-bit
// product (VPMULDQ, even and odd 32-bit lanes separately) plus 2^30, and bits 31..62 of that sum (the result fits
// in 32 bits, so those bits are it): a logical >> 31 puts them in the even lane's low half, << 1 in the odd lane's
// high half. Checked against the reference on 2.3e8 pairs (random, edge values, a sweep of a for six multipliers).
AISRV_AVX2 inline __m256i srdhm(__m256i a, __m256i b) {
  const __m256i half = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(a, b), half), 31);
  const __m256i odd = _mm256_slli_epi64(
      _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32)), half), 1);
  return _mm256_blend_epi32(even, odd, 0xAA);
}

// fp::rounding_divide_by_pot(x, e) lane-wise, e in [0, 31].
AISRV_AVX2 inline __m256i rdbpot(__m256i x, __m256i e) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, e), one);
  const __m256i remainder = _mm256_and_si256(x, mask);
  const __m256i threshold = _mm256_add_epi32(_mm256_srai_epi32(mask, 1), _mm256_srli_epi32(x, 31));
  return _mm256_sub_epi32(_mm256_srav_epi32(x, e), _mm256_cmpgt_epi32(remainder, threshold));
}

// Output range of a requantization, held as [act_min - offset, act_max - offset] and offset.
struct OutputRange {
  __m256i low, high, offset;
};

AISRV_AVX2 inline OutputRange output_range(int32_t offset, int32_t act_min, int32_t act_max) {
  return {_mm256_set1_epi32(act_min - offset), _mm256_set1_epi32(act_max - offset), _mm256_set1_epi32(offset)};
}

// fp::requantize lane-wise (per-lane multiplier and shift).
AISRV_AVX2 inline __m256i requantize8(__m256i acc, __m256i multiplier, __m256i shift, const OutputRange& r) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i left = _mm256_max_epi32(shift, zero);
  const __m256i right = _mm256_max_epi32(_mm256_sub_epi32(zero, shift), zero);
  __m256i x = srdhm(_mm256_sllv_epi32(acc, left), multiplier);
  x = rdbpot(x, right);
  x = _mm256_min_epi32(_mm256_max_epi32(x, r.low), r.high);
  return _mm256_add_epi32(x, r.offset);
}

// 16 int32 lanes already inside the output type's range (channels 0..7 in a, 8..15 in b) -> 16 bytes in order.
template <bool U>
AISRV_AVX2 inline __m128i narrow16(__m256i a, __m256i b) {
  const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);  // a0..7 | b0..7 as int16
  const __m256i bytes = U ? _mm256_packus_epi16(words, words) : _mm256_packs_epi16(words, words);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(bytes, 0x08));
}

// 8 int32 lanes inside the output type's range -> 8 bytes (low half of the result).
template <bool U>
AISRV_AVX2 inline __m128i narrow8(__m256i a) {
  const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, a), 0x08);
  const __m128i w = _mm256_castsi256_si128(words);
  return U ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
}

// The first `count` bytes of v (all 16 when count >= 16), in fixed-size pieces rather than a memcpy call.
AISRV_AVX2 inline void store_bytes(uint8_t* out, __m128i v, int32_t count) {
  if (count >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), v);
    return;
  }
  alignas(16) uint8_t tmp[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(tmp), v);
  int32_t i = 0;
  if (count & 8) {
    std::memcpy(out, tmp, 8);
    i = 8;
  }
  if (count & 4) {
    std::memcpy(out + i, tmp + i, 4);
    i += 4;
  }
  if (count & 2) {
    std::memcpy(out + i, tmp + i, 2);
    i += 2;
  }
  if (count & 1) out[i] = tmp[i];
}

AISRV_AVX2 inline int32_t horizontal_sum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// 16 source bytes -> 16 int16 with the offset added.
template <bool U>
AISRV_AVX2 inline __m256i widen16(const uint8_t* src, __m256i offset) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  return _mm256_add_epi16(U ? _mm256_cvtepu8_epi16(v) : _mm256_cvtepi8_epi16(v), offset);
}

// 8 source bytes -> 8 int32.
template <bool U>
AISRV_AVX2 inline __m256i widen8_32(const uint8_t* src) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src));
  return U ? _mm256_cvtepu8_epi32(v) : _mm256_cvtepi8_epi32(v);
}

// The end of a 6 x 16 GEMM block on ymm (the AVX2 and AVX-VNNI levels): per row, + the row's offset term when the
// layout has one (GemmBlock::row_offset), requantization, narrowing and the store of the block's channels.
template <bool U>
AISRV_AVX2 inline void store_gemm_rows(const GemmBlock& g, const __m256i (&rows)[kGemmRows][2]) {
  const __m256i m0 = load8(g.multiplier), m1 = load8(g.multiplier + 8);
  const __m256i s0 = load8(g.shift), s1 = load8(g.shift + 8);
  const OutputRange range = output_range(g.output_offset, g.act_min, g.act_max);
  for (int32_t r = 0; r < g.rows; ++r) {
    __m256i lo = rows[r][0], hi = rows[r][1];
    if (g.row_offset) {
      const __m256i o = _mm256_set1_epi32(g.row_offset[r]);
      lo = _mm256_add_epi32(lo, o);
      hi = _mm256_add_epi32(hi, o);
    }
    store_bytes(g.out + static_cast<size_t>(r) * g.out_stride,
                narrow16<U>(requantize8(lo, m0, s0, range), requantize8(hi, m1, s1, range)), g.cols);
  }
}

// DEPTHWISE_CONV_2D, one 16-channel block of one output column: per tap pair, vpmaddwd of [unpacklo(x0, x1)] with the
// packed weights A and of [unpackhi(x0, x1)] with B (DepthwiseLayout::pairs). `acc_a` gets the channels [0-3, 8-11],
// `acc_b` [4-7, 12-15] of the block. Shared by the AVX2 and AVX-512 rows, which differ only in their epilogue.
AISRV_AVX2 inline void depthwise_block_sums(const DepthwiseRow& d, size_t column, size_t c0, const int16_t* w,
                                            int32_t pairs, __m256i& acc_a, __m256i& acc_b) {
  acc_a = _mm256_setzero_si256();
  acc_b = _mm256_setzero_si256();
  for (int32_t tp = 0; tp < pairs; ++tp, w += 32) {
    const int32_t t0 = 2 * tp, t1 = 2 * tp + 1;
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d.taps[t0] + column + c0));
    const __m256i x1 = t1 < d.taps_count
                           ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d.taps[t1] + column + c0))
                           : x0;  // its weights are 0
    acc_a = _mm256_add_epi32(acc_a, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1),
                                                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
    acc_b = _mm256_add_epi32(acc_b, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1),
                                                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16))));
  }
}

}  // namespace

}  // namespace aisrv::engine::cpu::opt
