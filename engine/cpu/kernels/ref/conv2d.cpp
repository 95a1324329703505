// aisrv CPU engine, reference kernels — CONV_2D: direct convolution, one output element at a time (TFLite's
// integer reference: zero padding by skipping taps outside the input, int32 accumulation, per-channel requant).
#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

template <typename T>
void conv2d_typed(const Conv2DParams& p) {
  const T* input = static_cast<const T*>(p.input);
  const T* filter = static_cast<const T*>(p.filter);
  T* output = static_cast<T*>(p.output);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  const int32_t groups = is.c / fs.c;
  const int32_t filters_per_group = os.c / groups;
  for (int32_t b = 0; b < os.n; ++b) {
    for (int32_t oy = 0; oy < os.h; ++oy) {
      const int32_t in_y0 = oy * p.stride_h - p.padding.top;
      for (int32_t ox = 0; ox < os.w; ++ox) {
        const int32_t in_x0 = ox * p.stride_w - p.padding.left;
        for (int32_t oc = 0; oc < os.c; ++oc) {
          const int32_t in_c0 = (oc / filters_per_group) * fs.c;
          int32_t acc = 0;
          for (int32_t fy = 0; fy < fs.h; ++fy) {
            const int32_t iy = in_y0 + p.dilation_h * fy;
            if (iy < 0 || iy >= is.h) continue;
            for (int32_t fx = 0; fx < fs.w; ++fx) {
              const int32_t ix = in_x0 + p.dilation_w * fx;
              if (ix < 0 || ix >= is.w) continue;
              const T* in_px = input + is.offset(b, iy, ix, in_c0);
              const T* f_px = filter + fs.offset(oc, fy, fx, 0);
              for (int32_t ic = 0; ic < fs.c; ++ic)
                acc += (int32_t{f_px[ic]} + p.filter_offset) * (int32_t{in_px[ic]} + p.input_offset);
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

}  // namespace

void ReferenceKernelBackend::conv2d(const Conv2DParams& p) {
  if (p.dtype == DType::int8) conv2d_typed<int8_t>(p);
  else conv2d_typed<uint8_t>(p);
}

}  // namespace aisrv::engine::cpu
