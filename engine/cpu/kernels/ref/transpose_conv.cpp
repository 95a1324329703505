// aisrv CPU engine, reference kernels — TRANSPOSE_CONV as TFLite's reference "scatter": every input element adds
// input x weight to each output element its filter window covers (positions outside the output dropped), in input
// order; then bias, requantization (8-bit: int32 sums in scratch, reference_integer_ops::TransposeConv for int8,
// reference_ops::TransposeConv for uint8) or the float clamp (float32: the sums made in the output itself,
// reference_ops::TransposeConv).
#include <algorithm>
#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

// The scatter loops: for each input element (b, iy, ix, ic) and filter tap (fy, fx, oc) landing inside the output,
// add(out_index, in_index, filter_index) — TFLite's loop order, which fixes the float summation order.
template <typename Add>
void scatter(const TransposeConvParams& p, const Add& add) {
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  for (int32_t b = 0; b < is.n; ++b) {
    for (int32_t iy = 0; iy < is.h; ++iy) {
      const int32_t out_y0 = iy * p.stride_h - p.padding.top;
      for (int32_t ix = 0; ix < is.w; ++ix) {
        const int32_t out_x0 = ix * p.stride_w - p.padding.left;
        for (int32_t ic = 0; ic < is.c; ++ic) {
          const int64_t in_index = is.offset(b, iy, ix, ic);
          for (int32_t fy = 0; fy < fs.h; ++fy) {
            const int32_t oy = out_y0 + fy;
            if (oy < 0 || oy >= os.h) continue;
            for (int32_t fx = 0; fx < fs.w; ++fx) {
              const int32_t ox = out_x0 + fx;
              if (ox < 0 || ox >= os.w) continue;
              const int64_t out_index = os.offset(b, oy, ox, 0);
              for (int32_t oc = 0; oc < os.c; ++oc) add(out_index + oc, in_index, fs.offset(oc, fy, fx, ic));
            }
          }
        }
      }
    }
  }
}

template <typename T>
void transpose_conv_quantized(const TransposeConvParams& p) {
  const T* input = static_cast<const T*>(p.input);
  const T* filter = static_cast<const T*>(p.filter);
  T* output = static_cast<T*>(p.output);
  auto* sums = reinterpret_cast<int32_t*>(p.scratch.data());
  const Dims4& os = p.output_shape;
  const auto elements = static_cast<size_t>(os.elements());
  std::fill(sums, sums + elements, 0);
  scatter(p, [&](int64_t out_index, int64_t in_index, int64_t filter_index) {
    sums[out_index] += (int32_t{input[in_index]} + p.input_offset) * (int32_t{filter[filter_index]} + p.filter_offset);
  });
  const auto channels = static_cast<size_t>(os.c);
  for (size_t i = 0; i < elements; ++i) {
    const size_t oc = i % channels;
    int32_t acc = sums[i];
    if (p.bias) acc += p.bias[oc];
    output[i] = static_cast<T>(
        fp::requantize(acc, p.output_multiplier[oc], p.output_shift[oc], p.output_offset, p.act_min, p.act_max));
  }
}

void transpose_conv_float(const TransposeConvParams& p) {
  const auto* input = static_cast<const float*>(p.input);
  const auto* filter = static_cast<const float*>(p.filter);
  auto* output = static_cast<float*>(p.output);
  const Dims4& os = p.output_shape;
  const auto elements = static_cast<size_t>(os.elements());
  std::fill(output, output + elements, 0.0f);
  scatter(p, [&](int64_t out_index, int64_t in_index, int64_t filter_index) {
    output[out_index] += input[in_index] * filter[filter_index];
  });
  const auto channels = static_cast<size_t>(os.c);
  for (size_t i = 0; i < elements; ++i) {
    float acc = output[i];
    if (p.float_bias) acc += p.float_bias[i % channels];
    output[i] = std::min(std::max(acc, p.float_act_min), p.float_act_max);
  }
}

}  // namespace

void ReferenceKernelBackend::transpose_conv(const TransposeConvParams& p) {
  if (p.dtype == DType::int8) transpose_conv_quantized<int8_t>(p);
  else if (p.dtype == DType::uint8) transpose_conv_quantized<uint8_t>(p);
  else transpose_conv_float(p);
}

size_t ref::scratch_bytes(const TransposeConvParams& p) {
  // 8-bit: one int32 sum per output element (TFLM's scratch buffer).
  if (p.dtype == DType::int8 || p.dtype == DType::uint8)
    return static_cast<size_t>(p.output_shape.elements()) * sizeof(int32_t);
  return 0;
}

}  // namespace aisrv::engine::cpu
