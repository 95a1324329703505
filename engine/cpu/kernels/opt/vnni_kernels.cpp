// aisrv CPU engine, optimised kernels — the x86-64 VNNI levels: the int8 / uint8 GEMM block of CONV_2D and the
// FULLY_CONNECTED row (weights packed at load, FcVnniRow) on VPDPBUSD, which multiplies unsigned bytes by signed
// bytes and adds each group of four products to a 32-bit lane. Two levels on top of the AVX2 table (fill_avx2_kernels runs first):
//   avx_vnni     the VEX-encoded 256-bit form (AVX-VNNI, e.g. Alder Lake and later client cores): functions with
//                target("avx2,avxvnni"), two ymm accumulators per row, AVX2 requantization (avx2_ops.hpp);
//   avx512_vnni  the 512-bit form (AVX-512 F/BW/VL + AVX512_VNNI, Ice Lake / Zen 4 and later): functions with
//                target("avx2,avx512f,avx512bw,avx512vl,avx512vnni"), one zmm accumulator per row, the requantization
//                on 16 lanes with opmask blends (no byte-masked stores: slow on Zen 4); also the DEPTHWISE_CONV_2D
//                row kernel on 32 channels per zmm with VPDPWSSD and that 16-lane requantization, and ADD on 16
//                lanes.
// Like avx2_kernels.cpp, the file is compiled with the baseline flags and only its functions carry the targets, so
// nothing here runs unless the backend saw the instruction sets in cpuid and XGETBV (optimized_backend.cpp); every
// helper has internal linkage, so no AVX-512 copy of a shared inline function can reach baseline code.
//
// Exactness (GemmLayout::vnni in opt_kernels.hpp): the reference accumulator is bias + sum_k (x_k + input_offset) *
// (w_k + filter_offset), which the loader proves lies in int32 (conv_common.cpp, check_accumulator_bound). The
// kernel computes bias' + sum_k a_k * b_k + row_offset with a, b, bias', row_offset as in GemmLayout::vnni; that is
// the same polynomial regrouped, and every operation here (VPDPBUSD: four exact 16-bit products summed and added to
// the lane without saturation; the folded bias made in int64 and wrapped at prepare) is exact modulo 2^32. Two
// integers equal modulo 2^32, one of them (the reference's) inside int32 and the other an int32 lane, are equal: the
// lane holds the reference's value whatever intermediate sums wrapped. Requantization is fp::requantize's formula.
#include "opt_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands as `__m512i __Y = __Y;`, which
// -Wmaybe-uninitialized / -Wuninitialized report at every use once inlined (GCC bug 105593, fixed in GCC 13); the
// operands are don't-care by design.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "avx2_ops.hpp"
#include "avx512_ops.hpp"
#include "scalar_ops.hpp"

#define AISRV_AVX_VNNI __attribute__((target("avx2,avxvnni")))
#define AISRV_AVX512_VNNI __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace aisrv::engine::cpu::opt {

namespace {

inline int32_t load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// ---- AVX-VNNI: 6 x 16 GEMM block, two ymm (8 channels each) per row -----------------------------------------------

template <bool U>
AISRV_AVX_VNNI void gemm_avx_vnni(const GemmBlock& g) {
  const __m256i bias0 = load8(g.bias), bias1 = load8(g.bias + 8);
  __m256i c00 = bias0, c01 = bias1, c10 = bias0, c11 = bias1, c20 = bias0, c21 = bias1;
  __m256i c30 = bias0, c31 = bias1, c40 = bias0, c41 = bias1, c50 = bias0, c51 = bias1;
  const int8_t* a0 = g.a8;
  const int8_t* a1 = a0 + g.a_stride;
  const int8_t* a2 = a1 + g.a_stride;
  const int8_t* a3 = a2 + g.a_stride;
  const int8_t* a4 = a3 + g.a_stride;
  const int8_t* a5 = a4 + g.a_stride;
  const int8_t* b = g.b8;
  const size_t steps = g.a_stride / 4;
  for (size_t s = 0; s < steps; ++s, b += 4 * kGemmCols) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32));
    __m256i a = _mm256_set1_epi32(load4(a0 + 4 * s));
    c00 = _mm256_dpbusd_avx_epi32(c00, a, b0);
    c01 = _mm256_dpbusd_avx_epi32(c01, a, b1);
    a = _mm256_set1_epi32(load4(a1 + 4 * s));
    c10 = _mm256_dpbusd_avx_epi32(c10, a, b0);
    c11 = _mm256_dpbusd_avx_epi32(c11, a, b1);
    a = _mm256_set1_epi32(load4(a2 + 4 * s));
    c20 = _mm256_dpbusd_avx_epi32(c20, a, b0);
    c21 = _mm256_dpbusd_avx_epi32(c21, a, b1);
    a = _mm256_set1_epi32(load4(a3 + 4 * s));
    c30 = _mm256_dpbusd_avx_epi32(c30, a, b0);
    c31 = _mm256_dpbusd_avx_epi32(c31, a, b1);
    a = _mm256_set1_epi32(load4(a4 + 4 * s));
    c40 = _mm256_dpbusd_avx_epi32(c40, a, b0);
    c41 = _mm256_dpbusd_avx_epi32(c41, a, b1);
    a = _mm256_set1_epi32(load4(a5 + 4 * s));
    c50 = _mm256_dpbusd_avx_epi32(c50, a, b0);
    c51 = _mm256_dpbusd_avx_epi32(c51, a, b1);
  }
  const __m256i rows[kGemmRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  store_gemm_rows<U>(g, rows);
}

// ---- AVX-VNNI: FULLY_CONNECTED row (FcVnniRow), four blocks of 16 outputs in flight, two ymm each -------------------

inline int32_t load4u(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// One block's 16 sums (outputs 0-7 in lo, 8-15 in hi) + folded bias + row offset, requantized and stored.
template <bool U>
AISRV_AVX_VNNI inline void fc_vnni_finish8(const FcVnniRow& f, int32_t block, __m256i lo, __m256i hi,
                                           const OutputRange& range) {
  const size_t o0 = static_cast<size_t>(block) * kFcVnniBlock;
  const __m256i row_offset = _mm256_set1_epi32(f.row_offset);
  lo = _mm256_add_epi32(_mm256_add_epi32(lo, load8(f.bias + o0)), row_offset);
  hi = _mm256_add_epi32(_mm256_add_epi32(hi, load8(f.bias + o0 + 8)), row_offset);
  const __m256i q_lo = requantize8(lo, load8(f.multiplier + o0), load8(f.shift + o0), range);
  const __m256i q_hi = requantize8(hi, load8(f.multiplier + o0 + 8), load8(f.shift + o0 + 8), range);
  store_bytes(f.out + o0, narrow16<U>(q_lo, q_hi), f.outputs - static_cast<int32_t>(o0));
}

template <bool U>
AISRV_AVX_VNNI void fc_vnni_avx(const FcVnniRow& f) {
  const size_t steps = static_cast<size_t>(f.k4) / 4;
  const size_t block_bytes = steps * 4 * kFcVnniBlock;
  const OutputRange range = output_range(f.output_offset, f.act_min, f.act_max);
  int32_t block = 0;
  for (; block + 4 <= f.blocks; block += 4) {
    const int8_t* w0 = f.weights + static_cast<size_t>(block) * block_bytes;
    const int8_t* w1 = w0 + block_bytes;
    const int8_t* w2 = w1 + block_bytes;
    const int8_t* w3 = w2 + block_bytes;
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
            c31 = c00;
    for (size_t s = 0; s < steps; ++s) {
      const __m256i a = _mm256_set1_epi32(load4u(f.input + 4 * s));
      const size_t at = s * 64;
      c00 = _mm256_dpbusd_avx_epi32(c00, a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0 + at)));
      c01 = _mm256_dpbusd_avx_epi32(c01, a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0 + at + 32)));
      c10 = _mm256_dpbusd_avx_epi32(c10, a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1 + at)));
      c11 = _mm256_dpbusd_avx_epi32(c11, a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1 + at + 32)));
      c20 = _mm256_dpbusd_avx_epi32(c20, a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w2 + at)));
      c21 = _mm256_dpbusd_avx_epi32(c21, a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w2 + at + 32)));
      c30 = _mm256_dpbusd_avx_epi32(c30, a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w3 + at)));
      c31 = _mm256_dpbusd_avx_epi32(c31, a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w3 + at + 32)));
    }
    fc_vnni_finish8<U>(f, block, c00, c01, range);
    fc_vnni_finish8<U>(f, block + 1, c10, c11, range);
    fc_vnni_finish8<U>(f, block + 2, c20, c21, range);
    fc_vnni_finish8<U>(f, block + 3, c30, c31, range);
  }
  for (; block < f.blocks; ++block) {
    const int8_t* w = f.weights + static_cast<size_t>(block) * block_bytes;
    __m256i lo = _mm256_setzero_si256(), hi = lo;
    for (size_t s = 0; s < steps; ++s) {
      const __m256i a = _mm256_set1_epi32(load4u(f.input + 4 * s));
      lo = _mm256_dpbusd_avx_epi32(lo, a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + s * 64)));
      hi = _mm256_dpbusd_avx_epi32(hi, a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + s * 64 + 32)));
    }
    fc_vnni_finish8<U>(f, block, lo, hi, range);
  }
}

// ---- AVX-512: fp::requantize on 16 lanes ----------------------------------------------------------------------------
// The same steps as requantize8 (avx2_ops.hpp), with opmasks where AVX2 has sign / compare vectors.

// fp::rounding_divide_by_pot(x, e) lane-wise, e in [0, 31].
AISRV_AVX512_VNNI inline __m512i rdbpot16(__m512i x, __m512i e) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, e), one);
  const __m512i remainder = _mm512_and_si512(x, mask);
  const __m512i threshold = _mm512_add_epi32(_mm512_srai_epi32(mask, 1), _mm512_srli_epi32(x, 31));
  const __m512i shifted = _mm512_srav_epi32(x, e);
  return _mm512_mask_add_epi32(shifted, _mm512_cmpgt_epi32_mask(remainder, threshold), shifted, one);
}

struct OutputRange16 {
  __m512i low, high, offset;
};

AISRV_AVX512_VNNI inline OutputRange16 output_range16(int32_t offset, int32_t act_min, int32_t act_max) {
  return {_mm512_set1_epi32(act_min - offset), _mm512_set1_epi32(act_max - offset), _mm512_set1_epi32(offset)};
}

// fp::requantize lane-wise: per-lane left and right shifts (max(shift, 0), max(-shift, 0)) precomputed.
AISRV_AVX512_VNNI inline __m512i requantize16(__m512i acc, __m512i multiplier, __m512i left, __m512i right,
                                              const OutputRange16& r) {
  __m512i x = srdhm16(_mm512_sllv_epi32(acc, left), multiplier);
  x = rdbpot16(x, right);
  x = _mm512_min_epi32(_mm512_max_epi32(x, r.low), r.high);
  return _mm512_add_epi32(x, r.offset);
}

// 16 lanes inside the output type's range -> the first `count` of their bytes (vpmovdb truncates; the clamp already
// put every lane in the type's range, int8 or uint8). No masked store: on AMD Zen 4 a byte-masked store to memory
// is far slower than a plain one (measured: micro_speech's 8-channel depthwise layer 12 % slower than AVX2 with it),
// so a short block goes through store_bytes' fixed-size pieces as on the AVX2 level.
AISRV_AVX512_VNNI inline void store16(uint8_t* out, __m512i v, int32_t count) {
  const __m128i bytes = _mm512_cvtepi32_epi8(v);
  if (count >= 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bytes);
  else store_bytes(out, bytes, count);
}

// ---- AVX-512 VNNI: a block of at most 8 channels, two rows per zmm -------------------------------------------------
// Lanes 0-7 hold row r's 8 channels, lanes 8-15 row r + 1's: half the VPDPBUSDs and half the requantization of the
// 16-channel form, whose upper lanes would be empty (mobilenet_v1's 3 -> 8 channel first layer, the last block of a
// layer whose channel count is 8 more than a multiple of 16). The weights of channels 0-7 ([step][16][4]: the
// first 32 bytes of a step) go to both halves; each pair of rows is loaded once per 8 steps (32 bytes of each row,
// masked at the row's end) and VPERMD puts step s's 4 bytes of each row into its half.

// 32 bytes of `row` (masked) in lanes 0-7, the same bytes of the next row in lanes 8-15.
AISRV_AVX512_VNNI inline __m512i row_pair(const int8_t* row, size_t stride, __mmask32 m) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_maskz_loadu_epi8(m, row)),
                            _mm256_maskz_loadu_epi8(m, row + stride), 1);
}

// The block (g.cols <= 8, g.rows >= 2; the tile's zero rows fill a last pair).
AISRV_AVX512_VNNI void gemm_avx512_vnni_8(const GemmBlock& g) {
  const __m512i bias = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.bias)));
  __m512i c0 = bias, c1 = bias, c2 = bias;
  const size_t steps = g.a_stride / 4;
  const __m512i halves = _mm512_set_epi32(8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0);
  for (size_t s0 = 0; s0 < steps; s0 += 8) {
    const size_t n = std::min<size_t>(8, steps - s0);
    const __mmask32 m = n == 8 ? ~__mmask32{0} : static_cast<__mmask32>((uint32_t{1} << (4 * n)) - 1);
    const int8_t* a = g.a8 + 4 * s0;
    const __m512i a0 = row_pair(a, g.a_stride, m), a1 = row_pair(a + 2 * g.a_stride, g.a_stride, m),
                  a2 = row_pair(a + 4 * g.a_stride, g.a_stride, m);
    const int8_t* b = g.b8 + s0 * 4 * kGemmCols;
    for (size_t s = 0; s < n; ++s, b += 4 * kGemmCols) {
      const __m512i w = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
      const __m512i idx = _mm512_add_epi32(halves, _mm512_set1_epi32(static_cast<int32_t>(s)));
      c0 = _mm512_dpbusd_epi32(c0, _mm512_permutexvar_epi32(idx, a0), w);
      c1 = _mm512_dpbusd_epi32(c1, _mm512_permutexvar_epi32(idx, a1), w);
      c2 = _mm512_dpbusd_epi32(c2, _mm512_permutexvar_epi32(idx, a2), w);
    }
  }
  const __m512i zero = _mm512_setzero_si512();
  const __m512i multiplier =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.multiplier)));
  const __m512i shift = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.shift)));
  const __m512i left = _mm512_max_epi32(shift, zero);
  const __m512i right = _mm512_max_epi32(_mm512_sub_epi32(zero, shift), zero);
  const OutputRange16 range = output_range16(g.output_offset, g.act_min, g.act_max);
  const __m512i pairs[kGemmRows / 2] = {c0, c1, c2};
  for (int32_t r = 0; r < g.rows; r += 2) {
    __m512i acc = pairs[r / 2];
    if (g.row_offset)
      acc = _mm512_add_epi32(acc, _mm512_mask_blend_epi32(0xFF00, _mm512_set1_epi32(g.row_offset[r]),
                                                          _mm512_set1_epi32(g.row_offset[r + 1])));
    const __m128i bytes = _mm512_cvtepi32_epi8(requantize16(acc, multiplier, left, right, range));
    uint8_t* out = g.out + static_cast<size_t>(r) * g.out_stride;
    const bool both = r + 1 < g.rows;
    if (both && g.cols == 8 && g.out_stride == 8) {  // the two rows' outputs are adjacent
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bytes);
      continue;
    }
    store_bytes(out, bytes, g.cols);
    if (both) store_bytes(out + g.out_stride, _mm_srli_si128(bytes, 8), g.cols);
  }
}

// ---- AVX-512 VNNI: 6 x 16 GEMM block, one zmm (16 channels) per row ------------------------------------------------

AISRV_AVX512_VNNI void gemm_avx512_vnni(const GemmBlock& g) {
  if (g.cols <= 8 && g.rows > 1) {
    gemm_avx512_vnni_8(g);
    return;
  }
  const __m512i bias = _mm512_loadu_si512(g.bias);
  __m512i c0 = bias, c1 = bias, c2 = bias, c3 = bias, c4 = bias, c5 = bias;
  const int8_t* a0 = g.a8;
  const int8_t* a1 = a0 + g.a_stride;
  const int8_t* a2 = a1 + g.a_stride;
  const int8_t* a3 = a2 + g.a_stride;
  const int8_t* a4 = a3 + g.a_stride;
  const int8_t* a5 = a4 + g.a_stride;
  const int8_t* b = g.b8;
  const size_t steps = g.a_stride / 4;
  if (g.rows == 1) {
    // One real row (a convolution of one output pixel, e.g. a classifier's 1x1 layer after global pooling): the
    // zero rows are not computed; four partial sums over the depth keep VPDPBUSD's latency hidden.
    __m512i p1 = _mm512_setzero_si512(), p2 = p1, p3 = p1;
    size_t s = 0;
    for (; s + 4 <= steps; s += 4, b += 16 * kGemmCols) {
      c0 = _mm512_dpbusd_epi32(c0, _mm512_set1_epi32(load4(a0 + 4 * s)), _mm512_loadu_si512(b));
      p1 = _mm512_dpbusd_epi32(p1, _mm512_set1_epi32(load4(a0 + 4 * s + 4)), _mm512_loadu_si512(b + 64));
      p2 = _mm512_dpbusd_epi32(p2, _mm512_set1_epi32(load4(a0 + 4 * s + 8)), _mm512_loadu_si512(b + 128));
      p3 = _mm512_dpbusd_epi32(p3, _mm512_set1_epi32(load4(a0 + 4 * s + 12)), _mm512_loadu_si512(b + 192));
    }
    for (; s < steps; ++s, b += 4 * kGemmCols)
      c0 = _mm512_dpbusd_epi32(c0, _mm512_set1_epi32(load4(a0 + 4 * s)), _mm512_loadu_si512(b));
    c0 = _mm512_add_epi32(_mm512_add_epi32(c0, p1), _mm512_add_epi32(p2, p3));
  } else {
    for (size_t s = 0; s < steps; ++s, b += 4 * kGemmCols) {
      const __m512i w = _mm512_loadu_si512(b);
      c0 = _mm512_dpbusd_epi32(c0, _mm512_set1_epi32(load4(a0 + 4 * s)), w);
      c1 = _mm512_dpbusd_epi32(c1, _mm512_set1_epi32(load4(a1 + 4 * s)), w);
      c2 = _mm512_dpbusd_epi32(c2, _mm512_set1_epi32(load4(a2 + 4 * s)), w);
      c3 = _mm512_dpbusd_epi32(c3, _mm512_set1_epi32(load4(a3 + 4 * s)), w);
      c4 = _mm512_dpbusd_epi32(c4, _mm512_set1_epi32(load4(a4 + 4 * s)), w);
      c5 = _mm512_dpbusd_epi32(c5, _mm512_set1_epi32(load4(a5 + 4 * s)), w);
    }
  }
  const __m512i zero = _mm512_setzero_si512();
  const __m512i multiplier = _mm512_loadu_si512(g.multiplier);
  const __m512i shift = _mm512_loadu_si512(g.shift);
  const __m512i left = _mm512_max_epi32(shift, zero);
  const __m512i right = _mm512_max_epi32(_mm512_sub_epi32(zero, shift), zero);
  const OutputRange16 range = output_range16(g.output_offset, g.act_min, g.act_max);
  const __m512i rows[kGemmRows] = {c0, c1, c2, c3, c4, c5};
  for (int32_t r = 0; r < g.rows; ++r) {
    __m512i acc = rows[r];
    if (g.row_offset) acc = _mm512_add_epi32(acc, _mm512_set1_epi32(g.row_offset[r]));
    store16(g.out + static_cast<size_t>(r) * g.out_stride, requantize16(acc, multiplier, left, right, range), g.cols);
  }
}

// ---- AVX-512 VNNI: FULLY_CONNECTED row (FcVnniRow), four blocks of 16 outputs (one zmm each) in flight ------------

AISRV_AVX512_VNNI inline void fc_vnni_finish16(const FcVnniRow& f, int32_t block, __m512i acc,
                                               const OutputRange16& range) {
  const __m512i zero = _mm512_setzero_si512();
  const size_t o0 = static_cast<size_t>(block) * kFcVnniBlock;
  acc = _mm512_add_epi32(_mm512_add_epi32(acc, _mm512_loadu_si512(f.bias + o0)), _mm512_set1_epi32(f.row_offset));
  const __m512i shift = _mm512_loadu_si512(f.shift + o0);
  const __m512i left = _mm512_max_epi32(shift, zero);
  const __m512i right = _mm512_max_epi32(_mm512_sub_epi32(zero, shift), zero);
  store16(f.out + o0, requantize16(acc, _mm512_loadu_si512(f.multiplier + o0), left, right, range),
          f.outputs - static_cast<int32_t>(o0));
}

AISRV_AVX512_VNNI void fc_vnni_avx512(const FcVnniRow& f) {
  const size_t steps = static_cast<size_t>(f.k4) / 4;
  const size_t block_bytes = steps * 4 * kFcVnniBlock;
  const OutputRange16 range = output_range16(f.output_offset, f.act_min, f.act_max);
  int32_t block = 0;
  for (; block + 4 <= f.blocks; block += 4) {
    const int8_t* w0 = f.weights + static_cast<size_t>(block) * block_bytes;
    const int8_t* w1 = w0 + block_bytes;
    const int8_t* w2 = w1 + block_bytes;
    const int8_t* w3 = w2 + block_bytes;
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0;
    for (size_t s = 0; s < steps; ++s) {
      const __m512i a = _mm512_set1_epi32(load4u(f.input + 4 * s));
      c0 = _mm512_dpbusd_epi32(c0, a, _mm512_loadu_si512(w0 + s * 64));
      c1 = _mm512_dpbusd_epi32(c1, a, _mm512_loadu_si512(w1 + s * 64));
      c2 = _mm512_dpbusd_epi32(c2, a, _mm512_loadu_si512(w2 + s * 64));
      c3 = _mm512_dpbusd_epi32(c3, a, _mm512_loadu_si512(w3 + s * 64));
    }
    fc_vnni_finish16(f, block, c0, range);
    fc_vnni_finish16(f, block + 1, c1, range);
    fc_vnni_finish16(f, block + 2, c2, range);
    fc_vnni_finish16(f, block + 3, c3, range);
  }
  for (; block < f.blocks; ++block) {
    const int8_t* w = f.weights + static_cast<size_t>(block) * block_bytes;
    __m512i even = _mm512_setzero_si512(), odd = even;
    size_t s = 0;
    for (; s + 2 <= steps; s += 2) {
      even = _mm512_dpbusd_epi32(even, _mm512_set1_epi32(load4u(f.input + 4 * s)), _mm512_loadu_si512(w + s * 64));
      odd = _mm512_dpbusd_epi32(odd, _mm512_set1_epi32(load4u(f.input + 4 * s + 4)),
                                _mm512_loadu_si512(w + s * 64 + 64));
    }
    if (s < steps)
      even = _mm512_dpbusd_epi32(even, _mm512_set1_epi32(load4u(f.input + 4 * s)), _mm512_loadu_si512(w + s * 64));
    fc_vnni_finish16(f, block, _mm512_add_epi32(even, odd), range);
  }
}

// ---- AVX-512: DEPTHWISE_CONV_2D, one output row ---------------------------------------------------------------------
// Weights in DepthwiseLayout::pairs32 (depthwise_conv_2d.cpp): blocks of 32 channels, per pair of taps (t0, t1) 64
// int16 = [A | B], lane l (0-15) of A holding the pair (w[t0][c], w[t1][c]) of channel (l / 4) * 8 + l % 4 and of B
// that channel + 4 — the order vpunpcklwd / vpunpckhwd give two zmm of 32 input channels each (per 128-bit lane).
// VPDPWSSD multiplies the int16 pairs and adds both products to the lane (exact modulo 2^32, like vpmaddwd + vpaddd:
// the sums are proven to fit int32). vpermt2d puts the two accumulators back into channel order (0-15, 16-31) for
// the 16-lane requantization. A last block of 16 channels (channels_padded = 32k + 16) is laid out as on the AVX2
// level (the same offset) and runs the AVX2 loop.

// The AVX2 level's loop for one block of 16 channels (depthwise_block_sums, DepthwiseLayout::pairs), requantized
// on 16 lanes.
AISRV_AVX512_VNNI inline void depthwise_block16(const DepthwiseRow& d, size_t column, size_t c0, const int16_t* w,
                                                int32_t pairs, const OutputRange16& range, uint8_t* out) {
  const __m512i zero = _mm512_setzero_si512();
  __m256i acc_a, acc_b;
  depthwise_block_sums(d, column, c0, w, pairs, acc_a, acc_b);
  __m512i acc = _mm512_inserti64x4(_mm512_castsi256_si512(acc_a), acc_b, 1);
  acc = _mm512_add_epi32(_mm512_shuffle_i32x4(acc, acc, 0xD8), _mm512_loadu_si512(d.bias + c0));
  const __m512i shift = _mm512_loadu_si512(d.shift + c0);
  const __m512i left = _mm512_max_epi32(shift, zero);
  const __m512i right = _mm512_max_epi32(_mm512_sub_epi32(zero, shift), zero);
  store16(out + c0, requantize16(acc, _mm512_loadu_si512(d.multiplier + c0), left, right, range),
          d.channels - static_cast<int32_t>(c0));
}

AISRV_AVX512_VNNI void depthwise_row_avx512(const DepthwiseRow& d) {
  const int32_t pairs = (d.taps_count + 1) / 2;
  const int32_t blocks32 = d.channels_padded / 32;
  const bool tail16 = d.channels_padded % 32 != 0;
  const __m512i zero = _mm512_setzero_si512();
  const OutputRange16 range = output_range16(d.output_offset, d.act_min, d.act_max);
  // acc_a holds channels [0-3, 8-11, 16-19, 24-27], acc_b [4-7, 12-15, 20-23, 28-31] (dwords 0-15 of a, 16-31 of b).
  const __m512i order_lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i order_hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  for (int32_t ox = 0; ox < d.out_width; ++ox) {
    const size_t column = static_cast<size_t>(ox) * static_cast<size_t>(d.column_step);
    uint8_t* out = d.out + static_cast<size_t>(ox) * static_cast<size_t>(d.channels);
    for (int32_t cb = 0; cb < blocks32; ++cb) {
      const size_t c0 = static_cast<size_t>(cb) * 32;
      const int16_t* w = d.packed + static_cast<size_t>(cb) * static_cast<size_t>(pairs) * 64;
      __m512i acc_a = zero, acc_b = zero;
      for (int32_t tp = 0; tp < pairs; ++tp, w += 64) {
        const int32_t t0 = 2 * tp, t1 = 2 * tp + 1;
        const __m512i x0 = _mm512_loadu_si512(d.taps[t0] + column + c0);
        const __m512i x1 = t1 < d.taps_count ? _mm512_loadu_si512(d.taps[t1] + column + c0) : x0;  // weights 0
        acc_a = _mm512_dpwssd_epi32(acc_a, _mm512_unpacklo_epi16(x0, x1), _mm512_loadu_si512(w));
        acc_b = _mm512_dpwssd_epi32(acc_b, _mm512_unpackhi_epi16(x0, x1), _mm512_loadu_si512(w + 32));
      }
      const __m512i lo = _mm512_add_epi32(_mm512_permutex2var_epi32(acc_a, order_lo, acc_b),
                                          _mm512_loadu_si512(d.bias + c0));
      const __m512i hi = _mm512_add_epi32(_mm512_permutex2var_epi32(acc_a, order_hi, acc_b),
                                          _mm512_loadu_si512(d.bias + c0 + 16));
      const __m512i s_lo = _mm512_loadu_si512(d.shift + c0), s_hi = _mm512_loadu_si512(d.shift + c0 + 16);
      const __m512i r_lo = requantize16(lo, _mm512_loadu_si512(d.multiplier + c0), _mm512_max_epi32(s_lo, zero),
                                        _mm512_max_epi32(_mm512_sub_epi32(zero, s_lo), zero), range);
      const __m512i r_hi = requantize16(hi, _mm512_loadu_si512(d.multiplier + c0 + 16), _mm512_max_epi32(s_hi, zero),
                                        _mm512_max_epi32(_mm512_sub_epi32(zero, s_hi), zero), range);
      const int32_t left_in_row = d.channels - static_cast<int32_t>(c0);
      store16(out + c0, r_lo, left_in_row);
      if (left_in_row > 16) store16(out + c0 + 16, r_hi, left_in_row - 16);
    }
    if (tail16) {
      const size_t c0 = static_cast<size_t>(blocks32) * 32;
      depthwise_block16(d, column, c0, d.packed + static_cast<size_t>(blocks32) * static_cast<size_t>(pairs) * 64,
                        pairs, range, out);
    }
  }
}

// ---- AVX-512: ADD without broadcasting, 16 elements a step ------------------------------------------------------
// The AVX2 loop's steps (add_element's formula: both inputs + offset, << left_shift, rescaled, summed, rescaled,
// clamped) on 16 lanes with the 16-lane srdhm / rdbpot; the tail element by element.

template <bool U>
AISRV_AVX512_VNNI inline __m512i widen16_32(const uint8_t* p) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (U) return _mm512_cvtepu8_epi32(bytes);
  else return _mm512_cvtepi8_epi32(bytes);
}

template <bool U>
AISRV_AVX512_VNNI void add_avx512(const AddSpan& s) {
  const __m512i a_offset = _mm512_set1_epi32(s.a_offset), b_offset = _mm512_set1_epi32(s.b_offset);
  const __m128i left_shift = _mm_cvtsi32_si128(s.left_shift);
  const __m512i a_mul = _mm512_set1_epi32(s.a_multiplier), a_right = _mm512_set1_epi32(-s.a_shift);
  const __m512i b_mul = _mm512_set1_epi32(s.b_multiplier), b_right = _mm512_set1_epi32(-s.b_shift);
  const __m512i o_mul = _mm512_set1_epi32(s.output_multiplier), o_right = _mm512_set1_epi32(-s.output_shift);
  const OutputRange16 range = output_range16(s.output_offset, s.act_min, s.act_max);
  int64_t i = 0;
  for (; i + 16 <= s.count; i += 16) {
    const __m512i a = _mm512_sll_epi32(_mm512_add_epi32(widen16_32<U>(s.a + i), a_offset), left_shift);
    const __m512i b = _mm512_sll_epi32(_mm512_add_epi32(widen16_32<U>(s.b + i), b_offset), left_shift);
    const __m512i sum = _mm512_add_epi32(rdbpot16(srdhm16(a, a_mul), a_right), rdbpot16(srdhm16(b, b_mul), b_right));
    __m512i o = rdbpot16(srdhm16(sum, o_mul), o_right);
    o = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(o, range.low), range.high), range.offset);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(s.out + i), _mm512_cvtepi32_epi8(o));
  }
  for (; i < s.count; ++i) s.out[i] = static_cast<uint8_t>(add_element(element<U>(s.a[i]), element<U>(s.b[i]), s));
}

}  // namespace

void fill_avx_vnni_kernels(OptKernels& k) {
  k.gemm_vnni[0] = gemm_avx_vnni<false>;
  k.gemm_vnni[1] = gemm_avx_vnni<true>;
  k.fc_vnni[0] = fc_vnni_avx<false>;
  k.fc_vnni[1] = fc_vnni_avx<true>;
}

void fill_avx512_vnni_kernels(OptKernels& k) {
  k.gemm_vnni[0] = gemm_avx512_vnni;
  k.gemm_vnni[1] = gemm_avx512_vnni;
  k.fc_vnni[0] = fc_vnni_avx512;  // bytes clamped to the type's range: int8 and uint8 alike
  k.fc_vnni[1] = fc_vnni_avx512;
  k.depthwise_row[0] = depthwise_row_avx512;  // DepthwiseLayout::pairs32, int8 and uint8 alike
  k.depthwise_row[1] = depthwise_row_avx512;
  k.depthwise_layout = DepthwiseLayout::pairs32;
  k.add[0] = add_avx512<false>;
  k.add[1] = add_avx512<true>;
}

}  // namespace aisrv::engine::cpu::opt

#else  // not x86-64: no VNNI levels

namespace aisrv::engine::cpu::opt {
void fill_avx_vnni_kernels(OptKernels&) {}
void fill_avx512_vnni_kernels(OptKernels&) {}
}  // namespace aisrv::engine::cpu::opt

#endif
