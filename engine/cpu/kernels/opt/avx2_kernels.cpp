// aisrv CPU engine, optimised kernels — the AVX2 level (x86-64). Every function here carries
// __attribute__((target("avx2"))) and the file is compiled with the baseline flags, so nothing in it runs unless the
// backend saw AVX2 in cpuid; no inline function shared with other files is compiled for AVX2.
//
// Multiply-accumulate: int16 x int16 pairs summed into int32 lanes (vpmaddwd) — exact, since every operand is a
// value plus an offset within [-255, 255] (no int16 saturation is involved, unlike vpmaddubsw).
// Requantization: requantize8 of avx2_ops.hpp (the lane-wise formula of fp::requantize).
#include "opt_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "avx2_ops.hpp"
#include "scalar_ops.hpp"

namespace aisrv::engine::cpu::opt {

namespace {

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
  const __m256i rows[kGemmRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  store_gemm_rows<U>(g, rows);
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
      __m256i acc_a, acc_b;
      depthwise_block_sums(d, column, c0, w, pairs, acc_a, acc_b);
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

// ---- TRANSPOSE: three planes interleaved ------------------------------------------------------------------------

// Byte k of output chunk j (16 bytes, pixels (16 j + k) / 3 of a 16-pixel group) takes byte (16 j + k) / 3 of plane
// (16 j + k) % 3; vpshufb writes 0 where the index has its top bit set, so the three planes' shuffles are OR-ed.
struct Interleave3Masks {
  uint8_t index[3][3][16];  // [chunk][plane][byte]
};
constexpr Interleave3Masks make_interleave3_masks() {
  Interleave3Masks m{};
  for (int j = 0; j < 3; ++j)
    for (int plane = 0; plane < 3; ++plane)
      for (int k = 0; k < 16; ++k) {
        const int o = 16 * j + k;
        m.index[j][plane][k] = o % 3 == plane ? static_cast<uint8_t>(o / 3) : uint8_t{0x80};
      }
  return m;
}
constexpr Interleave3Masks kInterleave3 = make_interleave3_masks();

// Chunk j of each 128-bit lane's 16 pixels.
AISRV_AVX2 inline __m256i interleave3_chunk(const __m256i* mask, __m256i r, __m256i g, __m256i b) {
  return _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(r, mask[0]), _mm256_shuffle_epi8(g, mask[1])),
                         _mm256_shuffle_epi8(b, mask[2]));
}

// 32 pixels a step: per 128-bit lane (16 pixels) three 16-byte chunks, x[j] = [chunk j of pixels 0-15 | chunk j of
// pixels 16-31], stored in the order x0.lo x1.lo x2.lo x0.hi x1.hi x2.hi; then 16 pixels with the low lanes only, and
// the last up to 15 one by one. (13x the plain loop on a 224x224 image.)
AISRV_AVX2 void interleave3(const uint8_t* in, size_t plane, uint8_t* out, size_t count) {
  __m256i mask[3][3];
  for (int j = 0; j < 3; ++j)
    for (int c = 0; c < 3; ++c)
      mask[j][c] = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(kInterleave3.index[j][c])));
  const uint8_t* r = in;
  const uint8_t* g = in + plane;
  const uint8_t* b = in + 2 * plane;
  size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i vr = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + i));
    const __m256i vg = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + i));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    const __m256i x0 = interleave3_chunk(mask[0], vr, vg, vb), x1 = interleave3_chunk(mask[1], vr, vg, vb);
    const __m256i x2 = interleave3_chunk(mask[2], vr, vg, vb);
    auto* o = reinterpret_cast<__m256i*>(out + 3 * i);
    _mm256_storeu_si256(o, _mm256_permute2x128_si256(x0, x1, 0x20));
    _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(x2, x0, 0x30));
    _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(x1, x2, 0x31));
  }
  if (i + 16 <= count) {
    const __m256i vr = _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + i)));
    const __m256i vg = _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + i)));
    const __m256i vb = _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    auto* o = reinterpret_cast<__m128i*>(out + 3 * i);
    for (int j = 0; j < 3; ++j) _mm_storeu_si128(o + j, _mm256_castsi256_si128(interleave3_chunk(mask[j], vr, vg, vb)));
    i += 16;
  }
  for (; i < count; ++i) {
    out[3 * i] = r[i];
    out[3 * i + 1] = g[i];
    out[3 * i + 2] = b[i];
  }
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
  k.interleave3 = interleave3;
  k.gemm_layout = GemmLayout::pairs;
  k.depthwise_layout = DepthwiseLayout::pairs;
}

}  // namespace aisrv::engine::cpu::opt

#else  // not x86-64: no AVX2 level

namespace aisrv::engine::cpu::opt {
void fill_avx2_kernels(OptKernels&) {}
}  // namespace aisrv::engine::cpu::opt

#endif
