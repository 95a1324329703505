// aisrv CPU engine, reference kernels — DEPTHWISE_CONV_2D: output channel ic * multiplier + m filters input channel
// ic only (TFLite's integer reference).
#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

template <typename T>
void depthwise_typed(const DepthwiseConv2DParams& p) {
  const T* input = static_cast<const T*>(p.input);
  const T* filter = static_cast<const T*>(p.filter);
  T* output = static_cast<T*>(p.output);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  for (int32_t b = 0; b < os.n; ++b) {
    for (int32_t oy = 0; oy < os.h; ++oy) {
      const int32_t in_y0 = oy * p.stride_h - p.padding.top;
      for (int32_t ox = 0; ox < os.w; ++ox) {
        const int32_t in_x0 = ox * p.stride_w - p.padding.left;
        for (int32_t ic = 0; ic < is.c; ++ic) {
          for (int32_t m = 0; m < p.depth_multiplier; ++m) {
            const int32_t oc = ic * p.depth_multiplier + m;
            int32_t acc = 0;
            for (int32_t fy = 0; fy < fs.h; ++fy) {
              const int32_t iy = in_y0 + p.dilation_h * fy;
              if (iy < 0 || iy >= is.h) continue;
              for (int32_t fx = 0; fx < fs.w; ++fx) {
                const int32_t ix = in_x0 + p.dilation_w * fx;
                if (ix < 0 || ix >= is.w) continue;
                acc += (int32_t{filter[fs.offset(0, fy, fx, oc)]} + p.filter_offset) *
                       (int32_t{input[is.offset(b, iy, ix, ic)]} + p.input_offset);
              }
            }
            if (p.bias) acc += p.bias[oc];
            output[os.offset(b, oy, ox, oc)] = static_cast<T>(
                fp::requantize(acc, p.output_multiplier[static_cast<size_t>(oc)],
                               p.output_shift[static_cast<size_t>(oc)], p.output_offset, p.act_min, p.act_max));
          }
        }
      }
    }
  }
}

}  // namespace

void ReferenceKernelBackend::depthwise_conv2d(const DepthwiseConv2DParams& p) {
  if (p.dtype == DType::int8) depthwise_typed<int8_t>(p);
  else depthwise_typed<uint8_t>(p);
}

}  // namespace aisrv::engine::cpu
