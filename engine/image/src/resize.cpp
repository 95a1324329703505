// aisrv image — crop and bilinear resize following TensorFlow Lite's reference RESIZE_BILINEAR for float tensors with
// half_pixel_centers: source coordinate (d + 0.5) * (in / out) - 0.5, lower index floor clamped at 0, upper index ceil
// clamped at size - 1, the four-term weighted sum in single precision in TFLite's order of operations.
#include "aisrv/image/resize.hpp"

#include <algorithm>
#include <cmath>

namespace aisrv::image {

Status check_crop(const Image& in, const Crop& c) {
  if (c.width == 0 || c.height == 0)
    return make_error(Errc::invalid_argument, "crop {}x{} is empty", c.width, c.height);
  if (static_cast<uint64_t>(c.x) + c.width > in.width || static_cast<uint64_t>(c.y) + c.height > in.height)
    return make_error(Errc::invalid_argument, "crop {}x{}+{}+{} is outside the {}x{} picture", c.width, c.height, c.x,
                      c.y, in.width, in.height);
  return ok();
}

Crop centre_crop(const Image& in, uint32_t width, uint32_t height) {
  Crop c{0, 0, in.width, in.height};
  if (width == 0 || height == 0) return c;
  // widest window of ratio width:height inside the picture
  const uint64_t by_width = static_cast<uint64_t>(in.width) * height;   // window height * width if width-limited
  const uint64_t by_height = static_cast<uint64_t>(in.height) * width;
  if (by_width > by_height) {  // picture is wider than the ratio: full height
    c.width = std::max<uint32_t>(1, static_cast<uint32_t>(by_height / height));
    c.x = (in.width - c.width) / 2;
  } else {
    c.height = std::max<uint32_t>(1, static_cast<uint32_t>(by_width / width));
    c.y = (in.height - c.height) / 2;
  }
  return c;
}

namespace {

struct Axis {
  std::vector<int32_t> lo, hi;
  std::vector<float> frac;  // source coordinate - lo
};

Axis axis(uint32_t in_size, uint32_t out_size) {
  Axis a;
  a.lo.resize(out_size);
  a.hi.resize(out_size);
  a.frac.resize(out_size);
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  for (uint32_t d = 0; d < out_size; ++d) {
    const float v = (static_cast<float>(d) + 0.5f) * scale - 0.5f;
    const float v_floor = std::floor(v);
    a.lo[d] = std::max(static_cast<int32_t>(v_floor), 0);
    a.hi[d] = std::min(static_cast<int32_t>(std::ceil(v)), static_cast<int32_t>(in_size) - 1);
    a.frac[d] = v - static_cast<float>(a.lo[d]);
  }
  return a;
}

}  // namespace

FloatImage resize_bilinear(const Image& in, uint32_t width, uint32_t height, const std::optional<Crop>& crop) {
  const Crop c = crop.value_or(Crop{0, 0, in.width, in.height});
  FloatImage out;
  out.width = width;
  out.height = height;
  out.channels = in.channels;
  out.values.resize(static_cast<size_t>(width) * height * in.channels);
  const Axis ys = axis(c.height, height), xs = axis(c.width, width);
  const size_t ch = in.channels;
  auto at = [&](int32_t y, int32_t x, size_t k) {
    return static_cast<float>(
        in.pixels[((static_cast<size_t>(c.y) + static_cast<size_t>(y)) * in.width + c.x + static_cast<size_t>(x)) * ch +
                  k]);
  };
  float* o = out.values.data();
  for (uint32_t y = 0; y < height; ++y) {
    const int32_t y0 = ys.lo[y], y1 = ys.hi[y];
    const float dy = ys.frac[y];
    for (uint32_t x = 0; x < width; ++x) {
      const int32_t x0 = xs.lo[x], x1 = xs.hi[x];
      const float dx = xs.frac[x];
      for (size_t k = 0; k < ch; ++k)
        *o++ = at(y0, x0, k) * (1 - dy) * (1 - dx) + at(y1, x0, k) * dy * (1 - dx) + at(y0, x1, k) * (1 - dy) * dx +
               at(y1, x1, k) * dy * dx;
    }
  }
  return out;
}

}  // namespace aisrv::image
