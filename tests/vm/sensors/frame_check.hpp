// aisrv VM tests — the independent checker of acquired camera frames: floating-point BT.601 (limited range) YUYV ->
// RGB, a double-precision bilinear resize with half-pixel centres (truncated for a uint8 input, kept as is for a
// float32 one), and the comparison with what aisrvd put into the input tensor (uint8 pixels, or float32 pixel / 255),
// for any frame size; used by tests/vm/sensors (vivid) and tests/vm/uvc (the USB camera).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace aisrv::test::frames {

// Independent floating-point BT.601 (limited range) YUYV -> RGB, rounded and clamped to 0..255.
inline std::vector<double> yuyv_to_rgb(const std::vector<uint8_t>& yuyv, uint32_t w, uint32_t h) {
  std::vector<double> rgb(size_t(w) * h * 3);
  for (uint32_t i = 0; i < w * h; ++i) {
    const uint8_t* pair = &yuyv[(i & ~1u) * 2];
    const double y = 1.164 * (pair[(i & 1) * 2] - 16.0), u = pair[1] - 128.0, v = pair[3] - 128.0;
    const double r = y + 1.596 * v, g = y - 0.392 * u - 0.813 * v, b = y + 2.017 * u;
    rgb[i * 3] = std::clamp(std::round(r), 0.0, 255.0);
    rgb[i * 3 + 1] = std::clamp(std::round(g), 0.0, 255.0);
    rgb[i * 3 + 2] = std::clamp(std::round(b), 0.0, 255.0);
  }
  return rgb;
}

// Bilinear resize of the window (x0, y0, cw, ch) of a w-wide RGB picture to out x out, half-pixel centres, double
// precision, not rounded: the picture a float32 input takes (before its pixel / 255).
inline std::vector<double> resize_real(const std::vector<double>& rgb, uint32_t w, uint32_t x0, uint32_t y0,
                                       uint32_t cw, uint32_t ch, uint32_t out) {
  std::vector<double> o(size_t(out) * out * 3);
  for (uint32_t oy = 0; oy < out; ++oy)
    for (uint32_t ox = 0; ox < out; ++ox) {
      const double sy = std::max(0.0, (oy + 0.5) * ch / out - 0.5), sx = std::max(0.0, (ox + 0.5) * cw / out - 0.5);
      const uint32_t ya = static_cast<uint32_t>(sy), xa = static_cast<uint32_t>(sx);
      const uint32_t yb = std::min(ya + 1, ch - 1), xb = std::min(xa + 1, cw - 1);
      const double fy = sy - ya, fx = sx - xa;
      for (uint32_t c = 0; c < 3; ++c) {
        auto at = [&](uint32_t y, uint32_t x) { return rgb[((y0 + y) * size_t(w) + x0 + x) * 3 + c]; };
        o[(size_t(oy) * out + ox) * 3 + c] = at(ya, xa) * (1 - fy) * (1 - fx) + at(ya, xb) * (1 - fy) * fx +
                                             at(yb, xa) * fy * (1 - fx) + at(yb, xb) * fy * fx;
      }
    }
  return o;
}

// The same truncated to uint8, as the uint8 input takes it.
inline std::vector<uint8_t> resize(const std::vector<double>& rgb, uint32_t w, uint32_t x0, uint32_t y0, uint32_t cw,
                                   uint32_t ch, uint32_t out) {
  const auto real = resize_real(rgb, w, x0, y0, cw, ch, out);
  std::vector<uint8_t> o(real.size());
  for (size_t i = 0; i < real.size(); ++i) o[i] = static_cast<uint8_t>(std::clamp(real[i], 0.0, 255.0));
  return o;
}

struct Difference {
  int worst = 0;
  double mean = 0;
};

// got vs want: a picture (at least two levels), at most 2 apart anywhere and under 0.5 on average (integer vs
// floating-point colour conversion, float vs double interpolation).
inline Difference compare(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  Difference d;
  REQUIRE(got.size() == want.size());
  std::vector<bool> seen(256);
  for (uint8_t v : want) seen[v] = true;
  CHECK(std::count(seen.begin(), seen.end(), true) >= 2);
  double sum = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const int diff = std::abs(int(got[i]) - int(want[i]));
    d.worst = std::max(d.worst, diff);
    sum += diff;
  }
  d.mean = sum / double(got.size());
  MESSAGE("frame vs independent conversion: max difference " << d.worst << ", mean " << d.mean);
  CHECK(d.worst <= 2);
  CHECK(d.mean < 0.5);
  return d;
}

}  // namespace aisrv::test::frames

namespace aisrv::test::frames {

struct FloatDifference {
  double worst = 0;  // in pixel levels (the float input's value x 255)
  double mean = 0;
};

// A float32 input (little-endian f32, pixel / 255, as docs/cli.md "Pictures as inputs" says) vs the independent
// picture `want` in pixel levels (resize_real). Every value must be within 0..1 and, times 255, at most 2 levels from
// `want` anywhere and under 0.5 on average. Why 2 and 0.5: the float path does not truncate, so what is left is the
// colour conversion (aisrvd's 8-bit fixed-point BT.601 vs floating point here: a level or two where the rounding
// falls the other way, the same allowance as the uint8 comparison) and single vs double precision in the resize and
// the division (under 1e-3 levels for values up to 255); nothing else may differ.
inline FloatDifference compare_float(const std::vector<uint8_t>& got, const std::vector<double>& want) {
  FloatDifference d;
  REQUIRE(got.size() == want.size() * 4);
  double lo = want.empty() ? 0 : want[0], hi = lo;
  for (double v : want) lo = std::min(lo, v), hi = std::max(hi, v);
  CHECK(hi - lo >= 16);  // a picture, not one flat level
  double sum = 0;
  size_t out_of_range = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    float f;
    std::memcpy(&f, got.data() + i * 4, 4);
    if (!(f >= 0.0f && f <= 1.0f)) ++out_of_range;
    const double diff = std::abs(double(f) * 255.0 - std::clamp(want[i], 0.0, 255.0));
    d.worst = std::max(d.worst, diff);
    sum += diff;
  }
  d.mean = sum / double(want.size());
  MESSAGE("float32 frame vs independent conversion: max difference " << d.worst << " levels, mean " << d.mean);
  CHECK(out_of_range == 0);
  CHECK(d.worst <= 2.0);
  CHECK(d.mean < 0.5);
  return d;
}

}  // namespace aisrv::test::frames
