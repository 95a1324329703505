// aisrv CPU engine, reference kernels — CONV_2D: direct convolution, one output element at a time, zero padding by
// skipping taps outside the input. 8-bit: TFLite's integer reference (int32 accumulation, per-channel requant).
// float32: reference_ops::Conv (the sum in filter order, then + bias, then the clamp). Dynamic range: TFLite's hybrid
// kernels (each batch quantized to int8 at run time, int32 sums, scaled back to float; see conv2d_hybrid).
#include <algorithm>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "hybrid_quantize.hpp"
#include "scratch.hpp"

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

// The window loops every CONV_2D flavour shares: for each output element, `tap(in_index, filter_index, depth)` is
// called per filter position inside the input (depth consecutive channels at both indices), then
// `finish(out_index, oc)`. `input_batch` is the batch's first element of whatever array the taps read.
template <typename Tap, typename Finish>
void conv2d_windows(const Conv2DParams& p, int32_t b, const Tap& tap, const Finish& finish) {
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  const int32_t groups = is.c / fs.c;
  const int32_t filters_per_group = os.c / groups;
  for (int32_t oy = 0; oy < os.h; ++oy) {
    const int32_t in_y0 = oy * p.stride_h - p.padding.top;
    for (int32_t ox = 0; ox < os.w; ++ox) {
      const int32_t in_x0 = ox * p.stride_w - p.padding.left;
      for (int32_t oc = 0; oc < os.c; ++oc) {
        const int32_t in_c0 = (oc / filters_per_group) * fs.c;
        for (int32_t fy = 0; fy < fs.h; ++fy) {
          const int32_t iy = in_y0 + p.dilation_h * fy;
          if (iy < 0 || iy >= is.h) continue;
          for (int32_t fx = 0; fx < fs.w; ++fx) {
            const int32_t ix = in_x0 + p.dilation_w * fx;
            if (ix < 0 || ix >= is.w) continue;
            tap(is.offset(0, iy, ix, in_c0), fs.offset(oc, fy, fx, 0), fs.c);
          }
        }
        finish(os.offset(b, oy, ox, oc), oc);
      }
    }
  }
}

// reference_ops::Conv (float): total += input * filter over the taps inside the input, then
// ActivationFunctionWithMinMax(total + bias) (bias 0.0f when absent).
void conv2d_float(const Conv2DParams& p) {
  const auto* filter = static_cast<const float*>(p.filter);
  auto* output = static_cast<float*>(p.output);
  const int64_t batch_size = int64_t{p.input_shape.h} * p.input_shape.w * p.input_shape.c;
  for (int32_t b = 0; b < p.output_shape.n; ++b) {
    const float* input = static_cast<const float*>(p.input) + b * batch_size;
    float total = 0.0f;
    conv2d_windows(
        p, b,
        [&](int64_t in_index, int64_t filter_index, int32_t depth) {
          for (int32_t ic = 0; ic < depth; ++ic) total += input[in_index + ic] * filter[filter_index + ic];
        },
        [&](int64_t out_index, int32_t oc) {
          const float bias = p.float_bias ? p.float_bias[oc] : 0.0f;
          output[out_index] = std::min(std::max(total + bias, p.float_act_min), p.float_act_max);
          total = 0.0f;
        });
  }
}

// TFLite's hybrid CONV_2D, one batch at a time (its quantization is per batch):
//   per-tensor weights (asymmetric_quantize_inputs false, TFLite's EvalHybrid -> optimized_ops::HybridConv, its only
//   implementation): symmetric inputs, the batch factor times the filter scale taken first; the output starts at 0,
//   gets float(acc) * factor added, then + bias and the clamp (AddBiasAndEvalActivationFunction);
//   per-channel weights (EvalHybridPerChannel -> reference_ops::HybridConvPerChannel): asymmetric inputs, acc over
//   filter * (q - offset), float(acc) * channel scale * batch factor, + bias when present, the clamp.
// A padding tap adds nothing in both (TFLite's im2col pads with the zero point 0; the reference skips the tap).
void conv2d_hybrid(const Conv2DParams& p) {
  const auto* filter = static_cast<const int8_t*>(p.filter);
  auto* output = static_cast<float*>(p.output);
  auto* quantized = reinterpret_cast<int8_t*>(p.scratch.data());
  const auto batch_size = static_cast<size_t>(p.input_shape.h) * static_cast<size_t>(p.input_shape.w) *
                          static_cast<size_t>(p.input_shape.c);
  const bool per_channel = p.asymmetric_quantize_inputs;
  for (int32_t b = 0; b < p.output_shape.n; ++b) {
    const float* input = static_cast<const float*>(p.input) + static_cast<size_t>(b) * batch_size;
    float scaling_factor = 1.0f;
    int32_t offset = 0;
    ref::hybrid_quantize(input, batch_size, per_channel, quantized, scaling_factor, offset);
    const float tensor_factor = scaling_factor * p.filter_scales[0];  // per-tensor: one scale
    int32_t acc = 0;
    conv2d_windows(
        p, b,
        [&](int64_t in_index, int64_t filter_index, int32_t depth) {
          for (int32_t ic = 0; ic < depth; ++ic)
            acc += int32_t{filter[filter_index + ic]} * (int32_t{quantized[in_index + ic]} - offset);
        },
        [&](int64_t out_index, int32_t oc) {
          float value = 0.0f;
          if (per_channel) {
            value = static_cast<float>(acc) * p.filter_scales[static_cast<size_t>(oc)] * scaling_factor;
            if (p.float_bias) value += p.float_bias[oc];
          } else {
            value = 0.0f + static_cast<float>(acc) * tensor_factor;
            if (p.float_bias) value = value + p.float_bias[oc];
          }
          output[out_index] = std::min(std::max(value, p.float_act_min), p.float_act_max);
          acc = 0;
        });
  }
}

}  // namespace

void ReferenceKernelBackend::conv2d(const Conv2DParams& p) {
  if (p.dtype == DType::int8) conv2d_typed<int8_t>(p);
  else if (p.dtype == DType::uint8) conv2d_typed<uint8_t>(p);
  else if (p.filter_type == DType::float32) conv2d_float(p);
  else conv2d_hybrid(p);
}

size_t ref::scratch_bytes(const Conv2DParams& p) {
  // Dynamic range: one batch of quantized inputs (the batches are quantized and consumed one at a time).
  if (p.dtype == DType::float32 && p.filter_type == DType::int8)
    return static_cast<size_t>(p.input_shape.h) * static_cast<size_t>(p.input_shape.w) *
           static_cast<size_t>(p.input_shape.c);
  return 0;
}

}  // namespace aisrv::engine::cpu
