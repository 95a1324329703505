// aisrv CPU engine, optimised kernels — MAX_POOL_2D (int8, uint8, int16, float32; L2_POOL_2D runs the reference
// kernel). Every output element is the reference's fold over its window: start from the type's lowest value, visit
// the window cells inside the input row by row, left to right, and keep a cell only when it is greater than the
// maximum so far (for float32 this order is part of the result: a NaN is never kept, and of +0 / -0 the first seen
// stays), then clamp to the activation range as the reference does.
//
// The fold runs on runs of contiguous elements at once (NHWC: a pixel's channels are contiguous) in fixed-size local
// blocks the compiler vectorises (for float32 `best < v ? v : best` is exactly the vector max instruction of x86 and
// a compare-and-select on NEON). With a horizontal stride of 1 the outputs of a row whose windows lie wholly inside
// the input form one run: output element i of the run takes, for window column fx, the input element i positions
// after that column's first cell, whatever the channel count — so even one-channel tensors fold a vector at a time.
// Border pixels (clipped windows) and strided rows fold one pixel's channels at a time. Output rows are split across
// the worker pool. The same code is compiled for the baseline target (SSE2 on x86-64, NEON on aarch64) and, on
// x86-64, for AVX2.
#include <algorithm>
#include <functional>
#include <limits>

#include "optimized_backend.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AISRV_POOL_AVX2 1
#endif

namespace aisrv::engine::cpu {

namespace opt {

namespace {

// Local blocks of 256 bytes: eight AVX2 registers of maxima.
constexpr int64_t kBlockBytes = 256;

// The reference's std::max(best, v) and std::min(std::max(best, lo), hi), spelt out so that the comparison order
// (and so NaN and signed-zero behaviour) is visibly the same.
template <typename T>
[[gnu::always_inline]] inline T keep_greater(T best, T v) {
  return best < v ? v : best;
}
template <typename T>
[[gnu::always_inline]] inline T clamp_like_reference(T v, T lo, T hi) {
  const T raised = v < lo ? lo : v;
  return hi < raised ? hi : raised;
}

// Geometry of one MAX_POOL_2D, in elements.
template <typename T>
struct MaxPool {
  const T* input;
  T* output;
  int64_t in_row, in_image, out_row, out_image;  // element strides of a row and an image (input and output)
  int64_t channels;
  T lo, hi;
};

// The maxima of `count` contiguous outputs at `out`: the window's cells are rows [y_begin, y_end) of `image` and
// `x_cells` columns from `x_first`; output element i reads element i of every cell's run. Blocks of a fixed size
// (vectorised); a run's last block overlaps the one before when the count is not a multiple (it rewrites equal
// values), a run shorter than a block takes a loop of its own length.
template <typename T>
[[gnu::always_inline]] inline void fold_run(const MaxPool<T>& m, const T* image, int64_t y_begin, int64_t y_end,
                                            int64_t x_first, int64_t x_cells, T* out, int64_t count) {
  constexpr int64_t kBlock = kBlockBytes / static_cast<int64_t>(sizeof(T));
  if (count < kBlock) {
    T best[kBlock];
    for (int64_t k = 0; k < count; ++k) best[k] = std::numeric_limits<T>::lowest();
    for (int64_t y = y_begin; y < y_end; ++y) {
      const T* cell = image + y * m.in_row + x_first * m.channels;
      for (int64_t x = 0; x < x_cells; ++x, cell += m.channels)
        for (int64_t k = 0; k < count; ++k) best[k] = keep_greater(best[k], cell[k]);
    }
    for (int64_t k = 0; k < count; ++k) out[k] = clamp_like_reference(best[k], m.lo, m.hi);
    return;
  }
  for (int64_t next = 0; next < count; next += kBlock) {
    const int64_t j = std::min(next, count - kBlock);
    T best[kBlock];
    for (int64_t k = 0; k < kBlock; ++k) best[k] = std::numeric_limits<T>::lowest();
    for (int64_t y = y_begin; y < y_end; ++y) {
      const T* cell = image + y * m.in_row + x_first * m.channels + j;
      for (int64_t x = 0; x < x_cells; ++x, cell += m.channels)
        for (int64_t k = 0; k < kBlock; ++k) best[k] = keep_greater(best[k], cell[k]);
    }
    for (int64_t k = 0; k < kBlock; ++k) out[j + k] = clamp_like_reference(best[k], m.lo, m.hi);
  }
}

// One output pixel whose window may be clipped: columns [x0, x0 + filter_w) as far as they lie inside the input.
template <typename T>
[[gnu::always_inline]] inline void fold_pixel(const Pool2DParams& p, const MaxPool<T>& m, const T* image,
                                              int64_t y_begin, int64_t y_end, T* out, int64_t ox) {
  const int64_t x0 = ox * p.stride_w - p.padding.left;
  const int64_t x_begin = x0 + std::max<int64_t>(0, -x0);
  const int64_t x_end = x0 + std::min<int64_t>(p.filter_w, p.input_shape.w - x0);
  fold_run(m, image, y_begin, y_end, x_begin, std::max<int64_t>(x_end - x_begin, 0), out + ox * m.channels,
           m.channels);
}

// Output rows [first, end) (counted over batch x height).
template <typename T>
[[gnu::always_inline]] inline void max_pool_rows(const Pool2DParams& p, const MaxPool<T>& m, int64_t first,
                                                 int64_t end) {
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  const int64_t fw = p.filter_w, sw = p.stride_w, left = p.padding.left;
  // Output columns [inner_begin, inner_end) have windows wholly inside the input (horizontally).
  int64_t inner_begin = 0, inner_end = os.w;
  while (inner_begin < os.w && inner_begin * sw - left < 0) ++inner_begin;
  while (inner_end > inner_begin && (inner_end - 1) * sw - left + fw > is.w) --inner_end;
  for (int64_t row = first; row < end; ++row) {
    const int64_t b = row / os.h, oy = row % os.h;
    // The window's rows inside the input, as the reference clips them.
    const int64_t y0 = oy * p.stride_h - p.padding.top;
    const int64_t y_begin = y0 + std::max<int64_t>(0, -y0);
    const int64_t y_end = y0 + std::min<int64_t>(p.filter_h, is.h - y0);
    const T* image = m.input + b * m.in_image;
    T* out = m.output + b * m.out_image + oy * m.out_row;
    for (int64_t ox = 0; ox < inner_begin; ++ox) fold_pixel(p, m, image, y_begin, y_end, out, ox);
    if (sw == 1) {
      if (inner_end > inner_begin)
        fold_run(m, image, y_begin, y_end, inner_begin - left, fw, out + inner_begin * m.channels,
                 (inner_end - inner_begin) * m.channels);
    } else {
      for (int64_t ox = inner_begin; ox < inner_end; ++ox) fold_pixel(p, m, image, y_begin, y_end, out, ox);
    }
    for (int64_t ox = inner_end; ox < os.w; ++ox) fold_pixel(p, m, image, y_begin, y_end, out, ox);
  }
}

template <typename T>
MaxPool<T> geometry(const Pool2DParams& p, T lo, T hi) {
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  return MaxPool<T>{static_cast<const T*>(p.input),
                    static_cast<T*>(p.output),
                    int64_t{is.w} * is.c,
                    int64_t{is.h} * is.w * is.c,
                    int64_t{os.w} * os.c,
                    int64_t{os.h} * os.w * os.c,
                    os.c,
                    lo,
                    hi};
}

// The rows of every type, compiled once per instruction set (the template bodies are inlined into each).
[[gnu::always_inline]] inline void max_pool_rows_any(const Pool2DParams& p, int64_t first, int64_t end) {
  switch (p.dtype) {
    case DType::int8:
      max_pool_rows(p, geometry<int8_t>(p, static_cast<int8_t>(p.act_min), static_cast<int8_t>(p.act_max)), first,
                    end);
      break;
    case DType::uint8:
      max_pool_rows(p, geometry<uint8_t>(p, static_cast<uint8_t>(p.act_min), static_cast<uint8_t>(p.act_max)), first,
                    end);
      break;
    case DType::int16:
      max_pool_rows(p, geometry<int16_t>(p, static_cast<int16_t>(p.act_min), static_cast<int16_t>(p.act_max)), first,
                    end);
      break;
    default: max_pool_rows(p, geometry<float>(p, p.float_act_min, p.float_act_max), first, end); break;
  }
}

void max_pool_rows_baseline(const Pool2DParams& p, int64_t first, int64_t end) { max_pool_rows_any(p, first, end); }

#if defined(AISRV_POOL_AVX2)
__attribute__((target("avx2"))) void max_pool_rows_avx2(const Pool2DParams& p, int64_t first, int64_t end) {
  max_pool_rows_any(p, first, end);
}
#endif

}  // namespace

bool max_pool_fast_path(const Pool2DParams& p) {
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  const bool typed = p.dtype == DType::int8 || p.dtype == DType::uint8 || p.dtype == DType::int16 ||
                     p.dtype == DType::float32;
  return p.kind == PoolKind::max && typed && is.n == os.n && is.c == os.c && os.n > 0 && os.h > 0 && os.w > 0 &&
         os.c > 0 && is.h > 0 && is.w > 0 && p.filter_h > 0 && p.filter_w > 0 && p.stride_h > 0 && p.stride_w > 0;
}

}  // namespace opt

void OptimizedKernelBackend::pool2d(const Pool2DParams& p) {
  if (!opt::max_pool_fast_path(p)) {
    ReferenceKernelBackend::pool2d(p);
    return;
  }
  auto rows = opt::max_pool_rows_baseline;
#if defined(AISRV_POOL_AVX2)
  if (opt::uses_avx2(level_)) rows = opt::max_pool_rows_avx2;
#endif
  const Dims4& os = p.output_shape;
  const int64_t total_rows = int64_t{os.n} * os.h;
  // Work in the pool's unit (a convolution's multiply-accumulate): a window cell of an 8-bit output element costs
  // about half of one (YOLOv8n's 20x20x128 5x5 pools with AVX2), wider types proportionally more.
  const auto work = static_cast<uint64_t>(std::min<long double>(
      static_cast<long double>(os.elements()) * p.filter_h * p.filter_w *
          static_cast<long double>(protocol::dtype_size(p.dtype)) / 2,
      static_cast<long double>(UINT64_MAX / 2)));
  const auto parts = static_cast<size_t>(std::min<int64_t>(total_rows, static_cast<int64_t>(2 * pool_.size())));
  // Passed by reference: a std::function holds a reference_wrapper without allocating (the lambda itself
  // would be copied to the heap on every call, one malloc / free per operator).
  const auto part_fn = [&](size_t part, size_t) {
    const auto first = static_cast<int64_t>(part) * total_rows / static_cast<int64_t>(parts);
    const auto end = static_cast<int64_t>(part + 1) * total_rows / static_cast<int64_t>(parts);
    rows(p, first, end);
  };
  pool_.run(parts, std::cref(part_fn), work);
}

}  // namespace aisrv::engine::cpu
