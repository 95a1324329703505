// aisrv CPU engine, optimised kernels — AVERAGE_POOL_2D (int8 / uint8; int16 and float32 run the reference
// kernel): per output pixel, the window's input pixels are summed into one int32 per channel with the channels as the
// inner (contiguous, vectorisable) loop, then divided with the reference's rounding (halves away from zero for int8,
// up for uint8) and clamped. Sums of at most a window of 8-bit values cannot overflow; the order of the additions
// does not matter.
#include <algorithm>
#include <type_traits>

#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

template <typename T>
void pool(const AveragePool2DParams& p, int32_t* acc) {
  const T* input = static_cast<const T*>(p.input);
  T* output = static_cast<T*>(p.output);
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  const auto channels = static_cast<size_t>(os.c);
  for (int32_t b = 0; b < os.n; ++b) {
    for (int32_t oy = 0; oy < os.h; ++oy) {
      const int32_t in_y0 = oy * p.stride_h - p.padding.top;
      const int32_t fy0 = std::max(0, -in_y0), fy1 = std::min(p.filter_h, is.h - in_y0);
      for (int32_t ox = 0; ox < os.w; ++ox) {
        const int32_t in_x0 = ox * p.stride_w - p.padding.left;
        const int32_t fx0 = std::max(0, -in_x0), fx1 = std::min(p.filter_w, is.w - in_x0);
        std::fill(acc, acc + channels, 0);
        int32_t count = 0;
        for (int32_t fy = fy0; fy < fy1; ++fy)
          for (int32_t fx = fx0; fx < fx1; ++fx, ++count) {
            const T* in = input + is.offset(b, in_y0 + fy, in_x0 + fx, 0);
            for (size_t c = 0; c < channels; ++c) acc[c] += in[c];
          }
        if (count == 0) count = 1;  // as the reference (impossible with TFLite padding)
        T* out = output + os.offset(b, oy, ox, 0);
        for (size_t c = 0; c < channels; ++c) {
          int32_t v = acc[c];
          if constexpr (std::is_signed_v<T>) v = v > 0 ? (v + count / 2) / count : (v - count / 2) / count;
          else v = (v + count / 2) / count;
          out[c] = static_cast<T>(std::clamp(v, p.act_min, p.act_max));
        }
      }
    }
  }
}

}  // namespace

namespace opt {
// Only the 8-bit types run here (their window sums fit int32 for any window the loader accepts); the others (int16,
// float32) need no scratch and run the reference kernel.
size_t average_pool_scratch_bytes(const AveragePool2DParams& p) {
  if (p.dtype != DType::int8 && p.dtype != DType::uint8) return 0;
  return p.output_shape.c > 0 && p.output_shape.c < (1 << 24) ? static_cast<size_t>(p.output_shape.c) * 4 : 0;
}
}  // namespace opt

void OptimizedKernelBackend::average_pool2d(const AveragePool2DParams& p) {
  const size_t need = opt::average_pool_scratch_bytes(p);
  if (need == 0 || p.scratch.size() < need || p.input_shape.c != p.output_shape.c) {
    ReferenceKernelBackend::average_pool2d(p);
    return;
  }
  auto* acc = reinterpret_cast<int32_t*>(p.scratch.data());
  if (p.dtype == DType::int8) pool<int8_t>(p, acc);
  else pool<uint8_t>(p, acc);
}

}  // namespace aisrv::engine::cpu
