// aisrv hailo8/transform — host ↔ device frame layouts (see layout.hpp for the index formulas). One
// traversal per direction, parameterised by where a host row comes from (a host buffer or a freshly quantized
// scratch row) and where a device element goes (a host buffer or a de-quantized float), so the plain and fused
// paths share the same, tested index arithmetic.
#include "aisrv/engine/hailo8/transform/layout.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AISRV_HAVE_SSSE3_CLONE 1
#endif

namespace aisrv::engine::hailo8::transform {
namespace {

#if defined(AISRV_HAVE_SSSE3_CLONE)
// RGB → three channel rows, 16 pixels (48 bytes) per step with byte shuffles; returns the pixels done.
__attribute__((target("ssse3"))) size_t deinterleave3_ssse3(const uint8_t* s, uint8_t* p0, uint8_t* p1, uint8_t* p2,
                                                             size_t w) {
  // For channel k, pixel j sits at byte 3j + k of the 48: bytes 0-15 in a, 16-31 in b, 32-47 in c. Each mask
  // picks that channel's bytes of one source register into their pixel slots (-1 = zero).
  const __m128i a0 = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b0 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1);
  const __m128i c0 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13);
  const __m128i a1 = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b1 = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1);
  const __m128i c1 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14);
  const __m128i a2 = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b2 = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1);
  const __m128i c2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15);
  size_t c = 0;
  for (; c + 16 <= w; c += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 3 * c));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 3 * c + 16));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 3 * c + 32));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p0 + c),
                     _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, a0), _mm_shuffle_epi8(b, b0)), _mm_shuffle_epi8(d, c0)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p1 + c),
                     _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, a1), _mm_shuffle_epi8(b, b1)), _mm_shuffle_epi8(d, c1)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p2 + c),
                     _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, a2), _mm_shuffle_epi8(b, b2)), _mm_shuffle_epi8(d, c2)));
  }
  return c;
}
#endif

// Pixel-interleaved RGB row → three channel rows.
template <typename T>
void deinterleave3(const T* s, T* p0, T* p1, T* p2, size_t w) {
  size_t c = 0;
#if defined(AISRV_HAVE_SSSE3_CLONE)
  if constexpr (sizeof(T) == 1) {
    if (__builtin_cpu_supports("ssse3")) c = deinterleave3_ssse3(s, p0, p1, p2, w);
  }
#endif
  for (; c < w; ++c) {
    p0[c] = s[3 * c];
    p1[c] = s[3 * c + 1];
    p2[c] = s[3 * c + 2];
  }
}

struct Geometry {
  FormatOrder order;
  Shape s;                 // host shape
  Shape hw;                // padded hardware shape
  size_t host_elements;     // s.h · s.w · s.f
  size_t row_stride;        // device elements between host rows r and r + 1
  size_t device_elements;   // whole device frame, including the 8-byte alignment tail
};

Result<Geometry> make_geometry(FormatOrder order, const Shape& s, const Shape& hw, FormatType type) {
  if (!is_layout_order(order)) {
    return make_error(Errc::invalid_argument, "the layout transforms do not handle device order {} ({})",
                      hef::format_order_name(order), static_cast<uint32_t>(order));
  }
  if (type != FormatType::uint8 && type != FormatType::uint16) {
    return make_error(Errc::invalid_argument, "the layout transforms handle UINT8 and UINT16 elements, not {}",
                      hef::format_type_name(type));
  }
  if (s.height == 0 || s.width == 0 || s.features == 0) {
    return make_error(Errc::invalid_argument, "{} frame shape {}x{}x{} has a zero dimension",
                      hef::format_order_name(order), s.height, s.width, s.features);
  }
  if (hw.height < s.height || hw.width < s.width || hw.features < s.features) {
    return make_error(Errc::invalid_argument,
                      "{} hardware shape {}x{}x{} is smaller than the frame shape {}x{}x{}",
                      hef::format_order_name(order), hw.height, hw.width, hw.features, s.height, s.width, s.features);
  }
  if (order == FormatOrder::f8cr && hw.features % 8 != 0) {
    return make_error(Errc::invalid_argument, "F8CR hardware features {} is not a multiple of 8", hw.features);
  }
  if (order == FormatOrder::nc && (s.height != 1 || s.width != 1 || hw.height != 1 || hw.width != 1)) {
    return make_error(Errc::invalid_argument, "NC frame must be 1x1xC (shape {}x{}x{}, hardware {}x{}x{})", s.height,
                      s.width, s.features, hw.height, hw.width, hw.features);
  }
  if (order == FormatOrder::nhw && (s.features != 1 || hw.features != 1)) {
    return make_error(Errc::invalid_argument, "NHW frame must have 1 feature (shape {}, hardware {})", s.features,
                      hw.features);
  }
  const uint64_t esize = hef::format_type_bytes(type);
  const uint64_t host = uint64_t{s.height} * s.width * s.features;
  // Each factor ≤ 2^30 and height·width ≤ 2^30, so the three-way product fits in 64 bits before it is compared.
  const uint64_t data = uint64_t{hw.height} * hw.width * hw.features;
  if (hw.height > (1u << 30) || hw.width > (1u << 30) || hw.features > (1u << 30) ||
      uint64_t{hw.height} * hw.width > kMaxFrameBytes || data * esize > kMaxFrameBytes) {
    return make_error(Errc::invalid_argument, "{} hardware frame {}x{}x{} exceeds the {} byte limit",
                      hef::format_order_name(order), hw.height, hw.width, hw.features, kMaxFrameBytes);
  }
  Geometry g;
  g.order = order;
  g.s = s;
  g.hw = hw;
  g.host_elements = static_cast<size_t>(host);
  g.row_stride = order == FormatOrder::nhw ? hw.width : size_t{hw.width} * hw.features;
  g.device_elements = static_cast<size_t>(hef::align_to_hw_words(data * esize) / esize);
  return g;
}

template <typename T>
void zero(T* p, size_t n) {
  if (n) std::memset(p, 0, n * sizeof(T));
}

// Per-pixel copies of a few channels: unrolled for n ≤ 8 so they stay inline moves (a plain loop is turned into a
// memcpy/memset library call per pixel by the compiler, which costs more than the copy).
template <typename T>
inline void copy_small(T* d, const T* s, size_t n) {
  switch (n) {
    case 8: d[7] = s[7]; [[fallthrough]];
    case 7: d[6] = s[6]; [[fallthrough]];
    case 6: d[5] = s[5]; [[fallthrough]];
    case 5: d[4] = s[4]; [[fallthrough]];
    case 4: d[3] = s[3]; [[fallthrough]];
    case 3: d[2] = s[2]; [[fallthrough]];
    case 2: d[1] = s[1]; [[fallthrough]];
    case 1: d[0] = s[0]; [[fallthrough]];
    case 0: return;
    default: std::memcpy(d, s, n * sizeof(T));
  }
}

template <typename T>
inline void zero_small(T* d, size_t n) {
  switch (n) {
    case 8: d[7] = 0; [[fallthrough]];
    case 7: d[6] = 0; [[fallthrough]];
    case 6: d[5] = 0; [[fallthrough]];
    case 5: d[4] = 0; [[fallthrough]];
    case 4: d[3] = 0; [[fallthrough]];
    case 3: d[2] = 0; [[fallthrough]];
    case 2: d[1] = 0; [[fallthrough]];
    case 1: d[0] = 0; [[fallthrough]];
    case 0: return;
    default: std::memset(d, 0, n * sizeof(T));
  }
}

// Writes the whole device frame: host row r (s.w · s.f dense elements) is `row(r)`, called once per r in order.
template <typename T, typename RowFn>
void write_device(const Geometry& g, RowFn&& row, T* dev) {
  const size_t H = g.s.height, W = g.s.width, F = g.s.features;
  const size_t hwW = g.hw.width, hwF = g.hw.features;
  switch (g.order) {
    case FormatOrder::nhwc:
    case FormatOrder::fcr:
      for (size_t r = 0; r < H; ++r) {
        const T* s = row(r);
        T* d = dev + r * g.row_stride;
        if (F == hwF) {
          std::memcpy(d, s, W * F * sizeof(T));
        } else {
          for (size_t c = 0; c < W; ++c) {
            copy_small(d + c * hwF, s + c * F, F);
            zero_small(d + c * hwF + F, hwF - F);
          }
        }
        zero(d + W * hwF, (hwW - W) * hwF);
      }
      break;
    case FormatOrder::nhcw:
      for (size_t r = 0; r < H; ++r) {
        const T* s = row(r);
        T* d = dev + r * g.row_stride;
        if (F == 1) {
          std::memcpy(d, s, W * sizeof(T));
        } else if (F == 3) {  // RGB: one pass over the pixels, three channel rows
          deinterleave3(s, d, d + hwW, d + 2 * hwW, W);
        } else {
          for (size_t f = 0; f < F; ++f) {
            T* plane = d + f * hwW;
            const T* src = s + f;
            for (size_t c = 0; c < W; ++c) plane[c] = src[c * F];
          }
        }
        for (size_t f = 0; f < F; ++f) zero(d + f * hwW + W, hwW - W);
        zero(d + F * hwW, (hwF - F) * hwW);
      }
      break;
    case FormatOrder::f8cr:
      for (size_t r = 0; r < H; ++r) {
        const T* s = row(r);
        T* d = dev + r * g.row_stride;
        for (size_t group = 0; group < hwF / 8; ++group) {
          T* gd = d + group * hwW * 8;
          const size_t f0 = group * 8;
          const size_t n = f0 < F ? std::min<size_t>(8, F - f0) : 0;
          for (size_t c = 0; c < W; ++c) {
            copy_small(gd + c * 8, s + c * F + f0, n);
            zero_small(gd + c * 8 + n, 8 - n);
          }
          zero(gd + W * 8, (hwW - W) * 8);
        }
      }
      break;
    case FormatOrder::nc: {
      const T* s = row(0);
      std::memcpy(dev, s, F * sizeof(T));
      zero(dev + F, hwF - F);
      break;
    }
    case FormatOrder::nhw:
      for (size_t r = 0; r < H; ++r) {
        T* d = dev + r * g.row_stride;
        std::memcpy(d, row(r), W * sizeof(T));
        zero(d + W, hwW - W);
      }
      break;
    default: break;  // make_geometry() refused every other order
  }
  // Padded rows below the frame and the tail up to the 8-byte boundary.
  const size_t written = H * g.row_stride;
  zero(dev + written, g.device_elements - written);
}

// Visits every frame element of the device buffer: sink(host_index, feature, value).
template <typename T, typename Sink>
void read_device(const Geometry& g, const T* dev, Sink&& sink) {
  const size_t H = g.s.height, W = g.s.width, F = g.s.features;
  const size_t hwW = g.hw.width, hwF = g.hw.features;
  switch (g.order) {
    case FormatOrder::nhwc:
    case FormatOrder::fcr:
      for (size_t r = 0; r < H; ++r) {
        const T* d = dev + r * g.row_stride;
        for (size_t c = 0; c < W; ++c) {
          const size_t h = (r * W + c) * F;
          for (size_t f = 0; f < F; ++f) sink(h + f, f, d[c * hwF + f]);
        }
      }
      break;
    case FormatOrder::nhcw:
      for (size_t r = 0; r < H; ++r) {
        const T* d = dev + r * g.row_stride;
        for (size_t c = 0; c < W; ++c) {
          const size_t h = (r * W + c) * F;
          for (size_t f = 0; f < F; ++f) sink(h + f, f, d[f * hwW + c]);
        }
      }
      break;
    case FormatOrder::f8cr:
      for (size_t r = 0; r < H; ++r) {
        const T* d = dev + r * g.row_stride;
        for (size_t c = 0; c < W; ++c) {
          const size_t h = (r * W + c) * F;
          for (size_t f = 0; f < F; ++f) sink(h + f, f, d[(f / 8) * hwW * 8 + c * 8 + f % 8]);
        }
      }
      break;
    case FormatOrder::nc:
      for (size_t f = 0; f < F; ++f) sink(f, f, dev[f]);
      break;
    case FormatOrder::nhw:
      for (size_t r = 0; r < H; ++r) {
        const T* d = dev + r * g.row_stride;
        for (size_t c = 0; c < W; ++c) sink(r * W + c, 0, d[c]);
      }
      break;
    default: break;  // make_geometry() refused every other order
  }
}

Status check_sizes(const Geometry& g, size_t host_size, size_t device_size, const char* what) {
  if (host_size != g.host_elements) {
    return make_error(Errc::bad_length, "{} {}: host frame has {} elements, shape {}x{}x{} needs {}", what,
                      hef::format_order_name(g.order), host_size, g.s.height, g.s.width, g.s.features, g.host_elements);
  }
  if (device_size != g.device_elements) {
    return make_error(Errc::bad_length, "{} {}: device frame has {} elements, hardware shape {}x{}x{} needs {}", what,
                      hef::format_order_name(g.order), device_size, g.hw.height, g.hw.width, g.hw.features,
                      g.device_elements);
  }
  return ok();
}

template <typename T>
constexpr FormatType type_of() {
  return sizeof(T) == 1 ? FormatType::uint8 : FormatType::uint16;
}

template <typename T>
Status host_to_device_impl(std::span<const T> host, const Shape& shape, FormatOrder order, const Shape& hw,
                           std::span<T> device) {
  auto g = AISRV_TRY(make_geometry(order, shape, hw, type_of<T>()));
  if (auto s = check_sizes(g, host.size(), device.size(), "host_to_device"); !s) return s;
  const size_t row_elems = size_t{shape.width} * shape.features;
  write_device(g, [&](size_t r) { return host.data() + r * row_elems; }, device.data());
  return ok();
}

template <typename T>
Status device_to_host_impl(std::span<const T> device, FormatOrder order, const Shape& hw, const Shape& shape,
                           std::span<T> host) {
  auto g = AISRV_TRY(make_geometry(order, shape, hw, type_of<T>()));
  if (auto s = check_sizes(g, host.size(), device.size(), "device_to_host"); !s) return s;
  T* out = host.data();
  read_device(g, device.data(), [out](size_t i, size_t, T v) { out[i] = v; });
  return ok();
}

template <typename T>
Status quantize_to_device_impl(std::span<const float> host, const Shape& shape, const QuantInfo& qp,
                               FormatOrder order, const Shape& hw, std::span<T> device) {
  auto g = AISRV_TRY(make_geometry(order, shape, hw, type_of<T>()));
  if (auto s = check_sizes(g, host.size(), device.size(), "quantize_to_device"); !s) return s;
  if (auto s = validate_quant_info(qp); !s) return s;
  const QuantKernelParams p = make_kernel_params(qp);
  const size_t row_elems = size_t{shape.width} * shape.features;
  const bool dense_rows = (order == FormatOrder::nhwc || order == FormatOrder::fcr) && shape.features == hw.features;
  if (dense_rows || order == FormatOrder::nhw || order == FormatOrder::nc) {
    // Rows are contiguous on both sides: quantize straight into the device frame, then zero the padding.
    T* dev = device.data();
    for (size_t r = 0; r < shape.height; ++r) {
      T* d = dev + r * g.row_stride;
      quantize_kernel(host.data() + r * row_elems, d, row_elems, p);
      zero(d + row_elems, g.row_stride - row_elems);
    }
    const size_t written = shape.height * g.row_stride;
    zero(dev + written, g.device_elements - written);
    return ok();
  }
  std::vector<T> scratch(row_elems);
  write_device(
      g,
      [&](size_t r) {
        quantize_kernel(host.data() + r * row_elems, scratch.data(), row_elems, p);
        return static_cast<const T*>(scratch.data());
      },
      device.data());
  return ok();
}

template <typename T>
Status dequantize_from_device_impl(std::span<const T> device, FormatOrder order, const Shape& hw,
                                   const Shape& shape, std::span<const QuantInfo> qps, std::span<float> host) {
  auto g = AISRV_TRY(make_geometry(order, shape, hw, type_of<T>()));
  if (auto s = check_sizes(g, host.size(), device.size(), "dequantize_from_device"); !s) return s;
  float* out = host.data();
  if (order == FormatOrder::nhw) {
    read_device(g, device.data(), [out](size_t i, size_t, T v) { out[i] = static_cast<float>(v); });
    return ok();
  }
  if (qps.size() != 1 && qps.size() != shape.features) {
    return make_error(Errc::invalid_argument,
                      "dequantize_from_device: {} quantization parameter sets for {} features (need 1 or {})",
                      qps.size(), shape.features, shape.features);
  }
  bool all_same = true;
  for (const auto& q : qps) all_same = all_same && (q == qps[0]);
  if (all_same) {
    const float zp = qps[0].zero_point, scale = qps[0].scale;
    read_device(g, device.data(),
                [out, zp, scale](size_t i, size_t, T v) { out[i] = (static_cast<float>(v) - zp) * scale; });
  } else {
    const QuantInfo* q = qps.data();
    read_device(g, device.data(),
                [out, q](size_t i, size_t f, T v) { out[i] = (static_cast<float>(v) - q[f].zero_point) * q[f].scale; });
  }
  return ok();
}

}  // namespace

bool is_layout_order(FormatOrder order) {
  switch (order) {
    case FormatOrder::nhwc:
    case FormatOrder::nhcw:
    case FormatOrder::fcr:
    case FormatOrder::f8cr:
    case FormatOrder::nc:
    case FormatOrder::nhw: return true;
    default: return false;
  }
}

Result<size_t> host_frame_elements(const Shape& shape) {
  const uint64_t n = uint64_t{shape.height} * shape.width;
  if (shape.height > (1u << 30) || shape.width > (1u << 30) || n > kMaxFrameBytes ||
      n * shape.features > kMaxFrameBytes) {
    return make_error(Errc::invalid_argument, "frame shape {}x{}x{} exceeds the {} element limit", shape.height,
                      shape.width, shape.features, kMaxFrameBytes);
  }
  return static_cast<size_t>(n * shape.features);
}

Result<size_t> device_frame_bytes(FormatOrder order, const Shape& shape, const Shape& hw, FormatType type) {
  auto g = AISRV_TRY(make_geometry(order, shape, hw, type));
  return g.device_elements * hef::format_type_bytes(type);
}

Status host_to_device(std::span<const uint8_t> host, const Shape& shape, FormatOrder order, const Shape& hw,
                      std::span<uint8_t> device) {
  return host_to_device_impl(host, shape, order, hw, device);
}
Status host_to_device(std::span<const uint16_t> host, const Shape& shape, FormatOrder order, const Shape& hw,
                      std::span<uint16_t> device) {
  return host_to_device_impl(host, shape, order, hw, device);
}
Status device_to_host(std::span<const uint8_t> device, FormatOrder order, const Shape& hw, const Shape& shape,
                      std::span<uint8_t> host) {
  return device_to_host_impl(device, order, hw, shape, host);
}
Status device_to_host(std::span<const uint16_t> device, FormatOrder order, const Shape& hw, const Shape& shape,
                      std::span<uint16_t> host) {
  return device_to_host_impl(device, order, hw, shape, host);
}
Status quantize_to_device(std::span<const float> host, const Shape& shape, const QuantInfo& qp, FormatOrder order,
                          const Shape& hw, std::span<uint8_t> device) {
  return quantize_to_device_impl(host, shape, qp, order, hw, device);
}
Status quantize_to_device(std::span<const float> host, const Shape& shape, const QuantInfo& qp, FormatOrder order,
                          const Shape& hw, std::span<uint16_t> device) {
  return quantize_to_device_impl(host, shape, qp, order, hw, device);
}
Status dequantize_from_device(std::span<const uint8_t> device, FormatOrder order, const Shape& hw,
                              const Shape& shape, std::span<const QuantInfo> qps, std::span<float> host) {
  return dequantize_from_device_impl(device, order, hw, shape, qps, host);
}
Status dequantize_from_device(std::span<const uint16_t> device, FormatOrder order, const Shape& hw,
                              const Shape& shape, std::span<const QuantInfo> qps, std::span<float> host) {
  return dequantize_from_device_impl(device, order, hw, shape, qps, host);
}

}  // namespace aisrv::engine::hailo8::transform
