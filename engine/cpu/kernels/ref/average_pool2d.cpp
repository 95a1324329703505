// aisrv CPU engine, reference kernels — AVERAGE_POOL_2D: mean of the window cells inside the input, rounded to
// nearest with halves away from zero (int8) / up (uint8), then clamped.
#include <algorithm>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

template <typename T>
void average_pool_typed(const AveragePool2DParams& p) {
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
          int32_t acc = 0;
          int32_t count = 0;
          for (int32_t fy = fy0; fy < fy1; ++fy)
            for (int32_t fx = fx0; fx < fx1; ++fx) {
              acc += input[is.offset(b, in_y0 + fy, in_x0 + fx, c)];
              ++count;
            }
          if (count == 0) count = 1;  // a window entirely in the padding (impossible with TFLite padding)
          if constexpr (std::is_signed_v<T>) acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
          else acc = (acc + count / 2) / count;
          output[os.offset(b, oy, ox, c)] = static_cast<T>(std::clamp(acc, p.act_min, p.act_max));
        }
      }
    }
  }
}

}  // namespace

void ReferenceKernelBackend::average_pool2d(const AveragePool2DParams& p) {
  if (p.dtype == DType::int8) average_pool_typed<int8_t>(p);
  else average_pool_typed<uint8_t>(p);
}

}  // namespace aisrv::engine::cpu
