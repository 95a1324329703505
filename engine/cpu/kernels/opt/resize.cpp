// aisrv CPU engine, optimised kernels — RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (int8, uint8, int16, float32;
// NHWC), byte for byte the reference kernels (kernels/ref/resize.cpp).
//
// Source rows and columns, and their weights, come from the reference's own arithmetic (float positions for
// nearest neighbour and the uint8 / float32 bilinear version, 1/1024 steps for int8 / int16), computed once per
// output row and, for a chunk of output columns, into a table on the stack: no per-element index arithmetic.
//
// Bilinear, made separable without changing a single rounding:
//   - uint8 / float32: the reference's value is ((tl*(1-dy))*(1-dx) + (bl*dy)*(1-dx) + (tr*(1-dy))*dx + (br*dy)*dx)
//     (+ 0.5 and truncation for uint8). Every product starts with a source value times its row weight, so for an
//     output row the two source rows are multiplied by (1-dy) and dy once per input column (vertical pass); each
//     output element then multiplies those same float products by its column weight and adds them in the same
//     order (horizontal pass). The floats are identical to the reference's.
//   - int8 / int16: the reference sums the four value x row weight x column weight products exactly (int64), so
//     wx0 * (tl*wy0 + bl*wy1) + wx1 * (tr*wy0 + br*wy1) is the same integer: the vertical pass keeps tl*wy0 + bl*wy1
//     per input column in int32 (at most 2^15 * 2048), the horizontal pass finishes in int32 for int8 (weights make
//     at most 2^29) and int64 for int16, then rounds halves away from zero as the reference.
//   An output row that repeats the previous one (same source rows and weights) is copied.
//   Each pass exists as a portable loop the compiler vectorises, and with AVX2 (x86-64) and NEON (aarch64)
//   intrinsics that take eight channels at a time.
// Nearest neighbour copies pixels (fixed-size copies for small pixels), and a repeated source row as one block.
// Output rows are split across the worker pool.
//
// No load-time data: tables made at load would save only the column table, one index computation per output column
// per call (not per element).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "optimized_backend.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AISRV_RESIZE_AVX2 1
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace aisrv::engine::cpu {

namespace opt {

namespace {

constexpr int32_t kChunkColumns = 512;  // output columns per column table
constexpr int64_t kSpan = 4096;         // input elements (columns x channels) one vertical pass holds
constexpr int32_t kOne = 1 << 10;       // the integer version's unit

// ----- Source positions: the reference's arithmetic, per output row or column --------------------------------------

float float_scale(int32_t in, int32_t out, bool align_corners) {
  if (align_corners && out > 1) return static_cast<float>(in - 1) / static_cast<float>(out - 1);
  return static_cast<float>(in) / static_cast<float>(out);
}

// Bilinear, float version: rows (or columns) lower / upper and the weights (1 - d) and d, d = position - lower.
struct FloatAxis {
  int32_t lower = 0, upper = 0;
  float w_lower = 0.0f, w_upper = 0.0f;
};
FloatAxis float_axis(int32_t v, float scale, bool half_pixel, int32_t in) {
  const float fv = static_cast<float>(v);
  const float position = half_pixel ? (fv + 0.5f) * scale - 0.5f : fv * scale;
  FloatAxis a;
  a.lower = std::max(static_cast<int32_t>(std::floor(position)), int32_t{0});
  a.upper = std::min(static_cast<int32_t>(std::ceil(position)), in - 1);
  const float d = position - static_cast<float>(a.lower);
  a.w_lower = 1 - d;
  a.w_upper = d;
  return a;
}

int32_t integer_scale(int32_t in, int32_t out, bool align_corners) {
  if (align_corners && out > 1) return (kOne * (in - 1) + (out - 1) / 2) / (out - 1);
  return (kOne * in + out / 2) / out;
}

// Bilinear, integer version: weights in 1/1024 (w_upper in [-512, 1023], w_lower = 1024 - w_upper).
struct IntegerAxis {
  int32_t lower = 0, upper = 0;
  int32_t w_lower = 0, w_upper = 0;
};
IntegerAxis integer_axis(int32_t v, int32_t scale, bool half_pixel, int32_t in) {
  const int32_t position = half_pixel ? v * scale + scale / 2 - (1 << 9) : v * scale;
  IntegerAxis a;
  // Truncating divisions, as the reference's.
  a.lower = std::max(position / kOne, int32_t{0});
  a.upper = std::min((position + kOne - 1) / kOne, in - 1);
  a.w_upper = position - kOne * a.lower;
  a.w_lower = kOne - a.w_upper;
  return a;
}

int32_t nearest_index(int32_t v, float scale, const ResizeParams& p, int32_t in) {
  const float offset = p.half_pixel_centers ? 0.5f : 0.0f;
  const float scaled = (static_cast<float>(v) + offset) * scale;
  int32_t r = std::min(static_cast<int32_t>(p.align_corners ? std::round(scaled) : std::floor(scaled)), in - 1);
  if (p.half_pixel_centers) r = std::max(r, int32_t{0});
  return r;
}

// ----- Bilinear ------------------------------------------------------------------------------------------------------

// The weights of one output row or column, in the representation the type computes with.
template <typename T>
constexpr bool kFloatMath = std::is_same_v<T, uint8_t> || std::is_same_v<T, float>;
template <typename T>
using Weight = std::conditional_t<kFloatMath<T>, float, int32_t>;
// Horizontal-pass accumulator of the integer version.
template <typename T>
using IntegerSum = std::conditional_t<std::is_same_v<T, int16_t>, int64_t, int32_t>;

template <typename T>
struct Axis {
  int32_t lower = 0, upper = 0;
  Weight<T> w_lower{}, w_upper{};
};

// Per-call constants of one bilinear resize.
template <typename T>
struct Bilinear {
  const T* input;
  T* output;
  int64_t channels, in_row, in_image, out_row, out_image;  // element strides
  Weight<T> scale_y, scale_x;
  bool half_pixel;
  int32_t in_h, in_w;
};

template <typename T>
[[gnu::always_inline]] inline Axis<T> axis(const Bilinear<T>& r, int32_t v, Weight<T> scale, int32_t in) {
  if constexpr (kFloatMath<T>) {
    const FloatAxis a = float_axis(v, scale, r.half_pixel, in);
    return {a.lower, a.upper, a.w_lower, a.w_upper};
  } else {
    const IntegerAxis a = integer_axis(v, scale, r.half_pixel, in);
    return {a.lower, a.upper, a.w_lower, a.w_upper};
  }
}

// One output column of a chunk: its two source columns as element offsets into the vertical pass's buffers.
template <typename T>
struct Column {
  int32_t lower = 0, upper = 0;
  Weight<T> w_lower{}, w_upper{};
};

// The vertical pass's products for one input element: float32 / uint8 keep the two rows' products apart (the
// reference adds them only after the column weight), the integer version their exact sum.
template <typename T>
struct VerticalBuffers;
template <typename T>
  requires kFloatMath<T>
struct VerticalBuffers<T> {
  float lower_row[kSpan], upper_row[kSpan];
};
template <typename T>
  requires(!kFloatMath<T>)
struct VerticalBuffers<T> {
  int32_t sum[kSpan];
};

// The two passes over one output row, per instruction set.
template <typename T>
struct RowPasses {
  // `count` input elements of rows `lower` and `upper` into `v`.
  void (*vertical)(VerticalBuffers<T>& v, const T* lower, const T* upper, int64_t count, Weight<T> w_lower,
                   Weight<T> w_upper);
  // `count` output pixels of `channels` elements from `v`.
  void (*horizontal)(const VerticalBuffers<T>& v, const Column<T>* columns, int32_t count, int64_t channels, T* out);
};

// ----- Portable passes: plain loops over contiguous elements, vectorised by the compiler.

template <typename T>
void vertical_portable(VerticalBuffers<T>& v, const T* __restrict lower, const T* __restrict upper, int64_t count,
                       Weight<T> w_lower, Weight<T> w_upper) {
  if constexpr (kFloatMath<T>) {
    float* __restrict lower_out = v.lower_row;
    float* __restrict upper_out = v.upper_row;
    for (int64_t i = 0; i < count; ++i) {
      lower_out[i] = static_cast<float>(lower[i]) * w_lower;
      upper_out[i] = static_cast<float>(upper[i]) * w_upper;
    }
  } else {
    int32_t* __restrict sum = v.sum;
    for (int64_t i = 0; i < count; ++i) sum[i] = int32_t{lower[i]} * w_lower + int32_t{upper[i]} * w_upper;
  }
}

// Horizontal pass, one channel at a time: the reference's value of each element from the vertical products.
// Every pointer is marked restrict (an 8-bit output would otherwise alias the buffers) so the channel loop vectorises.
template <typename T>
[[gnu::always_inline]] inline void horizontal_loop(const VerticalBuffers<T>& v, const Column<T>* columns,
                                                   int32_t count, int64_t channels, T* out) {
  for (int32_t k = 0; k < count; ++k) {
    const Column<T> col = columns[k];
    T* __restrict o = out + k * channels;
    if constexpr (kFloatMath<T>) {
      const float* __restrict top_left = v.lower_row + col.lower;
      const float* __restrict bottom_left = v.upper_row + col.lower;
      const float* __restrict top_right = v.lower_row + col.upper;
      const float* __restrict bottom_right = v.upper_row + col.upper;
      // The reference's order: top-left, bottom-left, top-right, bottom-right, then its rounding term (+0.5 for
      // uint8; + 0 for float32, which turns -0 into +0).
      constexpr float kRounding = std::is_same_v<T, uint8_t> ? 0.5f : 0.0f;
      for (int64_t c = 0; c < channels; ++c) {
        const float value = top_left[c] * col.w_lower + bottom_left[c] * col.w_lower + top_right[c] * col.w_upper +
                            bottom_right[c] * col.w_upper + kRounding;
        if constexpr (std::is_same_v<T, uint8_t>) {
          // The reference's clamp, then its truncating conversion (exact through int32 for values in [0, 255]).
          const float clamped = value < 0.0f ? 0.0f : (255.0f < value ? 255.0f : value);
          o[c] = static_cast<uint8_t>(static_cast<int32_t>(clamped));
        } else {
          o[c] = value;
        }
      }
    } else {
      using Sum = IntegerSum<T>;
      const int32_t* __restrict left = v.sum + col.lower;
      const int32_t* __restrict right = v.sum + col.upper;
      for (int64_t c = 0; c < channels; ++c) {
        const Sum sum = Sum{left[c]} * col.w_lower + Sum{right[c]} * col.w_upper;
        // Halves away from zero (0 counts as non-positive), truncating division: the reference's rounding.
        const Sum half = sum > 0 ? Sum{1} << 19 : -(Sum{1} << 19);
        o[c] = static_cast<T>((sum + half) / (Sum{1} << 20));
      }
    }
  }
}

template <typename T>
void horizontal_portable(const VerticalBuffers<T>& v, const Column<T>* columns, int32_t count, int64_t channels,
                         T* out) {
  horizontal_loop(v, columns, count, channels, out);
}

template <typename T>
constexpr RowPasses<T> kPortablePasses{vertical_portable<T>, horizontal_portable<T>};

// ----- AVX2 passes: eight channels at a time; a pixel's last block overlaps the one before when the channel count
// is not a multiple of 8 (it rewrites equal values), pixels of fewer channels take the portable pass.

#if defined(AISRV_RESIZE_AVX2)
#define AISRV_AVX2 __attribute__((target("avx2")))
#define AISRV_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline
#define AISRV_AVX2_LAMBDA __attribute__((target("avx2"), always_inline))

// Calls block(i) for i = 0, 8, ... and, for a tail, count - 8 (count >= 8).
template <typename Block>
AISRV_AVX2_INLINE void blocks_of_8(int64_t count, Block&& block) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) block(i);
  if (i < count) block(count - 8);
}

AISRV_AVX2_INLINE __m256 load_as_float(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
AISRV_AVX2_INLINE __m256 load_as_float(const float* p) { return _mm256_loadu_ps(p); }
AISRV_AVX2_INLINE __m256i load_as_int(const int8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
AISRV_AVX2_INLINE __m256i load_as_int(const int16_t* p) {
  return _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// The portable loop compiled for AVX2: int16 (int64 sums) and pixels of fewer than 8 channels.
template <typename T>
AISRV_AVX2 void horizontal_loop_avx2(const VerticalBuffers<T>& v, const Column<T>* columns, int32_t count,
                                     int64_t channels, T* out) {
  horizontal_loop(v, columns, count, channels, out);
}

template <typename T>
AISRV_AVX2 void vertical_avx2(VerticalBuffers<T>& v, const T* lower, const T* upper, int64_t count, Weight<T> w_lower,
                              Weight<T> w_upper) {
  if (count < 8) {
    vertical_portable(v, lower, upper, count, w_lower, w_upper);
    return;
  }
  if constexpr (kFloatMath<T>) {
    const __m256 wl = _mm256_set1_ps(w_lower), wu = _mm256_set1_ps(w_upper);
    blocks_of_8(count, [&](int64_t i) AISRV_AVX2_LAMBDA {
      _mm256_storeu_ps(v.lower_row + i, _mm256_mul_ps(load_as_float(lower + i), wl));
      _mm256_storeu_ps(v.upper_row + i, _mm256_mul_ps(load_as_float(upper + i), wu));
    });
  } else {
    const __m256i wl = _mm256_set1_epi32(w_lower), wu = _mm256_set1_epi32(w_upper);
    blocks_of_8(count, [&](int64_t i) AISRV_AVX2_LAMBDA {
      const __m256i sum = _mm256_add_epi32(_mm256_mullo_epi32(load_as_int(lower + i), wl),
                                           _mm256_mullo_epi32(load_as_int(upper + i), wu));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(v.sum + i), sum);
    });
  }
}

// uint8 and float32: the reference's four products summed in its order, plus its rounding term; for uint8 the
// clamp to [0, 255] as max / min (the value is never NaN, and -0 and +0 both truncate to 0), truncation, and a
// narrowing that is exact for values in [0, 255].
template <typename T>
AISRV_AVX2 void horizontal_float_avx2(const VerticalBuffers<T>& v, const Column<T>* columns, int32_t count,
                                      int64_t channels, T* out) {
  if (channels < 8) {
    horizontal_loop_avx2(v, columns, count, channels, out);
    return;
  }
  const __m256 rounding = _mm256_set1_ps(std::is_same_v<T, uint8_t> ? 0.5f : 0.0f);
  const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f);
  for (int32_t k = 0; k < count; ++k, out += channels) {
    const Column<T> col = columns[k];
    const __m256 wl = _mm256_set1_ps(col.w_lower), wu = _mm256_set1_ps(col.w_upper);
    const float *top_left = v.lower_row + col.lower, *bottom_left = v.upper_row + col.lower;
    const float *top_right = v.lower_row + col.upper, *bottom_right = v.upper_row + col.upper;
    blocks_of_8(channels, [&](int64_t c) AISRV_AVX2_LAMBDA {
      __m256 value = _mm256_mul_ps(_mm256_loadu_ps(top_left + c), wl);
      value = _mm256_add_ps(value, _mm256_mul_ps(_mm256_loadu_ps(bottom_left + c), wl));
      value = _mm256_add_ps(value, _mm256_mul_ps(_mm256_loadu_ps(top_right + c), wu));
      value = _mm256_add_ps(value, _mm256_mul_ps(_mm256_loadu_ps(bottom_right + c), wu));
      value = _mm256_add_ps(value, rounding);
      if constexpr (std::is_same_v<T, uint8_t>) {
        const __m256i truncated = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(value, zero), top));
        const __m128i words =
            _mm_packs_epi32(_mm256_castsi256_si128(truncated), _mm256_extracti128_si256(truncated, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + c), _mm_packus_epi16(words, words));
      } else {
        _mm256_storeu_ps(out + c, value);
      }
    });
  }
}

// int8: the exact sum in int32 (at most 2^29), halves away from zero, the truncating division by 2^20 as a biased
// arithmetic shift; results lie in [-128, 127] (the weights of distinct sources are never negative), so the
// saturating narrowing is exact.
AISRV_AVX2 void horizontal_int8_avx2(const VerticalBuffers<int8_t>& v, const Column<int8_t>* columns, int32_t count,
                                     int64_t channels, int8_t* out) {
  if (channels < 8) {
    horizontal_loop_avx2(v, columns, count, channels, out);
    return;
  }
  const __m256i zero = _mm256_setzero_si256();
  const __m256i half_up = _mm256_set1_epi32(1 << 19), half_down = _mm256_set1_epi32(-(1 << 19));
  for (int32_t k = 0; k < count; ++k, out += channels) {
    const Column<int8_t> col = columns[k];
    const __m256i wl = _mm256_set1_epi32(col.w_lower), wu = _mm256_set1_epi32(col.w_upper);
    blocks_of_8(channels, [&](int64_t c) AISRV_AVX2_LAMBDA {
      const __m256i left = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v.sum + col.lower + c));
      const __m256i right = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v.sum + col.upper + c));
      const __m256i sum = _mm256_add_epi32(_mm256_mullo_epi32(left, wl), _mm256_mullo_epi32(right, wu));
      const __m256i x = _mm256_add_epi32(sum, _mm256_blendv_epi8(half_down, half_up, _mm256_cmpgt_epi32(sum, zero)));
      const __m256i toward_zero = _mm256_srli_epi32(_mm256_srai_epi32(x, 31), 12);  // 2^20 - 1 for negative x
      const __m256i q = _mm256_srai_epi32(_mm256_add_epi32(x, toward_zero), 20);
      const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + c), _mm_packs_epi16(words, words));
    });
  }
}

template <typename T>
RowPasses<T> avx2_passes() {
  if constexpr (std::is_same_v<T, int8_t>) return {vertical_avx2<T>, horizontal_int8_avx2};
  else if constexpr (std::is_same_v<T, int16_t>) return {vertical_avx2<T>, horizontal_loop_avx2<T>};
  else return {vertical_avx2<T>, horizontal_float_avx2<T>};
}
#endif

// Output rows [first, end) (counted over batch x height).
template <typename T>
void bilinear_rows(const ResizeParams& p, const Bilinear<T>& r, const RowPasses<T>& passes, int64_t first,
                   int64_t end) {
  const Dims4& os = p.output_shape;
  Column<T> columns[kChunkColumns];
  VerticalBuffers<T> v;
  for (int32_t x0 = 0; x0 < os.w;) {
    // A chunk of output columns whose source columns [span_lo, span_hi] fit the vertical buffers (two columns
    // always do: the channel count is at most kSpan / 2).
    const Axis<T> a0 = axis(r, x0, r.scale_x, r.in_w);
    int32_t span_lo = a0.lower, span_hi = a0.upper;
    int32_t x1 = x0;
    for (; x1 < os.w && x1 - x0 < kChunkColumns; ++x1) {
      const Axis<T> a = axis(r, x1, r.scale_x, r.in_w);
      const int32_t lo = std::min(span_lo, a.lower), hi = std::max(span_hi, a.upper);
      if ((int64_t{hi} - lo + 1) * r.channels > kSpan) break;
      span_lo = lo;
      span_hi = hi;
      columns[x1 - x0] = {a.lower, a.upper, a.w_lower, a.w_upper};
    }
    for (int32_t k = 0; k < x1 - x0; ++k) {
      columns[k].lower = static_cast<int32_t>((columns[k].lower - span_lo) * r.channels);
      columns[k].upper = static_cast<int32_t>((columns[k].upper - span_lo) * r.channels);
    }
    const int64_t span = (int64_t{span_hi} - span_lo + 1) * r.channels;
    const int64_t chunk_elements = int64_t{x1 - x0} * r.channels;
    Axis<T> previous{};
    for (int64_t row = first; row < end; ++row) {
      const auto b = static_cast<int32_t>(row / os.h), y = static_cast<int32_t>(row % os.h);
      const Axis<T> ay = axis(r, y, r.scale_y, r.in_h);
      T* out = r.output + b * r.out_image + y * r.out_row + int64_t{x0} * r.channels;
      // Same batch, source rows and weights as the row before (rows of one image are consecutive): same values.
      if (row > first && y > 0 && ay.lower == previous.lower && ay.upper == previous.upper &&
          std::memcmp(&ay.w_lower, &previous.w_lower, sizeof ay.w_lower) == 0 &&
          std::memcmp(&ay.w_upper, &previous.w_upper, sizeof ay.w_upper) == 0) {
        std::memcpy(out, out - r.out_row, static_cast<size_t>(chunk_elements) * sizeof(T));
        continue;
      }
      previous = ay;
      const T* image = r.input + b * r.in_image + int64_t{span_lo} * r.channels;
      passes.vertical(v, image + ay.lower * r.in_row, image + ay.upper * r.in_row, span, ay.w_lower, ay.w_upper);
      passes.horizontal(v, columns, x1 - x0, r.channels, out);
    }
    x0 = x1;
  }
}

template <typename T>
Bilinear<T> bilinear_setup(const ResizeParams& p) {
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  Bilinear<T> r{static_cast<const T*>(p.input),
                static_cast<T*>(p.output),
                os.c,
                int64_t{is.w} * is.c,
                int64_t{is.h} * is.w * is.c,
                int64_t{os.w} * os.c,
                int64_t{os.h} * os.w * os.c,
                {},
                {},
                p.half_pixel_centers,
                is.h,
                is.w};
  if constexpr (kFloatMath<T>) {
    r.scale_y = float_scale(is.h, os.h, p.align_corners);
    r.scale_x = float_scale(is.w, os.w, p.align_corners);
  } else {
    r.scale_y = integer_scale(is.h, os.h, p.align_corners);
    r.scale_x = integer_scale(is.w, os.w, p.align_corners);
  }
  return r;
}

// ----- Nearest neighbour ------------------------------------------------------------------------------------------

// Copies `count` pixels of N bytes (N > 0: a fixed-size copy; 0: `pixel_bytes`) from their byte offsets in `row`.
template <size_t N>
[[gnu::always_inline]] inline void copy_pixels(uint8_t* out, const uint8_t* row, const int64_t* offsets, int32_t count,
                                               size_t pixel_bytes) {
  if constexpr (N > 0) {
    for (int32_t k = 0; k < count; ++k) std::memcpy(out + static_cast<size_t>(k) * N, row + offsets[k], N);
  } else {
    for (int32_t k = 0; k < count; ++k)
      std::memcpy(out + static_cast<size_t>(k) * pixel_bytes, row + offsets[k], pixel_bytes);
  }
}

void nearest_rows(const ResizeParams& p, int64_t first, int64_t end) {
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  const size_t element = protocol::dtype_size(p.dtype);
  const size_t pixel_bytes = static_cast<size_t>(os.c) * element;
  const auto* input = static_cast<const uint8_t*>(p.input);
  auto* output = static_cast<uint8_t*>(p.output);
  const size_t in_row = static_cast<size_t>(is.w) * pixel_bytes, out_row = static_cast<size_t>(os.w) * pixel_bytes;
  const float scale_y = float_scale(is.h, os.h, p.align_corners);
  const float scale_x = float_scale(is.w, os.w, p.align_corners);
  int64_t offsets[kChunkColumns];
  for (int32_t x0 = 0; x0 < os.w; x0 += kChunkColumns) {
    const int32_t count = std::min(kChunkColumns, os.w - x0);
    for (int32_t k = 0; k < count; ++k)
      offsets[k] = static_cast<int64_t>(nearest_index(x0 + k, scale_x, p, is.w)) * static_cast<int64_t>(pixel_bytes);
    const size_t chunk_bytes = static_cast<size_t>(count) * pixel_bytes;
    int32_t previous_source = -1;
    for (int64_t row = first; row < end; ++row) {
      const auto b = static_cast<size_t>(row / os.h);
      const auto y = static_cast<int32_t>(row % os.h);
      const int32_t source = nearest_index(y, scale_y, p, is.h);
      uint8_t* out = output + (b * static_cast<size_t>(os.h) + static_cast<size_t>(y)) * out_row +
                     static_cast<size_t>(x0) * pixel_bytes;
      if (row > first && y > 0 && source == previous_source) {  // the row above, same source row
        std::memcpy(out, out - out_row, chunk_bytes);
        continue;
      }
      previous_source = source;
      const uint8_t* in = input + (b * static_cast<size_t>(is.h) + static_cast<size_t>(source)) * in_row;
      switch (pixel_bytes) {
        case 1: copy_pixels<1>(out, in, offsets, count, pixel_bytes); break;
        case 2: copy_pixels<2>(out, in, offsets, count, pixel_bytes); break;
        case 3: copy_pixels<3>(out, in, offsets, count, pixel_bytes); break;
        case 4: copy_pixels<4>(out, in, offsets, count, pixel_bytes); break;
        case 8: copy_pixels<8>(out, in, offsets, count, pixel_bytes); break;
        case 16: copy_pixels<16>(out, in, offsets, count, pixel_bytes); break;
        default: copy_pixels<0>(out, in, offsets, count, pixel_bytes); break;
      }
    }
  }
}

// ----- Dispatch --------------------------------------------------------------------------------------------------


// ----- NEON passes (aarch64): as the AVX2 ones, eight channels as two 4-lane halves; separate multiplies and adds
// (never a fused multiply-add), truncating narrowings (the reference's conversions).

#if defined(__aarch64__)
// Calls block(i) for i = 0, 8, ... and, for a tail, count - 8 (count >= 8).
template <typename Block>
[[gnu::always_inline]] inline void neon_blocks_of_8(int64_t count, Block&& block) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) block(i);
  if (i < count) block(count - 8);
}

// Eight values as two int32x4 halves.
struct Int32x8 {
  int32x4_t low, high;
};
[[gnu::always_inline]] inline Int32x8 widen8(const int8_t* p) {
  const int16x8_t v = vmovl_s8(vld1_s8(p));
  return {vmovl_s16(vget_low_s16(v)), vmovl_s16(vget_high_s16(v))};
}
[[gnu::always_inline]] inline Int32x8 widen8(const int16_t* p) {
  const int16x8_t v = vld1q_s16(p);
  return {vmovl_s16(vget_low_s16(v)), vmovl_s16(vget_high_s16(v))};
}

template <typename T>
void vertical_neon(VerticalBuffers<T>& v, const T* lower, const T* upper, int64_t count, Weight<T> w_lower,
                   Weight<T> w_upper) {
  if (count < 8) {
    vertical_portable(v, lower, upper, count, w_lower, w_upper);
    return;
  }
  if constexpr (std::is_same_v<T, uint8_t>) {
    auto as_float = [](const uint8_t* p, float32x4_t& low, float32x4_t& high) {
      const uint16x8_t w = vmovl_u8(vld1_u8(p));
      low = vcvtq_f32_u32(vmovl_u16(vget_low_u16(w)));
      high = vcvtq_f32_u32(vmovl_u16(vget_high_u16(w)));
    };
    neon_blocks_of_8(count, [&](int64_t i) {
      float32x4_t low, high;
      as_float(lower + i, low, high);
      vst1q_f32(v.lower_row + i, vmulq_n_f32(low, w_lower));
      vst1q_f32(v.lower_row + i + 4, vmulq_n_f32(high, w_lower));
      as_float(upper + i, low, high);
      vst1q_f32(v.upper_row + i, vmulq_n_f32(low, w_upper));
      vst1q_f32(v.upper_row + i + 4, vmulq_n_f32(high, w_upper));
    });
  } else if constexpr (std::is_same_v<T, float>) {
    neon_blocks_of_8(count, [&](int64_t i) {
      vst1q_f32(v.lower_row + i, vmulq_n_f32(vld1q_f32(lower + i), w_lower));
      vst1q_f32(v.lower_row + i + 4, vmulq_n_f32(vld1q_f32(lower + i + 4), w_lower));
      vst1q_f32(v.upper_row + i, vmulq_n_f32(vld1q_f32(upper + i), w_upper));
      vst1q_f32(v.upper_row + i + 4, vmulq_n_f32(vld1q_f32(upper + i + 4), w_upper));
    });
  } else {
    neon_blocks_of_8(count, [&](int64_t i) {
      const Int32x8 l = widen8(lower + i), u = widen8(upper + i);
      vst1q_s32(v.sum + i, vaddq_s32(vmulq_n_s32(l.low, w_lower), vmulq_n_s32(u.low, w_upper)));
      vst1q_s32(v.sum + i + 4, vaddq_s32(vmulq_n_s32(l.high, w_lower), vmulq_n_s32(u.high, w_upper)));
    });
  }
}

// uint8 and float32: the reference's four products summed in its order, plus its rounding term; for uint8 the
// clamp as max / min (the value is never NaN; -0 and +0 both truncate to 0) and the truncating conversion.
template <typename T>
void horizontal_float_neon(const VerticalBuffers<T>& v, const Column<T>* columns, int32_t count, int64_t channels,
                           T* out) {
  if (channels < 8) {
    horizontal_portable(v, columns, count, channels, out);
    return;
  }
  const float32x4_t rounding = vdupq_n_f32(std::is_same_v<T, uint8_t> ? 0.5f : 0.0f);
  const float32x4_t zero = vdupq_n_f32(0.0f), top = vdupq_n_f32(255.0f);
  for (int32_t k = 0; k < count; ++k, out += channels) {
    const Column<T> col = columns[k];
    const float *top_left = v.lower_row + col.lower, *bottom_left = v.upper_row + col.lower;
    const float *top_right = v.lower_row + col.upper, *bottom_right = v.upper_row + col.upper;
    auto half = [&](int64_t c) {
      float32x4_t value = vmulq_n_f32(vld1q_f32(top_left + c), col.w_lower);
      value = vaddq_f32(value, vmulq_n_f32(vld1q_f32(bottom_left + c), col.w_lower));
      value = vaddq_f32(value, vmulq_n_f32(vld1q_f32(top_right + c), col.w_upper));
      value = vaddq_f32(value, vmulq_n_f32(vld1q_f32(bottom_right + c), col.w_upper));
      return vaddq_f32(value, rounding);
    };
    neon_blocks_of_8(channels, [&](int64_t c) {
      const float32x4_t low = half(c), high = half(c + 4);
      if constexpr (std::is_same_v<T, uint8_t>) {
        const uint32x4_t l = vcvtq_u32_f32(vminq_f32(vmaxq_f32(low, zero), top));
        const uint32x4_t h = vcvtq_u32_f32(vminq_f32(vmaxq_f32(high, zero), top));
        vst1_u8(out + c, vmovn_u16(vcombine_u16(vmovn_u32(l), vmovn_u32(h))));
      } else {
        vst1q_f32(out + c, low);
        vst1q_f32(out + c + 4, high);
      }
    });
  }
}

// int8: the exact sum in int32, halves away from zero, the truncating division by 2^20 as a biased arithmetic
// shift, and the truncating narrowing.
void horizontal_int8_neon(const VerticalBuffers<int8_t>& v, const Column<int8_t>* columns, int32_t count,
                          int64_t channels, int8_t* out) {
  if (channels < 8) {
    horizontal_portable(v, columns, count, channels, out);
    return;
  }
  const int32x4_t zero = vdupq_n_s32(0);
  const int32x4_t half_up = vdupq_n_s32(1 << 19), half_down = vdupq_n_s32(-(1 << 19));
  for (int32_t k = 0; k < count; ++k, out += channels) {
    const Column<int8_t> col = columns[k];
    auto quarter = [&](int64_t c) {
      const int32x4_t sum = vaddq_s32(vmulq_n_s32(vld1q_s32(v.sum + col.lower + c), col.w_lower),
                                      vmulq_n_s32(vld1q_s32(v.sum + col.upper + c), col.w_upper));
      const int32x4_t x = vaddq_s32(sum, vbslq_s32(vcgtq_s32(sum, zero), half_up, half_down));
      const int32x4_t toward_zero =
          vreinterpretq_s32_u32(vshrq_n_u32(vreinterpretq_u32_s32(vshrq_n_s32(x, 31)), 12));  // 2^20 - 1 if x < 0
      return vshrq_n_s32(vaddq_s32(x, toward_zero), 20);
    };
    neon_blocks_of_8(channels, [&](int64_t c) {
      const int16x8_t words = vcombine_s16(vmovn_s32(quarter(c)), vmovn_s32(quarter(c + 4)));
      vst1_s8(out + c, vmovn_s16(words));
    });
  }
}

template <typename T>
RowPasses<T> neon_passes() {
  if constexpr (std::is_same_v<T, int8_t>) return {vertical_neon<T>, horizontal_int8_neon};
  else if constexpr (std::is_same_v<T, int16_t>) return {vertical_neon<T>, horizontal_portable<T>};
  else return {vertical_neon<T>, horizontal_float_neon<T>};
}
#endif

template <typename T>
RowPasses<T> passes_for(SimdLevel level) {
#if defined(AISRV_RESIZE_AVX2)
  if (uses_avx2(level)) return avx2_passes<T>();
#endif
#if defined(__aarch64__)
  if (uses_neon(level)) return neon_passes<T>();
#endif
  return kPortablePasses<T>;
}

void resize_rows(const ResizeParams& p, SimdLevel level, int64_t first, int64_t end) {
  if (!p.bilinear) {
    nearest_rows(p, first, end);
    return;
  }
  switch (p.dtype) {
    case DType::int8: bilinear_rows(p, bilinear_setup<int8_t>(p), passes_for<int8_t>(level), first, end); break;
    case DType::int16: bilinear_rows(p, bilinear_setup<int16_t>(p), passes_for<int16_t>(level), first, end); break;
    case DType::uint8: bilinear_rows(p, bilinear_setup<uint8_t>(p), passes_for<uint8_t>(level), first, end); break;
    default: bilinear_rows(p, bilinear_setup<float>(p), passes_for<float>(level), first, end); break;
  }
}

}  // namespace

bool resize_fast_path(const ResizeParams& p) {
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  const bool typed =
      p.dtype == DType::int8 || p.dtype == DType::uint8 || p.dtype == DType::int16 || p.dtype == DType::float32;
  const bool shapes = is.n == os.n && is.c == os.c && os.n > 0 && os.h > 0 && os.w > 0 && os.c > 0 && is.h > 0 &&
                      is.w > 0;
  // Bilinear: two source columns of channels must fit the vertical pass's buffers.
  return typed && shapes && (!p.bilinear || int64_t{os.c} * 2 <= kSpan);
}

}  // namespace opt

void OptimizedKernelBackend::resize(const ResizeParams& p) {
  if (!opt::resize_fast_path(p)) {
    ReferenceKernelBackend::resize(p);
    return;
  }
  const Dims4& os = p.output_shape;
  const int64_t total_rows = int64_t{os.n} * os.h;
  // Work: a bilinear element costs about 4 multiply-accumulates' worth; a copied one a fraction.
  const auto work = static_cast<uint64_t>(os.elements()) * (p.bilinear ? 4 : 1);
  const auto parts = static_cast<size_t>(std::min<int64_t>(total_rows, static_cast<int64_t>(2 * pool_.size())));
  pool_.run(parts, [&](size_t part, size_t) {
    const auto first = static_cast<int64_t>(part) * total_rows / static_cast<int64_t>(parts);
    const auto end = static_cast<int64_t>(part + 1) * total_rows / static_cast<int64_t>(parts);
    opt::resize_rows(p, level_, first, end);
  }, work);
}

}  // namespace aisrv::engine::cpu
