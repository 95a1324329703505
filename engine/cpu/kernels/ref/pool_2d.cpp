// aisrv CPU engine, reference kernels — MAX_POOL_2D and L2_POOL_2D over the window cells that lie inside the input
// (TensorFlow Lite's reference pooling): the maximum starts from the type's lowest value and is clamped to the fused
// activation range; the L2 pool is sqrt(sum of squares / cell count) in float, then clamped.
#include <algorithm>
#include <cmath>
#include <limits>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

// Calls fn(b, oy, ox, y_begin, y_end, x_begin, x_end) for every output pixel: [y_begin, y_end) x [x_begin, x_end)
// are the input rows and columns of its window that lie inside the input.
template <typename Fn>
void for_each_window(const Pool2DParams& p, Fn&& fn) {
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  for (int32_t b = 0; b < os.n; ++b)
    for (int32_t oy = 0; oy < os.h; ++oy) {
      const int32_t y0 = oy * p.stride_h - p.padding.top;
      const int32_t fy0 = std::max(0, -y0), fy1 = std::min(p.filter_h, is.h - y0);
      for (int32_t ox = 0; ox < os.w; ++ox) {
        const int32_t x0 = ox * p.stride_w - p.padding.left;
        const int32_t fx0 = std::max(0, -x0), fx1 = std::min(p.filter_w, is.w - x0);
        fn(b, oy, ox, y0 + fy0, y0 + fy1, x0 + fx0, x0 + fx1);
      }
    }
}

template <typename T>
void max_pool_quantized(const Pool2DParams& p) {
  const T* input = static_cast<const T*>(p.input);
  T* output = static_cast<T*>(p.output);
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  const auto lo = static_cast<T>(p.act_min), hi = static_cast<T>(p.act_max);
  for_each_window(p, [&](int32_t b, int32_t oy, int32_t ox, int32_t y_begin, int32_t y_end, int32_t x_begin,
                         int32_t x_end) {
    for (int32_t c = 0; c < os.c; ++c) {
      T best = std::numeric_limits<T>::lowest();
      for (int32_t y = y_begin; y < y_end; ++y)
        for (int32_t x = x_begin; x < x_end; ++x) best = std::max(best, input[is.offset(b, y, x, c)]);
      output[os.offset(b, oy, ox, c)] = std::min(std::max(best, lo), hi);
    }
  });
}

void max_pool_float(const Pool2DParams& p) {
  const auto* input = static_cast<const float*>(p.input);
  auto* output = static_cast<float*>(p.output);
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  for_each_window(p, [&](int32_t b, int32_t oy, int32_t ox, int32_t y_begin, int32_t y_end, int32_t x_begin,
                         int32_t x_end) {
    for (int32_t c = 0; c < os.c; ++c) {
      float best = std::numeric_limits<float>::lowest();
      // std::max keeps its first argument unless the second is greater: NaN inputs are skipped, as in TFLite.
      for (int32_t y = y_begin; y < y_end; ++y)
        for (int32_t x = x_begin; x < x_end; ++x) best = std::max(best, input[is.offset(b, y, x, c)]);
      output[os.offset(b, oy, ox, c)] = std::min(std::max(best, p.float_act_min), p.float_act_max);
    }
  });
}

void l2_pool_float(const Pool2DParams& p) {
  const auto* input = static_cast<const float*>(p.input);
  auto* output = static_cast<float*>(p.output);
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  for_each_window(p, [&](int32_t b, int32_t oy, int32_t ox, int32_t y_begin, int32_t y_end, int32_t x_begin,
                         int32_t x_end) {
    for (int32_t c = 0; c < os.c; ++c) {
      float sum_of_squares = 0.0f;
      int32_t cells = 0;
      for (int32_t y = y_begin; y < y_end; ++y)
        for (int32_t x = x_begin; x < x_end; ++x) {
          const float v = input[is.offset(b, y, x, c)];
          sum_of_squares += v * v;
          ++cells;
        }
      const float l2 = std::sqrt(sum_of_squares / static_cast<float>(cells));
      output[os.offset(b, oy, ox, c)] = std::min(std::max(l2, p.float_act_min), p.float_act_max);
    }
  });
}

}  // namespace

void ReferenceKernelBackend::pool2d(const Pool2DParams& p) {
  if (p.kind == PoolKind::l2) {
    l2_pool_float(p);
    return;
  }
  switch (p.dtype) {
    case DType::int8: max_pool_quantized<int8_t>(p); break;
    case DType::uint8: max_pool_quantized<uint8_t>(p); break;
    case DType::int16: max_pool_quantized<int16_t>(p); break;
    default: max_pool_float(p); break;
  }
}

size_t ref::scratch_bytes(const Pool2DParams&) { return 0; }

}  // namespace aisrv::engine::cpu
