// aisrv CPU engine, optimised kernels — the AVX2 level (x86-64). Every function here carries
// __attribute__((target("avx2"))) and the file is compiled with the baseline flags, so nothing in it runs unless the
// backend saw AVX2 in cpuid; no inline function shared with other files is compiled for AVX2.
//
// Multiply-accumulate: int16 x int16 pairs summed into int32 lanes (vpmaddwd) — exact, since every operand is a
// value plus an offset within [-255, 255] (no int16 saturation is involved, unlike vpmaddubsw).
// Requantization (requantize8): the lane-wise formula of fp::requantize —
//   x << max(shift, 0)                       (wrapping, vpsllvd)
//   round(x * m / 2^31), ties up             (sign * ((|x| * m + 2^30 - [x < 0]) >> 31); m >= 0; see srdhm)
//   rounding right shift by max(-shift, 0)   (ties away from zero, as rounding_divide_by_pot)
//   clamp to [act_min - offset, act_max - offset], + offset   (= clamp(v + offset, act_min, act_max))
#include "opt_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "scalar_ops.hpp"

#define AISRV_AVX2 __attribute__((target("avx2")))

namespace aisrv::engine::cpu::opt {

namespace {

AISRV_AVX2 inline __m256i load8(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

AISRV_AVX2 inline int32_t load_pair(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// fp::saturating_rounding_doubling_high_mul(a, b) for b >= 0 (b is a requantization multiplier, never INT32_MIN, so
// the saturating case cannot occur). For a >= 0 the reference value is floor((a*b + 2^30) / 2^31); for a < 0 it
// truncates (a*b + 1 - 2^30) / 2^31 towards zero, i.e. -floor((|a|*b + 2^30 - 1) / 2^31). Both are computed on the
// unsigned magnitude in 64-bit lanes (even and odd 32-bit lanes separately), then the sign of a is applied.
AISRV_AVX2 inline __m256i srdhm(__m256i a, __m256i b) {
  const __m256i magnitude = _mm256_abs_epi32(a);  // |INT32_MIN| = 2^31 read as unsigned
  const __m256i negative = _mm256_srli_epi32(a, 31);
  const __m256i half = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i low_mask = _mm256_set1_epi64x(0xFFFFFFFF);
  const __m256i nudge_even = _mm256_sub_epi64(half, _mm256_and_si256(negative, low_mask));
  const __m256i nudge_odd = _mm256_sub_epi64(half, _mm256_srli_epi64(negative, 32));
  const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epu32(magnitude, b), nudge_even), 31);
  const __m256i odd = _mm256_srli_epi64(
      _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(magnitude, 32), _mm256_srli_epi64(b, 32)), nudge_odd), 31);
  const __m256i rounded = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  return _mm256_sign_epi32(rounded, a);
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

// ---- CONV_2D: 6 x 16 GEMM block -------------------------------------------------------------------------------

template <bool U>
AISRV_AVX2 void gemm(const GemmBlock& g) {
  const __m256i bias0 = load8(g.bias), bias1 = load8(g.bias + 8);
  __m256i c00 = bias0, c01 = bias1, c10 = bias0, c11 = bias1, c20 = bias0, c21 = bias1;
  __m256i c30 = bias0, c31 = bias1, c40 = bias0, c41 = bias1, c50 = bias0, c51 = bias1;
  const int16_t* a0 = g.a;
  const int16_t* a1 = a0 + g.a_stride;
  const int16_t* a2 = a1 + g.a_stride;
  const int16_t* a3 = a2 + g.a_stride;
  const int16_t* a4 = a3 + g.a_stride;
  const int16_t* a5 = a4 + g.a_stride;
  const int16_t* b = g.b;
  for (int32_t p = 0; p < g.pairs; ++p, b += 2 * kGemmCols) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + kGemmCols));
    __m256i a = _mm256_set1_epi32(load_pair(a0 + 2 * p));
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(a, b0));
    c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(a, b1));
    a = _mm256_set1_epi32(load_pair(a1 + 2 * p));
    c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(a, b0));
    c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(a, b1));
    a = _mm256_set1_epi32(load_pair(a2 + 2 * p));
    c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(a, b0));
    c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(a, b1));
    a = _mm256_set1_epi32(load_pair(a3 + 2 * p));
    c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(a, b0));
    c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(a, b1));
    a = _mm256_set1_epi32(load_pair(a4 + 2 * p));
    c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(a, b0));
    c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(a, b1));
    a = _mm256_set1_epi32(load_pair(a5 + 2 * p));
    c50 = _mm256_add_epi32(c50, _mm256_madd_epi16(a, b0));
    c51 = _mm256_add_epi32(c51, _mm256_madd_epi16(a, b1));
  }
  const __m256i m0 = load8(g.multiplier), m1 = load8(g.multiplier + 8);
  const __m256i s0 = load8(g.shift), s1 = load8(g.shift + 8);
  const OutputRange range = output_range(g.output_offset, g.act_min, g.act_max);
  const __m256i rows[kGemmRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int32_t r = 0; r < g.rows; ++r) {
    const __m256i lo = requantize8(rows[r][0], m0, s0, range);
    const __m256i hi = requantize8(rows[r][1], m1, s1, range);
    store_bytes(g.out + static_cast<size_t>(r) * g.out_stride, narrow16<U>(lo, hi), g.cols);
  }
}

// ---- DEPTHWISE_CONV_2D: one output row ------------------------------------------------------------------------
// Packed weights per block of 16 channels and pair of taps (t0, t1): 32 int16 = [A: channels 0-3, 8-11][B: channels
// 4-7, 12-15], each entry the pair (w[t0][c], w[t1][c]) — the order vpunpcklwd / vpunpckhwd give the interleaved
// inputs. The accumulators are put back into channel order with vperm2i128 before requantization.

template <bool U>
AISRV_AVX2 void depthwise_row(const DepthwiseRow& d) {
  const int32_t pairs = (d.taps_count + 1) / 2;
  const int32_t blocks = d.channels_padded / 16;
  const OutputRange range = output_range(d.output_offset, d.act_min, d.act_max);
  for (int32_t ox = 0; ox < d.out_width; ++ox) {
    const size_t column = static_cast<size_t>(ox) * static_cast<size_t>(d.column_step);
    uint8_t* out = d.out + static_cast<size_t>(ox) * static_cast<size_t>(d.channels);
    for (int32_t cb = 0; cb < blocks; ++cb) {
      const size_t c0 = static_cast<size_t>(cb) * 16;
      const int16_t* w = d.packed + static_cast<size_t>(cb) * static_cast<size_t>(pairs) * 32;
      __m256i acc_a = _mm256_setzero_si256(), acc_b = _mm256_setzero_si256();
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
      const __m256i lo = _mm256_add_epi32(_mm256_permute2x128_si256(acc_a, acc_b, 0x20), load8(d.bias + c0));
      const __m256i hi = _mm256_add_epi32(_mm256_permute2x128_si256(acc_a, acc_b, 0x31), load8(d.bias + c0 + 8));
      const __m256i rlo = requantize8(lo, load8(d.multiplier + c0), load8(d.shift + c0), range);
      const __m256i rhi = requantize8(hi, load8(d.multiplier + c0 + 8), load8(d.shift + c0 + 8), range);
      store_bytes(out + c0, narrow16<U>(rlo, rhi), d.channels - static_cast<int32_t>(c0));
    }
  }
}

// ---- FULLY_CONNECTED: dot products, four weight rows at a time -------------------------------------------------

template <bool U>
AISRV_AVX2 void fc_row(const FcRow& f) {
  const int32_t full = f.depth & ~15;
  const __m256i filter_offset = _mm256_set1_epi16(static_cast<int16_t>(f.filter_offset));
  const size_t depth = static_cast<size_t>(f.depth);
  auto finish = [&](int32_t o, int32_t acc) { fc_element<U>(f, o, acc, full); };
  int32_t o = 0;
  for (; o + 4 <= f.outputs; o += 4) {
    const uint8_t* w0 = f.weights + static_cast<size_t>(o) * depth;
    const uint8_t* w1 = w0 + depth;
    const uint8_t* w2 = w1 + depth;
    const uint8_t* w3 = w2 + depth;
    __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int32_t k = 0; k < full; k += 16) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(f.input + k));
      acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(widen16<U>(w0 + k, filter_offset), x));
      acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(widen16<U>(w1 + k, filter_offset), x));
      acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(widen16<U>(w2 + k, filter_offset), x));
      acc3 = _mm256_add_epi32(acc3, _mm256_madd_epi16(widen16<U>(w3 + k, filter_offset), x));
    }
    finish(o, horizontal_sum(acc0));
    finish(o + 1, horizontal_sum(acc1));
    finish(o + 2, horizontal_sum(acc2));
    finish(o + 3, horizontal_sum(acc3));
  }
  for (; o < f.outputs; ++o) {
    const uint8_t* w = f.weights + static_cast<size_t>(o) * depth;
    __m256i acc = _mm256_setzero_si256();
    for (int32_t k = 0; k < full; k += 16)
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(widen16<U>(w + k, filter_offset),
                                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(f.input + k))));
    finish(o, horizontal_sum(acc));
  }
}

// ---- ADD without broadcasting ------------------------------------------------------------------------------------

template <bool U>
AISRV_AVX2 void add(const AddSpan& s) {
  const __m256i a_offset = _mm256_set1_epi32(s.a_offset), b_offset = _mm256_set1_epi32(s.b_offset);
  const __m128i left_shift = _mm_cvtsi32_si128(s.left_shift);
  const __m256i a_mul = _mm256_set1_epi32(s.a_multiplier), a_right = _mm256_set1_epi32(-s.a_shift);
  const __m256i b_mul = _mm256_set1_epi32(s.b_multiplier), b_right = _mm256_set1_epi32(-s.b_shift);
  const __m256i o_mul = _mm256_set1_epi32(s.output_multiplier), o_right = _mm256_set1_epi32(-s.output_shift);
  const OutputRange range = output_range(s.output_offset, s.act_min, s.act_max);
  int64_t i = 0;
  for (; i + 8 <= s.count; i += 8) {
    const __m256i a = _mm256_sll_epi32(_mm256_add_epi32(widen8_32<U>(s.a + i), a_offset), left_shift);
    const __m256i b = _mm256_sll_epi32(_mm256_add_epi32(widen8_32<U>(s.b + i), b_offset), left_shift);
    const __m256i sum = _mm256_add_epi32(rdbpot(srdhm(a, a_mul), a_right), rdbpot(srdhm(b, b_mul), b_right));
    __m256i o = rdbpot(srdhm(sum, o_mul), o_right);
    o = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(o, range.low), range.high), range.offset);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(s.out + i), narrow8<U>(o));
  }
  for (; i < s.count; ++i) s.out[i] = static_cast<uint8_t>(add_element(element<U>(s.a[i]), element<U>(s.b[i]), s));
}

// ---- int8/uint8 -> int16 + offset ------------------------------------------------------------------------------

template <bool U>
AISRV_AVX2 void widen(const uint8_t* src, int16_t* dst, size_t count, int32_t offset) {
  const __m256i off = _mm256_set1_epi16(static_cast<int16_t>(offset));
  size_t i = 0;
  for (; i + 16 <= count; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), widen16<U>(src + i, off));
  for (; i < count; ++i) dst[i] = static_cast<int16_t>(element<U>(src[i]) + offset);
}

// ---- LSTM: gate FCs eight rows at a time, element-wise products -------------------------------------------------

// Eight int32 vectors -> one vector of their eight horizontal sums, in order.
AISRV_AVX2 inline __m256i sums8(__m256i a0, __m256i a1, __m256i a2, __m256i a3, __m256i a4, __m256i a5, __m256i a6,
                                __m256i a7) {
  const __m256i s0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(a0, a1), _mm256_hadd_epi32(a2, a3));
  const __m256i s4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(a4, a5), _mm256_hadd_epi32(a6, a7));
  return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20),
                          _mm256_permute2x128_si256(s0123, s4567, 0x31));
}

AISRV_AVX2 void gate_row(const GateRow& g) {
  const size_t kp = static_cast<size_t>(g.kp), full = kp & ~size_t{15};
  const OutputRange range = output_range(0, -32768, 32767);
  for (int32_t o = 0; o < g.outputs; o += 8) {
    const int16_t* w = g.weights + static_cast<size_t>(o) * kp;
    __m256i acc[8];
    for (auto& a : acc) a = _mm256_setzero_si256();
    for (size_t k = 0; k < full; k += 16) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.input + k));
      for (size_t r = 0; r < 8; ++r)
        acc[r] = _mm256_add_epi32(
            acc[r], _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + r * kp + k)), x));
    }
    if (full < kp) {  // the last 8 columns
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.input + full));
      for (size_t r = 0; r < 8; ++r) {
        const __m128i p = _mm_madd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + r * kp + full)), x);
        acc[r] = _mm256_add_epi32(acc[r], _mm256_inserti128_si256(_mm256_setzero_si256(), p, 0));
      }
    }
    const __m256i sum = _mm256_add_epi32(sums8(acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]),
                                         load8(g.bias + o));
    const __m256i v = requantize8(sum, load8(g.multiplier + o), load8(g.shift + o), range);
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(v, v), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(g.out + o), _mm256_castsi256_si128(words));
  }
}

AISRV_AVX2 void mul(const MulSpan& m) {
  const __m256i multiplier = _mm256_set1_epi32(m.multiplier);
  const __m256i shift = _mm256_set1_epi32(m.shift);
  const OutputRange range = output_range(m.offset, m.act_min, m.act_max);
  int64_t i = 0;
  for (; i + 8 <= m.count; i += 8) {
    const __m256i a = _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(m.a + i)));
    const __m256i b = _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(m.b + i)));
    const __m256i v = requantize8(_mm256_mullo_epi32(a, b), multiplier, shift, range);
    const __m128i words = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packs_epi32(v, v), 0x08));
    if (m.out16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(m.out16 + i), words);
    } else {
      const __m128i bytes = _mm_packs_epi16(words, words);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(m.out8 + i), bytes);
    }
  }
  for (; i < m.count; ++i) mul_element(m, i);
}

}  // namespace

void fill_avx2_kernels(OptKernels& k) {
  k.gate_row = gate_row;
  k.mul = mul;
  k.gemm[0] = gemm<false>;
  k.gemm[1] = gemm<true>;
  k.depthwise_row[0] = depthwise_row<false>;
  k.depthwise_row[1] = depthwise_row<true>;
  k.fc_row[0] = fc_row<false>;
  k.fc_row[1] = fc_row<true>;
  k.add[0] = add<false>;
  k.add[1] = add<true>;
  k.widen[0] = widen<false>;
  k.widen[1] = widen<true>;
  k.gemm_layout = GemmLayout::pairs;
  k.depthwise_layout = DepthwiseLayout::pairs;
}

}  // namespace aisrv::engine::cpu::opt

#else  // not x86-64: no AVX2 level

namespace aisrv::engine::cpu::opt {
void fill_avx2_kernels(OptKernels&) {}
}  // namespace aisrv::engine::cpu::opt

#endif
