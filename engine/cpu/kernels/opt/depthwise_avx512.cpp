// aisrv CPU engine, optimised kernels — DEPTHWISE_CONV_2D at the avx512_vnni level on flat rows (see
// depthwise_avx512.hpp for the layout): per block of 32 int16 lanes and pair of taps, vpunpck[lh]wd of the two taps'
// inputs and VPDPWSSD with the pattern's weight pairs (exact modulo 2^32, like vpmaddwd + vpaddd; the loader proves
// the reference's sum fits int32, so the lane holds it), the accumulators starting at the bias. 3x3 filters run with
// the five weight pairs of a pattern in registers. Requantization is fp::requantize's formula on 16 lanes: x << left,
// the rounding doubling high multiply (srdhm16, avx512_ops.hpp, with the odd lanes' multipliers made at prepare),
// then the rounding right shift (remainder against mask / 2 + sign) with per-lane constants made at prepare. The two
// 16-lane halves are packed with signed saturation to int16 (vpackssdw: per 128-bit lane A's four then B's four
// values, i.e. the flat order), the output offset added with saturation and clamped on 32 int16 lanes, and narrowed
// with vpmovwb. Saturation never changes a result: a value beyond the int16 range stays beyond the clamp range
// [-128, 255] after an offset in [-256, 256], as the unsaturated one does.
// The function attributes carry the targets (the file is compiled with the baseline flags), as in vnni_kernels.cpp;
// everything but the two entry points has internal linkage.
#include "depthwise_avx512.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

// GCC 12's AVX-512 intrinsics: see vnni_kernels.cpp (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "avx2_ops.hpp"
#include "avx512_ops.hpp"

#define AISRV_AVX512_DW __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace aisrv::engine::cpu::opt {

namespace {

// Per-lane requantization constants of 16 lanes.
struct Requant {
  __m512i multiplier, multiplier_odd, left, right, mask, threshold;
};

AISRV_AVX512_DW inline Requant load_requant(const int32_t* c) {
  return {_mm512_loadu_si512(c), _mm512_loadu_si512(c + 16), _mm512_loadu_si512(c + 32),
          _mm512_loadu_si512(c + 48), _mm512_loadu_si512(c + 64), _mm512_loadu_si512(c + 80)};
}

// fp::multiply_by_quantized_multiplier lane-wise (see the file comment).
AISRV_AVX512_DW inline __m512i requantize(__m512i acc, const Requant& q) {
  const __m512i h = srdhm16(_mm512_sllv_epi32(acc, q.left), q.multiplier, q.multiplier_odd);
  const __m512i remainder = _mm512_and_si512(h, q.mask);
  const __m512i threshold = _mm512_add_epi32(q.threshold, _mm512_srli_epi32(h, 31));
  const __m512i shifted = _mm512_srav_epi32(h, q.right);
  return _mm512_mask_add_epi32(shifted, _mm512_cmpgt_epi32_mask(remainder, threshold), shifted,
                               _mm512_set1_epi32(1));
}

struct Epilogue {
  __m512i offset, low, high;
};

// Both halves requantized, packed to the flat order, offset, clamped and stored (`count` bytes, at most 32).
AISRV_AVX512_DW inline void finish(__m512i acc_a, __m512i acc_b, const Requant& qa, const Requant& qb,
                                   const Epilogue& e, uint8_t* out, int32_t count) {
  __m512i v = _mm512_packs_epi32(requantize(acc_a, qa), requantize(acc_b, qb));
  v = _mm512_min_epi16(_mm512_max_epi16(_mm512_adds_epi16(v, e.offset), e.low), e.high);
  const __m256i bytes = _mm512_cvtepi16_epi8(v);
  if (count >= 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes);
    return;
  }
  // No byte-masked store (slow on AMD Zen 4, see vnni_kernels.cpp): store_bytes' fixed-size pieces, per 16 bytes.
  const __m128i low = _mm256_castsi256_si128(bytes);
  if (count < 16) {
    store_bytes(out, low, count);
    return;
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), low);
  store_bytes(out + 16, _mm256_extracti128_si256(bytes, 1), count - 16);
}

AISRV_AVX512_DW inline __m512i load(const int16_t* p) { return _mm512_loadu_si512(p); }

// kTaps > 0: exactly that many taps, the weight pairs held in registers; 0: any count, weights read per block.
template <int kTaps>
AISRV_AVX512_DW void flat_row(const DepthwiseFlatRow& r) {
  const int32_t taps = kTaps > 0 ? kTaps : r.taps_count;
  const int32_t pairs = (taps + 1) / 2;
  const int32_t blocks = (r.length + 31) / 32;
  const size_t pattern_bytes = depthwise_flat_pattern_bytes(static_cast<size_t>(pairs));
  const Epilogue e{_mm512_set1_epi16(static_cast<int16_t>(r.output_offset)),
                   _mm512_set1_epi16(static_cast<int16_t>(r.act_min)),
                   _mm512_set1_epi16(static_cast<int16_t>(r.act_max))};
  for (int32_t chunk = 0; chunk < blocks; chunk += r.chunk_blocks) {
    const int32_t chunk_end = std::min(blocks, chunk + r.chunk_blocks);
    const int32_t patterns = std::min(r.patterns, chunk_end - chunk);
    for (int32_t j = 0; j < patterns; ++j) {
      const uint8_t* pattern = r.packed + static_cast<size_t>(j) * pattern_bytes;
      const auto* w = reinterpret_cast<const int16_t*>(pattern);
      const auto* c = reinterpret_cast<const int32_t*>(pattern + static_cast<size_t>(pairs) * 128);
      const __m512i bias_a = _mm512_loadu_si512(c), bias_b = _mm512_loadu_si512(c + 16);
      const Requant qa = load_requant(c + 32), qb = load_requant(c + 128);
      if constexpr (kTaps > 0) {
        constexpr int kPairs = (kTaps + 1) / 2;
        __m512i wa[kPairs], wb[kPairs];
        const int16_t* t[kTaps];
        for (int i = 0; i < kPairs; ++i) {
          wa[i] = load(w + i * 64);
          wb[i] = load(w + i * 64 + 32);
        }
        for (int i = 0; i < kTaps; ++i) t[i] = r.taps[i];
        for (int32_t b = chunk + j; b < chunk_end; b += r.patterns) {
          const size_t pos = static_cast<size_t>(b) * 32;
          __m512i acc_a = bias_a, acc_b = bias_b;
          for (int i = 0; i < kPairs; ++i) {
            const __m512i x0 = load(t[2 * i] + pos);
            const __m512i x1 = 2 * i + 1 < kTaps ? load(t[2 * i + 1] + pos) : x0;  // weights 0
            acc_a = _mm512_dpwssd_epi32(acc_a, _mm512_unpacklo_epi16(x0, x1), wa[i]);
            acc_b = _mm512_dpwssd_epi32(acc_b, _mm512_unpackhi_epi16(x0, x1), wb[i]);
          }
          finish(acc_a, acc_b, qa, qb, e, r.out + pos, r.length - static_cast<int32_t>(pos));
        }
      } else {
        for (int32_t b = chunk + j; b < chunk_end; b += r.patterns) {
          const size_t pos = static_cast<size_t>(b) * 32;
          __m512i acc_a = bias_a, acc_b = bias_b;
          const int16_t* wp = w;
          for (int32_t i = 0; i < pairs; ++i, wp += 64) {
            const __m512i x0 = load(r.taps[2 * i] + pos);
            const __m512i x1 = 2 * i + 1 < taps ? load(r.taps[2 * i + 1] + pos) : x0;  // weights 0
            acc_a = _mm512_dpwssd_epi32(acc_a, _mm512_unpacklo_epi16(x0, x1), load(wp));
            acc_b = _mm512_dpwssd_epi32(acc_b, _mm512_unpackhi_epi16(x0, x1), load(wp + 32));
          }
          finish(acc_a, acc_b, qa, qb, e, r.out + pos, r.length - static_cast<int32_t>(pos));
        }
      }
    }
  }
}

// `count` bytes (int8 or uint8) + offset as int16.
template <bool U>
AISRV_AVX512_DW inline void widen(const uint8_t* src, int16_t* dst, int32_t count, __m512i offset) {
  int32_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m512i v = U ? _mm512_cvtepu8_epi16(b) : _mm512_cvtepi8_epi16(b);
    _mm512_storeu_si512(dst + i, _mm512_add_epi16(v, offset));
  }
  for (; i + 16 <= count; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m256i v = U ? _mm256_cvtepu8_epi16(b) : _mm256_cvtepi8_epi16(b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_add_epi16(v, _mm512_castsi512_si256(offset)));
  }
  const auto off = static_cast<int16_t>(_mm_cvtsi128_si32(_mm512_castsi512_si128(offset)));
  for (; i < count; ++i)
    dst[i] = static_cast<int16_t>((U ? int32_t{src[i]} : int32_t{static_cast<int8_t>(src[i])}) + off);
}

// 32 bytes (int8 or uint8) + offset as 32 int16.
template <bool U>
AISRV_AVX512_DW inline __m512i widen32(const uint8_t* src, __m512i offset) {
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  return _mm512_add_epi16(U ? _mm512_cvtepu8_epi16(b) : _mm512_cvtepi8_epi16(b), offset);
}

template <bool U>
AISRV_AVX512_DW void convert(const uint8_t* src, int32_t width, int32_t in_channels, int32_t multiplier,
                             int32_t offset, int32_t left, int32_t stride, int32_t phase_width, int16_t* dst) {
  const int32_t channels = in_channels * multiplier;
  const auto C = static_cast<size_t>(channels);
  const __m512i offset16 = _mm512_set1_epi16(static_cast<int16_t>(offset));
  if (multiplier == 1 && stride == 1) {  // one contiguous run
    widen<U>(src, dst + static_cast<size_t>(left) * C, width * in_channels, offset16);
    return;
  }
  // Stride 2: the even columns (counted from the first) go to one phase, the odd ones to the other (stride 1: one).
  const int32_t first_phase = left % stride;
  int16_t* even = dst + (static_cast<size_t>(first_phase) * static_cast<size_t>(phase_width) +
                         static_cast<size_t>(left / stride)) * C;
  int16_t* odd = stride != 2 ? even
                              : dst + (static_cast<size_t>(1 - first_phase) * static_cast<size_t>(phase_width) +
                                       static_cast<size_t>(left / stride + first_phase)) * C;
  int32_t x = 0;
  if (stride == 2 && multiplier == 1 && (channels == 8 || channels == 16 || channels == 32)) {
    // 64 input bytes = 64 / C columns, widened into two zmm and split by column parity with qword permutes.
    const __m512i even_index = channels == 8    ? _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13)
                               : channels == 16 ? _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11)
                                                : _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    const __m512i odd_index = _mm512_add_epi64(even_index, _mm512_set1_epi64(channels == 8 ? 2 : channels == 16 ? 4 : 8));
    const int32_t per = 64 / channels;
    for (; x + per <= width; x += per, even += 32, odd += 32) {
      const uint8_t* in = src + static_cast<size_t>(x) * C;
      const __m512i a = widen32<U>(in, offset16), b = widen32<U>(in + 32, offset16);
      _mm512_storeu_si512(even, _mm512_permutex2var_epi64(a, even_index, b));
      _mm512_storeu_si512(odd, _mm512_permutex2var_epi64(a, odd_index, b));
    }
  } else if (in_channels == 1 && multiplier == 8 && stride <= 2) {
    // One input channel to 8 output channels (a first layer): 16 columns a step, each value repeated 8 times by
    // vpermw, per phase.
    const __m512i lane_column = _mm512_setr_epi64(0, 0, 0x0001000100010001, 0x0001000100010001, 0x0002000200020002,
                                                  0x0002000200020002, 0x0003000300030003, 0x0003000300030003);  // k / 8
    const __m512i s = _mm512_set1_epi16(static_cast<int16_t>(stride));
    for (; x + 16 <= width; x += 16) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + x));
      const __m512i v = _mm512_castsi256_si512(
          _mm256_add_epi16(U ? _mm256_cvtepu8_epi16(b) : _mm256_cvtepi8_epi16(b), _mm512_castsi512_si256(offset16)));
      for (int32_t phase = 0; phase < stride; ++phase) {
        int16_t*& out = phase == 0 ? even : odd;
        for (int32_t j = 0; j < 4 / stride; ++j, out += 32) {
          // zmm j of this phase: columns stride * (4 j + k / 8) + phase
          const __m512i column = _mm512_add_epi16(
              _mm512_mullo_epi16(_mm512_add_epi16(lane_column, _mm512_set1_epi16(static_cast<int16_t>(4 * j))), s),
              _mm512_set1_epi16(static_cast<int16_t>(phase)));
          _mm512_storeu_si512(out, _mm512_permutexvar_epi16(column, v));
        }
      }
    }
  }
  // The rest column by column: column x lands at phase (left + x) % stride, position (left + x) / stride.
  int32_t phase = (left + x) % stride, position = (left + x) / stride;
  for (; x < width; ++x) {
    int16_t* out = dst + (static_cast<size_t>(phase) * static_cast<size_t>(phase_width) + static_cast<size_t>(position)) * C;
    const uint8_t* in = src + static_cast<size_t>(x) * static_cast<size_t>(in_channels);
    if (++phase == stride) {
      phase = 0;
      ++position;
    }
    if (multiplier == 1) {
      widen<U>(in, out, in_channels, offset16);
      continue;
    }
    for (int32_t ic = 0; ic < in_channels; ++ic) {
      const auto v = static_cast<int16_t>((U ? int32_t{in[ic]} : int32_t{static_cast<int8_t>(in[ic])}) + offset);
      int16_t* o = out + static_cast<size_t>(ic) * static_cast<size_t>(multiplier);
      int32_t m = 0;
      for (; m + 16 <= multiplier; m += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + m), _mm256_set1_epi16(v));
      if (m + 8 <= multiplier) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + m), _mm_set1_epi16(v));
        m += 8;
      }
      for (; m < multiplier; ++m) o[m] = v;
    }
  }
}

}  // namespace

void depthwise_flat_row_avx512(const DepthwiseFlatRow& r) {
  if (r.taps_count == 9) flat_row<9>(r);
  else flat_row<0>(r);
}

void depthwise_flat_convert_avx512(const uint8_t* src, bool is_unsigned, int32_t width, int32_t in_channels,
                                   int32_t multiplier, int32_t offset, int32_t left, int32_t stride,
                                   int32_t phase_width, int16_t* dst) {
  if (is_unsigned) convert<true>(src, width, in_channels, multiplier, offset, left, stride, phase_width, dst);
  else convert<false>(src, width, in_channels, multiplier, offset, left, stride, phase_width, dst);
}

}  // namespace aisrv::engine::cpu::opt

#endif
