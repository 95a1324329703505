// aisrv CPU engine, reference kernels — RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (NHWC), each type with the
// arithmetic of the reference TensorFlow Lite (Micro) runs for it:
//   - bilinear int8 / int16 (ResizeBilinearInteger): source positions in 1/1024 steps from a rounded integer scale,
//     the four weighted neighbours summed in int64 (weights in 1/2^20), rounded half away from zero;
//   - bilinear uint8 / float32 (ResizeBilinear<T>): source positions and weights in float, the four products summed
//     in float in a fixed order, plus 0.5 and truncated for uint8;
//   - nearest neighbour: the source index from a float scale (rounded with align_corners, else floored), clamped.
// Preparation has checked that every source index lies inside the input and that the integer arithmetic fits int32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

// Source position of one output row (or column) for the float bilinear version.
struct FloatSource {
  float position = 0.0f;
  int32_t lower = 0, upper = 0;
};

float float_scale(int32_t in, int32_t out, bool align_corners) {
  if (align_corners && out > 1) return static_cast<float>(in - 1) / static_cast<float>(out - 1);
  return static_cast<float>(in) / static_cast<float>(out);
}

FloatSource float_source(int32_t v, float scale, bool half_pixel, int32_t in) {
  FloatSource s;
  const float fv = static_cast<float>(v);
  s.position = half_pixel ? (fv + 0.5f) * scale - 0.5f : fv * scale;
  s.lower = std::max(static_cast<int32_t>(std::floor(s.position)), int32_t{0});
  s.upper = std::min(static_cast<int32_t>(std::ceil(s.position)), in - 1);
  return s;
}

template <typename T>
void bilinear_float(const ResizeParams& p) {
  const T* input = static_cast<const T*>(p.input);
  T* output = static_cast<T*>(p.output);
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  const float scale_y = float_scale(is.h, os.h, p.align_corners);
  const float scale_x = float_scale(is.w, os.w, p.align_corners);
  constexpr bool kInteger = std::numeric_limits<T>::is_integer;
  // The reference adds 0.5 to integer results and truncates (all its results are >= 0 for uint8); 0 for float.
  const float rounding = kInteger ? 0.5f : 0.0f;
  for (int32_t b = 0; b < os.n; ++b)
    for (int32_t y = 0; y < os.h; ++y) {
      const FloatSource sy = float_source(y, scale_y, p.half_pixel_centers, is.h);
      const float dy = sy.position - static_cast<float>(sy.lower);
      for (int32_t x = 0; x < os.w; ++x) {
        const FloatSource sx = float_source(x, scale_x, p.half_pixel_centers, is.w);
        const float dx = sx.position - static_cast<float>(sx.lower);
        const T* top_left = input + is.offset(b, sy.lower, sx.lower, 0);
        const T* bottom_left = input + is.offset(b, sy.upper, sx.lower, 0);
        const T* top_right = input + is.offset(b, sy.lower, sx.upper, 0);
        const T* bottom_right = input + is.offset(b, sy.upper, sx.upper, 0);
        T* out = output + os.offset(b, y, x, 0);
        for (int32_t c = 0; c < os.c; ++c) {
          // Same products, same left-to-right order as the reference (no contraction: -ffp-contract=off).
          const float v = static_cast<float>(top_left[c]) * (1 - dy) * (1 - dx) +
                          static_cast<float>(bottom_left[c]) * dy * (1 - dx) +
                          static_cast<float>(top_right[c]) * (1 - dy) * dx +
                          static_cast<float>(bottom_right[c]) * dy * dx + rounding;
          if constexpr (kInteger) {
            // Truncation as the reference's cast; the clamp only keeps the conversion defined (results lie within
            // [0, 255.5] up to float rounding, where truncation and clamping agree).
            const float lo = static_cast<float>(std::numeric_limits<T>::lowest());
            const float hi = static_cast<float>(std::numeric_limits<T>::max());
            out[c] = static_cast<T>(std::clamp(v, lo, hi));
          } else {
            out[c] = v;
          }
        }
      }
    }
}

// Source position of one output row (or column) for the integer version, in 1/1024 steps.
struct IntegerSource {
  int32_t position = 0;
  int32_t lower = 0, upper = 0;
};

int32_t integer_scale(int32_t in, int32_t out, bool align_corners) {
  if (align_corners && out > 1) return ((1 << 10) * (in - 1) + (out - 1) / 2) / (out - 1);
  return ((1 << 10) * in + out / 2) / out;
}

IntegerSource integer_source(int32_t v, int32_t scale, bool half_pixel, int32_t in) {
  IntegerSource s;
  s.position = half_pixel ? v * scale + scale / 2 - (1 << 9) : v * scale;
  // Divisions truncate toward zero, as the reference's (a position in (-1024, 0) gives row 0).
  s.lower = std::max(s.position / (1 << 10), int32_t{0});
  s.upper = std::min((s.position + (1 << 10) - 1) / (1 << 10), in - 1);
  return s;
}

template <typename T>
void bilinear_integer(const ResizeParams& p) {
  const T* input = static_cast<const T*>(p.input);
  T* output = static_cast<T*>(p.output);
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  const int32_t scale_y = integer_scale(is.h, os.h, p.align_corners);
  const int32_t scale_x = integer_scale(is.w, os.w, p.align_corners);
  constexpr int64_t kOne = 1 << 10;
  for (int32_t b = 0; b < os.n; ++b)
    for (int32_t y = 0; y < os.h; ++y) {
      const IntegerSource sy = integer_source(y, scale_y, p.half_pixel_centers, is.h);
      const int64_t wy1 = sy.position - kOne * sy.lower;  // weight of the upper row, in 1/1024
      const int64_t wy0 = kOne - wy1;
      for (int32_t x = 0; x < os.w; ++x) {
        const IntegerSource sx = integer_source(x, scale_x, p.half_pixel_centers, is.w);
        const int64_t wx1 = sx.position - kOne * sx.lower;
        const int64_t wx0 = kOne - wx1;
        const T* top_left = input + is.offset(b, sy.lower, sx.lower, 0);
        const T* bottom_left = input + is.offset(b, sy.upper, sx.lower, 0);
        const T* top_right = input + is.offset(b, sy.lower, sx.upper, 0);
        const T* bottom_right = input + is.offset(b, sy.upper, sx.upper, 0);
        T* out = output + os.offset(b, y, x, 0);
        for (int32_t c = 0; c < os.c; ++c) {
          const int64_t sum = int64_t{top_left[c]} * wy0 * wx0 + int64_t{bottom_left[c]} * wy1 * wx0 +
                              int64_t{top_right[c]} * wy0 * wx1 + int64_t{bottom_right[c]} * wy1 * wx1;
          // Round half away from zero (TFLite's default double-rounding build; 0 counts as non-positive).
          const int64_t half = sum > 0 ? (int64_t{1} << 19) : -(int64_t{1} << 19);
          out[c] = static_cast<T>((sum + half) / (int64_t{1} << 20));
        }
      }
    }
}

int32_t nearest_source(int32_t v, int32_t in, int32_t out, bool align_corners, bool half_pixel) {
  const float scale = float_scale(in, out, align_corners);
  const float offset = half_pixel ? 0.5f : 0.0f;
  const float scaled = (static_cast<float>(v) + offset) * scale;
  int32_t r = std::min(static_cast<int32_t>(align_corners ? std::round(scaled) : std::floor(scaled)), in - 1);
  if (half_pixel) r = std::max(r, int32_t{0});
  return r;
}

void nearest(const ResizeParams& p) {
  const auto* input = static_cast<const uint8_t*>(p.input);
  auto* output = static_cast<uint8_t*>(p.output);
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  const auto pixel_bytes = static_cast<size_t>(os.c) * protocol::dtype_size(p.dtype);
  for (int32_t b = 0; b < os.n; ++b)
    for (int32_t y = 0; y < os.h; ++y) {
      const int32_t sy = nearest_source(y, is.h, os.h, p.align_corners, p.half_pixel_centers);
      for (int32_t x = 0; x < os.w; ++x) {
        const int32_t sx = nearest_source(x, is.w, os.w, p.align_corners, p.half_pixel_centers);
        std::memcpy(output + static_cast<size_t>(os.offset(b, y, x, 0)) * protocol::dtype_size(p.dtype),
                    input + static_cast<size_t>(is.offset(b, sy, sx, 0)) * protocol::dtype_size(p.dtype),
                    pixel_bytes);
      }
    }
}

}  // namespace

void ReferenceKernelBackend::resize(const ResizeParams& p) {
  if (!p.bilinear) {
    nearest(p);
    return;
  }
  switch (p.dtype) {
    case DType::int8: bilinear_integer<int8_t>(p); break;
    case DType::int16: bilinear_integer<int16_t>(p); break;
    case DType::uint8: bilinear_float<uint8_t>(p); break;
    default: bilinear_float<float>(p); break;
  }
}

size_t ref::scratch_bytes(const ResizeParams&) { return 0; }

}  // namespace aisrv::engine::cpu
