// aisrv CPU engine, reference kernels — AVERAGE_POOL_2D: mean of the window cells inside the input, rounded to
// nearest with halves away from zero (int8, int16) / up (uint8), then clamped; float32 as TFLite's reference: a
// float sum divided by a float cell count, then clamped.
#include <algorithm>
#include <type_traits>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

// Sums each window's cells inside the input in Acc (the cell count too: a float counter for float32, as TFLite's,
// which would stop growing at 2^24 cells) and writes finish(sum, count).
template <typename T, typename Acc, typename Finish>
void average_pool(const AveragePool2DParams& p, Finish finish) {
  const T* input = static_cast<const T*>(p.input);
  T* output = static_cast<T*>(p.output);
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  for (int32_t b = 0; b < os.n; ++b) {
    for (int32_t oy = 0; oy < os.h; ++oy) {
      const int32_t in_y0 = oy * p.stride_h - p.padding.top;
      const int32_t fy0 = std::max(0, -in_y0), fy1 = std::min(p.filter_h, is.h - in_y0);
      for (int32_t ox = 0; ox < os.w; ++ox) {
        const int32_t in_x0 = ox * p.stride_w - p.padding.left;
        const int32_t fx0 = std::max(0, -in_x0), fx1 = std::min(p.filter_w, is.w - in_x0);
        for (int32_t c = 0; c < os.c; ++c) {
          Acc total = 0, count = 0;
          for (int32_t fy = fy0; fy < fy1; ++fy)
            for (int32_t fx = fx0; fx < fx1; ++fx) {
              total += input[is.offset(b, in_y0 + fy, in_x0 + fx, c)];
              count += 1;
            }
          if (count == 0) count = 1;  // a window entirely in the padding (impossible with TFLite padding)
          output[os.offset(b, oy, ox, c)] = finish(total, count);
        }
      }
    }
  }
}

template <typename T>
void average_pool_typed(const AveragePool2DParams& p) {
  average_pool<T, int32_t>(p, [&](int32_t acc, int32_t count) {
    if constexpr (std::is_signed_v<T>) acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
    else acc = (acc + count / 2) / count;
    return static_cast<T>(std::clamp(acc, p.act_min, p.act_max));
  });
}

void average_pool_float(const AveragePool2DParams& p) {
  average_pool<float, float>(p, [&](float total, float count) {
    return std::min(std::max(total / count, p.float_act_min), p.float_act_max);
  });
}

}  // namespace

void ReferenceKernelBackend::average_pool2d(const AveragePool2DParams& p) {
  switch (p.dtype) {
    case DType::int8: average_pool_typed<int8_t>(p); break;
    case DType::uint8: average_pool_typed<uint8_t>(p); break;
    case DType::int16: average_pool_typed<int16_t>(p); break;
    default: average_pool_float(p); break;
  }
}

}  // namespace aisrv::engine::cpu
