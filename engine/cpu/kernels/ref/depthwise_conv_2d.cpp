// aisrv CPU engine, reference kernels — DEPTHWISE_CONV_2D: output channel ic * multiplier + m filters input channel
// ic only. 8-bit: TFLite's integer reference. float32: reference_ops::DepthwiseConv (the sum in filter order, then
// + bias, then the clamp). Dynamic range: reference_integer_ops::DepthwiseConvHybridPerChannel (each batch quantized
// asymmetrically at run time, see depthwise_hybrid).
#include <algorithm>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "hybrid_quantize.hpp"
#include "scratch.hpp"

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

// The window loops both float flavours share, for batch b: `tap(in_index, filter_index)` per filter position inside
// the input (in_index relative to the batch), then `finish(out_index, oc)`.
template <typename Tap, typename Finish>
void depthwise_windows(const DepthwiseConv2DParams& p, int32_t b, const Tap& tap, const Finish& finish) {
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  for (int32_t oy = 0; oy < os.h; ++oy) {
    const int32_t in_y0 = oy * p.stride_h - p.padding.top;
    for (int32_t ox = 0; ox < os.w; ++ox) {
      const int32_t in_x0 = ox * p.stride_w - p.padding.left;
      for (int32_t ic = 0; ic < is.c; ++ic) {
        for (int32_t m = 0; m < p.depth_multiplier; ++m) {
          const int32_t oc = ic * p.depth_multiplier + m;
          for (int32_t fy = 0; fy < fs.h; ++fy) {
            const int32_t iy = in_y0 + p.dilation_h * fy;
            if (iy < 0 || iy >= is.h) continue;
            for (int32_t fx = 0; fx < fs.w; ++fx) {
              const int32_t ix = in_x0 + p.dilation_w * fx;
              if (ix < 0 || ix >= is.w) continue;
              tap(is.offset(0, iy, ix, ic), fs.offset(0, fy, fx, oc));
            }
          }
          finish(os.offset(b, oy, ox, oc), oc);
        }
      }
    }
  }
}

// reference_ops::DepthwiseConv (float): total += input * filter, then ActivationFunctionWithMinMax(total + bias).
void depthwise_float(const DepthwiseConv2DParams& p) {
  const auto* filter = static_cast<const float*>(p.filter);
  auto* output = static_cast<float*>(p.output);
  const int64_t batch_size = int64_t{p.input_shape.h} * p.input_shape.w * p.input_shape.c;
  for (int32_t b = 0; b < p.output_shape.n; ++b) {
    const float* input = static_cast<const float*>(p.input) + b * batch_size;
    float total = 0.0f;
    depthwise_windows(
        p, b, [&](int64_t in_index, int64_t filter_index) { total += input[in_index] * filter[filter_index]; },
        [&](int64_t out_index, int32_t oc) {
          const float bias = p.float_bias ? p.float_bias[oc] : 0.0f;
          output[out_index] = std::min(std::max(total + bias, p.float_act_min), p.float_act_max);
          total = 0.0f;
        });
  }
}

// DepthwiseConvHybridPerChannel: acc over filter * (q - offset); float(acc) times (channel scale * batch factor) —
// that product first, unlike CONV_2D's per-channel kernel —, + bias when present, the clamp.
void depthwise_hybrid(const DepthwiseConv2DParams& p) {
  const auto* filter = static_cast<const int8_t*>(p.filter);
  auto* output = static_cast<float*>(p.output);
  auto* quantized = reinterpret_cast<int8_t*>(p.scratch.data());
  const auto batch_size = static_cast<size_t>(p.input_shape.h) * static_cast<size_t>(p.input_shape.w) *
                          static_cast<size_t>(p.input_shape.c);
  for (int32_t b = 0; b < p.output_shape.n; ++b) {
    const float* input = static_cast<const float*>(p.input) + static_cast<size_t>(b) * batch_size;
    float scaling_factor = 1.0f;
    int32_t offset = 0;
    ref::hybrid_quantize(input, batch_size, p.asymmetric_quantize_inputs, quantized, scaling_factor, offset);
    int32_t acc = 0;
    depthwise_windows(
        p, b,
        [&](int64_t in_index, int64_t filter_index) {
          acc += int32_t{filter[filter_index]} * (int32_t{quantized[in_index]} - offset);
        },
        [&](int64_t out_index, int32_t oc) {
          float value = static_cast<float>(acc);
          value *= p.filter_scales[static_cast<size_t>(oc)] * scaling_factor;
          if (p.float_bias) value += p.float_bias[oc];
          output[out_index] = std::min(std::max(value, p.float_act_min), p.float_act_max);
          acc = 0;
        });
  }
}

}  // namespace

void ReferenceKernelBackend::depthwise_conv2d(const DepthwiseConv2DParams& p) {
  if (p.dtype == DType::int8) depthwise_typed<int8_t>(p);
  else if (p.dtype == DType::uint8) depthwise_typed<uint8_t>(p);
  else if (p.filter_type == DType::float32) depthwise_float(p);
  else depthwise_hybrid(p);
}

size_t ref::scratch_bytes(const DepthwiseConv2DParams& p) {
  // Dynamic range: one batch of quantized inputs (the batches are quantized and consumed one at a time).
  if (p.dtype == DType::float32 && p.filter_type == DType::int8)
    return static_cast<size_t>(p.input_shape.h) * static_cast<size_t>(p.input_shape.w) *
           static_cast<size_t>(p.input_shape.c);
  return 0;
}

}  // namespace aisrv::engine::cpu
