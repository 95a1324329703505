// aisrv tests — the spatial operators of the CPU engine, each as a one-operator model run on every backend
// (run_everywhere): MAX_POOL_2D, L2_POOL_2D, AVERAGE_POOL_2D (float32, int16), RESIZE_BILINEAR,
// RESIZE_NEAREST_NEIGHBOR, SUM, REDUCE_MAX, ARG_MAX, ARG_MIN, L2_NORMALIZATION and SOFTMAX (float32). Expected values
// are hand tables or independent re-derivations in the test (plain loops, double arithmetic with explicit rounding
// where that is provably the same), never the engine's own output; refusals check the load error.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "op_test_util.hpp"

namespace {

using namespace aisrv;
using namespace aisrv::test;
namespace ec = aisrv::engine::cpu;

using OptQuant = std::optional<tw::Quant>;

int32_t tensor(tw::ModelBuilder& b, const char* name, DType type, std::vector<int32_t> shape, OptQuant quant) {
  return b.add_tensor(tw::TensorDef{name, type, std::move(shape), std::move(quant), {}, std::nullopt, false});
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The first output of `model` (run everywhere) on one input, as Out values.
template <typename Out, typename In>
std::vector<Out> run1(const Bytes& model, const std::vector<In>& input) {
  return values_of<Out>(run_everywhere(model, {bytes_of(input)})[0]);
}

template <typename T>
std::vector<T> random_values(size_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

std::vector<float> random_floats(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// ---------------------------------------------------------------------------------------------------------------
// Pooling

struct PoolCase {
  tw::Op op = tw::Op::max_pool_2d;
  DType type = DType::int8;
  std::vector<int32_t> in_shape, out_shape;
  tw::Pool2D options;
  OptQuant in_quant, out_quant;
};

Bytes pool_model(const PoolCase& c) {
  tw::ModelBuilder b;
  const int32_t in = tensor(b, "x", c.type, c.in_shape, c.in_quant);
  const int32_t out = tensor(b, "y", c.type, c.out_shape, c.out_quant);
  b.add_operator(c.op, {in}, {out}, c.options);
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("pool");
}

tw::Pool2D pool_options(tw::Padding padding, int32_t filter_h, int32_t filter_w, int32_t stride_h, int32_t stride_w,
                        tw::Activation act = tw::Activation::none) {
  tw::Pool2D o;
  o.padding = padding;
  o.filter_h = filter_h;
  o.filter_w = filter_w;
  o.stride_h = stride_h;
  o.stride_w = stride_w;
  o.activation = act;
  return o;
}

// Brute-force window reduction over NHWC data: TFLite's SAME padding puts floor(total / 2) before; cells outside the
// input are skipped. `reduce(values)` gets the cells of one window in row-major order.
template <typename T, typename R, typename Fn>
std::vector<R> window_reference(const std::vector<T>& in, int n, int h, int w, int c, int fh, int fw, int sh, int sw,
                                bool same, Fn&& reduce) {
  const int oh = same ? (h + sh - 1) / sh : (h - fh) / sh + 1;
  const int ow = same ? (w + sw - 1) / sw : (w - fw) / sw + 1;
  const int top = same ? std::max((oh - 1) * sh + fh - h, 0) / 2 : 0;
  const int left = same ? std::max((ow - 1) * sw + fw - w, 0) / 2 : 0;
  std::vector<R> out;
  for (int b = 0; b < n; ++b)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int ch = 0; ch < c; ++ch) {
          std::vector<T> cells;
          for (int ky = 0; ky < fh; ++ky)
            for (int kx = 0; kx < fw; ++kx) {
              const int y = oy * sh - top + ky, x = ox * sw - left + kx;
              if (y < 0 || y >= h || x < 0 || x >= w) continue;
              cells.push_back(in[static_cast<size_t>(((b * h + y) * w + x) * c + ch)]);
            }
          out.push_back(reduce(cells));
        }
  return out;
}

TEST_CASE("MAX_POOL_2D int8: VALID and SAME hand tables") {
  const std::vector<int8_t> x = {1, -2, 3, -4, -5, 6, -7, 8, 9, -10, 11, -12, -13, 14, -15, 16};
  PoolCase c{tw::Op::max_pool_2d, DType::int8, {1, 4, 4, 1}, {1, 2, 2, 1},
             pool_options(tw::Padding::valid, 2, 2, 2, 2), q(0.5f, -1), q(0.5f, -1)};
  CHECK(values_of<int8_t>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) == std::vector<int8_t>{6, 8, 14, 16});
  // SAME 3x3 stride 2 over 4x4: one row / column of padding after, windows at the border are clipped.
  c.options = pool_options(tw::Padding::same, 3, 3, 2, 2);
  CHECK(values_of<int8_t>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) == std::vector<int8_t>{11, 11, 14, 16});
  // RELU with zero point -1: nothing below -1 (real 0).
  const std::vector<int8_t> negative = {-9, -8, -7, -6, -50, -40, -30, -20, -3, -4, -5, -6, -1, -128, -127, -2};
  c.options = pool_options(tw::Padding::valid, 2, 2, 2, 2, tw::Activation::relu);
  CHECK(values_of<int8_t>(run_everywhere(pool_model(c), {bytes_of(negative)})[0]) ==
        std::vector<int8_t>{-1, -1, -1, -1});
  // RELU6 with scale 0.5 / zero point -1: at most -1 + 12 = 11.
  c.options = pool_options(tw::Padding::valid, 2, 2, 2, 2, tw::Activation::relu6);
  CHECK(values_of<int8_t>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) == std::vector<int8_t>{6, 8, 11, 11});
}

TEST_CASE("MAX_POOL_2D int8: YOLOv8 SPPF window (5x5, stride 1, SAME) against brute force") {
  const std::vector<int8_t> x = random_values<int8_t>(2 * 7 * 6 * 3, -128, 127, 11);
  PoolCase c{tw::Op::max_pool_2d, DType::int8, {2, 7, 6, 3}, {2, 7, 6, 3},
             pool_options(tw::Padding::same, 5, 5, 1, 1), q(0.1f, 5), q(0.1f, 5)};
  const auto want = window_reference<int8_t, int8_t>(x, 2, 7, 6, 3, 5, 5, 1, 1, true, [](const auto& cells) {
    return *std::max_element(cells.begin(), cells.end());
  });
  CHECK(values_of<int8_t>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) == want);
  // Odd sizes, unequal windows and strides.
  c.in_shape = {1, 9, 5, 2};
  c.out_shape = {1, 3, 3, 2};
  c.options = pool_options(tw::Padding::same, 2, 3, 3, 2);
  const std::vector<int8_t> y = random_values<int8_t>(9 * 5 * 2, -128, 127, 12);
  const auto want2 = window_reference<int8_t, int8_t>(y, 1, 9, 5, 2, 2, 3, 3, 2, true, [](const auto& cells) {
    return *std::max_element(cells.begin(), cells.end());
  });
  CHECK(values_of<int8_t>(run_everywhere(pool_model(c), {bytes_of(y)})[0]) == want2);
}

TEST_CASE("MAX_POOL_2D uint8, int16, float32") {
  {
    const std::vector<uint8_t> x = random_values<uint8_t>(1 * 6 * 6 * 4, 0, 255, 21);
    PoolCase c{tw::Op::max_pool_2d, DType::uint8, {1, 6, 6, 4}, {1, 2, 2, 4},
               pool_options(tw::Padding::valid, 3, 3, 3, 3), q(1.0f / 16, 128), q(1.0f / 16, 128)};
    const auto want = window_reference<uint8_t, uint8_t>(x, 1, 6, 6, 4, 3, 3, 3, 3, false, [](const auto& cells) {
      return *std::max_element(cells.begin(), cells.end());
    });
    CHECK(values_of<uint8_t>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) == want);
    // RELU6: [128, 128 + 96].
    c.options = pool_options(tw::Padding::valid, 3, 3, 3, 3, tw::Activation::relu6);
    std::vector<uint8_t> clamped;
    for (uint8_t v : want) clamped.push_back(static_cast<uint8_t>(std::clamp<int>(v, 128, 224)));
    CHECK(values_of<uint8_t>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) == clamped);
  }
  {
    const std::vector<int16_t> x = random_values<int16_t>(1 * 5 * 5 * 2, -32768, 32767, 22);
    PoolCase c{tw::Op::max_pool_2d, DType::int16, {1, 5, 5, 2}, {1, 3, 3, 2},
               pool_options(tw::Padding::same, 3, 3, 2, 2), q(1.0f / 4096, 0), q(1.0f / 4096, 0)};
    const auto want = window_reference<int16_t, int16_t>(x, 1, 5, 5, 2, 3, 3, 2, 2, true, [](const auto& cells) {
      return *std::max_element(cells.begin(), cells.end());
    });
    CHECK(values_of<int16_t>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) == want);
  }
  {
    const std::vector<float> x = {-1.5f, 2.0f, 7.5f, -3.0f, 0.25f, -8.0f, 4.0f, 5.5f, 6.0f};
    PoolCase c{tw::Op::max_pool_2d, DType::float32, {1, 3, 3, 1}, {1, 3, 3, 1},
               pool_options(tw::Padding::same, 2, 2, 1, 1), std::nullopt, std::nullopt};
    // Windows extend down / right (padding 0 before, 1 after).
    CHECK(values_of<float>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) ==
          std::vector<float>{2.0f, 7.5f, 7.5f, 5.5f, 6.0f, 6.0f, 5.5f, 6.0f, 6.0f});
    c.options = pool_options(tw::Padding::same, 2, 2, 1, 1, tw::Activation::relu_n1_to_1);
    CHECK(values_of<float>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) ==
          std::vector<float>{1, 1, 1, 1, 1, 1, 1, 1, 1});
    const std::vector<float> negative = {-5, -4, -3, -2, -1.5f, -9, -8, -7, -6};
    c.options = pool_options(tw::Padding::valid, 2, 2, 1, 1, tw::Activation::relu);
    c.out_shape = {1, 2, 2, 1};
    CHECK(values_of<float>(run_everywhere(pool_model(c), {bytes_of(negative)})[0]) == std::vector<float>{0, 0, 0, 0});
    c.options = pool_options(tw::Padding::valid, 2, 2, 1, 1);
    CHECK(values_of<float>(run_everywhere(pool_model(c), {bytes_of(negative)})[0]) ==
          std::vector<float>{-1.5f, -1.5f, -1.5f, -1.5f});
  }
}

TEST_CASE("L2_POOL_2D float32") {
  // 2x2 windows: sqrt((9 + 16 + 0 + 0) / 4) = 2.5; sqrt((1 + 1 + 1 + 1) / 4) = 1; a clipped SAME window averages the
  // cells it covers only.
  const std::vector<float> x = {3, 0, 1, 1, 4, 0, 1, 1};
  PoolCase c{tw::Op::l2_pool_2d, DType::float32, {1, 2, 4, 1}, {1, 1, 2, 1},
             pool_options(tw::Padding::valid, 2, 2, 2, 2), std::nullopt, std::nullopt};
  CHECK(values_of<float>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) == std::vector<float>{2.5f, 1.0f});
  c.options = pool_options(tw::Padding::valid, 2, 2, 2, 2, tw::Activation::relu_n1_to_1);
  CHECK(values_of<float>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) == std::vector<float>{1.0f, 1.0f});
  // SAME 3x3 stride 3 over 2x4 gives 1x2: height padding (1-1)*3+3-2 = 1 (0 before), width (2-1)*3+3-4 = 2 (1
  // before).
  c.options = pool_options(tw::Padding::same, 3, 3, 3, 3);
  c.out_shape = {1, 1, 2, 1};
  // Window 0: columns -1..1 -> cells 3,0,4,0 -> sqrt(25/4) = 2.5; window 1: columns 2..4 -> 1,1,1,1 -> 1.
  CHECK(values_of<float>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) == std::vector<float>{2.5f, 1.0f});
  // Random, against a double re-derivation (sqrt of the mean of squares), to float precision.
  const std::vector<float> r = random_floats(1 * 5 * 7 * 3, -4.0f, 4.0f, 31);
  c.in_shape = {1, 5, 7, 3};
  c.out_shape = {1, 3, 4, 3};
  c.options = pool_options(tw::Padding::same, 3, 2, 2, 2);
  const auto want = window_reference<float, double>(r, 1, 5, 7, 3, 3, 2, 2, 2, true, [](const auto& cells) {
    double s = 0;
    for (float v : cells) s += double{v} * v;
    return std::sqrt(s / static_cast<double>(cells.size()));
  });
  const auto got = values_of<float>(run_everywhere(pool_model(c), {bytes_of(r)})[0]);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("AVERAGE_POOL_2D float32 and int16") {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  PoolCase c{tw::Op::average_pool_2d, DType::float32, {1, 3, 3, 1}, {1, 3, 3, 1},
             pool_options(tw::Padding::same, 2, 2, 1, 1), std::nullopt, std::nullopt};
  // Padding cells are left out of the average: the last row / column average 2 cells, the corner 1.
  CHECK(values_of<float>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) ==
        std::vector<float>{3, 4, 4.5f, 6, 7, 7.5f, 7.5f, 8.5f, 9});
  c.options = pool_options(tw::Padding::same, 2, 2, 1, 1, tw::Activation::relu6);
  CHECK(values_of<float>(run_everywhere(pool_model(c), {bytes_of(x)})[0]) ==
        std::vector<float>{3, 4, 4.5f, 6, 6, 6, 6, 6, 6});
  // Random float against a double average (float sum: to float precision).
  const std::vector<float> r = random_floats(2 * 6 * 5 * 3, -10.0f, 10.0f, 41);
  c.in_shape = {2, 6, 5, 3};
  c.out_shape = {2, 2, 2, 3};
  c.options = pool_options(tw::Padding::same, 4, 3, 3, 3);
  const auto want = window_reference<float, double>(r, 2, 6, 5, 3, 4, 3, 3, 3, true, [](const auto& cells) {
    double s = 0;
    for (float v : cells) s += v;
    return s / static_cast<double>(cells.size());
  });
  const auto got = values_of<float>(run_everywhere(pool_model(c), {bytes_of(r)})[0]);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5).scale(10));

  // int16: integer mean rounded half away from zero: (-3 + 0) / 2 -> -2, (3 + 0) / 2 -> 2, (-1 - 2 - 4) / 3 -> -2.
  PoolCase s{tw::Op::average_pool_2d, DType::int16, {1, 1, 4, 1}, {1, 1, 2, 1},
             pool_options(tw::Padding::valid, 1, 2, 1, 2), q(1.0f / 1024, 0), q(1.0f / 1024, 0)};
  CHECK(values_of<int16_t>(run_everywhere(pool_model(s), {bytes_of(std::vector<int16_t>{-3, 0, 3, 0})})[0]) ==
        std::vector<int16_t>{-2, 2});
  s.in_shape = {1, 1, 3, 1};
  s.out_shape = {1, 1, 1, 1};
  s.options = pool_options(tw::Padding::valid, 1, 3, 1, 1);
  CHECK(values_of<int16_t>(run_everywhere(pool_model(s), {bytes_of(std::vector<int16_t>{-1, -2, -4})})[0]) ==
        std::vector<int16_t>{-2});
  const std::vector<int16_t> big = random_values<int16_t>(1 * 5 * 5 * 2, -32768, 32767, 42);
  s.in_shape = {1, 5, 5, 2};
  s.out_shape = {1, 3, 3, 2};
  s.options = pool_options(tw::Padding::same, 3, 3, 2, 2, tw::Activation::relu);
  const auto want16 = window_reference<int16_t, int16_t>(big, 1, 5, 5, 2, 3, 3, 2, 2, true, [](const auto& cells) {
    const double mean = [&] {
      double t = 0;
      for (int16_t v : cells) t += v;
      return t / static_cast<double>(cells.size());
    }();
    return static_cast<int16_t>(std::max(0.0, std::round(mean)));  // round: halves away from zero
  });
  CHECK(values_of<int16_t>(run_everywhere(pool_model(s), {bytes_of(big)})[0]) == want16);
}

TEST_CASE("pooling refusals") {
  PoolCase c{tw::Op::max_pool_2d, DType::int8, {1, 4, 4, 1}, {1, 2, 2, 1},
             pool_options(tw::Padding::valid, 2, 2, 2, 2), q(0.5f, 0), q(0.25f, 0)};
  CHECK(has(load_error(pool_model(c)), "quantization"));
  c.out_quant = q(0.5f, 1);
  CHECK(has(load_error(pool_model(c)), "quantization"));
  c.out_quant = q(0.5f, 0);
  c.out_shape = {1, 3, 3, 1};
  CHECK(has(load_error(pool_model(c)), "window arithmetic"));
  c.out_shape = {1, 2, 2, 1};
  c.options = pool_options(tw::Padding::valid, 2, 2, 0, 2);
  CHECK(has(load_error(pool_model(c)), "stride"));
  c.options = pool_options(tw::Padding::valid, 2, 2, 2, 2, tw::Activation::tanh);
  CHECK(!load_error(pool_model(c)).empty());
  c.options = pool_options(tw::Padding::valid, 2, 2, 2, 2);
  c.op = tw::Op::l2_pool_2d;
  CHECK(has(load_error(pool_model(c)), "supported: FLOAT32"));
  c.op = tw::Op::max_pool_2d;
  c.type = DType::int32;
  c.in_quant = c.out_quant = std::nullopt;
  CHECK(has(load_error(pool_model(c)), "supported"));
  PoolCase f{tw::Op::average_pool_2d, DType::float32, {1, 4, 4, 1}, {1, 2, 2, 1},
             pool_options(tw::Padding::valid, 2, 2, 2, 2, tw::Activation::tanh), std::nullopt, std::nullopt};
  CHECK(has(load_error(pool_model(f)), "activation"));
  f.op = tw::Op::max_pool_2d;
  CHECK(has(load_error(pool_model(f)), "activation"));
  f.options = pool_options(tw::Padding::valid, 2, 2, 2, 2);
  f.in_shape = {4, 4, 1};
  CHECK(has(load_error(pool_model(f)), "rank"));
}

// ---------------------------------------------------------------------------------------------------------------
// Resizing

struct ResizeCase {
  bool bilinear = true;
  DType type = DType::int8;
  std::vector<int32_t> in_shape, out_shape;
  std::vector<int32_t> size;
  bool align_corners = false, half_pixel = false;
  OptQuant in_quant, out_quant;
  bool size_constant = true;
};

Bytes resize_model(const ResizeCase& c) {
  tw::ModelBuilder b;
  const int32_t in = tensor(b, "x", c.type, c.in_shape, c.in_quant);
  int32_t size;
  if (c.size_constant)
    size = b.add_constant<int32_t>("size", DType::int32, {static_cast<int32_t>(c.size.size())}, c.size);
  else
    size = plain_tensor(b, "size", DType::int32, {static_cast<int32_t>(c.size.size())});
  const int32_t out = tensor(b, "y", c.type, c.out_shape, c.out_quant);
  if (c.bilinear)
    b.add_operator(tw::Op::resize_bilinear, {in, size}, {out},
                   ec::ResizeBilinearOptions{c.align_corners, c.half_pixel});
  else
    b.add_operator(tw::Op::resize_nearest_neighbor, {in, size}, {out},
                   ec::ResizeNearestNeighborOptions{c.align_corners, c.half_pixel});
  b.set_inputs(c.size_constant ? std::vector<int32_t>{in} : std::vector<int32_t>{in, size});
  b.set_outputs({out});
  return b.finish("resize");
}

ResizeCase resize_case(bool bilinear, DType type, std::vector<int32_t> in_shape, int32_t oh, int32_t ow, bool align,
                       bool half) {
  ResizeCase c;
  c.bilinear = bilinear;
  c.type = type;
  c.in_shape = in_shape;
  c.out_shape = {in_shape[0], oh, ow, in_shape[3]};
  c.size = {oh, ow};
  c.align_corners = align;
  c.half_pixel = half;
  if (type != DType::float32) c.in_quant = c.out_quant = q(0.25f, type == DType::uint8 ? 128 : 0);
  return c;
}

// TFLite Micro's integer bilinear interpolation re-derived: positions in 1/1024 units, source rows / columns from
// truncating divisions, weights from the position's offset to the lower source; the weighted sum (in 1/2^20) is
// exact in double and rounded with std::round (halves away from zero), the rounding of the default build.
template <typename T>
std::vector<T> integer_bilinear_reference(const std::vector<T>& in, const std::vector<int32_t>& s, int oh, int ow,
                                          bool align, bool half) {
  const int n = s[0], h = s[1], w = s[2], c = s[3];
  auto scale_of = [&](int64_t i, int64_t o) {
    // round(1024 * i / o) with halves up, written as a floor of a doubled quotient (o / 2 truncated, as the kernel).
    return align && o > 1 ? (1024 * (i - 1) + (o - 1) / 2) / (o - 1) : (1024 * i + o / 2) / o;
  };
  struct Src {
    int64_t lo, hi, frac;
  };
  auto source = [&](int64_t v, int64_t scale, int64_t size) {
    const int64_t pos = half ? v * scale + scale / 2 - 512 : v * scale;
    const auto lo = static_cast<int64_t>(std::max<double>(std::trunc(static_cast<double>(pos) / 1024.0), 0.0));
    const auto hi = std::min<int64_t>(static_cast<int64_t>(std::trunc((static_cast<double>(pos) + 1023) / 1024.0)),
                                      size - 1);
    return Src{lo, hi, pos - 1024 * lo};
  };
  const int64_t sy = scale_of(h, oh), sx = scale_of(w, ow);
  std::vector<T> out;
  for (int b = 0; b < n; ++b)
    for (int y = 0; y < oh; ++y)
      for (int x = 0; x < ow; ++x) {
        const Src ry = source(y, sy, h), rx = source(x, sx, w);
        for (int ch = 0; ch < c; ++ch) {
          auto at = [&](int64_t yy, int64_t xx) {
            return static_cast<double>(in[static_cast<size_t>(((b * h + yy) * w + xx) * c + ch)]);
          };
          const double sum = at(ry.lo, rx.lo) * static_cast<double>((1024 - ry.frac) * (1024 - rx.frac)) +
                             at(ry.hi, rx.lo) * static_cast<double>(ry.frac * (1024 - rx.frac)) +
                             at(ry.lo, rx.hi) * static_cast<double>((1024 - ry.frac) * rx.frac) +
                             at(ry.hi, rx.hi) * static_cast<double>(ry.frac * rx.frac);
          out.push_back(static_cast<T>(std::round(sum / 1048576.0)));
        }
      }
  return out;
}

// The float bilinear interpolation in double (scales, positions and weights as TFLite's formula); returns the real
// values before the +0.5 / truncation of integer types.
std::vector<double> float_bilinear_reference(const std::vector<double>& in, const std::vector<int32_t>& s, int oh,
                                             int ow, bool align, bool half) {
  const int n = s[0], h = s[1], w = s[2], c = s[3];
  auto scale_of = [&](int i, int o) { return align && o > 1 ? double(i - 1) / (o - 1) : double(i) / o; };
  struct Src {
    int lo, hi;
    double frac;
  };
  auto source = [&](int v, double scale, int size) {
    const double pos = half ? (v + 0.5) * scale - 0.5 : v * scale;
    const int lo = std::max(static_cast<int>(std::floor(pos)), 0);
    const int hi = std::min(static_cast<int>(std::ceil(pos)), size - 1);
    return Src{lo, hi, pos - lo};
  };
  std::vector<double> out;
  for (int b = 0; b < n; ++b)
    for (int y = 0; y < oh; ++y)
      for (int x = 0; x < ow; ++x) {
        const Src ry = source(y, scale_of(h, oh), h), rx = source(x, scale_of(w, ow), w);
        for (int ch = 0; ch < c; ++ch) {
          auto at = [&](int yy, int xx) { return in[static_cast<size_t>(((b * h + yy) * w + xx) * c + ch)]; };
          out.push_back(at(ry.lo, rx.lo) * (1 - ry.frac) * (1 - rx.frac) + at(ry.hi, rx.lo) * ry.frac * (1 - rx.frac) +
                        at(ry.lo, rx.hi) * (1 - ry.frac) * rx.frac + at(ry.hi, rx.hi) * ry.frac * rx.frac);
        }
      }
  return out;
}

TEST_CASE("RESIZE_BILINEAR int8 (integer interpolation): hand tables") {
  // 2x2 -> 4x4, half-pixel centers (MoveNet): source rows 0, 0.25, 0.75, 1 (the first and last clamp to a row).
  ResizeCase c = resize_case(true, DType::int8, {1, 2, 2, 1}, 4, 4, false, true);
  CHECK(values_of<int8_t>(run_everywhere(resize_model(c), {bytes_of(std::vector<int8_t>{0, 40, 80, 120})})[0]) ==
        std::vector<int8_t>{0, 10, 30, 40, 20, 30, 50, 60, 60, 70, 90, 100, 80, 90, 110, 120});
  // Rounding of halves away from zero: 1x2 -> 1x4 with two channels (-2, 2) and (0, 0): 0.75 * -2 = -1.5 -> -2,
  // 0.25 * -2 = -0.5 -> -1, and +1.5 -> 2, +0.5 -> 1.
  c = resize_case(true, DType::int8, {1, 1, 2, 2}, 1, 4, false, true);
  CHECK(values_of<int8_t>(run_everywhere(resize_model(c), {bytes_of(std::vector<int8_t>{-2, 2, 0, 0})})[0]) ==
        std::vector<int8_t>{-2, 2, -2, 2, -1, 1, 0, 0});
  // align_corners 2x2 -> 3x3: centre = mean of the four corners, (−128 + 127 + 0 + 1) / 4 = 0.
  c = resize_case(true, DType::int8, {1, 2, 2, 1}, 3, 3, true, false);
  CHECK(values_of<int8_t>(run_everywhere(resize_model(c), {bytes_of(std::vector<int8_t>{-128, 127, 0, 1})})[0]) ==
        std::vector<int8_t>{-128, -1, 127, -64, 0, 64, 0, 1, 1});
  // No flags 2 -> 4: sources 0, 0.5, 1, 1.5 (the last clamps to row 1).
  c = resize_case(true, DType::int8, {1, 1, 2, 1}, 1, 4, false, false);
  CHECK(values_of<int8_t>(run_everywhere(resize_model(c), {bytes_of(std::vector<int8_t>{-3, 4})})[0]) ==
        std::vector<int8_t>{-3, 1, 4, 4});
}

TEST_CASE("RESIZE_BILINEAR int8 / int16: flag combinations, up and down, against the integer re-derivation") {
  struct Geometry {
    std::vector<int32_t> in;
    int oh, ow;
  };
  const Geometry geometries[] = {{{1, 3, 5, 2}, 7, 9},   {{2, 4, 4, 3}, 8, 8},   {{1, 9, 7, 1}, 4, 3},
                                 {{1, 5, 6, 2}, 5, 11},  {{1, 1, 3, 2}, 5, 1},   {{1, 16, 12, 1}, 48, 36},
                                 {{1, 12, 10, 2}, 5, 7}};
  uint32_t seed = 100;
  int cases = 0;
  for (const Geometry& g : geometries)
    for (const auto& [align, half] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
      CAPTURE(g.oh);
      CAPTURE(g.ow);
      CAPTURE(align);
      CAPTURE(half);
      const size_t n = static_cast<size_t>(g.in[0] * g.in[1] * g.in[2] * g.in[3]);
      {
        const std::vector<int8_t> x = random_values<int8_t>(n, -128, 127, ++seed);
        const ResizeCase c = resize_case(true, DType::int8, g.in, g.oh, g.ow, align, half);
        CHECK(values_of<int8_t>(run_everywhere(resize_model(c), {bytes_of(x)})[0]) ==
              integer_bilinear_reference(x, g.in, g.oh, g.ow, align, half));
      }
      {
        const std::vector<int16_t> x = random_values<int16_t>(n, -32768, 32767, ++seed);
        const ResizeCase c = resize_case(true, DType::int16, g.in, g.oh, g.ow, align, half);
        CHECK(values_of<int16_t>(run_everywhere(resize_model(c), {bytes_of(x)})[0]) ==
              integer_bilinear_reference(x, g.in, g.oh, g.ow, align, half));
      }
      cases += 2;
    }
  CHECK(cases == 42);
}

TEST_CASE("RESIZE_BILINEAR uint8 (float interpolation, +0.5 and truncation): DeepLab's align_corners") {
  // 2x2 -> 3x3 align_corners: sources 0, 0.5, 1; 15.25 -> 15, 5 -> 5, 20.5 -> 21, 25.5 -> 26.
  ResizeCase c = resize_case(true, DType::uint8, {1, 2, 2, 1}, 3, 3, true, false);
  CHECK(values_of<uint8_t>(run_everywhere(resize_model(c), {bytes_of(std::vector<uint8_t>{0, 10, 20, 31})})[0]) ==
        std::vector<uint8_t>{0, 5, 10, 10, 15, 21, 20, 26, 31});
  // Scales that are powers of two make every float step exact (weights are multiples of 1/8, values < 256), so the
  // double re-derivation plus floor(v + 0.5) is the same computation: 9x9 -> 33x33 (scale 1/4) and 5x5 -> 33x33
  // (scale 1/8, DeepLab's 65 -> 513 ratio) with align_corners, and 4x4 -> 8x8 / 16x16 without flags.
  struct Geometry {
    std::vector<int32_t> in;
    int oh, ow;
    bool align;
  };
  const Geometry exact[] = {{{1, 9, 9, 3}, 33, 33, true}, {{1, 5, 5, 21}, 33, 33, true},
                            {{2, 4, 4, 2}, 8, 8, false},  {{1, 4, 2, 2}, 16, 8, false}};
  uint32_t seed = 200;
  for (const Geometry& g : exact) {
    const size_t n = static_cast<size_t>(g.in[0] * g.in[1] * g.in[2] * g.in[3]);
    const std::vector<uint8_t> x = random_values<uint8_t>(n, 0, 255, ++seed);
    const std::vector<double> xd(x.begin(), x.end());
    const auto real = float_bilinear_reference(xd, g.in, g.oh, g.ow, g.align, false);
    std::vector<uint8_t> want;
    for (double v : real) want.push_back(static_cast<uint8_t>(std::floor(v + 0.5)));
    const ResizeCase c = resize_case(true, DType::uint8, g.in, g.oh, g.ow, g.align, false);
    CHECK(values_of<uint8_t>(run_everywhere(resize_model(c), {bytes_of(x)})[0]) == want);
  }
  // Other scales (float rounding in the weights): within one step everywhere, and exact wherever the real value is
  // not within 1e-3 of a rounding boundary (ties are frequent: sources halfway between two pixels); half-pixel
  // centers included.
  const Geometry inexact[] = {{{1, 3, 5, 2}, 7, 11, true}, {{1, 7, 6, 3}, 5, 4, false}, {{1, 3, 4, 2}, 10, 9, false}};
  for (const Geometry& g : inexact)
    for (bool half : {false, true}) {
      if (half && g.align) continue;
      const size_t n = static_cast<size_t>(g.in[0] * g.in[1] * g.in[2] * g.in[3]);
      const std::vector<uint8_t> x = random_values<uint8_t>(n, 0, 255, ++seed);
      const std::vector<double> xd(x.begin(), x.end());
      const auto real = float_bilinear_reference(xd, g.in, g.oh, g.ow, g.align, half);
      const ResizeCase c = resize_case(true, DType::uint8, g.in, g.oh, g.ow, g.align, half);
      const auto got = values_of<uint8_t>(run_everywhere(resize_model(c), {bytes_of(x)})[0]);
      REQUIRE(got.size() == real.size());
      int checked = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double frac = real[i] + 0.5 - std::floor(real[i] + 0.5);
        CHECK(std::abs(int{got[i]} - (real[i] + 0.5)) < 1.0 + 1e-3);
        if (frac < 1e-3 || frac > 1 - 1e-3) continue;
        CHECK(int{got[i]} == static_cast<int>(std::floor(real[i] + 0.5)));
        ++checked;
      }
      CHECK(checked > static_cast<int>(got.size()) / 2);
    }
}

TEST_CASE("RESIZE_BILINEAR float32") {
  // Half-pixel 2x2 -> 4x4: sources -0.25 (clamped row, weights 1.25 / -0.25 on the same row), 0.25, 0.75, 1.25.
  ResizeCase c = resize_case(true, DType::float32, {1, 2, 2, 1}, 4, 4, false, true);
  CHECK(values_of<float>(run_everywhere(resize_model(c), {bytes_of(std::vector<float>{0, 4, 8, 12})})[0]) ==
        std::vector<float>{0, 1, 3, 4, 2, 3, 5, 6, 6, 7, 9, 10, 8, 9, 11, 12});
  c = resize_case(true, DType::float32, {1, 2, 2, 1}, 3, 3, true, false);
  CHECK(values_of<float>(run_everywhere(resize_model(c), {bytes_of(std::vector<float>{0, 1, 2, 4})})[0]) ==
        std::vector<float>{0, 0.5f, 1, 1, 1.75f, 2.5f, 2, 3, 4});
  uint32_t seed = 300;
  for (const auto& [align, half] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
    const std::vector<int32_t> shape = {1, 5, 4, 3};
    const std::vector<float> x = random_floats(60, -5.0f, 5.0f, ++seed);
    const std::vector<double> xd(x.begin(), x.end());
    for (const auto& [oh, ow] : {std::pair{9, 11}, std::pair{3, 2}}) {
      const auto want = float_bilinear_reference(xd, shape, oh, ow, align, half);
      const ResizeCase rc = resize_case(true, DType::float32, shape, oh, ow, align, half);
      const auto got = values_of<float>(run_everywhere(resize_model(rc), {bytes_of(x)})[0]);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5).scale(5));
    }
  }
}

TEST_CASE("RESIZE_NEAREST_NEIGHBOR: every flag combination, up and down, every type") {
  const std::vector<uint8_t> x = {1, 2, 3, 4};
  struct Expect {
    bool align, half;
    std::vector<uint8_t> out;
  };
  // 2x2 -> 3x3: no flags: sources floor(v * 2/3) = 0, 0, 1; align_corners: round(v / 2) = 0, 1, 1; half-pixel:
  // floor((v + 0.5) * 2/3) = 0, 1, 1; both: round((v + 0.5) / 2) = 0, 1, 1.
  const Expect up[] = {{false, false, {1, 1, 2, 1, 1, 2, 3, 3, 4}},
                       {true, false, {1, 2, 2, 3, 4, 4, 3, 4, 4}},
                       {false, true, {1, 2, 2, 3, 4, 4, 3, 4, 4}},
                       {true, true, {1, 2, 2, 3, 4, 4, 3, 4, 4}}};
  for (const Expect& e : up) {
    CAPTURE(e.align);
    CAPTURE(e.half);
    const ResizeCase c = resize_case(false, DType::uint8, {1, 2, 2, 1}, 3, 3, e.align, e.half);
    CHECK(values_of<uint8_t>(run_everywhere(resize_model(c), {bytes_of(x)})[0]) == e.out);
  }
  // 1x4 -> 1x2: no flags: 0, 2; half-pixel: floor(0.5 * 2) = 1, floor(1.5 * 2) = 3; align: round(v * 3) = 0, 3.
  const std::vector<int8_t> row = {-1, -2, -3, -4};
  const Expect down[] = {{false, false, {0, 2}}, {false, true, {1, 3}}, {true, false, {0, 3}}};
  for (const Expect& e : down) {
    const ResizeCase c = resize_case(false, DType::int8, {1, 1, 4, 1}, 1, 2, e.align, e.half);
    std::vector<int8_t> want;
    for (uint8_t i : e.out) want.push_back(row[i]);
    CHECK(values_of<int8_t>(run_everywhere(resize_model(c), {bytes_of(row)})[0]) == want);
  }
  // YOLOv8's 2x upsample (half-pixel): sources 0, 0, 1, 1 — every pixel (all channels) repeated 2x2; int16 / float.
  const std::vector<int16_t> px = {100, -100, 200, -200, 300, -300, 400, -400};  // 2x2 pixels, 2 channels
  const ResizeCase c16 = resize_case(false, DType::int16, {1, 2, 2, 2}, 4, 4, false, true);
  const auto got16 = values_of<int16_t>(run_everywhere(resize_model(c16), {bytes_of(px)})[0]);
  const ResizeCase cf = resize_case(false, DType::float32, {1, 2, 2, 2}, 4, 4, false, true);
  std::vector<float> pxf(px.begin(), px.end());
  const auto gotf = values_of<float>(run_everywhere(resize_model(cf), {bytes_of(pxf)})[0]);
  REQUIRE(got16.size() == 32);
  REQUIRE(gotf.size() == 32);
  for (int y = 0; y < 4; ++y)
    for (int xx = 0; xx < 4; ++xx)
      for (int ch = 0; ch < 2; ++ch) {
        const size_t o = static_cast<size_t>((y * 4 + xx) * 2 + ch);
        const int16_t want = px[static_cast<size_t>(((y / 2) * 2 + xx / 2) * 2 + ch)];
        CHECK(got16[o] == want);
        CHECK(gotf[o] == static_cast<float>(want));
      }
  // Random odd sizes against a float re-derivation of the source index.
  uint32_t seed = 400;
  for (const auto& [align, half] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}})
    for (const auto& [oh, ow] : {std::pair{7, 5}, std::pair{2, 9}}) {
      const std::vector<int8_t> in = random_values<int8_t>(2 * 3 * 4 * 3, -128, 127, ++seed);
      auto src = [&](int v, int i, int o) {
        const float scale = align && o > 1 ? float(i - 1) / float(o - 1) : float(i) / float(o);
        const float pos = (float(v) + (half ? 0.5f : 0.0f)) * scale;
        int r = static_cast<int>(align ? std::round(pos) : std::floor(pos));
        return std::max(std::min(r, i - 1), 0);
      };
      std::vector<int8_t> want;
      for (int b = 0; b < 2; ++b)
        for (int y = 0; y < oh; ++y)
          for (int xx = 0; xx < ow; ++xx)
            for (int ch = 0; ch < 3; ++ch)
              want.push_back(in[static_cast<size_t>(((b * 3 + src(y, 3, oh)) * 4 + src(xx, 4, ow)) * 3 + ch)]);
      const ResizeCase c = resize_case(false, DType::int8, {2, 3, 4, 3}, oh, ow, align, half);
      CHECK(values_of<int8_t>(run_everywhere(resize_model(c), {bytes_of(in)})[0]) == want);
    }
}

TEST_CASE("resize refusals") {
  ResizeCase c = resize_case(true, DType::int8, {1, 2, 2, 1}, 4, 4, true, true);
  CHECK(has(load_error(resize_model(c)), "align_corners and half_pixel_centers"));
  c = resize_case(true, DType::int8, {1, 2, 2, 1}, 4, 4, false, false);
  c.out_shape = {1, 4, 5, 1};
  CHECK(has(load_error(resize_model(c)), "gives"));
  c = resize_case(true, DType::int8, {1, 2, 2, 1}, 4, 4, false, false);
  c.size_constant = false;
  CHECK(has(load_error(resize_model(c)), "constant"));
  c = resize_case(true, DType::int8, {1, 2, 2, 1}, 4, 4, false, false);
  c.out_quant = q(0.5f, 0);
  CHECK(has(load_error(resize_model(c)), "requantize"));
  c = resize_case(false, DType::uint8, {1, 2, 2, 1}, 4, 4, false, false);
  c.out_quant = q(0.25f, 127);
  CHECK(has(load_error(resize_model(c)), "requantize"));
  c = resize_case(true, DType::int8, {1, 2, 2, 1}, 4, 4, false, false);
  c.size = {4, 4, 1};
  CHECK(has(load_error(resize_model(c)), "2 values"));
  c = resize_case(true, DType::int8, {1, 2, 2, 1}, 4, 4, false, false);
  c.in_shape = {2, 2, 1};
  c.out_shape = {4, 4, 1};
  CHECK(has(load_error(resize_model(c)), "rank"));
  c = resize_case(true, DType::int32, {1, 2, 2, 1}, 4, 4, false, false);
  CHECK(has(load_error(resize_model(c)), "supported"));
  // 1 -> 682 rows: the integer scale rounds up to 2/1024 and the last rows land on input row 1, outside the input
  // (TFLite Micro would read there); the float version (uint8) and nearest neighbour are fine.
  c = resize_case(true, DType::int8, {1, 1, 1, 1}, 682, 1, false, false);
  CHECK(has(load_error(resize_model(c)), "outside the input"));
  c = resize_case(true, DType::uint8, {1, 1, 1, 1}, 682, 1, false, false);
  CHECK(load_error(resize_model(c)).empty());
  c = resize_case(false, DType::int8, {1, 1, 1, 1}, 682, 1, false, false);
  CHECK(load_error(resize_model(c)).empty());
}

// ---------------------------------------------------------------------------------------------------------------
// Reductions

struct ReduceCase {
  tw::Op op = tw::Op::sum;
  DType type = DType::float32;
  std::vector<int32_t> in_shape, out_shape;
  std::vector<int32_t> axes;
  bool keep_dims = false;
  OptQuant in_quant, out_quant;
};

Bytes reduce_model(const ReduceCase& c) {
  tw::ModelBuilder b;
  const int32_t in = tensor(b, "x", c.type, c.in_shape, c.in_quant);
  const int32_t axes = b.add_constant<int32_t>("axes", DType::int32, {static_cast<int32_t>(c.axes.size())}, c.axes);
  const int32_t out = tensor(b, "y", c.type, c.out_shape, c.out_quant);
  b.add_operator(c.op, {in, axes}, {out}, tw::Reducer{c.keep_dims});
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("reduce");
}

TEST_CASE("SUM float32 and int32: axes, negative axes, repeats, keep_dims") {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  ReduceCase c{tw::Op::sum, DType::float32, {2, 3}, {3}, {0}, false, std::nullopt, std::nullopt};
  CHECK(values_of<float>(run_everywhere(reduce_model(c), {bytes_of(x)})[0]) == std::vector<float>{5, 7, 9});
  c.axes = {-1};
  c.out_shape = {2};
  CHECK(values_of<float>(run_everywhere(reduce_model(c), {bytes_of(x)})[0]) == std::vector<float>{6, 15});
  c.keep_dims = true;
  c.out_shape = {2, 1};
  CHECK(values_of<float>(run_everywhere(reduce_model(c), {bytes_of(x)})[0]) == std::vector<float>{6, 15});
  c.axes = {1, 0, -1};  // repeats count once
  c.keep_dims = false;
  c.out_shape = {};
  CHECK(values_of<float>(run_everywhere(reduce_model(c), {bytes_of(x)})[0]) == std::vector<float>{21});
  c.keep_dims = true;
  c.out_shape = {1, 1};
  CHECK(values_of<float>(run_everywhere(reduce_model(c), {bytes_of(x)})[0]) == std::vector<float>{21});

  // Non-adjacent axes of a 4-D tensor, against plain loops (small integers: float sums exact).
  std::vector<float> big(2 * 3 * 4 * 5);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(static_cast<int>(i * 7 % 23) - 11);
  ReduceCase d{tw::Op::sum, DType::float32, {2, 3, 4, 5}, {3, 5}, {0, -2}, false, std::nullopt, std::nullopt};
  std::vector<float> want(15, 0.0f);
  for (int a = 0; a < 2; ++a)
    for (int b2 = 0; b2 < 3; ++b2)
      for (int cc = 0; cc < 4; ++cc)
        for (int e = 0; e < 5; ++e)
          want[static_cast<size_t>(b2 * 5 + e)] += big[static_cast<size_t>(((a * 3 + b2) * 4 + cc) * 5 + e)];
  CHECK(values_of<float>(run_everywhere(reduce_model(d), {bytes_of(big)})[0]) == want);
  d.keep_dims = true;
  d.out_shape = {1, 3, 1, 5};
  CHECK(values_of<float>(run_everywhere(reduce_model(d), {bytes_of(big)})[0]) == want);

  ReduceCase i{tw::Op::sum, DType::int32, {2, 2, 2}, {2, 2}, {1}, false, std::nullopt, std::nullopt};
  const std::vector<int32_t> xi = {1000000, -3, 2000000, 7, -5, 11, 5, -11};
  CHECK(values_of<int32_t>(run_everywhere(reduce_model(i), {bytes_of(xi)})[0]) ==
        std::vector<int32_t>{3000000, 4, 0, 0});
}

TEST_CASE("SUM int8 / int16 (TFLite Micro requantization)") {
  // Equal scales (ratio 1): sum of (q - input zero point) plus the output zero point, clamped.
  ReduceCase c{tw::Op::sum, DType::int8, {2, 3}, {2}, {1}, false, q(0.5f, 1), q(0.5f, -3)};
  CHECK(values_of<int8_t>(run_everywhere(reduce_model(c), {bytes_of(std::vector<int8_t>{1, 5, -7, 10, 1, 2})})[0]) ==
        std::vector<int8_t>{-7, 7});
  c.in_shape = {1, 200};
  c.out_shape = {1};
  CHECK(values_of<int8_t>(run_everywhere(reduce_model(c), {bytes_of(std::vector<int8_t>(200, 100))})[0]) ==
        std::vector<int8_t>{127});
  CHECK(values_of<int8_t>(run_everywhere(reduce_model(c), {bytes_of(std::vector<int8_t>(200, -100))})[0]) ==
        std::vector<int8_t>{-128});
  // Ratio 1/2 (multiplier 2^30, no shift): the doubling high multiply rounds halves up: 1.5 -> 2, -1.5 -> -1,
  // 2.5 -> 3, -2.5 -> -2.
  ReduceCase h{tw::Op::sum, DType::int8, {4, 2}, {4, 1}, {-1}, true, q(0.5f, 0), q(1.0f, 0)};
  CHECK(run1<int8_t>(reduce_model(h), std::vector<int8_t>{1, 2, -1, -2, 2, 3, -2, -3}) ==
        std::vector<int8_t>{2, -1, 3, -2});
  // Ratio 2 with zero points: 2 * (sum - n * zp) + output zero point.
  ReduceCase t{tw::Op::sum, DType::int8, {3, 2}, {2}, {0}, false, q(1.0f, -2), q(0.5f, 4)};
  const std::vector<int8_t> xt = {-2, 0, 3, 1, -10, 2};  // columns: (-2, 3, -10), (0, 1, 2); n = 3, zp -2
  CHECK(values_of<int8_t>(run_everywhere(reduce_model(t), {bytes_of(xt)})[0]) ==
        std::vector<int8_t>{static_cast<int8_t>(2 * (-9 + 6) + 4), static_cast<int8_t>(2 * (3 + 6) + 4)});
  // int16, ratio 1, random against plain loops (every sum fits: 8 values).
  const std::vector<int16_t> x16 = random_values<int16_t>(3 * 8, -4000, 4000, 51);
  ReduceCase s{tw::Op::sum, DType::int16, {3, 8}, {3}, {1}, false, q(1.0f / 256, 0), q(1.0f / 256, 0)};
  std::vector<int16_t> want;
  for (int r = 0; r < 3; ++r) {
    int sum = 0;
    for (int k = 0; k < 8; ++k) sum += x16[static_cast<size_t>(r * 8 + k)];
    want.push_back(static_cast<int16_t>(std::clamp(sum, -32768, 32767)));
  }
  CHECK(values_of<int16_t>(run_everywhere(reduce_model(s), {bytes_of(x16)})[0]) == want);
}

TEST_CASE("SUM uint8 (TensorFlow Lite's float rescaling)") {
  // round(sum * 0.5 - 10 * 0.5 * 4) + 3 = round(101 / 2 - 20) + 3 = round(30.5) + 3 = 34 (halves away from zero).
  ReduceCase c{tw::Op::sum, DType::uint8, {1, 4}, {1}, {1}, false, q(0.5f, 10), q(1.0f, 3)};
  CHECK(values_of<uint8_t>(run_everywhere(reduce_model(c), {bytes_of(std::vector<uint8_t>{10, 20, 30, 41})})[0]) ==
        std::vector<uint8_t>{34});
  // Below zero: round(4 * 0.5 - 20) + 3 = -15 -> wraps to 241 (TFLite converts without clamping).
  CHECK(values_of<uint8_t>(run_everywhere(reduce_model(c), {bytes_of(std::vector<uint8_t>{1, 1, 1, 1})})[0]) ==
        std::vector<uint8_t>{241});
  // Ratio 32: 1020 * 32 + 3 = 32643 -> 32643 mod 256 = 131.
  c.out_quant = q(1.0f / 64, 3);
  c.in_quant = q(0.5f, 0);
  CHECK(values_of<uint8_t>(run_everywhere(reduce_model(c), {bytes_of(std::vector<uint8_t>(4, 255))})[0]) ==
        std::vector<uint8_t>{131});
  // Equal quantization: TFLite sums in 8 bits; refused.
  c.out_quant = q(0.5f, 0);
  CHECK(has(load_error(reduce_model(c)), "8 bits"));
}

TEST_CASE("REDUCE_MAX every type") {
  ReduceCase f{tw::Op::reduce_max, DType::float32, {2, 3}, {2}, {1}, false, std::nullopt, std::nullopt};
  CHECK(values_of<float>(run_everywhere(reduce_model(f), {bytes_of(std::vector<float>{-1, -7, -0.5f, 3, 9, 2})})[0]) ==
        std::vector<float>{-0.5f, 9});
  // A NaN never replaces the running maximum (TFLite's `in > current`).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(values_of<float>(run_everywhere(reduce_model(f), {bytes_of(std::vector<float>{nan, 1, 2, 4, nan, 3})})[0]) ==
        std::vector<float>{2, 4});
  ReduceCase i{tw::Op::reduce_max, DType::int8, {2, 2, 3}, {1, 2, 1}, {0, 2}, true, q(0.3f, 7), q(0.3f, 7)};
  const std::vector<int8_t> xi = {-128, -5, -9, 4, 0, -1, -100, -6, -128, 3, 127, 2};
  CHECK(values_of<int8_t>(run_everywhere(reduce_model(i), {bytes_of(xi)})[0]) == std::vector<int8_t>{-5, 127});
  ReduceCase u{tw::Op::reduce_max, DType::uint8, {4}, {}, {0}, false, q(0.3f, 7), q(0.3f, 7)};
  CHECK(values_of<uint8_t>(run_everywhere(reduce_model(u), {bytes_of(std::vector<uint8_t>{0, 254, 255, 3})})[0]) ==
        std::vector<uint8_t>{255});
  ReduceCase s{tw::Op::reduce_max, DType::int16, {3, 2}, {2}, {-2}, false, q(0.001f, 0), q(0.001f, 0)};
  CHECK(run1<int16_t>(reduce_model(s), std::vector<int16_t>{-32768, -2, -30000, -3, -32767, 5}) ==
        std::vector<int16_t>{-30000, 5});
  ReduceCase n{tw::Op::reduce_max, DType::int32, {2, 2}, {2}, {1}, false, std::nullopt, std::nullopt};
  CHECK(run1<int32_t>(reduce_model(n), std::vector<int32_t>{-2147483647 - 1, -2147483647, 5, 4}) ==
        std::vector<int32_t>{-2147483647, 5});
  // Random 4-D over axes 1 and 3 against plain loops.
  const std::vector<int8_t> r = random_values<int8_t>(2 * 3 * 4 * 5, -128, 127, 61);
  ReduceCase m{tw::Op::reduce_max, DType::int8, {2, 3, 4, 5}, {2, 4}, {3, 1}, false, q(0.1f, 0), q(0.1f, 0)};
  std::vector<int8_t> want(8, -128);
  for (int a = 0; a < 2; ++a)
    for (int b2 = 0; b2 < 3; ++b2)
      for (int cc = 0; cc < 4; ++cc)
        for (int e = 0; e < 5; ++e) {
          int8_t& w = want[static_cast<size_t>(a * 4 + cc)];
          w = std::max(w, r[static_cast<size_t>(((a * 3 + b2) * 4 + cc) * 5 + e)]);
        }
  CHECK(values_of<int8_t>(run_everywhere(reduce_model(m), {bytes_of(r)})[0]) == want);
}

TEST_CASE("reduction refusals") {
  ReduceCase c{tw::Op::reduce_max, DType::int8, {2, 3}, {2}, {1}, false, q(0.5f, 0), q(0.25f, 0)};
  CHECK(has(load_error(reduce_model(c)), "quantization"));
  c.out_quant = q(0.5f, 1);
  CHECK(has(load_error(reduce_model(c)), "quantization"));
  c.out_quant = q(0.5f, 0);
  c.axes = {2};
  CHECK(has(load_error(reduce_model(c)), "outside"));
  c.axes = {-3};
  CHECK(has(load_error(reduce_model(c)), "outside"));
  c.axes = {1};
  c.out_shape = {2, 1};  // keep_dims is false
  CHECK(has(load_error(reduce_model(c)), "keep_dims"));
  c.out_shape = {3};
  CHECK(has(load_error(reduce_model(c)), "expected [2]"));
  ReduceCase big{tw::Op::sum, DType::int16, {1, 40000}, {1}, {1}, false, q(1.0f, 0), q(1.0f, 0)};
  CHECK(has(load_error(reduce_model(big)), "overflow"));
  ReduceCase b{tw::Op::sum, DType::float32, {2, 3}, {2}, {1}, false, std::nullopt, std::nullopt};
  b.type = DType::int64;
  CHECK(has(load_error(reduce_model(b)), "supported"));
}

// ---------------------------------------------------------------------------------------------------------------
// ARG_MAX / ARG_MIN

struct ArgCase {
  bool is_max = true;
  DType in_type = DType::uint8;
  std::vector<int32_t> in_shape, out_shape;
  DType out_type = DType::int64, option_type = DType::int64;
  int64_t axis = -1;
  DType axis_type = DType::int32;
  bool axis_constant = true;
};

Bytes arg_model(const ArgCase& c) {
  tw::ModelBuilder b;
  const OptQuant quant = c.in_type == DType::float32 || c.in_type == DType::int32 ? OptQuant{} : OptQuant{q(0.1f, 0)};
  const int32_t in = tensor(b, "x", c.in_type, c.in_shape, quant);
  int32_t axis;
  if (!c.axis_constant) axis = plain_tensor(b, "axis", DType::int32, {1});
  else if (c.axis_type == DType::int64) axis = b.add_constant<int64_t>("axis", DType::int64, {1}, {c.axis});
  else axis = b.add_constant<int32_t>("axis", DType::int32, {}, {static_cast<int32_t>(c.axis)});
  const int32_t out = plain_tensor(b, "y", c.out_type, c.out_shape);
  if (c.is_max) b.add_operator(tw::Op::arg_max, {in, axis}, {out}, ec::ArgMaxOptions{c.option_type});
  else b.add_operator(tw::Op::arg_min, {in, axis}, {out}, ec::ArgMinOptions{c.option_type});
  b.set_inputs(c.axis_constant ? std::vector<int32_t>{in} : std::vector<int32_t>{in, axis});
  b.set_outputs({out});
  return b.finish("arg");
}

TEST_CASE("ARG_MAX / ARG_MIN: DeepLab-style channel axis, ties, negative and int64 axes") {
  // Four pixels of four classes; equal values: the first index wins.
  const std::vector<uint8_t> x = {1, 5, 5, 2, 9, 9, 9, 9, 0, 3, 7, 7, 4, 2, 2, 8};
  ArgCase c{true, DType::uint8, {1, 2, 2, 4}, {1, 2, 2}, DType::int64, DType::int64, -1};
  CHECK(values_of<int64_t>(run_everywhere(arg_model(c), {bytes_of(x)})[0]) == std::vector<int64_t>{1, 0, 2, 3});
  c.axis = 3;
  c.axis_type = DType::int64;
  CHECK(values_of<int64_t>(run_everywhere(arg_model(c), {bytes_of(x)})[0]) == std::vector<int64_t>{1, 0, 2, 3});
  c.is_max = false;
  CHECK(values_of<int64_t>(run_everywhere(arg_model(c), {bytes_of(x)})[0]) == std::vector<int64_t>{0, 0, 0, 1});
  // Along the height (axis 1 = -3): compares (pixel 0, pixel 2) and (pixel 1, pixel 3) per channel.
  c.is_max = true;
  c.axis = -3;
  c.axis_type = DType::int32;
  c.out_shape = {1, 2, 4};
  CHECK(values_of<int64_t>(run_everywhere(arg_model(c), {bytes_of(x)})[0]) ==
        std::vector<int64_t>{0, 0, 1, 1, 0, 0, 0, 0});
  c.is_max = false;
  CHECK(values_of<int64_t>(run_everywhere(arg_model(c), {bytes_of(x)})[0]) ==
        std::vector<int64_t>{1, 1, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("ARG_MAX / ARG_MIN: int8 -> int32 (MoveNet), int16, int32, float32, random against plain loops") {
  ArgCase c{true, DType::int8, {2, 5}, {2}, DType::int32, DType::int32, 1};
  const std::vector<int8_t> x = {-128, -3, -3, -128, -4, 127, 127, -128, 0, 127};
  CHECK(values_of<int32_t>(run_everywhere(arg_model(c), {bytes_of(x)})[0]) == std::vector<int32_t>{1, 0});
  c.is_max = false;
  CHECK(values_of<int32_t>(run_everywhere(arg_model(c), {bytes_of(x)})[0]) == std::vector<int32_t>{0, 2});
  c.in_type = DType::int16;
  c.is_max = true;
  CHECK(run1<int32_t>(arg_model(c), std::vector<int16_t>{-1, 300, -300, 300, 0, 5, 4, 3, 2, 6}) ==
        std::vector<int32_t>{1, 4});
  c.in_type = DType::int32;
  c.out_type = c.option_type = DType::int64;
  CHECK(run1<int64_t>(arg_model(c), std::vector<int32_t>{-7, -7, -8, -9, -7, 1, 2, 3, 4, 100000}) ==
        std::vector<int64_t>{0, 4});
  // float32: a leading NaN is never replaced, a later NaN never replaces (TFLite Micro's plain comparisons).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  c.in_type = DType::float32;
  CHECK(run1<int64_t>(arg_model(c), std::vector<float>{nan, 1, 5, 2, 3, 1, nan, 7, -1, 7}) ==
        std::vector<int64_t>{0, 2});
  c.is_max = false;
  CHECK(run1<int64_t>(arg_model(c), std::vector<float>{0.5f, -0.25f, -0.25f, 3, -1, 1, nan, 7, -1, 7}) ==
        std::vector<int64_t>{4, 3});

  // Random 3-D over each axis.
  const std::vector<int8_t> r = random_values<int8_t>(3 * 4 * 5, -4, 4, 71);  // many ties
  const int dims[3] = {3, 4, 5};
  for (int axis = 0; axis < 3; ++axis)
    for (bool is_max : {true, false}) {
      ArgCase a{is_max, DType::int8, {3, 4, 5}, {}, DType::int32, DType::int32, axis - 3};
      for (int d = 0; d < 3; ++d)
        if (d != axis) a.out_shape.push_back(dims[d]);
      std::vector<int32_t> want;
      int idx[3];
      for (idx[0] = 0; idx[0] < (axis == 0 ? 1 : 3); ++idx[0])
        for (idx[1] = 0; idx[1] < (axis == 1 ? 1 : 4); ++idx[1])
          for (idx[2] = 0; idx[2] < (axis == 2 ? 1 : 5); ++idx[2]) {
            int best = 0;
            int k[3] = {idx[0], idx[1], idx[2]};
            auto value = [&](int i) {
              k[axis] = i;
              return r[static_cast<size_t>((k[0] * 4 + k[1]) * 5 + k[2])];
            };
            for (int i = 1; i < dims[axis]; ++i)
              if (is_max ? value(i) > value(best) : value(i) < value(best)) best = i;
            want.push_back(best);
          }
      CHECK(values_of<int32_t>(run_everywhere(arg_model(a), {bytes_of(r)})[0]) == want);
    }
}

TEST_CASE("ARG_MAX / ARG_MIN refusals") {
  ArgCase c{true, DType::uint8, {1, 2, 2, 4}, {1, 2, 2}, DType::int64, DType::int32, -1};
  CHECK(has(load_error(arg_model(c)), "options ask for"));
  c.option_type = DType::int64;
  c.axis = 4;
  CHECK(has(load_error(arg_model(c)), "outside"));
  c.axis = -5;
  CHECK(has(load_error(arg_model(c)), "outside"));
  c.axis = 3;
  c.out_shape = {1, 2, 2, 1};
  CHECK(has(load_error(arg_model(c)), "without dimension"));
  c.out_shape = {1, 2, 2};
  c.axis_constant = false;
  CHECK(has(load_error(arg_model(c)), "constant"));
  c.axis_constant = true;
  c.out_type = c.option_type = DType::int16;
  CHECK(has(load_error(arg_model(c)), "supported"));
}

// ---------------------------------------------------------------------------------------------------------------
// L2_NORMALIZATION

Bytes l2_model(DType type, std::vector<int32_t> shape, OptQuant in_quant, OptQuant out_quant,
               tw::Activation act = tw::Activation::none) {
  tw::ModelBuilder b;
  const int32_t in = tensor(b, "x", type, shape, in_quant);
  const int32_t out = tensor(b, "y", type, shape, out_quant);
  b.add_operator(tw::Op::l2_normalization, {in}, {out}, ec::L2NormOptions{act});
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("l2norm");
}

TEST_CASE("L2_NORMALIZATION float32") {
  // (3, 4) / 5; a zero row stays zero (the norm is floored at 1e-6); (1e-7, 0) / 1e-6 = (0.1, 0).
  const std::vector<float> x = {3, 4, 0, 0, 1e-7f, 0};
  const auto got = values_of<float>(run_everywhere(l2_model(DType::float32, {3, 2}, {}, {}), {bytes_of(x)})[0]);
  CHECK(got == std::vector<float>{3.0f / 5.0f, 4.0f / 5.0f, 0, 0, 1e-7f / 1e-6f, 0});
  const std::vector<float> r = random_floats(4 * 7, -3.0f, 3.0f, 81);
  const auto gr = values_of<float>(run_everywhere(l2_model(DType::float32, {1, 2, 2, 7}, {}, {}), {bytes_of(r)})[0]);
  for (int row = 0; row < 4; ++row) {
    double s = 0;
    for (int c = 0; c < 7; ++c) s += double{r[static_cast<size_t>(row * 7 + c)]} * r[static_cast<size_t>(row * 7 + c)];
    for (int c = 0; c < 7; ++c)
      CHECK(gr[static_cast<size_t>(row * 7 + c)] ==
            doctest::Approx(r[static_cast<size_t>(row * 7 + c)] / std::sqrt(s)).epsilon(1e-5));
  }
}

TEST_CASE("L2_NORMALIZATION int8 / uint8 (fixed-point inverse square root)") {
  // 128 * (3, 4) / 5 = (76.8, 102.4) -> (77, 102); a single 1 -> 128 -> clamped 127; -1 -> -128; zeros stay 0.
  const std::vector<int8_t> x = {3, 4, 1, 0, -1, 0, 0, 0};
  CHECK(values_of<int8_t>(run_everywhere(l2_model(DType::int8, {4, 2}, q(0.1f, 0), q(1.0f / 128, 0)),
                                         {bytes_of(x)})[0]) == std::vector<int8_t>{77, 102, 127, 0, -128, 0, 0, 0});
  // uint8 around zero point 128: differences (3, -4) -> 128 + (77, -102).
  const std::vector<uint8_t> u = {131, 124, 128, 128};
  CHECK(values_of<uint8_t>(run_everywhere(l2_model(DType::uint8, {2, 2}, q(0.1f, 128), q(1.0f / 128, 128)),
                                          {bytes_of(u)})[0]) == std::vector<uint8_t>{205, 26, 128, 128});
  // TFLite Micro's own test vector (input scale 4/255, zero point -1): (-70, 38, 45, 77, -45, 6) has norm 127.9, so
  // the outputs are the differences themselves; a row at the zero point gives zeros.
  const std::vector<int8_t> tflm = {-71, 37, 44, 76, -46, 5, -1, -1, -1, -1, -1, -1};
  CHECK(values_of<int8_t>(run_everywhere(l2_model(DType::int8, {2, 6}, q(4.0f / 255, -1), q(1.0f / 128, 0)),
                                         {bytes_of(tflm)})[0]) ==
        std::vector<int8_t>{-70, 38, 45, 77, -45, 6, 0, 0, 0, 0, 0, 0});
  // A sum of squares of 4 * 128^2 = 2^16 (exact inverse square root 2^-8): 128 * -128 / 256 = -64 exactly.
  CHECK(values_of<int8_t>(run_everywhere(l2_model(DType::int8, {1, 4}, q(0.1f, 0), q(1.0f / 128, 0)),
                                         {bytes_of(std::vector<int8_t>(4, -128))})[0]) == std::vector<int8_t>(4, -64));
  CHECK(values_of<uint8_t>(run_everywhere(l2_model(DType::uint8, {1, 4}, q(0.1f, 128), q(1.0f / 128, 128)),
                                          {bytes_of(std::vector<uint8_t>(4, 0))})[0]) == std::vector<uint8_t>(4, 64));
  // Random rows (int8 with a zero point, uint8; depths up to 1000) against 128 * d / |d| in double. TFLite's
  // integer kernels round twice (a doubling high multiply, then a rounding shift) with a multiplier of few
  // significant bits once the sum of squares is large, so the results lie within one step of the real value, not
  // always at its nearest integer.
  uint32_t seed = 90;
  for (DType type : {DType::int8, DType::uint8})
    for (int depth : {1, 2, 5, 64, 1000}) {
      const int rows = 6;
      const int32_t zp = type == DType::int8 ? -7 : 131;
      const int lo = type == DType::int8 ? -128 : 0, hi = type == DType::int8 ? 127 : 255;
      const auto values = random_values<int>(static_cast<size_t>(rows * depth), lo, hi, ++seed);
      Bytes in_bytes;
      for (int v : values) in_bytes.push_back(static_cast<uint8_t>(v));
      const Bytes model = l2_model(type, {rows, depth}, q(0.05f, zp), q(1.0f / 128, type == DType::int8 ? 0 : 128));
      const Bytes got = run_everywhere(model, {in_bytes})[0];
      for (int r = 0; r < rows; ++r) {
        double s = 0;
        for (int c = 0; c < depth; ++c) s += std::pow(values[static_cast<size_t>(r * depth + c)] - zp, 2);
        for (int c = 0; c < depth; ++c) {
          const size_t i = static_cast<size_t>(r * depth + c);
          // A sum of squares of 0 or 1 uses the multiplier "1" (TFLite's special case).
          const double real = s > 1 ? 128.0 * (values[i] - zp) / std::sqrt(s) : 128.0 * (values[i] - zp);
          const int out = type == DType::int8 ? int{static_cast<int8_t>(got[i])} : int{got[i]} - 128;
          CHECK(std::abs(out - std::clamp(real, -128.0, 127.0)) <= 1.0);
        }
      }
    }
}

TEST_CASE("L2_NORMALIZATION refusals") {
  CHECK(has(load_error(l2_model(DType::int8, {2, 2}, q(0.1f, 0), q(1.0f / 64, 0))), "1/128"));
  CHECK(has(load_error(l2_model(DType::uint8, {2, 2}, q(0.1f, 128), q(1.0f / 128, 0))), "1/128"));
  CHECK(has(load_error(l2_model(DType::float32, {2, 2}, {}, {}, tw::Activation::relu)), "activation"));
  CHECK(has(load_error(l2_model(DType::float32, {1, 1, 1, 2, 2}, {}, {})), "rank"));
  CHECK(has(load_error(l2_model(DType::int16, {2, 2}, q(0.1f, 0), q(1.0f / 128, 0))), "supported"));
}

// ---------------------------------------------------------------------------------------------------------------
// SOFTMAX float32

Bytes softmax_model(std::vector<int32_t> shape, float beta) {
  tw::ModelBuilder b;
  const int32_t in = plain_tensor(b, "x", DType::float32, shape);
  const int32_t out = plain_tensor(b, "y", DType::float32, shape);
  b.add_operator(tw::Op::softmax, {in}, {out}, tw::Softmax{beta});
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("softmax");
}

TEST_CASE("SOFTMAX float32") {
  // Equal inputs: exp(0) = 1 each, divided by the row count, exactly.
  CHECK(run1<float>(softmax_model({2, 4}, 1.0f), std::vector<float>{3, 3, 3, 3, -1, -1, -1, -1}) ==
        std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f});
  // beta 0: every class equal whatever the input.
  CHECK(values_of<float>(run_everywhere(softmax_model({1, 2}, 0.0f), {bytes_of(std::vector<float>{-100, 100})})[0]) ==
        std::vector<float>{0.5f, 0.5f});
  // Large inputs do not overflow (the row maximum is subtracted first).
  const auto big = run1<float>(softmax_model({1, 2}, 1.0f), std::vector<float>{1000, 1000});
  CHECK(big == std::vector<float>{0.5f, 0.5f});
  // Random rows with beta, against double arithmetic.
  for (float beta : {1.0f, 0.5f, 2.5f}) {
    const std::vector<float> x = random_floats(3 * 10, -6.0f, 6.0f, static_cast<uint32_t>(beta * 10));
    const auto got = values_of<float>(run_everywhere(softmax_model({3, 10}, beta), {bytes_of(x)})[0]);
    for (int r = 0; r < 3; ++r) {
      double mx = -1e30, sum = 0;
      for (int c = 0; c < 10; ++c) mx = std::max(mx, double{x[static_cast<size_t>(r * 10 + c)]});
      for (int c = 0; c < 10; ++c) sum += std::exp((x[static_cast<size_t>(r * 10 + c)] - mx) * beta);
      for (int c = 0; c < 10; ++c)
        CHECK(got[static_cast<size_t>(r * 10 + c)] ==
              doctest::Approx(std::exp((x[static_cast<size_t>(r * 10 + c)] - mx) * beta) / sum).epsilon(1e-5));
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Optimised kernels (kernels/opt/pool_2d.cpp, resize.cpp) against the reference kernels, called directly: randomized
// MAX_POOL_2D and RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR cases of every type, byte for byte, at every SIMD level
// of this processor on 1 and 3 threads (the pool hands out even the smallest operator). Every buffer is its own
// exact-size heap allocation, so AddressSanitizer sees any access outside it. Each case also checks that the
// optimised path is the one that runs (no fallback to the reference kernel).

#include "optimized_backend.hpp"

namespace {

using namespace aisrv;
using namespace aisrv::engine::cpu;

struct OptRng {
  std::mt19937 g;
  explicit OptRng(uint32_t seed) : g(seed) {}
  int32_t uniform(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(g); }
  bool chance(double p) { return std::bernoulli_distribution(p)(g); }
};

// The optimised backends to compare: every level on 1 thread and on 3 threads (an odd split of the rows).
std::vector<std::unique_ptr<KernelBackend>> opt_backends() {
  std::vector<std::unique_ptr<KernelBackend>> v;
  for (SimdLevel level : available_simd_levels())
    for (size_t threads : {size_t{1}, size_t{3}})
      v.push_back(std::make_unique<OptimizedKernelBackend>(level, threads, /*min_parallel_work=*/0));
  return v;
}

// Runs `p` (its input already set) on `b` with an exact-size output and scratch; returns the output bytes.
template <typename P>
std::vector<uint8_t> run_direct(KernelBackend& b, P p, size_t out_bytes) {
  std::vector<uint8_t> out(out_bytes, 0xA5);
  std::vector<uint8_t> scratch(b.scratch_bytes(OpParams{p}));
  p.output = out.data();
  p.scratch = std::span<uint8_t>(scratch);
  REQUIRE(run_kernel(b, OpParams{p}).ok());
  return out;
}

size_t type_size(DType t) { return t == DType::int8 || t == DType::uint8 ? 1 : t == DType::int16 ? 2 : 4; }

// Which non-finite float32 values random inputs contain. Resizing does arithmetic on its inputs: where two NaNs of
// different payloads meet, which one an addition returns depends on the compiler's operand order, so its tests
// leave NaNs out (an infinity times a zero weight gives the one default NaN everywhere).
enum class Specials { none, infinities, infinities_and_nans };

// Random input bytes of a type: integers over the whole range (extremes often), float32 values with ties, signed
// zeros, large magnitudes and the `specials`.
std::vector<uint8_t> random_input(OptRng& r, DType type, int64_t count, Specials specials) {
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * type_size(type));
  auto put = [&](int64_t i, auto v) { std::memcpy(bytes.data() + i * static_cast<int64_t>(sizeof v), &v, sizeof v); };
  for (int64_t i = 0; i < count; ++i) {
    switch (type) {
      case DType::int8:
        put(i, static_cast<int8_t>(r.chance(0.1) ? (r.chance(0.5) ? -128 : 127) : r.uniform(-128, 127)));
        break;
      case DType::uint8:
        put(i, static_cast<uint8_t>(r.chance(0.1) ? (r.chance(0.5) ? 0 : 255) : r.uniform(0, 255)));
        break;
      case DType::int16:
        put(i, static_cast<int16_t>(r.chance(0.1) ? (r.chance(0.5) ? -32768 : 32767) : r.uniform(-32768, 32767)));
        break;
      default: {
        float v = static_cast<float>(r.uniform(-1000, 1000)) / 8.0f;  // many exact ties
        const int32_t kind = r.uniform(0, 19);
        if (kind == 0) v = 0.0f;
        else if (kind == 1) v = -0.0f;
        else if (kind == 2) v = (r.chance(0.5) ? 1.0f : -1.0f) * 3.0e37f;
        else if (kind == 3) v = static_cast<float>(r.uniform(-1000000, 1000000)) * 1.0e-7f;
        else if (kind == 4 && specials != Specials::none)
          v = r.chance(0.5) ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
        else if (kind == 5 && specials == Specials::infinities_and_nans)
          v = r.chance(0.5) ? std::numeric_limits<float>::quiet_NaN() : -std::numeric_limits<float>::quiet_NaN();
        put(i, v);
      }
    }
  }
  return bytes;
}

// Compares the reference kernel with every optimised backend on `p` (input set, output size `out_bytes`).
template <typename P>
void check_against_reference(const P& p, size_t out_bytes, const std::string& what) {
  ReferenceKernelBackend ref;
  const std::vector<uint8_t> want = run_direct(ref, p, out_bytes);
  for (const auto& b : opt_backends()) {
    const std::vector<uint8_t> got = run_direct(*b, p, out_bytes);
    size_t first = 0;
    while (first < want.size() && got[first] == want[first]) ++first;
    CHECK_MESSAGE(first == want.size(), what << " on " << b->description() << ": first difference at byte " << first);
  }
}

// ----- MAX_POOL_2D

struct MaxPoolCase {
  Pool2DParams p;
  std::string what;
};

MaxPoolCase random_max_pool(OptRng& r, DType type) {
  MaxPoolCase c;
  Pool2DParams& p = c.p;
  p.kind = PoolKind::max;
  p.dtype = type;
  static constexpr int32_t kChannels[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 21, 31, 32, 33, 63, 64, 65, 67};
  const int32_t channels = r.chance(0.7) ? kChannels[r.uniform(0, 17)] : r.uniform(1, 67);
  const int32_t n = r.chance(0.8) ? 1 : 2;
  const int32_t h = r.uniform(1, 12), w = r.uniform(1, 12);
  p.filter_h = r.uniform(1, 6);
  p.filter_w = r.uniform(1, 6);
  p.stride_h = r.uniform(1, 3);
  p.stride_w = r.chance(0.5) ? 1 : r.uniform(1, 3);
  int32_t oh = 0, ow = 0;
  const int32_t mode = r.uniform(0, 2);
  if (mode == 0) {  // SAME, as TFLite computes it
    oh = (h + p.stride_h - 1) / p.stride_h;
    ow = (w + p.stride_w - 1) / p.stride_w;
    p.padding.top = std::max((oh - 1) * p.stride_h + p.filter_h - h, 0) / 2;
    p.padding.left = std::max((ow - 1) * p.stride_w + p.filter_w - w, 0) / 2;
  } else if (mode == 1 && p.filter_h <= h && p.filter_w <= w) {  // VALID
    oh = (h - p.filter_h) / p.stride_h + 1;
    ow = (w - p.filter_w) / p.stride_w + 1;
  } else {  // any geometry the kernels accept: windows may hang over every border, or lie wholly outside
    oh = r.uniform(1, 12);
    ow = r.uniform(1, 12);
    p.padding.top = r.uniform(0, p.filter_h + 1);
    p.padding.left = r.uniform(0, p.filter_w + 1);
  }
  p.input_shape = Dims4{n, h, w, channels};
  p.output_shape = Dims4{n, oh, ow, channels};
  if (type == DType::float32) {
    static constexpr float kRanges[][2] = {{std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max()},
                                           {0.0f, std::numeric_limits<float>::max()},
                                           {0.0f, 6.0f},
                                           {-1.0f, 1.0f}};
    const int32_t k = r.uniform(0, 3);
    p.float_act_min = kRanges[k][0];
    p.float_act_max = kRanges[k][1];
  } else {
    const int32_t lowest = type == DType::int8 ? -128 : type == DType::uint8 ? 0 : -32768;
    const int32_t highest = type == DType::int8 ? 127 : type == DType::uint8 ? 255 : 32767;
    p.act_min = lowest;
    p.act_max = highest;
    if (r.chance(0.4)) {
      p.act_min = r.uniform(lowest, highest);
      p.act_max = r.uniform(p.act_min, highest);
    }
  }
  c.what = "MAX_POOL_2D " + std::string(protocol::dtype_name(type)) + " " + std::to_string(n) + "x" +
           std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(channels) + " filter " +
           std::to_string(p.filter_h) + "x" + std::to_string(p.filter_w) + " stride " + std::to_string(p.stride_h) +
           "x" + std::to_string(p.stride_w) + " padding " + std::to_string(p.padding.top) + "," +
           std::to_string(p.padding.left) + " output " + std::to_string(oh) + "x" + std::to_string(ow);
  return c;
}

void check_max_pool(MaxPoolCase c, OptRng& r, Specials specials = Specials::infinities_and_nans) {
  const std::vector<uint8_t> input = random_input(r, c.p.dtype, c.p.input_shape.elements(), specials);
  c.p.input = input.data();
  CHECK_MESSAGE(opt::max_pool_fast_path(c.p), c.what);
  check_against_reference(c.p, static_cast<size_t>(c.p.output_shape.elements()) * type_size(c.p.dtype), c.what);
}

TEST_CASE("optimised MAX_POOL_2D equals the reference: random geometries, every type, level and thread count") {
  OptRng r(20261127);
  int cases = 0;
  for (DType type : {DType::int8, DType::uint8, DType::int16, DType::float32})
    for (int i = 0; i < 150; ++i, ++cases) check_max_pool(random_max_pool(r, type), r);
  CHECK(cases == 600);
}

TEST_CASE("optimised MAX_POOL_2D: YOLOv8's SPPF block, long rows and float NaN / signed-zero order") {
  OptRng r(7);
  auto sppf = [](DType type, int32_t h, int32_t w, int32_t c) {
    MaxPoolCase k;
    k.p.kind = PoolKind::max;
    k.p.dtype = type;
    k.p.input_shape = k.p.output_shape = Dims4{1, h, w, c};
    k.p.filter_h = k.p.filter_w = 5;
    k.p.padding.top = k.p.padding.left = 2;
    k.p.act_min = type == DType::int8 ? -128 : type == DType::uint8 ? 0 : -32768;
    k.p.act_max = type == DType::int8 ? 127 : type == DType::uint8 ? 255 : 32767;
    k.p.float_act_min = std::numeric_limits<float>::lowest();
    k.p.float_act_max = std::numeric_limits<float>::max();
    k.what = "SPPF " + std::string(protocol::dtype_name(type)) + " " + std::to_string(h) + "x" + std::to_string(w) +
             "x" + std::to_string(c);
    return k;
  };
  for (DType type : {DType::int8, DType::uint8, DType::int16, DType::float32}) {
    check_max_pool(sppf(type, 20, 20, 128), r);  // YOLOv8n at 640x640
    check_max_pool(sppf(type, 13, 29, 1), r);    // one channel: the row run is vectorised across pixels
    check_max_pool(sppf(type, 3, 70, 9), r);     // runs of many blocks with a partial tail
  }
  // Float order: all-equal windows of +0 and -0 (the first in row-major order wins), NaN never kept, all -inf
  // windows give the lowest float (the fold's start value).
  constexpr float kInfinity = std::numeric_limits<float>::infinity();
  for (const float fill : {0.0f, -0.0f, -kInfinity, std::numeric_limits<float>::quiet_NaN()}) {
    MaxPoolCase k = sppf(DType::float32, 6, 7, 9);
    std::vector<float> values(6 * 7 * 9, fill);
    for (size_t i = 0; i < values.size(); i += 5) values[i] = i % 2 ? -0.0f : 0.0f;
    k.p.input = values.data();
    CHECK(opt::max_pool_fast_path(k.p));
    check_against_reference(k.p, values.size() * 4, k.what + " special fill");
  }
}

TEST_CASE("optimised L2_POOL_2D runs the reference kernel") {
  MaxPoolCase c;
  c.p.kind = PoolKind::l2;
  c.p.dtype = DType::float32;
  c.p.input_shape = c.p.output_shape = Dims4{1, 4, 4, 3};
  c.p.filter_h = c.p.filter_w = 2;
  c.p.float_act_min = std::numeric_limits<float>::lowest();
  c.p.float_act_max = std::numeric_limits<float>::max();
  CHECK_FALSE(opt::max_pool_fast_path(c.p));
  OptRng r(3);
  const std::vector<uint8_t> input = random_input(r, DType::float32, 48, Specials::infinities_and_nans);
  c.p.input = input.data();
  check_against_reference(c.p, 48 * 4, "L2_POOL_2D");
}

// ----- RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR

// Whether the reference (TFLite Micro's integer arithmetic) stays inside the input for this resize along one axis;
// preparation refuses the others. The last output index has the largest position.
bool integer_resize_in_range(int32_t in, int32_t out, bool align, bool half) {
  const int64_t scale = align && out > 1 ? (1024 * int64_t{in - 1} + (out - 1) / 2) / (out - 1)
                                         : (1024 * int64_t{in} + out / 2) / out;
  const int64_t position = half ? (out - 1) * scale + scale / 2 - 512 : (out - 1) * scale;
  return position / 1024 < in;
}

struct ResizeKernelCase {
  ResizeParams p;
  std::string what;
};

ResizeKernelCase resize_kernel_case(bool bilinear, DType type, Dims4 in, int32_t oh, int32_t ow, bool align,
                                    bool half) {
  ResizeKernelCase c;
  c.p.bilinear = bilinear;
  c.p.dtype = type;
  c.p.align_corners = align;
  c.p.half_pixel_centers = half;
  c.p.input_shape = in;
  c.p.output_shape = Dims4{in.n, oh, ow, in.c};
  c.what = std::string(bilinear ? "RESIZE_BILINEAR " : "RESIZE_NEAREST_NEIGHBOR ") +
           std::string(protocol::dtype_name(type)) + " " + std::to_string(in.n) + "x" + std::to_string(in.h) + "x" +
           std::to_string(in.w) + "x" + std::to_string(in.c) + " -> " + std::to_string(oh) + "x" + std::to_string(ow) +
           (align ? " align_corners" : "") + (half ? " half_pixel_centers" : "");
  return c;
}

void check_resize(ResizeKernelCase c, OptRng& r, bool fast = true) {
  const std::vector<uint8_t> input = random_input(r, c.p.dtype, c.p.input_shape.elements(), Specials::infinities);
  c.p.input = input.data();
  CHECK_MESSAGE(opt::resize_fast_path(c.p) == fast, c.what);
  check_against_reference(c.p, static_cast<size_t>(c.p.output_shape.elements()) * type_size(c.p.dtype), c.what);
}

TEST_CASE("optimised RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR equal the reference: random, every type and flag") {
  OptRng r(1127);
  int cases = 0;
  static constexpr int32_t kChannels[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 21, 24, 31, 32, 33, 64, 67};
  for (bool bilinear : {true, false})
    for (DType type : {DType::int8, DType::uint8, DType::int16, DType::float32})
      for (int flags = 0; flags < 4; ++flags) {
        const bool align = flags & 1, half = flags & 2;
        if (bilinear && align && half) continue;  // refused at load, as TFLite does
        for (int i = 0; i < 25; ++i) {
          const int32_t channels = r.chance(0.7) ? kChannels[r.uniform(0, 17)] : r.uniform(1, 67);
          const Dims4 in{r.chance(0.8) ? 1 : 2, r.uniform(1, 9), r.uniform(1, 9), channels};
          // Up- and downscaling, by integer and fractional factors, and the same size.
          auto size = [&](int32_t from) {
            const int32_t k = r.uniform(0, 3);
            return k == 0 ? from * r.uniform(1, 4) : k == 1 ? r.uniform(1, from) : r.uniform(1, 20);
          };
          const int32_t oh = size(in.h), ow = size(in.w);
          const bool integer = bilinear && (type == DType::int8 || type == DType::int16);
          if (integer && (!integer_resize_in_range(in.h, oh, align, half) ||
                          !integer_resize_in_range(in.w, ow, align, half)))
            continue;
          check_resize(resize_kernel_case(bilinear, type, in, oh, ow, align, half), r);
          ++cases;
        }
      }
  CHECK(cases > 500);
}

TEST_CASE("optimised resize: the models' shapes, chunked column tables, repeated rows and the fallback") {
  OptRng r(42);
  // DeepLab v3: 1x1 -> 33x33 (every row and column the same) and the final 65x65x21 -> 513x513x21 upscale, uint8
  // with align_corners; MoveNet's int8 half-pixel upsampling; YOLOv8's and the SSD's 2x nearest upsampling.
  check_resize(resize_kernel_case(true, DType::uint8, {1, 1, 1, 80}, 33, 33, true, false), r);
  check_resize(resize_kernel_case(true, DType::uint8, {1, 65, 65, 21}, 513, 513, true, false), r);
  check_resize(resize_kernel_case(true, DType::int8, {1, 12, 12, 64}, 24, 24, false, true), r);
  check_resize(resize_kernel_case(true, DType::int8, {1, 24, 24, 64}, 48, 48, false, true), r);
  check_resize(resize_kernel_case(false, DType::int8, {1, 20, 20, 64}, 40, 40, false, false), r);
  check_resize(resize_kernel_case(false, DType::uint8, {1, 10, 10, 128}, 19, 19, false, false), r);
  // Wider than one column table (512 columns), every type.
  for (DType type : {DType::int8, DType::uint8, DType::int16, DType::float32}) {
    check_resize(resize_kernel_case(true, type, {1, 2, 300, 3}, 3, 1100, false, true), r);
    check_resize(resize_kernel_case(true, type, {1, 3, 700, 2}, 2, 600, true, false), r);
    check_resize(resize_kernel_case(false, type, {2, 2, 5, 3}, 5, 1030, false, false), r);
  }
  // Channel counts whose source span fills the vertical buffers after a few columns (chunks of 1..3 columns), the
  // largest the fast path takes, and one above it (reference kernel).
  for (DType type : {DType::int8, DType::uint8, DType::int16, DType::float32}) {
    check_resize(resize_kernel_case(true, type, {1, 2, 6, 1500}, 3, 7, false, true), r);
    check_resize(resize_kernel_case(true, type, {1, 2, 3, 2048}, 3, 5, true, false), r);
    check_resize(resize_kernel_case(true, type, {1, 2, 2, 2049}, 2, 3, false, false), r, /*fast=*/false);
    check_resize(resize_kernel_case(false, type, {1, 2, 2, 3000}, 3, 3, false, true), r);
  }
  // Rounding ties of the integer version: columns whose values differ by an odd amount, so that halfway columns
  // (weights 512 / 512) give exact halves of both signs; 2 channels (the channel loop) and 9 (the 8-lane blocks).
  for (DType type : {DType::int8, DType::int16})
    for (int32_t channels : {2, 9}) {
      ResizeKernelCase c = resize_kernel_case(true, type, {1, 1, 2, channels}, 1, 8, false, false);
      std::vector<int16_t> v16;
      for (int32_t ch = 0; ch < channels; ++ch) v16.push_back(static_cast<int16_t>(ch % 2 ? -3 - ch : 3 + ch));
      for (int32_t ch = 0; ch < channels; ++ch) v16.push_back(static_cast<int16_t>(ch % 2 ? 2 + ch : -2 - ch));
      const std::vector<int8_t> v8(v16.begin(), v16.end());
      c.p.input = type == DType::int8 ? static_cast<const void*>(v8.data()) : static_cast<const void*>(v16.data());
      CHECK(opt::resize_fast_path(c.p));
      check_against_reference(c.p, static_cast<size_t>(8 * channels) * type_size(type), c.what + " ties");
    }
}

}  // namespace
