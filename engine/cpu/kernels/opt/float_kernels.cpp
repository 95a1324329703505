// aisrv CPU engine, optimised kernels — the float32 inner loops of the convolution family (float_kernels.hpp) at each
// instruction-set level: portable C++ (which the compiler vectorises for the baseline target), AVX2 (functions with
// __attribute__((target("avx2"))), reached only through float_kernels() at the AVX2 levels) and NEON (aarch64).
// Every loop keeps one output element per lane with its own running total: +0.0f, then total + product for each
// term in the caller's order, then + bias, then the clamp; separate multiply and add instructions (no FMA).
// The clamps reproduce std::min(std::max(v, lo), hi) bit for bit, NaN and signed zeros included:
//   AVX2  max_ps(lo, v) = (lo > v) ? lo : v = std::max(v, lo); min_ps(hi, u) = (hi < u) ? hi : u = std::min(u, hi);
//   NEON  a compare and a bit select of the same two expressions (FMAX / FMIN would treat NaN and -0.0 otherwise).
#include "float_kernels.hpp"
#include "optimized_backend.hpp"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AISRV_FLOAT_AVX2 1
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace aisrv::engine::cpu::opt {

namespace {

float clamp(float v, float lo, float hi) { return std::min(std::max(v, lo), hi); }

// ---- portable ---------------------------------------------------------------------------------------------------

// Four floats as the compiler's generic vector (SSE2 on x86-64, NEON on aarch64; element-wise IEEE operations).
typedef float Float4 __attribute__((vector_size(16)));

Float4 load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// R rows of W channels from row `row0` of the block (R x W / 4 accumulators fit the baseline's registers).
template <int R, int W>
void taps_rows(const FloatTapBlock& k, int32_t row0) {
  constexpr int V = W / 4;
  Float4 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = Float4{0.0f, 0.0f, 0.0f, 0.0f};
  const float* input = k.input + static_cast<size_t>(row0) * k.input_step;
  for (int32_t t = 0; t < k.taps; ++t) {
    const float* x = input + k.tap_input[t];
    const float* w = k.weights + k.tap_weight[t];
    for (int32_t c = 0; c < k.depth; ++c, w += W) {
      Float4 wv[V];
      for (int v = 0; v < V; ++v) wv[v] = load4(w + 4 * v);
      for (int r = 0; r < R; ++r) {
        const float a = x[static_cast<size_t>(r) * k.input_step + static_cast<size_t>(c)];
        const Float4 av{a, a, a, a};
        for (int v = 0; v < V; ++v) acc[r][v] = acc[r][v] + av * wv[v];
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    float sums[W];
    std::memcpy(sums, acc[r], sizeof sums);
    float* out = k.out + static_cast<size_t>(row0 + r) * k.out_step;
    for (int32_t j = 0; j < k.cols; ++j) out[j] = clamp(sums[j] + k.bias[j], k.act_min, k.act_max);
  }
}

template <int W>
void taps_portable(const FloatTapBlock& k) {
  constexpr int kChunk = W == 16 ? 2 : 4;
  int32_t r = 0;
  for (; r + kChunk <= k.rows; r += kChunk) taps_rows<kChunk, W>(k, r);
  for (; r < k.rows; ++r) taps_rows<1, W>(k, r);
}

// One row of up to 8 channels from channel c0 (n of them): the tail of the vector loops, and the portable loop.
void depthwise_lanes(const FloatDepthwiseBlock& k, int32_t row, int32_t c0, int32_t n) {
  float acc[8] = {};
  const float* input = k.input + static_cast<size_t>(row) * k.input_step + c0;
  for (int32_t t = 0; t < k.taps; ++t) {
    const float* x = input + k.tap_input[t];
    const float* w = k.weights + k.tap_weight[t] + c0;
    for (int32_t j = 0; j < n; ++j) acc[j] += x[j] * w[j];
  }
  float* out = k.out + static_cast<size_t>(row) * k.out_step + c0;
  for (int32_t j = 0; j < n; ++j) out[j] = clamp(acc[j] + (k.bias ? k.bias[c0 + j] : 0.0f), k.act_min, k.act_max);
}

// Rows of 8 full channels at once from channel c0.
template <int R>
void depthwise_rows8(const FloatDepthwiseBlock& k, int32_t row0, int32_t c0) {
  float acc[R][8];
  for (auto& row : acc)
    for (float& v : row) v = 0.0f;
  const float* input = k.input + static_cast<size_t>(row0) * k.input_step + c0;
  for (int32_t t = 0; t < k.taps; ++t) {
    const float* w = k.weights + k.tap_weight[t] + c0;
    for (int r = 0; r < R; ++r) {
      const float* x = input + k.tap_input[t] + static_cast<size_t>(r) * k.input_step;
      for (int j = 0; j < 8; ++j) acc[r][j] += x[j] * w[j];
    }
  }
  for (int r = 0; r < R; ++r) {
    float* out = k.out + static_cast<size_t>(row0 + r) * k.out_step + c0;
    for (int j = 0; j < 8; ++j) out[j] = clamp(acc[r][j] + (k.bias ? k.bias[c0 + j] : 0.0f), k.act_min, k.act_max);
  }
}

void depthwise_portable(const FloatDepthwiseBlock& k) {
  int32_t c = 0;
  for (; c + 8 <= k.channels; c += 8) {
    int32_t r = 0;
    for (; r + 2 <= k.rows; r += 2) depthwise_rows8<2>(k, r, c);
    for (; r < k.rows; ++r) depthwise_rows8<1>(k, r, c);
  }
  if (c < k.channels)
    for (int32_t r = 0; r < k.rows; ++r) depthwise_lanes(k, r, c, k.channels - c);
}

// Eight independent running totals (one per output) per batch row: no vector transposition, but the totals no
// longer wait on each other as the reference's single chain does.
void fc_portable(const FloatFcBlock& k) {
  for (int32_t b = 0; b < k.batches; ++b) {
    const float* x = k.input + static_cast<size_t>(b) * k.input_stride;
    float acc[kFcOutputs] = {};
    const float* w[kFcOutputs];
    for (int j = 0; j < kFcOutputs; ++j)
      w[j] = k.weights + static_cast<size_t>(std::min(j, k.outputs - 1)) * k.weight_stride;
    for (int32_t d = 0; d < k.depth; ++d) {
      const float a = x[d];
      for (int j = 0; j < kFcOutputs; ++j) acc[j] += a * w[j][d];
    }
    float* out = k.out + static_cast<size_t>(b) * k.out_stride;
    for (int32_t j = 0; j < k.outputs; ++j)
      out[j] = clamp(acc[j] + (k.bias ? k.bias[j] : 0.0f), k.act_min, k.act_max);
  }
}

// ---- AVX2 -------------------------------------------------------------------------------------------------------
#if defined(AISRV_FLOAT_AVX2)
#define AISRV_AVX2 __attribute__((target("avx2")))

AISRV_AVX2 inline __m256 clamp8(__m256 v, __m256 lo, __m256 hi) {
  return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
}

// Lanes [0, n) set (n in 0..8).
AISRV_AVX2 inline __m256i lane_mask(int32_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <int R, int V>
AISRV_AVX2 void taps_avx2_rows(const FloatTapBlock& k) {
  __m256 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  const size_t step = k.input_step;
  for (int32_t t = 0; t < k.taps; ++t) {
    const float* x = k.input + k.tap_input[t];
    const float* w = k.weights + k.tap_weight[t];
    for (int32_t c = 0; c < k.depth; ++c, w += 8 * V) {
      __m256 wv[V];
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) wv[v] = _mm256_loadu_ps(w + 8 * v);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256 a = _mm256_broadcast_ss(x + static_cast<size_t>(r) * step + static_cast<size_t>(c));
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) acc[r][v] = _mm256_add_ps(acc[r][v], _mm256_mul_ps(a, wv[v]));
      }
    }
  }
  const __m256 lo = _mm256_set1_ps(k.act_min), hi = _mm256_set1_ps(k.act_max);
  __m256 bias[V];
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) bias[v] = _mm256_loadu_ps(k.bias + 8 * v);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* out = k.out + static_cast<size_t>(r) * k.out_step;
    if (k.cols == 8 * V) {
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) _mm256_storeu_ps(out + 8 * v, clamp8(_mm256_add_ps(acc[r][v], bias[v]), lo, hi));
    } else {
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v)
        _mm256_maskstore_ps(out + 8 * v, lane_mask(k.cols - 8 * v), clamp8(_mm256_add_ps(acc[r][v], bias[v]), lo, hi));
    }
  }
}

template <int V>
AISRV_AVX2 void taps_avx2(const FloatTapBlock& k) {
  switch (k.rows) {
    case 1: taps_avx2_rows<1, V>(k); break;
    case 2: taps_avx2_rows<2, V>(k); break;
    case 3: taps_avx2_rows<3, V>(k); break;
    case 4: taps_avx2_rows<4, V>(k); break;
    case 5: taps_avx2_rows<5, V>(k); break;
    default: taps_avx2_rows<6, V>(k); break;
  }
}

// R rows x 8 channels from c0; Masked: only the first `n` channels exist (loads and stores masked).
template <bool Masked>
AISRV_AVX2 inline __m256 load_lanes(const float* p, __m256i mask) {
  return Masked ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
}

// R rows x 8V channels from c0; Masked: only the first `n` channels exist (loads and stores masked; a vector with no
// channel touches no memory). Few rows take several vectors, so that enough independent totals are in flight.
template <int R, int V, bool Masked>
AISRV_AVX2 void depthwise_avx2_chunk(const FloatDepthwiseBlock& k, int32_t c0, int32_t n) {
  __m256i mask[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) mask[v] = lane_mask(n - 8 * v);
  __m256 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  const float* input = k.input + c0;
  const size_t step = k.input_step;
  for (int32_t t = 0; t < k.taps; ++t) {
    const float* wp = k.weights + k.tap_weight[t] + c0;
    __m256 w[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) w[v] = load_lanes<Masked>(wp + 8 * v, mask[v]);
    const float* x = input + k.tap_input[t];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v)
        acc[r][v] = _mm256_add_ps(
            acc[r][v], _mm256_mul_ps(load_lanes<Masked>(x + static_cast<size_t>(r) * step + 8 * v, mask[v]), w[v]));
  }
  const __m256 lo = _mm256_set1_ps(k.act_min), hi = _mm256_set1_ps(k.act_max);
  __m256 bias[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) bias[v] = k.bias ? load_lanes<Masked>(k.bias + c0 + 8 * v, mask[v]) : _mm256_setzero_ps();
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* out = k.out + static_cast<size_t>(r) * k.out_step + c0;
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const __m256 y = clamp8(_mm256_add_ps(acc[r][v], bias[v]), lo, hi);
      if (Masked) _mm256_maskstore_ps(out + 8 * v, mask[v], y);
      else _mm256_storeu_ps(out + 8 * v, y);
    }
  }
}

template <int R>
AISRV_AVX2 void depthwise_avx2_rows(const FloatDepthwiseBlock& k) {
  constexpr int V = R == 1 ? 4 : R <= 3 ? 2 : 1;
  int32_t c = 0;
  for (; c + 8 * V <= k.channels; c += 8 * V) depthwise_avx2_chunk<R, V, false>(k, c, 8 * V);
  if (c < k.channels) depthwise_avx2_chunk<R, V, true>(k, c, k.channels - c);
}

AISRV_AVX2 void depthwise_avx2(const FloatDepthwiseBlock& k) {
  switch (k.rows) {
    case 1: depthwise_avx2_rows<1>(k); break;
    case 2: depthwise_avx2_rows<2>(k); break;
    case 3: depthwise_avx2_rows<3>(k); break;
    case 4: depthwise_avx2_rows<4>(k); break;
    case 5: depthwise_avx2_rows<5>(k); break;
    default: depthwise_avx2_rows<6>(k); break;
  }
}

// 8x8 transpose: in[j] holds row j's 8 values; afterwards in[i] holds element i of every row (lane j: row j).
AISRV_AVX2 inline void transpose8(__m256 (&m)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(m[0], m[1]), t1 = _mm256_unpackhi_ps(m[0], m[1]);
  const __m256 t2 = _mm256_unpacklo_ps(m[2], m[3]), t3 = _mm256_unpackhi_ps(m[2], m[3]);
  const __m256 t4 = _mm256_unpacklo_ps(m[4], m[5]), t5 = _mm256_unpackhi_ps(m[4], m[5]);
  const __m256 t6 = _mm256_unpacklo_ps(m[6], m[7]), t7 = _mm256_unpackhi_ps(m[6], m[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  m[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  m[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  m[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  m[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  m[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  m[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  m[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  m[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Lane j: output j (rows past `outputs` repeat the last one and are not stored). Eight depth entries of the eight
// weight rows are loaded and transposed, then each batch row adds them one depth entry at a time.
template <int B>
AISRV_AVX2 void fc_avx2_batches(const FloatFcBlock& k) {
  const float* w[kFcOutputs];
  for (int j = 0; j < kFcOutputs; ++j)
    w[j] = k.weights + static_cast<size_t>(std::min(j, k.outputs - 1)) * k.weight_stride;
  const float* x[B];
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) x[b] = k.input + static_cast<size_t>(b) * k.input_stride;
  __m256 acc[B];
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) acc[b] = _mm256_setzero_ps();
  int32_t d = 0;
  for (; d + 8 <= k.depth; d += 8) {
    __m256 m[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) m[j] = _mm256_loadu_ps(w[j] + d);
    transpose8(m);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
#pragma GCC unroll 4
      for (int b = 0; b < B; ++b)
        acc[b] = _mm256_add_ps(acc[b], _mm256_mul_ps(_mm256_broadcast_ss(x[b] + d + i), m[i]));
  }
  for (; d < k.depth; ++d) {
    const __m256 column = _mm256_setr_ps(w[0][d], w[1][d], w[2][d], w[3][d], w[4][d], w[5][d], w[6][d], w[7][d]);
#pragma GCC unroll 4
    for (int b = 0; b < B; ++b) acc[b] = _mm256_add_ps(acc[b], _mm256_mul_ps(_mm256_broadcast_ss(x[b] + d), column));
  }
  const __m256i mask = lane_mask(k.outputs);
  const __m256 bias = k.bias ? _mm256_maskload_ps(k.bias, mask) : _mm256_setzero_ps();
  const __m256 lo = _mm256_set1_ps(k.act_min), hi = _mm256_set1_ps(k.act_max);
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b)
    _mm256_maskstore_ps(k.out + static_cast<size_t>(b) * k.out_stride, mask,
                        clamp8(_mm256_add_ps(acc[b], bias), lo, hi));
}

AISRV_AVX2 void fc_avx2(const FloatFcBlock& k) {
  switch (k.batches) {
    case 1: fc_avx2_batches<1>(k); break;
    case 2: fc_avx2_batches<2>(k); break;
    case 3: fc_avx2_batches<3>(k); break;
    default: fc_avx2_batches<4>(k); break;
  }
}

#undef AISRV_AVX2
#endif  // AISRV_FLOAT_AVX2

// ---- NEON -------------------------------------------------------------------------------------------------------
#if defined(__aarch64__)

inline float32x4_t clamp4(float32x4_t v, float32x4_t lo, float32x4_t hi) {
  const float32x4_t low = vbslq_f32(vcltq_f32(v, lo), lo, v);    // std::max(v, lo)
  return vbslq_f32(vcltq_f32(hi, low), hi, low);                 // std::min(.., hi)
}

// R rows x 4V channels from row row0.
template <int R, int V>
void taps_neon_rows(const FloatTapBlock& k, int32_t row0) {
  float32x4_t acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = vdupq_n_f32(0.0f);
  const size_t step = k.input_step;
  const float* input = k.input + static_cast<size_t>(row0) * step;
  for (int32_t t = 0; t < k.taps; ++t) {
    const float* x = input + k.tap_input[t];
    const float* w = k.weights + k.tap_weight[t];
    for (int32_t c = 0; c < k.depth; ++c, w += 4 * V) {
      float32x4_t wv[V];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) wv[v] = vld1q_f32(w + 4 * v);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const float a = x[static_cast<size_t>(r) * step + static_cast<size_t>(c)];
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) acc[r][v] = vaddq_f32(acc[r][v], vmulq_n_f32(wv[v], a));
      }
    }
  }
  const float32x4_t lo = vdupq_n_f32(k.act_min), hi = vdupq_n_f32(k.act_max);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* out = k.out + static_cast<size_t>(row0 + r) * k.out_step;
    float* dst = out;
    float tmp[4 * V];
    if (k.cols != 4 * V) dst = tmp;  // a partial block: through a buffer
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) vst1q_f32(dst + 4 * v, clamp4(vaddq_f32(acc[r][v], vld1q_f32(k.bias + 4 * v)), lo, hi));
    if (dst == tmp) std::memcpy(out, tmp, static_cast<size_t>(k.cols) * sizeof(float));
  }
}

// Width 16: three rows at a time (12 accumulators); width 8: six.
template <int V>
void taps_neon(const FloatTapBlock& k) {
  constexpr int kChunk = V == 4 ? 3 : 6;
  int32_t r = 0;
  for (; r + kChunk <= k.rows; r += kChunk) taps_neon_rows<kChunk, V>(k, r);
  switch (k.rows - r) {
    case 0: break;
    case 1: taps_neon_rows<1, V>(k, r); break;
    case 2: taps_neon_rows<2, V>(k, r); break;
    case 3: taps_neon_rows<3, V>(k, r); break;
    case 4: taps_neon_rows<4, V>(k, r); break;
    default: taps_neon_rows<5, V>(k, r); break;
  }
}

// R rows x 8 channels from c0.
template <int R>
void depthwise_neon_chunk(const FloatDepthwiseBlock& k, int32_t c0) {
  float32x4_t acc[R][2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
  const float* input = k.input + c0;
  const size_t step = k.input_step;
  for (int32_t t = 0; t < k.taps; ++t) {
    const float* wp = k.weights + k.tap_weight[t] + c0;
    const float32x4_t w0 = vld1q_f32(wp), w1 = vld1q_f32(wp + 4);
    const float* x = input + k.tap_input[t];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float* xr = x + static_cast<size_t>(r) * step;
      acc[r][0] = vaddq_f32(acc[r][0], vmulq_f32(vld1q_f32(xr), w0));
      acc[r][1] = vaddq_f32(acc[r][1], vmulq_f32(vld1q_f32(xr + 4), w1));
    }
  }
  const float32x4_t lo = vdupq_n_f32(k.act_min), hi = vdupq_n_f32(k.act_max);
  const float32x4_t b0 = k.bias ? vld1q_f32(k.bias + c0) : vdupq_n_f32(0.0f);
  const float32x4_t b1 = k.bias ? vld1q_f32(k.bias + c0 + 4) : vdupq_n_f32(0.0f);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* out = k.out + static_cast<size_t>(r) * k.out_step + c0;
    vst1q_f32(out, clamp4(vaddq_f32(acc[r][0], b0), lo, hi));
    vst1q_f32(out + 4, clamp4(vaddq_f32(acc[r][1], b1), lo, hi));
  }
}

template <int R>
void depthwise_neon_rows(const FloatDepthwiseBlock& k) {
  int32_t c = 0;
  for (; c + 8 <= k.channels; c += 8) depthwise_neon_chunk<R>(k, c);
  if (c < k.channels)
    for (int32_t r = 0; r < R; ++r) depthwise_lanes(k, r, c, k.channels - c);
}

void depthwise_neon(const FloatDepthwiseBlock& k) {
  switch (k.rows) {
    case 1: depthwise_neon_rows<1>(k); break;
    case 2: depthwise_neon_rows<2>(k); break;
    case 3: depthwise_neon_rows<3>(k); break;
    case 4: depthwise_neon_rows<4>(k); break;
    case 5: depthwise_neon_rows<5>(k); break;
    default: depthwise_neon_rows<6>(k); break;
  }
}

// 4x4 transpose: m[j] row j's 4 values -> m[i] element i of every row.
inline void transpose4(float32x4_t (&m)[4]) {
  const float32x4_t t0 = vtrn1q_f32(m[0], m[1]), t1 = vtrn2q_f32(m[0], m[1]);
  const float32x4_t t2 = vtrn1q_f32(m[2], m[3]), t3 = vtrn2q_f32(m[2], m[3]);
  m[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
  m[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
  m[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
  m[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

// Two groups of four outputs (lanes), B batch rows.
template <int B>
void fc_neon_batches(const FloatFcBlock& k) {
  const float* w[kFcOutputs];
  for (int j = 0; j < kFcOutputs; ++j)
    w[j] = k.weights + static_cast<size_t>(std::min(j, k.outputs - 1)) * k.weight_stride;
  const float* x[B];
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) x[b] = k.input + static_cast<size_t>(b) * k.input_stride;
  float32x4_t acc[B][2];
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) acc[b][0] = acc[b][1] = vdupq_n_f32(0.0f);
  int32_t d = 0;
  for (; d + 4 <= k.depth; d += 4) {
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
      float32x4_t m[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) m[j] = vld1q_f32(w[4 * g + j] + d);
      transpose4(m);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int b = 0; b < B; ++b) acc[b][g] = vaddq_f32(acc[b][g], vmulq_n_f32(m[i], x[b][d + i]));
    }
  }
  for (; d < k.depth; ++d) {
    const float lanes0[4] = {w[0][d], w[1][d], w[2][d], w[3][d]};
    const float lanes1[4] = {w[4][d], w[5][d], w[6][d], w[7][d]};
    const float32x4_t c0 = vld1q_f32(lanes0), c1 = vld1q_f32(lanes1);
#pragma GCC unroll 4
    for (int b = 0; b < B; ++b) {
      acc[b][0] = vaddq_f32(acc[b][0], vmulq_n_f32(c0, x[b][d]));
      acc[b][1] = vaddq_f32(acc[b][1], vmulq_n_f32(c1, x[b][d]));
    }
  }
  float bias[kFcOutputs] = {};
  if (k.bias) std::memcpy(bias, k.bias, static_cast<size_t>(k.outputs) * sizeof(float));
  const float32x4_t lo = vdupq_n_f32(k.act_min), hi = vdupq_n_f32(k.act_max);
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) {
    float tmp[kFcOutputs];
    vst1q_f32(tmp, clamp4(vaddq_f32(acc[b][0], vld1q_f32(bias)), lo, hi));
    vst1q_f32(tmp + 4, clamp4(vaddq_f32(acc[b][1], vld1q_f32(bias + 4)), lo, hi));
    std::memcpy(k.out + static_cast<size_t>(b) * k.out_stride, tmp, static_cast<size_t>(k.outputs) * sizeof(float));
  }
}

void fc_neon(const FloatFcBlock& k) {
  switch (k.batches) {
    case 1: fc_neon_batches<1>(k); break;
    case 2: fc_neon_batches<2>(k); break;
    case 3: fc_neon_batches<3>(k); break;
    default: fc_neon_batches<4>(k); break;
  }
}

#endif  // __aarch64__

}  // namespace

FloatKernels float_kernels(SimdLevel level) {
  FloatKernels k;
  k.taps[0] = taps_portable<8>;
  k.taps[1] = taps_portable<16>;
  k.depthwise = depthwise_portable;
  k.fc = fc_portable;
#if defined(AISRV_FLOAT_AVX2)
  if (uses_avx2(level)) {
    k.taps[0] = taps_avx2<1>;
    k.taps[1] = taps_avx2<2>;
    k.depthwise = depthwise_avx2;
    k.fc = fc_avx2;
  }
#endif
#if defined(__aarch64__)
  if (uses_neon(level)) {
    k.taps[0] = taps_neon<2>;
    k.taps[1] = taps_neon<4>;
    k.depthwise = depthwise_neon;
    k.fc = fc_neon;
  }
#endif
  (void)level;
  return k;
}

}  // namespace aisrv::engine::cpu::opt
