// aisrv tests — CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED on float32 models and dynamic-range ones (int8
// weights, float32 activations: TensorFlow Lite's hybrid kernels), and TRANSPOSE_CONV (int8, uint8, float32), each
// through the whole engine on every backend (run_everywhere: ref, opt at every SIMD level on 1 and 3 threads, verify
// mode). Expected values come from hand-computed tables and from test-side re-derivations of the reference
// arithmetic: float sums in the reference kernels' order, TFLite's per-batch input quantization (symmetric and
// asymmetric) with its float formulas, and a gather form of the transpose convolution's scatter. The last section
// runs the optimised backend's float32 convolution paths and its TRANSPOSE_CONV (int8, uint8, float32) against the
// reference on randomized kernel parameters, at every SIMD level on 1 and 3 threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "float_kernels.hpp"
#include "op_test_util.hpp"
#include "optimized_backend.hpp"

namespace {

using namespace aisrv;
using namespace aisrv::test;
using engine::cpu::Activation;
using engine::cpu::PaddingKind;
using engine::cpu::TransposeConvOptions;

constexpr float kLowest = std::numeric_limits<float>::lowest();
constexpr float kHighest = std::numeric_limits<float>::max();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A float product rounded on its own: the test is not built with -ffp-contract=off, and a call keeps the compiler
// from fusing it with the following addition (the engine never fuses).
[[gnu::noinline]] float mul(float a, float b) { return a * b; }

struct Dims {
  int32_t n = 1, h = 1, w = 1, c = 1;
  int64_t size() const { return int64_t{n} * h * w * c; }
  int64_t at(int32_t b, int32_t y, int32_t x, int32_t ch) const { return ((int64_t{b} * h + y) * w + x) * c + ch; }
  std::vector<int32_t> vec() const { return {n, h, w, c}; }
};

int32_t float_input(tw::ModelBuilder& b, const char* name, std::vector<int32_t> shape) {
  return plain_tensor(b, name, DType::float32, std::move(shape));
}
int32_t float_constant(tw::ModelBuilder& b, const char* name, std::vector<int32_t> shape,
                       const std::vector<float>& values) {
  return b.add_tensor(tw::TensorDef{name, DType::float32, std::move(shape), std::nullopt, tw::float_bytes(values),
                                    std::nullopt, false});
}
tw::Quant scales_quant(const std::vector<float>& scales, int32_t axis) {
  return tw::Quant{scales, std::vector<int64_t>(scales.size(), 0), axis};
}

// Bit-exact comparison of float outputs (so -0.0, infinities and NaN payloads count).
void check_floats(const Bytes& got_bytes, const std::vector<float>& want) {
  const std::vector<float> got = values_of<float>(got_bytes);
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i])) continue;
    if (bad++ < 5) FAIL_CHECK("element " << i << ": got " << got[i] << ", expected " << want[i]);
  }
  CHECK(bad == 0);
}

template <typename T>
void check_ints(const Bytes& got_bytes, const std::vector<T>& want) {
  const std::vector<T> got = values_of<T>(got_bytes);
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (bad++ < 5) FAIL_CHECK("element " << i << ": got " << int{got[i]} << ", expected " << int{want[i]});
  }
  CHECK(bad == 0);
}

std::vector<float> random_floats(std::mt19937& rng, int64_t n, float range) {
  std::uniform_real_distribution<float> dist(-range, range);
  std::uniform_int_distribution<int> zero(0, 9);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = zero(rng) == 0 ? 0.0f : dist(rng);
  return v;
}
std::vector<int8_t> random_weights(std::mt19937& rng, int64_t n) {
  std::uniform_int_distribution<int> dist(-127, 127);
  std::vector<int8_t> v(static_cast<size_t>(n));
  for (int8_t& x : v) x = static_cast<int8_t>(dist(rng));
  return v;
}
std::vector<float> random_scales(std::mt19937& rng, int32_t n) {
  std::uniform_real_distribution<float> dist(0.001f, 0.05f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// TFLite's window arithmetic (ComputeOutSize, ComputePaddingWithOffset's leading half).
struct Axis {
  int32_t out = 0, pad = 0;
};
Axis window(PaddingKind padding, int32_t in, int32_t filter, int32_t stride, int32_t dilation) {
  const int32_t effective = (filter - 1) * dilation + 1;
  Axis a;
  a.out = padding == PaddingKind::same ? (in + stride - 1) / stride : (in - effective + stride) / stride;
  a.pad = std::max(0, (a.out - 1) * stride + effective - in) / 2;
  return a;
}

// CalculateActivationRange<float>.
std::pair<float, float> float_range(Activation act) {
  switch (act) {
    case Activation::relu: return {0.0f, kHighest};
    case Activation::relu6: return {0.0f, 6.0f};
    case Activation::relu_n1_to_1: return {-1.0f, 1.0f};
    default: return {kLowest, kHighest};
  }
}
float clamp_float(float v, std::pair<float, float> r) { return std::min(std::max(v, r.first), r.second); }

// ---- TFLite's per-batch input quantization of the hybrid kernels, re-derived ----

struct Quantized {
  std::vector<int32_t> q;
  float factor = 1.0f;
  int32_t offset = 0;
};

// SymmetricQuantizeFloats: range = max |x|, factor range / 127, q = round(x * 127 / range) within +-127.
// AsymmetricQuantizeFloats: [min(0, lo), max(0, hi)] onto [-128, 127] in double, the zero point from the end with
// the smaller error, nudged into range and rounded; q = round(offset + x / factor) within [-128, 127].
Quantized tflite_quantize(const float* x, size_t n, bool asymmetric) {
  float lo = x[0], hi = x[0];
  for (size_t i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  Quantized r;
  r.q.assign(n, 0);
  if (!asymmetric) {
    const float range = std::max(std::fabs(lo), std::fabs(hi));
    if (range == 0.0f) return r;
    r.factor = range / 127.0f;
    const float inverse = 127.0f / range;
    for (size_t i = 0; i < n; ++i)
      r.q[i] = std::clamp(static_cast<int32_t>(std::lround(mul(x[i], inverse))), -127, 127);
    return r;
  }
  const double rmin = std::min(0.0f, lo), rmax = std::max(0.0f, hi);
  if (rmin == rmax) return r;
  const double scale = (rmax - rmin) / 255.0;
  const double from_min = -128.0 - rmin / scale, from_max = 127.0 - rmax / scale;
  const double zero_point =
      128.0 + std::fabs(rmin / scale) < 127.0 + std::fabs(rmax / scale) ? from_min : from_max;
  r.offset = zero_point <= -128.0 ? -128 : zero_point >= 127.0 ? 127 : static_cast<int32_t>(std::lround(zero_point));
  r.factor = static_cast<float>(scale);
  const float inverse = 1.0f / r.factor;
  for (size_t i = 0; i < n; ++i)
    r.q[i] = std::clamp(static_cast<int32_t>(std::lround(static_cast<float>(r.offset) + mul(x[i], inverse))), -128,
                        127);
  return r;
}

// ---- CONV_2D ----

struct ConvSpec {
  Dims in;
  int32_t fh = 1, fw = 1, out_c = 1, groups = 1;
  int32_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  PaddingKind padding = PaddingKind::valid;
  Activation act = Activation::none;
  bool bias = true;

  Axis ah() const { return window(padding, in.h, fh, stride_h, dil_h); }
  Axis aw() const { return window(padding, in.w, fw, stride_w, dil_w); }
  Dims out() const { return Dims{in.n, ah().out, aw().out, out_c}; }
  Dims filter() const { return Dims{out_c, fh, fw, in.c / groups}; }
  tw::Conv2D options() const { return tw::Conv2D{padding, stride_w, stride_h, act, dil_w, dil_h}; }
};

// One CONV_2D with a float32 input; the filter is either float32 or int8 with `scales` along dimension 0.
Bytes conv_model(const ConvSpec& s, const std::vector<float>& wf, const std::vector<int8_t>& wq,
                 const std::vector<float>& scales, const std::vector<float>& bias) {
  tw::ModelBuilder b;
  const int32_t in = float_input(b, "x", s.in.vec());
  const int32_t w = wq.empty()
                        ? float_constant(b, "w", s.filter().vec(), wf)
                        : b.add_constant<int8_t>("w", DType::int8, s.filter().vec(), wq, scales_quant(scales, 0));
  const int32_t bi = s.bias ? float_constant(b, "b", {s.out_c}, bias) : -1;
  const int32_t out = float_input(b, "y", s.out().vec());
  b.add_operator(tw::Op::conv_2d, {in, w, bi}, {out}, s.options());
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("conv");
}

// The window loops of reference_ops::Conv, calling tap(input index, filter index) for each tap inside the input in
// its order, then done(output index, channel).
template <typename Tap, typename Done>
void conv_loops(const ConvSpec& s, const Tap& tap, const Done& done) {
  const Dims in = s.in, f = s.filter(), out = s.out();
  const int32_t per_group = s.out_c / s.groups;
  for (int32_t b = 0; b < out.n; ++b)
    for (int32_t oy = 0; oy < out.h; ++oy)
      for (int32_t ox = 0; ox < out.w; ++ox)
        for (int32_t oc = 0; oc < out.c; ++oc) {
          for (int32_t fy = 0; fy < f.h; ++fy)
            for (int32_t fx = 0; fx < f.w; ++fx) {
              const int32_t iy = oy * s.stride_h - s.ah().pad + fy * s.dil_h;
              const int32_t ix = ox * s.stride_w - s.aw().pad + fx * s.dil_w;
              if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
              for (int32_t ic = 0; ic < f.c; ++ic)
                tap(in.at(b, iy, ix, oc / per_group * f.c + ic), f.at(oc, fy, fx, ic));
            }
          done(out.at(b, oy, ox, oc), oc);
        }
}

std::vector<float> conv_float_expected(const ConvSpec& s, const std::vector<float>& x, const std::vector<float>& w,
                                       const std::vector<float>& bias) {
  std::vector<float> y(static_cast<size_t>(s.out().size()));
  float total = 0.0f;
  conv_loops(
      s, [&](int64_t i, int64_t f) { total = total + mul(x[static_cast<size_t>(i)], w[static_cast<size_t>(f)]); },
      [&](int64_t o, int32_t oc) {
        const float b = s.bias ? bias[static_cast<size_t>(oc)] : 0.0f;
        y[static_cast<size_t>(o)] = clamp_float(total + b, float_range(s.act));
        total = 0.0f;
      });
  return y;
}

// TFLite's hybrid CONV_2D: one scale -> symmetric inputs, output 0 + acc * (factor * scale) + bias; per-channel
// scales -> asymmetric inputs, acc * channel scale * factor + bias.
std::vector<float> conv_hybrid_expected(const ConvSpec& s, const std::vector<float>& x, const std::vector<int8_t>& w,
                                        const std::vector<float>& scales, const std::vector<float>& bias) {
  const bool per_channel = scales.size() > 1;
  const auto batch = static_cast<size_t>(s.in.h * s.in.w * s.in.c);
  std::vector<Quantized> qs;
  for (int32_t b = 0; b < s.in.n; ++b) qs.push_back(tflite_quantize(&x[b * batch], batch, per_channel));
  std::vector<float> y(static_cast<size_t>(s.out().size()));
  int32_t acc = 0;
  const int64_t out_batch = s.out().size() / s.in.n;
  conv_loops(
      s,
      [&](int64_t i, int64_t f) {
        const Quantized& q = qs[static_cast<size_t>(i) / batch];
        acc += int32_t{w[static_cast<size_t>(f)]} * (q.q[static_cast<size_t>(i) % batch] - q.offset);
      },
      [&](int64_t o, int32_t oc) {
        const Quantized& q = qs[static_cast<size_t>(o / out_batch)];
        float v = 0.0f;
        if (per_channel) {
          v = mul(mul(static_cast<float>(acc), scales[static_cast<size_t>(oc)]), q.factor);
          if (s.bias) v = v + bias[static_cast<size_t>(oc)];
        } else {
          v = 0.0f + mul(static_cast<float>(acc), mul(q.factor, scales[0]));
          if (s.bias) v = v + bias[static_cast<size_t>(oc)];
        }
        y[static_cast<size_t>(o)] = clamp_float(v, float_range(s.act));
        acc = 0;
      });
  return y;
}

ConvSpec random_conv_spec(std::mt19937& rng, bool allow_groups, bool allow_dilation) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ConvSpec s;
  s.groups = allow_groups && pick(0, 2) == 0 ? pick(2, 3) : 1;
  s.in = Dims{pick(1, 2), pick(3, 7), pick(3, 7), s.groups * pick(1, 3)};
  s.out_c = s.groups * pick(1, 3);
  s.fh = pick(1, 3);
  s.fw = pick(1, 3);
  s.stride_h = pick(1, 2);
  s.stride_w = pick(1, 3);
  if (allow_dilation && pick(0, 2) == 0) {
    s.dil_h = pick(1, 2);
    s.dil_w = pick(1, 2);
  }
  s.padding = pick(0, 1) ? PaddingKind::same : PaddingKind::valid;
  const Activation acts[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  s.act = acts[pick(0, 3)];
  s.bias = pick(0, 3) != 0;
  if (s.out().h < 1 || s.out().w < 1) {  // VALID window too large for this input: SAME instead
    s.padding = PaddingKind::same;
  }
  return s;
}

// ---- DEPTHWISE_CONV_2D ----

struct DepthwiseSpec {
  Dims in;
  int32_t fh = 1, fw = 1, multiplier = 1;
  int32_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  PaddingKind padding = PaddingKind::valid;
  Activation act = Activation::none;
  bool bias = true;

  Axis ah() const { return window(padding, in.h, fh, stride_h, dil_h); }
  Axis aw() const { return window(padding, in.w, fw, stride_w, dil_w); }
  Dims out() const { return Dims{in.n, ah().out, aw().out, in.c * multiplier}; }
  Dims filter() const { return Dims{1, fh, fw, in.c * multiplier}; }
  tw::DepthwiseConv2D options() const {
    return tw::DepthwiseConv2D{padding, stride_w, stride_h, multiplier, act, dil_w, dil_h};
  }
};

Bytes depthwise_model(const DepthwiseSpec& s, const std::vector<float>& wf, const std::vector<int8_t>& wq,
                      const std::vector<float>& scales, const std::vector<float>& bias) {
  tw::ModelBuilder b;
  const int32_t in = float_input(b, "x", s.in.vec());
  const int32_t w = wq.empty()
                        ? float_constant(b, "w", s.filter().vec(), wf)
                        : b.add_constant<int8_t>("w", DType::int8, s.filter().vec(), wq, scales_quant(scales, 3));
  const int32_t bi = s.bias ? float_constant(b, "b", {s.out().c}, bias) : -1;
  const int32_t out = float_input(b, "y", s.out().vec());
  b.add_operator(tw::Op::depthwise_conv_2d, {in, w, bi}, {out}, s.options());
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("depthwise");
}

template <typename Tap, typename Done>
void depthwise_loops(const DepthwiseSpec& s, const Tap& tap, const Done& done) {
  const Dims in = s.in, f = s.filter(), out = s.out();
  for (int32_t b = 0; b < out.n; ++b)
    for (int32_t oy = 0; oy < out.h; ++oy)
      for (int32_t ox = 0; ox < out.w; ++ox)
        for (int32_t ic = 0; ic < in.c; ++ic)
          for (int32_t m = 0; m < s.multiplier; ++m) {
            const int32_t oc = ic * s.multiplier + m;
            for (int32_t fy = 0; fy < f.h; ++fy)
              for (int32_t fx = 0; fx < f.w; ++fx) {
                const int32_t iy = oy * s.stride_h - s.ah().pad + fy * s.dil_h;
                const int32_t ix = ox * s.stride_w - s.aw().pad + fx * s.dil_w;
                if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
                tap(in.at(b, iy, ix, ic), f.at(0, fy, fx, oc));
              }
            done(out.at(b, oy, ox, oc), oc);
          }
}

std::vector<float> depthwise_float_expected(const DepthwiseSpec& s, const std::vector<float>& x,
                                            const std::vector<float>& w, const std::vector<float>& bias) {
  std::vector<float> y(static_cast<size_t>(s.out().size()));
  float total = 0.0f;
  depthwise_loops(
      s, [&](int64_t i, int64_t f) { total = total + mul(x[static_cast<size_t>(i)], w[static_cast<size_t>(f)]); },
      [&](int64_t o, int32_t oc) {
        const float b = s.bias ? bias[static_cast<size_t>(oc)] : 0.0f;
        y[static_cast<size_t>(o)] = clamp_float(total + b, float_range(s.act));
        total = 0.0f;
      });
  return y;
}

// DepthwiseConvHybridPerChannel: asymmetric inputs, acc * (channel scale * factor) + bias.
std::vector<float> depthwise_hybrid_expected(const DepthwiseSpec& s, const std::vector<float>& x,
                                             const std::vector<int8_t>& w, const std::vector<float>& scales,
                                             const std::vector<float>& bias) {
  const auto batch = static_cast<size_t>(s.in.h * s.in.w * s.in.c);
  std::vector<Quantized> qs;
  for (int32_t b = 0; b < s.in.n; ++b) qs.push_back(tflite_quantize(&x[b * batch], batch, true));
  std::vector<float> y(static_cast<size_t>(s.out().size()));
  const int64_t out_batch = s.out().size() / s.in.n;
  int32_t acc = 0;
  depthwise_loops(
      s,
      [&](int64_t i, int64_t f) {
        const Quantized& q = qs[static_cast<size_t>(i) / batch];
        acc += int32_t{w[static_cast<size_t>(f)]} * (q.q[static_cast<size_t>(i) % batch] - q.offset);
      },
      [&](int64_t o, int32_t oc) {
        const Quantized& q = qs[static_cast<size_t>(o / out_batch)];
        const float scale = scales.size() > 1 ? scales[static_cast<size_t>(oc)] : scales[0];
        float v = mul(static_cast<float>(acc), mul(scale, q.factor));
        if (s.bias) v = v + bias[static_cast<size_t>(oc)];
        y[static_cast<size_t>(o)] = clamp_float(v, float_range(s.act));
        acc = 0;
      });
  return y;
}

DepthwiseSpec random_depthwise_spec(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  DepthwiseSpec s;
  s.in = Dims{pick(1, 2), pick(3, 7), pick(3, 7), pick(1, 4)};
  s.multiplier = pick(1, 3);
  s.fh = pick(1, 3);
  s.fw = pick(1, 3);
  s.stride_h = pick(1, 2);
  s.stride_w = pick(1, 2);
  if (pick(0, 2) == 0) {
    s.dil_h = pick(1, 2);
    s.dil_w = pick(1, 2);
  }
  s.padding = pick(0, 1) ? PaddingKind::same : PaddingKind::valid;
  const Activation acts[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  s.act = acts[pick(0, 3)];
  s.bias = pick(0, 3) != 0;
  if (s.out().h < 1 || s.out().w < 1) s.padding = PaddingKind::same;
  return s;
}

// ---- FULLY_CONNECTED ----

Bytes fc_model(std::vector<int32_t> in_shape, int32_t units, int32_t depth, std::vector<int32_t> out_shape,
               const std::vector<float>& wf, const std::vector<int8_t>& wq, const std::vector<float>& scales,
               const std::vector<float>* bias, tw::FullyConnected options) {
  tw::ModelBuilder b;
  const int32_t in = float_input(b, "x", std::move(in_shape));
  const int32_t w = wq.empty() ? float_constant(b, "w", {units, depth}, wf)
                               : b.add_constant<int8_t>("w", DType::int8, {units, depth}, wq, scales_quant(scales, 0));
  const int32_t bi = bias ? float_constant(b, "b", {units}, *bias) : -1;
  const int32_t out = float_input(b, "y", std::move(out_shape));
  b.add_operator(tw::Op::fully_connected, {in, w, bi}, {out}, options);
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("fc");
}

std::vector<float> fc_float_expected(const std::vector<float>& x, const std::vector<float>& w,
                                     const std::vector<float>* bias, int32_t units, int32_t depth, Activation act) {
  const size_t batches = x.size() / static_cast<size_t>(depth);
  std::vector<float> y;
  for (size_t b = 0; b < batches; ++b)
    for (int32_t o = 0; o < units; ++o) {
      float total = 0.0f;
      for (int32_t d = 0; d < depth; ++d)
        total = total + mul(x[b * static_cast<size_t>(depth) + static_cast<size_t>(d)],
                            w[static_cast<size_t>(o * depth + d)]);
      y.push_back(clamp_float(total + (bias ? (*bias)[static_cast<size_t>(o)] : 0.0f), float_range(act)));
    }
  return y;
}

// ApplyActivationToVector: RELU max(0, x), RELU6 / RELU_N1_TO_1 max(lo, min(x, hi)), NONE nothing.
float vector_activation(float v, Activation act) {
  switch (act) {
    case Activation::relu: return std::max(0.0f, v);
    case Activation::relu6: return std::max(0.0f, std::min(v, 6.0f));
    case Activation::relu_n1_to_1: return std::max(-1.0f, std::min(v, 1.0f));
    default: return v;
  }
}

// TFLite's EvalHybrid: output = bias (or 0); an all-zero input stops there; else each row quantized and
// output += dot * (factor * weight scale), then the vector activation.
std::vector<float> fc_hybrid_expected(const std::vector<float>& x, const std::vector<int8_t>& w,
                                      const std::vector<float>& scales, const std::vector<float>* bias, int32_t units,
                                      int32_t depth, bool asymmetric, Activation act) {
  const size_t batches = x.size() / static_cast<size_t>(depth);
  const bool all_zero = std::all_of(x.begin(), x.end(), [](float v) { return v == 0.0f; });
  std::vector<float> y;
  for (size_t b = 0; b < batches; ++b) {
    const Quantized q = tflite_quantize(&x[b * static_cast<size_t>(depth)], static_cast<size_t>(depth), asymmetric);
    for (int32_t o = 0; o < units; ++o) {
      float v = bias ? (*bias)[static_cast<size_t>(o)] : 0.0f;
      if (!all_zero) {
        int32_t dot = 0;
        for (int32_t d = 0; d < depth; ++d)
          dot += int32_t{w[static_cast<size_t>(o * depth + d)]} * (q.q[static_cast<size_t>(d)] - q.offset);
        const float scale = scales.size() > 1 ? scales[static_cast<size_t>(o)] : scales[0];
        v = v + mul(static_cast<float>(dot), mul(q.factor, scale));
      }
      y.push_back(vector_activation(v, act));
    }
  }
  return y;
}

// ---- TRANSPOSE_CONV ----

struct TransposeSpec {
  Dims in;
  int32_t fh = 1, fw = 1, out_c = 1, out_h = 1, out_w = 1;
  int32_t stride_h = 1, stride_w = 1;
  PaddingKind padding = PaddingKind::same;
  Activation act = Activation::none;
  bool bias = true;

  Dims out() const { return Dims{in.n, out_h, out_w, out_c}; }
  Dims filter() const { return Dims{out_c, fh, fw, in.c}; }
  // TFLite pads as the forward convolution over the output would (a VALID one never pads here: filters fit).
  int32_t pad_h() const { return window(padding, out_h, fh, stride_h, 1).pad; }
  int32_t pad_w() const { return window(padding, out_w, fw, stride_w, 1).pad; }
  TransposeConvOptions options() const { return TransposeConvOptions{padding, stride_w, stride_h, act}; }
};

struct Quant8 {
  float in_scale = 0.5f, out_scale = 0.125f;
  int64_t in_zp = 0, out_zp = 0, filter_zp = 0;
  std::vector<float> filter_scales{0.25f};
};

// One TRANSPOSE_CONV; `type` float32 (wf, float bias) or int8 / uint8 (w8 raw bytes, int32 bias, quantization).
Bytes transpose_model(const TransposeSpec& s, DType type, const std::vector<float>& wf, const std::vector<uint8_t>& w8,
                      const std::vector<float>& fbias, const std::vector<int32_t>& ibias, const Quant8& quant) {
  tw::ModelBuilder b;
  const int32_t shape = b.add_constant<int32_t>("shape", DType::int32, {4}, s.out().vec());
  int32_t in = 0, w = 0, bi = -1, out = 0;
  if (type == DType::float32) {
    in = float_input(b, "x", s.in.vec());
    w = float_constant(b, "w", s.filter().vec(), wf);
    if (s.bias) bi = float_constant(b, "b", {s.out_c}, fbias);
    out = float_input(b, "y", s.out().vec());
  } else {
    in = activation(b, "x", type, s.in.vec(), q(quant.in_scale, quant.in_zp));
    const tw::Quant fq{quant.filter_scales, std::vector<int64_t>(quant.filter_scales.size(), quant.filter_zp), 0};
    w = b.add_constant<uint8_t>("w", type, s.filter().vec(), w8, fq);
    if (s.bias)
      bi = b.add_constant<int32_t>("b", DType::int32, {s.out_c}, ibias, q(quant.in_scale * quant.filter_scales[0], 0));
    out = activation(b, "y", type, s.out().vec(), q(quant.out_scale, quant.out_zp));
  }
  b.add_operator(tw::Op::transpose_conv, {shape, w, in, bi}, {out}, s.options());
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("transpose conv");
}

// The transpose convolution in gather form: output (oy, ox) takes input (iy, ix) through tap
// (oy + pad - iy * stride, ox + pad - ix * stride) when that tap exists, in input order (the scatter's order for
// each output element, since an input position reaches it through one tap at most).
template <typename Tap, typename Done>
void transpose_loops(const TransposeSpec& s, const Tap& tap, const Done& done) {
  const Dims in = s.in, f = s.filter(), out = s.out();
  for (int32_t b = 0; b < out.n; ++b)
    for (int32_t oy = 0; oy < out.h; ++oy)
      for (int32_t ox = 0; ox < out.w; ++ox)
        for (int32_t oc = 0; oc < out.c; ++oc) {
          for (int32_t iy = 0; iy < in.h; ++iy) {
            const int32_t fy = oy + s.pad_h() - iy * s.stride_h;
            if (fy < 0 || fy >= f.h) continue;
            for (int32_t ix = 0; ix < in.w; ++ix) {
              const int32_t fx = ox + s.pad_w() - ix * s.stride_w;
              if (fx < 0 || fx >= f.w) continue;
              for (int32_t ic = 0; ic < in.c; ++ic) tap(in.at(b, iy, ix, ic), f.at(oc, fy, fx, ic));
            }
          }
          done(out.at(b, oy, ox, oc), oc);
        }
}

std::vector<float> transpose_float_expected(const TransposeSpec& s, const std::vector<float>& x,
                                            const std::vector<float>& w, const std::vector<float>& bias) {
  std::vector<float> y(static_cast<size_t>(s.out().size()));
  float total = 0.0f;
  transpose_loops(
      s, [&](int64_t i, int64_t f) { total = total + mul(x[static_cast<size_t>(i)], w[static_cast<size_t>(f)]); },
      [&](int64_t o, int32_t oc) {
        float v = total;
        if (s.bias) v = v + bias[static_cast<size_t>(oc)];
        y[static_cast<size_t>(o)] = clamp_float(v, float_range(s.act));
        total = 0.0f;
      });
  return y;
}

// 8-bit: int32 sums of (x - in_zp) * (w - filter_zp), + bias, times the channel's multiplier (the tests choose
// scales whose multipliers are powers of two >= 1, which TFLite's fixed-point multiply applies exactly), + out_zp,
// clamped to [lo, hi].
template <typename T>
std::vector<T> transpose_quantized_expected(const TransposeSpec& s, const std::vector<T>& x, const std::vector<T>& w,
                                            const std::vector<int32_t>& bias, const Quant8& q,
                                            const std::vector<int32_t>& multipliers, int32_t lo, int32_t hi) {
  std::vector<T> y(static_cast<size_t>(s.out().size()));
  int64_t acc = 0;
  transpose_loops(
      s,
      [&](int64_t i, int64_t f) {
        acc += (int64_t{x[static_cast<size_t>(i)]} - q.in_zp) * (int64_t{w[static_cast<size_t>(f)]} - q.filter_zp);
      },
      [&](int64_t o, int32_t oc) {
        if (s.bias) acc += bias[static_cast<size_t>(oc)];
        const int64_t v = acc * multipliers[static_cast<size_t>(oc)] + q.out_zp;
        y[static_cast<size_t>(o)] = static_cast<T>(std::clamp<int64_t>(v, lo, hi));
        acc = 0;
      });
  return y;
}

template <typename T>
std::vector<T> random_bytes(std::mt19937& rng, int64_t n, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}
template <typename T>
std::vector<uint8_t> raw(const std::vector<T>& v) {
  std::vector<uint8_t> r(v.size());
  std::memcpy(r.data(), v.data(), v.size());
  return r;
}

TransposeSpec random_transpose_spec(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  TransposeSpec s;
  s.in = Dims{pick(1, 2), pick(1, 4), pick(1, 4), pick(1, 3)};
  s.out_c = pick(1, 3);
  s.stride_h = pick(1, 3);
  s.stride_w = pick(1, 3);
  s.fh = pick(1, 4);
  s.fw = pick(1, 4);
  s.padding = pick(0, 1) ? PaddingKind::same : PaddingKind::valid;
  // The output extents TFLite's converter writes: in * stride (SAME), (in - 1) * stride + filter (VALID).
  if (s.padding == PaddingKind::same) {
    s.out_h = s.in.h * s.stride_h;
    s.out_w = s.in.w * s.stride_w;
  } else {
    s.out_h = (s.in.h - 1) * s.stride_h + s.fh;
    s.out_w = (s.in.w - 1) * s.stride_w + s.fw;
  }
  s.bias = pick(0, 3) != 0;
  return s;
}

}  // namespace

// ================================================= CONV_2D =================================================

TEST_CASE("CONV_2D float32: hand-computed VALID and SAME stride 2 with bias and RELU") {
  // input 3x3 = 1..9, filter 2x2 = {1, 2; 3, 4}.
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> w{1, 2, 3, 4};
  ConvSpec s;
  s.in = Dims{1, 3, 3, 1};
  s.fh = s.fw = 2;
  // VALID, stride 1: in[y][x] + 2 in[y][x+1] + 3 in[y+1][x] + 4 in[y+1][x+1] + 0.5.
  const auto valid = run_everywhere(conv_model(s, w, {}, {}, {0.5f}), {bytes_of(x)});
  check_floats(valid[0], {37.5f, 47.5f, 67.5f, 77.5f});
  // SAME, stride 2: 2x2 output, padding 0 before and 1 after (taps past the edge skipped), bias -10, RELU.
  s.padding = PaddingKind::same;
  s.stride_h = s.stride_w = 2;
  s.act = Activation::relu;
  const auto same = run_everywhere(conv_model(s, w, {}, {}, {-10.0f}), {bytes_of(x)});
  check_floats(same[0], {27.0f, 11.0f, 13.0f, 0.0f});
}

TEST_CASE("CONV_2D float32: randomized shapes, strides, dilations, groups and activations") {
  std::mt19937 rng(1234);
  for (int round = 0; round < 40; ++round) {
    const ConvSpec s = random_conv_spec(rng, true, true);
    CAPTURE(round);
    const auto x = random_floats(rng, s.in.size(), 2.0f);
    const auto w = random_floats(rng, s.filter().size(), 1.0f);
    const auto bias = random_floats(rng, s.out_c, 1.0f);
    const auto got = run_everywhere(conv_model(s, w, {}, {}, bias), {bytes_of(x)});
    check_floats(got[0], conv_float_expected(s, x, w, bias));
  }
}

TEST_CASE("CONV_2D float32: infinite sums end at the float range, NaN passes through") {
  ConvSpec s;
  s.in = Dims{1, 1, 4, 1};
  const std::vector<float> x{3e38f, -3e38f, std::numeric_limits<float>::quiet_NaN(), 1.0f};
  const auto got = run_everywhere(conv_model(s, {10.0f}, {}, {}, {0.0f}), {bytes_of(x)});
  const auto y = values_of<float>(got[0]);
  CHECK(y[0] == kHighest);  // CalculateActivationRange: NONE clamps to [lowest, max]
  CHECK(y[1] == kLowest);
  CHECK(std::isnan(y[2]));
  CHECK(y[3] == 10.0f);
}

TEST_CASE("CONV_2D float32: a filter computed at run time") {
  ConvSpec s;
  s.in = Dims{1, 2, 2, 2};
  s.out_c = 2;
  tw::ModelBuilder b;
  const int32_t in = float_input(b, "x", s.in.vec());
  const int32_t w = float_input(b, "w", s.filter().vec());
  const int32_t out = float_input(b, "y", s.out().vec());
  b.add_operator(tw::Op::conv_2d, {in, w, -1}, {out}, s.options());
  b.set_inputs({in, w});
  b.set_outputs({out});
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> wv{1, -1, 0.5f, 2};  // channel 0: x0 - x1; channel 1: x0 / 2 + 2 x1
  const auto got = run_everywhere(b.finish("conv"), {bytes_of(x), bytes_of(wv)});
  check_floats(got[0], {-1, 4.5f, -1, 9.5f, -1, 14.5f, -1, 19.5f});
}

TEST_CASE("CONV_2D dynamic range: hand-computed per-tensor quantization") {
  // Input pixels (1, -0.5) and (0.25, 2): range 2, inputs times 127 / 2 = 63.5 rounded: (64, -32), (16, 127).
  // 1x1 filter (3, -2) of scale 0.5: acc 3*64 + 2*32 = 256 and 3*16 - 2*127 = -206, times (2/127 * 0.5).
  ConvSpec s;
  s.in = Dims{1, 1, 2, 2};
  const std::vector<float> x{1.0f, -0.5f, 0.25f, 2.0f};
  const auto got = run_everywhere(conv_model(s, {}, {3, -2}, {0.5f}, {0.125f}), {bytes_of(x)});
  const float factor = mul(2.0f / 127.0f, 0.5f);
  check_floats(got[0], {(0.0f + mul(256.0f, factor)) + 0.125f, (0.0f + mul(-206.0f, factor)) + 0.125f});
  const auto y = values_of<float>(got[0]);
  CHECK(y[0] == doctest::Approx(2.0f + 0.125f).epsilon(0.01));  // the real convolution: 1.5 + 0.5 (+ bias)
  CHECK(y[1] == doctest::Approx(-1.625f + 0.125f).epsilon(0.01));
}

TEST_CASE("CONV_2D dynamic range: hand-computed per-channel (asymmetric) quantization") {
  // Input (1, -0.5, 0.3, 2): real range [-0.5, 2], scale 2.5/255, zero point -128 + 0.5/scale = -77 (the smaller
  // error); q - offset = (102, -51, 31, 204) (0.3 * 102 = 30.6 -> -46.4 -> -46). Filter channels (1, 2, 3, 4) scale
  // 0.5 and (-1, 0, 1, 0) scale 0.25: acc 102 - 102 + 93 + 816 = 909 and -102 + 31 = -71.
  ConvSpec s;
  s.in = Dims{1, 1, 1, 4};
  s.out_c = 2;
  const std::vector<float> x{1.0f, -0.5f, 0.3f, 2.0f};
  const auto got =
      run_everywhere(conv_model(s, {}, {1, 2, 3, 4, -1, 0, 1, 0}, {0.5f, 0.25f}, {0.25f, -0.25f}), {bytes_of(x)});
  const float factor = static_cast<float>(2.5 / 255.0);
  check_floats(got[0], {mul(mul(909.0f, 0.5f), factor) + 0.25f, mul(mul(-71.0f, 0.25f), factor) + -0.25f});
  const auto y = values_of<float>(got[0]);
  CHECK(y[0] == doctest::Approx(0.5f * 8.9f + 0.25f).epsilon(0.01));
  CHECK(y[1] == doctest::Approx(0.25f * -0.7f - 0.25f).epsilon(0.01));
}

TEST_CASE("CONV_2D dynamic range: randomized, per-tensor (symmetric) and per-channel (asymmetric)") {
  std::mt19937 rng(99);
  for (int round = 0; round < 40; ++round) {
    const bool per_channel = round % 2 == 1;
    ConvSpec s = random_conv_spec(rng, false, !per_channel);  // per-channel: dilation 1 only (see the refusals)
    if (per_channel && s.out_c == 1) s.out_c = 2;
    CAPTURE(round);
    const auto x = random_floats(rng, s.in.size(), round % 3 == 0 ? 50.0f : 1.5f);
    const auto w = random_weights(rng, s.filter().size());
    const auto scales = random_scales(rng, per_channel ? s.out_c : 1);
    const auto bias = random_floats(rng, s.out_c, 0.5f);
    const auto got = run_everywhere(conv_model(s, {}, w, scales, bias), {bytes_of(x)});
    check_floats(got[0], conv_hybrid_expected(s, x, w, scales, bias));
  }
}

TEST_CASE("CONV_2D dynamic range: an all-zero batch and a batch of one sign") {
  ConvSpec s;
  s.in = Dims{3, 2, 2, 1};
  s.fh = s.fw = 2;
  s.out_c = 2;
  const std::vector<float> x{0, 0, 0, 0, /**/ 1, 2, 3, 4, /**/ -1, -2, -3, -4};
  for (const std::vector<float>& scales : {std::vector<float>{0.01f}, std::vector<float>{0.01f, 0.02f}}) {
    const std::vector<int8_t> w{10, 20, 30, 40, -5, 5, -5, 5};
    const std::vector<float> bias{0.5f, -0.5f};
    const auto got = run_everywhere(conv_model(s, {}, w, scales, bias), {bytes_of(x)});
    check_floats(got[0], conv_hybrid_expected(s, x, w, scales, bias));
  }
}

// ============================================ DEPTHWISE_CONV_2D ============================================

TEST_CASE("DEPTHWISE_CONV_2D float32: hand-computed multiplier 2") {
  // 2 input channels, multiplier 2: output channels (c0 * w0, c0 * w1, c1 * w2, c1 * w3) summed over a 1x2 window.
  DepthwiseSpec s;
  s.in = Dims{1, 1, 3, 2};
  s.fw = 2;
  s.multiplier = 2;
  const std::vector<float> x{1, 10, 2, 20, 3, 30};
  const std::vector<float> w{1, -1, 0.5f, 2, /* tap 1 */ 1, 1, 1, 0};
  const auto got = run_everywhere(depthwise_model(s, w, {}, {}, {0, 0, 0, 100}), {bytes_of(x)});
  // x = 0: c0 taps (1, 2), c1 taps (10, 20).
  check_floats(got[0], {1 + 2, -1 + 2, 5 + 20, 20 + 0 + 100, 2 + 3, -2 + 3, 10 + 30, 40 + 100});
}

TEST_CASE("DEPTHWISE_CONV_2D float32: randomized") {
  std::mt19937 rng(4321);
  for (int round = 0; round < 30; ++round) {
    const DepthwiseSpec s = random_depthwise_spec(rng);
    CAPTURE(round);
    const auto x = random_floats(rng, s.in.size(), 2.0f);
    const auto w = random_floats(rng, s.filter().size(), 1.0f);
    const auto bias = random_floats(rng, s.out().c, 1.0f);
    const auto got = run_everywhere(depthwise_model(s, w, {}, {}, bias), {bytes_of(x)});
    check_floats(got[0], depthwise_float_expected(s, x, w, bias));
  }
}

TEST_CASE("DEPTHWISE_CONV_2D dynamic range: hand-computed") {
  // Same input as the CONV_2D asymmetric case, as one pixel of 4 channels: q - offset = (102, -51, 31, 204).
  DepthwiseSpec s;
  s.in = Dims{1, 1, 1, 4};
  const std::vector<float> x{1.0f, -0.5f, 0.3f, 2.0f};
  const std::vector<float> scales{0.5f, 0.25f, 0.125f, 1.0f};
  const auto got = run_everywhere(depthwise_model(s, {}, {2, 3, -4, 1}, scales, {0, 1, 0, -1}), {bytes_of(x)});
  const float factor = static_cast<float>(2.5 / 255.0);
  check_floats(got[0], {mul(204.0f, mul(0.5f, factor)) + 0.0f, mul(-153.0f, mul(0.25f, factor)) + 1.0f,
                        mul(-124.0f, mul(0.125f, factor)) + 0.0f, mul(204.0f, mul(1.0f, factor)) + -1.0f});
}

TEST_CASE("DEPTHWISE_CONV_2D dynamic range: randomized, per-channel and broadcast single scales") {
  std::mt19937 rng(77);
  for (int round = 0; round < 30; ++round) {
    const DepthwiseSpec s = random_depthwise_spec(rng);
    CAPTURE(round);
    const auto x = random_floats(rng, s.in.size(), round % 3 == 0 ? 40.0f : 1.0f);
    const auto w = random_weights(rng, s.filter().size());
    const auto scales = random_scales(rng, round % 2 ? s.out().c : 1);
    const auto bias = random_floats(rng, s.out().c, 0.5f);
    const auto got = run_everywhere(depthwise_model(s, {}, w, scales, bias), {bytes_of(x)});
    check_floats(got[0], depthwise_hybrid_expected(s, x, w, scales, bias));
  }
}

// ============================================= FULLY_CONNECTED =============================================

TEST_CASE("FULLY_CONNECTED float32: hand-computed, with and without bias, RELU_N1_TO_1") {
  const std::vector<float> x{1, 2, 3, 4, -1, -2, -3, -4};
  const std::vector<float> w{1, 0, 0, 0, 0.5f, 0.5f, 0.5f, 0.5f, 1, -1, 1, -1};
  const std::vector<float> bias{0.25f, -1, 0};
  const auto with_bias = run_everywhere(fc_model({2, 4}, 3, 4, {2, 3}, w, {}, {}, &bias, tw::FullyConnected{}),
                                        {bytes_of(x)});
  check_floats(with_bias[0], {1.25f, 4, -2, -0.75f, -6, 2});
  const auto no_bias = run_everywhere(
      fc_model({2, 4}, 3, 4, {2, 3}, w, {}, {}, nullptr, tw::FullyConnected{Activation::relu_n1_to_1}),
      {bytes_of(x)});
  check_floats(no_bias[0], {1, 1, -1, -1, -1, 1});
}

TEST_CASE("FULLY_CONNECTED float32: keep_num_dims and randomized") {
  std::mt19937 rng(5);
  // keep_num_dims: [2, 3, 4] x [5, 4]^T -> [2, 3, 5].
  {
    const auto x = random_floats(rng, 24, 2.0f);
    const auto w = random_floats(rng, 20, 1.0f);
    const auto bias = random_floats(rng, 5, 1.0f);
    tw::FullyConnected o{};
    o.keep_num_dims = true;
    const auto got = run_everywhere(fc_model({2, 3, 4}, 5, 4, {2, 3, 5}, w, {}, {}, &bias, o), {bytes_of(x)});
    check_floats(got[0], fc_float_expected(x, w, &bias, 5, 4, Activation::none));
  }
  const Activation acts[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  for (int round = 0; round < 20; ++round) {
    std::uniform_int_distribution<int> pick(1, 9);
    const int32_t batches = pick(rng) % 3 + 1, depth = pick(rng) * 3, units = pick(rng);
    const Activation act = acts[round % 4];
    const auto x = random_floats(rng, batches * depth, 2.0f);
    const auto w = random_floats(rng, units * depth, 1.0f);
    const auto bias = random_floats(rng, units, 1.0f);
    const std::vector<float>* b = round % 3 ? &bias : nullptr;
    const auto got = run_everywhere(fc_model({batches, depth}, units, depth, {batches, units}, w, {}, {}, b,
                                             tw::FullyConnected{act}),
                                    {bytes_of(x)});
    check_floats(got[0], fc_float_expected(x, w, b, units, depth, act));
  }
}

TEST_CASE("FULLY_CONNECTED float32: weights computed at run time") {
  tw::ModelBuilder b;
  const int32_t in = float_input(b, "x", {1, 3});
  const int32_t w = float_input(b, "w", {2, 3});
  const int32_t out = float_input(b, "y", {1, 2});
  b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
  b.set_inputs({in, w});
  b.set_outputs({out});
  const auto got = run_everywhere(b.finish("fc"), {bytes_of(std::vector<float>{1, 2, 3}),
                                                   bytes_of(std::vector<float>{1, 1, 1, 0, -1, 2})});
  check_floats(got[0], {6, 4});
}

TEST_CASE("FULLY_CONNECTED dynamic range: hand-computed symmetric and asymmetric rows") {
  // Row (1, -0.5, 0.3, 2). Symmetric: range 2, x * 63.5 rounded = (64, -32, 19, 127). Asymmetric: see the CONV_2D
  // case, q - offset = (102, -51, 31, 204). Weights (1, 2, 3, 4) and (-1, 0, 1, 0), per-tensor scale 0.5.
  const std::vector<float> x{1.0f, -0.5f, 0.3f, 2.0f};
  const std::vector<int8_t> w{1, 2, 3, 4, -1, 0, 1, 0};
  const std::vector<float> bias{0.25f, -0.25f};
  const auto sym = run_everywhere(fc_model({1, 4}, 2, 4, {1, 2}, {}, w, {0.5f}, &bias, tw::FullyConnected{}),
                                  {bytes_of(x)});
  const float sym_scale = mul(2.0f / 127.0f, 0.5f);
  check_floats(sym[0], {0.25f + mul(565.0f, sym_scale), -0.25f + mul(-45.0f, sym_scale)});
  tw::FullyConnected o{};
  o.asymmetric_quantize_inputs = true;
  const auto asym = run_everywhere(fc_model({1, 4}, 2, 4, {1, 2}, {}, w, {0.5f}, &bias, o), {bytes_of(x)});
  const float asym_scale = mul(static_cast<float>(2.5 / 255.0), 0.5f);
  check_floats(asym[0], {0.25f + mul(909.0f, asym_scale), -0.25f + mul(-71.0f, asym_scale)});
}

TEST_CASE("FULLY_CONNECTED dynamic range: randomized per-tensor / per-channel, symmetric / asymmetric") {
  std::mt19937 rng(2024);
  const Activation acts[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  for (int round = 0; round < 32; ++round) {
    std::uniform_int_distribution<int> pick(1, 8);
    const int32_t batches = pick(rng) % 4 + 1, depth = pick(rng) * 5, units = pick(rng);
    const bool asymmetric = round % 2 == 1, per_channel = round / 2 % 2 == 1;
    const Activation act = acts[round / 4 % 4];
    CAPTURE(round);
    const auto x = random_floats(rng, batches * depth, round % 5 == 0 ? 100.0f : 2.0f);
    const auto w = random_weights(rng, units * depth);
    const auto scales = random_scales(rng, per_channel ? units : 1);
    const auto bias = random_floats(rng, units, 1.0f);
    const std::vector<float>* b = round % 3 ? &bias : nullptr;
    tw::FullyConnected o{act};
    o.asymmetric_quantize_inputs = asymmetric;
    o.keep_num_dims = round % 7 == 0;
    const auto got = run_everywhere(fc_model({batches, depth}, units, depth, {batches, units}, {}, w, scales, b, o),
                                    {bytes_of(x)});
    check_floats(got[0], fc_hybrid_expected(x, w, scales, b, units, depth, asymmetric, act));
  }
}

TEST_CASE("FULLY_CONNECTED dynamic range: an all-zero input returns the bias untouched, else rows are summed") {
  // TFLite skips the products when the whole input is zero: a -0.0 bias stays -0.0. With another row non-zero,
  // the zero row still gets bias + 0.0 = +0.0.
  const std::vector<int8_t> w{1, 2, 3};
  const std::vector<float> bias{-0.0f};
  const Bytes model = fc_model({2, 3}, 1, 3, {2, 1}, {}, w, {0.1f}, &bias, tw::FullyConnected{});
  const auto zero = run_everywhere(model, {bytes_of(std::vector<float>{0, -0.0f, 0, 0, 0, 0})});
  check_floats(zero[0], {-0.0f, -0.0f});
  const auto mixed = run_everywhere(model, {bytes_of(std::vector<float>{0, 0, 0, 1, 1, 1})});
  check_floats(mixed[0], fc_hybrid_expected({0, 0, 0, 1, 1, 1}, w, {0.1f}, &bias, 1, 3, false, Activation::none));
  CHECK(std::bit_cast<uint32_t>(values_of<float>(mixed[0])[0]) == 0u);
}

TEST_CASE("FULLY_CONNECTED dynamic range: activation NONE leaves infinities, RELU maps them as max(0, x)") {
  // The row factor (3e38 / 127) times a weight scale of 1e30 overflows to +inf: NONE keeps +-inf (no clamp to the
  // float range, unlike the float kernels), RELU keeps +inf and zeroes -inf.
  const std::vector<int8_t> w{127, -127};
  const std::vector<float> x{3e38f};
  const auto none =
      run_everywhere(fc_model({1, 1}, 2, 1, {1, 2}, {}, w, {1e30f}, nullptr, tw::FullyConnected{}), {bytes_of(x)});
  check_floats(none[0], {kInf, -kInf});
  const auto relu = run_everywhere(
      fc_model({1, 1}, 2, 1, {1, 2}, {}, w, {1e30f}, nullptr, tw::FullyConnected{Activation::relu}), {bytes_of(x)});
  check_floats(relu[0], {kInf, 0.0f});
}

// ============================================= TRANSPOSE_CONV ==============================================

TEST_CASE("TRANSPOSE_CONV float32: hand-computed stride 2 SAME") {
  // Input 2x2 (1, 2; 3, 4), 3x3 filter of ones, stride 2, output 4x4: padding 0 (forward SAME over 4: 2 outputs,
  // total padding 1). Input (iy, ix) covers output rows 2iy..2iy+2 and columns 2ix..2ix+2; bias 0.5.
  TransposeSpec s;
  s.in = Dims{1, 2, 2, 1};
  s.fh = s.fw = 3;
  s.out_h = s.out_w = 4;
  s.stride_h = s.stride_w = 2;
  const auto got = run_everywhere(transpose_model(s, DType::float32, std::vector<float>(9, 1.0f), {}, {0.5f}, {}, {}),
                                  {bytes_of(std::vector<float>{1, 2, 3, 4})});
  std::vector<float> want{1, 1, 3, 2, 1, 1, 3, 2, 4, 4, 10, 6, 3, 3, 7, 4};
  for (float& v : want) v += 0.5f;
  check_floats(got[0], want);
}

TEST_CASE("TRANSPOSE_CONV float32: a VALID window wider than the output pads as TFLite computes it") {
  // Width: output 1, filter 7, stride 4: TFLite sizes the forward convolution as (1 + 4 - 7) / 4 = 0 (C++ division),
  // total padding (0 - 1) * 4 + 7 - 1 = 2, so 1 before: the single input lands on output 0 through tap 1.
  TransposeSpec s;
  s.in = Dims{1, 1, 1, 1};
  s.fw = 7;
  s.stride_w = 4;
  s.padding = PaddingKind::valid;
  const auto got = run_everywhere(transpose_model(s, DType::float32, {1, 2, 3, 4, 5, 6, 7}, {}, {0.25f}, {}, {}),
                                  {bytes_of(std::vector<float>{3.0f})});
  check_floats(got[0], {6.25f});
}

TEST_CASE("TRANSPOSE_CONV float32: randomized against a gather form") {
  std::mt19937 rng(31337);
  const Activation acts[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  for (int round = 0; round < 30; ++round) {
    TransposeSpec s = random_transpose_spec(rng);
    s.act = acts[round % 4];
    CAPTURE(round);
    const auto x = random_floats(rng, s.in.size(), 2.0f);
    const auto w = random_floats(rng, s.filter().size(), 1.0f);
    const auto bias = random_floats(rng, s.out_c, 1.0f);
    const auto got = run_everywhere(transpose_model(s, DType::float32, w, {}, bias, {}, {}), {bytes_of(x)});
    check_floats(got[0], transpose_float_expected(s, x, w, bias));
  }
}

TEST_CASE("TRANSPOSE_CONV int8: per-channel and per-tensor weights, activations (randomized)") {
  std::mt19937 rng(8);
  for (int round = 0; round < 30; ++round) {
    TransposeSpec s = random_transpose_spec(rng);
    CAPTURE(round);
    Quant8 q;  // input 0.5, output 0.125: channel multipliers 0.5 * scale / 0.125 = 1, 2 or 4
    q.in_zp = std::uniform_int_distribution<int>(-20, 20)(rng);
    q.out_zp = std::uniform_int_distribution<int>(-10, 10)(rng);
    std::vector<int32_t> multipliers;
    q.filter_scales.clear();
    const bool per_channel = round % 2 == 1;
    for (int32_t c = 0; c < (per_channel ? s.out_c : 1); ++c) {
      const int k = std::uniform_int_distribution<int>(0, 2)(rng);
      q.filter_scales.push_back(0.25f * static_cast<float>(1 << k));
    }
    for (int32_t c = 0; c < s.out_c; ++c)
      multipliers.push_back(static_cast<int32_t>(q.filter_scales[per_channel ? static_cast<size_t>(c) : 0] * 4.0f));
    int32_t lo = -128, hi = 127;
    if (round % 3 == 1) {  // RELU: [zero point, 127]
      s.act = Activation::relu;
      lo = static_cast<int32_t>(q.out_zp);
    } else if (round % 3 == 2) {  // RELU6: [zero point, zero point + 6 / 0.125]
      s.act = Activation::relu6;
      lo = static_cast<int32_t>(q.out_zp);
      hi = static_cast<int32_t>(q.out_zp) + 48;
    }
    const auto x = random_bytes<int8_t>(rng, s.in.size(), -128, 127);
    const auto w = random_bytes<int8_t>(rng, s.filter().size(), -6, 6);
    const auto bias = random_bytes<int32_t>(rng, s.out_c, -40, 40);
    const auto got =
        run_everywhere(transpose_model(s, DType::int8, {}, raw(w), {}, bias, q), {bytes_of(x)});
    check_ints(got[0], transpose_quantized_expected(s, x, w, bias, q, multipliers, lo, hi));
  }
}

TEST_CASE("TRANSPOSE_CONV uint8: per-tensor weights with a zero point (TFLite's reference kernel)") {
  std::mt19937 rng(18);
  for (int round = 0; round < 12; ++round) {
    const TransposeSpec s = random_transpose_spec(rng);
    CAPTURE(round);
    Quant8 q;  // 0.5 * 0.25 / 0.125 = 1
    q.in_zp = 128;
    q.filter_zp = 120;
    q.out_zp = 100;
    const auto x = random_bytes<uint8_t>(rng, s.in.size(), 0, 255);
    const auto w = random_bytes<uint8_t>(rng, s.filter().size(), 114, 126);
    const auto bias = random_bytes<int32_t>(rng, s.out_c, -50, 50);
    const auto got =
        run_everywhere(transpose_model(s, DType::uint8, {}, raw(w), {}, bias, q), {bytes_of(x)});
    check_ints(got[0], transpose_quantized_expected(s, x, w, bias, q, std::vector<int32_t>(s.out_c, 1), 0, 255));
  }
}

// ================================================ refusals =================================================

TEST_CASE("conv operators refuse malformed float32 and dynamic-range operands") {
  ConvSpec s;
  s.in = Dims{1, 3, 3, 2};
  s.fh = s.fw = 2;
  s.out_c = 2;
  const std::vector<int8_t> w8(16, 1);
  const std::vector<float> wf(16, 1.0f);
  auto conv_err = [&](const ConvSpec& spec, const std::vector<float>& f, const std::vector<int8_t>& q,
                      const std::vector<float>& scales) {
    return load_error(conv_model(spec, f, q, scales, std::vector<float>(static_cast<size_t>(spec.out_c), 0.0f)));
  };
  SUBCASE("TANH on a float convolution") {
    ConvSpec t = s;
    t.act = Activation::tanh;
    CHECK(conv_err(t, wf, {}, {}).find("fused activation") != std::string::npos);
  }
  SUBCASE("per-channel hybrid convolution with dilation") {
    ConvSpec t = s;
    t.dil_h = 2;
    t.in.h = 4;
    CHECK(conv_err(t, {}, w8, {0.1f, 0.2f}).find("dilation") != std::string::npos);
    CHECK(conv_err(t, {}, w8, {0.1f}).empty());  // per-tensor: dilation is fine
  }
  SUBCASE("equal per-channel hybrid scales") {
    CHECK(conv_err(s, {}, w8, {0.1f, 0.1f}).find("all equal") != std::string::npos);
  }
  SUBCASE("hybrid scales along the wrong dimension or of the wrong count") {
    CHECK(conv_err(s, {}, w8, {0.1f, 0.2f, 0.3f}).find("scales") != std::string::npos);
    tw::ModelBuilder b;
    const int32_t in = float_input(b, "x", s.in.vec());
    const int32_t w = b.add_constant<int8_t>("w", DType::int8, s.filter().vec(), w8, scales_quant({0.1f, 0.2f}, 3));
    const int32_t out = float_input(b, "y", s.out().vec());
    b.add_operator(tw::Op::conv_2d, {in, w}, {out}, s.options());
    b.set_inputs({in});
    b.set_outputs({out});
    CHECK(load_error(b.finish("conv")).find("dimension") != std::string::npos);
  }
  SUBCASE("hybrid filter with a zero point, or without quantization, or not positive") {
    tw::ModelBuilder b;
    const int32_t in = float_input(b, "x", s.in.vec());
    const int32_t w = b.add_constant<int8_t>("w", DType::int8, s.filter().vec(), w8, tw::Quant{{0.1f}, {3}, 0});
    const int32_t out = float_input(b, "y", s.out().vec());
    b.add_operator(tw::Op::conv_2d, {in, w}, {out}, s.options());
    b.set_inputs({in});
    b.set_outputs({out});
    CHECK(load_error(b.finish("conv")).find("zero point") != std::string::npos);
    CHECK(conv_err(s, {}, w8, {-0.1f}).find("positive") != std::string::npos);
    tw::ModelBuilder c;
    const int32_t cin = float_input(c, "x", s.in.vec());
    const int32_t cw = c.add_constant<int8_t>("w", DType::int8, s.filter().vec(), w8);
    const int32_t cout = float_input(c, "y", s.out().vec());
    c.add_operator(tw::Op::conv_2d, {cin, cw}, {cout}, s.options());
    c.set_inputs({cin});
    c.set_outputs({cout});
    CHECK(load_error(c.finish("conv")).find("quantization") != std::string::npos);
  }
  SUBCASE("grouped hybrid convolution") {
    ConvSpec t = s;
    t.groups = 2;
    CHECK(conv_err(t, {}, std::vector<int8_t>(8, 1), {0.1f}).find("grouped") != std::string::npos);
    CHECK(conv_err(t, std::vector<float>(8, 1.0f), {}, {}).empty());  // float groups run
  }
  SUBCASE("hybrid filter computed at run time, uint8 filter on a float input, int32 bias on float") {
    tw::ModelBuilder b;
    const int32_t in = float_input(b, "x", s.in.vec());
    const int32_t w = activation(b, "w", DType::int8, s.filter().vec(), q(0.1f, 0));
    const int32_t out = float_input(b, "y", s.out().vec());
    b.add_operator(tw::Op::conv_2d, {in, w}, {out}, s.options());
    b.set_inputs({in, w});
    b.set_outputs({out});
    CHECK(load_error(b.finish("conv")).find("constant") != std::string::npos);

    tw::ModelBuilder c;
    const int32_t cin = float_input(c, "x", s.in.vec());
    const int32_t cw = c.add_constant<uint8_t>("w", DType::uint8, s.filter().vec(), std::vector<uint8_t>(16, 1),
                                               q(0.1f, 0));
    const int32_t cout = float_input(c, "y", s.out().vec());
    c.add_operator(tw::Op::conv_2d, {cin, cw}, {cout}, s.options());
    c.set_inputs({cin});
    c.set_outputs({cout});
    CHECK(load_error(c.finish("conv")).find("supported: FLOAT32, INT8") != std::string::npos);

    tw::ModelBuilder d;
    const int32_t din = float_input(d, "x", s.in.vec());
    const int32_t dw = float_constant(d, "w", s.filter().vec(), wf);
    const int32_t db = d.add_constant<int32_t>("b", DType::int32, {2}, {1, 2});
    const int32_t dout = float_input(d, "y", s.out().vec());
    d.add_operator(tw::Op::conv_2d, {din, dw, db}, {dout}, s.options());
    d.set_inputs({din});
    d.set_outputs({dout});
    CHECK(load_error(d.finish("conv")).find("bias") != std::string::npos);
  }
  SUBCASE("float input with an int8 output, bias of the wrong length") {
    tw::ModelBuilder b;
    const int32_t in = float_input(b, "x", s.in.vec());
    const int32_t w = float_constant(b, "w", s.filter().vec(), wf);
    const int32_t out = activation(b, "y", DType::int8, s.out().vec(), q(0.1f, 0));
    b.add_operator(tw::Op::conv_2d, {in, w}, {out}, s.options());
    b.set_inputs({in});
    b.set_outputs({out});
    CHECK(load_error(b.finish("conv")).find("input and output") != std::string::npos);

    tw::ModelBuilder c;
    const int32_t cin = float_input(c, "x", s.in.vec());
    const int32_t cw = float_constant(c, "w", s.filter().vec(), wf);
    const int32_t cb = float_constant(c, "b", {1}, {1.0f});
    const int32_t cout = float_input(c, "y", s.out().vec());
    c.add_operator(tw::Op::conv_2d, {cin, cw, cb}, {cout}, s.options());
    c.set_inputs({cin});
    c.set_outputs({cout});
    CHECK(load_error(c.finish("conv")).find("elements") != std::string::npos);
  }
  SUBCASE("huge dilation") {
    ConvSpec t = s;
    t.padding = PaddingKind::same;
    t.dil_h = 1 << 30;
    CHECK(conv_err(t, wf, {}, {}).find("too large") != std::string::npos);
  }
}

TEST_CASE("DEPTHWISE_CONV_2D and FULLY_CONNECTED refuse malformed dynamic-range operands") {
  DepthwiseSpec d;
  d.in = Dims{1, 3, 3, 2};
  d.fh = d.fw = 2;
  CHECK(load_error(depthwise_model(d, {}, std::vector<int8_t>(8, 1), {0.1f, 0.2f, 0.3f}, {0, 0}))
            .find("scales") != std::string::npos);
  DepthwiseSpec t = d;
  t.act = Activation::sign_bit;
  CHECK(load_error(depthwise_model(t, std::vector<float>(8, 1.0f), {}, {}, {0, 0})).find("fused activation") !=
        std::string::npos);

  const std::vector<int8_t> w8(8, 1);
  tw::FullyConnected tanh_fc{Activation::tanh};
  CHECK(load_error(fc_model({1, 4}, 2, 4, {1, 2}, {}, w8, {0.1f}, nullptr, tanh_fc)).find("fused activation") !=
        std::string::npos);
  CHECK(load_error(fc_model({1, 4}, 2, 4, {1, 2}, std::vector<float>(8, 1.0f), {}, {}, nullptr, tanh_fc))
            .find("fused activation") != std::string::npos);
  CHECK(load_error(fc_model({1, 4}, 2, 4, {1, 2}, {}, w8, {0.1f, 0.2f, 0.3f}, nullptr, tw::FullyConnected{}))
            .find("scales") != std::string::npos);
  tw::FullyConnected keep{};
  keep.keep_num_dims = true;
  CHECK(load_error(fc_model({2, 8}, 2, 4, {4, 2}, std::vector<float>(8, 1.0f), {}, {}, nullptr, keep))
            .find("keep_num_dims") != std::string::npos);
  CHECK(load_error(fc_model({1, 4}, 2, 4, {1, 3}, std::vector<float>(8, 1.0f), {}, {}, nullptr, tw::FullyConnected{}))
            .find("output") != std::string::npos);
  {  // accumulation depth 0 (the model reader refuses empty dimensions before the operator sees them)
    tw::ModelBuilder b;
    const int32_t in = float_input(b, "x", {1, 4});
    const int32_t w = float_input(b, "w", {2, 0});
    const int32_t out = float_input(b, "y", {1, 2});
    b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
    b.set_inputs({in, w});
    b.set_outputs({out});
    CHECK(load_error(b.finish("fc")).find("size 0") != std::string::npos);
  }
}

TEST_CASE("TRANSPOSE_CONV refuses malformed operands") {
  TransposeSpec s;
  s.in = Dims{1, 2, 2, 2};
  s.fh = s.fw = 3;
  s.out_h = s.out_w = 4;
  s.stride_h = s.stride_w = 2;
  s.out_c = 2;
  const std::vector<int8_t> w(36, 1);
  auto model = [&](const std::vector<int32_t>& shape_values, const tw::Quant& fq, DType out_type, int32_t bias_t) {
    tw::ModelBuilder b;
    const int32_t shape = b.add_constant<int32_t>("shape", DType::int32, {4}, shape_values);
    const int32_t in = activation(b, "x", DType::int8, s.in.vec(), test::q(0.5f, 0));
    const int32_t wt = b.add_constant<int8_t>("w", DType::int8, s.filter().vec(), w, fq);
    int32_t bi = -1;
    if (bias_t == 1) bi = b.add_constant<int32_t>("b", DType::int32, {2}, {0, 0});
    if (bias_t == 2) bi = float_constant(b, "b", {2}, {0, 0});
    const int32_t out = activation(b, "y", out_type, s.out().vec(), test::q(0.125f, 0));
    b.add_operator(tw::Op::transpose_conv, {shape, wt, in, bi}, {out}, s.options());
    b.set_inputs({in});
    b.set_outputs({out});
    return b.finish("transpose conv");
  };
  const tw::Quant good = test::q(0.25f, 0);
  CHECK(load_error(model(s.out().vec(), good, DType::int8, 1)).empty());
  CHECK(load_error(model({1, 4, 5, 2}, good, DType::int8, 1)).find("differs") != std::string::npos);
  CHECK(load_error(model(s.out().vec(), test::q(0.25f, 2), DType::int8, 1)).find("zero point") != std::string::npos);
  CHECK(load_error(model(s.out().vec(), tw::Quant{{0.25f, 0.5f, 1.0f}, {0, 0, 0}, 0}, DType::int8, 1))
            .find("scales") != std::string::npos);
  CHECK(load_error(model(s.out().vec(), good, DType::uint8, 1)).find("input and output") != std::string::npos);
  CHECK(load_error(model(s.out().vec(), good, DType::int8, 2)).find("bias") != std::string::npos);
  {  // an output shape computed at run time
    tw::ModelBuilder b;
    const int32_t shape = plain_tensor(b, "shape", DType::int32, {4});
    const int32_t in = float_input(b, "x", s.in.vec());
    const int32_t wt = float_constant(b, "w", s.filter().vec(), std::vector<float>(36, 1.0f));
    const int32_t out = float_input(b, "y", s.out().vec());
    b.add_operator(tw::Op::transpose_conv, {shape, wt, in}, {out}, s.options());
    b.set_inputs({shape, in});
    b.set_outputs({out});
    CHECK(load_error(b.finish("transpose conv")).find("constant") != std::string::npos);
  }
  {  // filter input channels differ from the input's; TANH on float; int16
    tw::ModelBuilder b;
    const int32_t shape = b.add_constant<int32_t>("shape", DType::int32, {4}, s.out().vec());
    const int32_t in = float_input(b, "x", {1, 2, 2, 3});
    const int32_t wt = float_constant(b, "w", s.filter().vec(), std::vector<float>(36, 1.0f));
    const int32_t out = float_input(b, "y", s.out().vec());
    b.add_operator(tw::Op::transpose_conv, {shape, wt, in}, {out}, s.options());
    b.set_inputs({in});
    b.set_outputs({out});
    CHECK(load_error(b.finish("transpose conv")).find("input channels") != std::string::npos);

    TransposeSpec t = s;
    t.act = Activation::tanh;
    CHECK(load_error(transpose_model(t, DType::float32, std::vector<float>(36, 1.0f), {}, {0, 0}, {}, {}))
              .find("fused activation") != std::string::npos);

    tw::ModelBuilder c;
    const int32_t cshape = c.add_constant<int32_t>("shape", DType::int32, {4}, s.out().vec());
    const int32_t cin = activation(c, "x", DType::int16, s.in.vec(), test::q(0.5f, 0));
    const int32_t cw = c.add_constant<int8_t>("w", DType::int8, s.filter().vec(), w, good);
    const int32_t cout = activation(c, "y", DType::int16, s.out().vec(), test::q(0.125f, 0));
    c.add_operator(tw::Op::transpose_conv, {cshape, cw, cin}, {cout}, s.options());
    c.set_inputs({cin});
    c.set_outputs({cout});
    CHECK(load_error(c.finish("transpose conv")).find("INT16") != std::string::npos);
  }
}

// ================================== optimised backend against the reference ==================================
// Randomized kernel parameters (white-box, as the loader would make them) run on the reference backend and on the
// optimised one at every SIMD level of this processor, on 1 and 3 threads with even the smallest operator split
// (minimum parallel work 0): float32 CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and TRANSPOSE_CONV, int8 and uint8
// TRANSPOSE_CONV. Every buffer is its own exact-size allocation (AddressSanitizer sees any stray access). Floats must
// have the reference's bits, except that a NaN only has to be a NaN (two NaNs meeting may keep either payload).
// Each case also proves the optimised path ran: the float drivers are called alone and must accept the parameters
// with exactly the scratch they ask for; TRANSPOSE_CONV's prepared data must be marked usable, and a poisoned
// prepared block must change the result.

namespace {

namespace cpu = engine::cpu;

bool same_float(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

void check_same_floats(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (same_float(got[i], want[i])) continue;
    if (bad++ < 5) FAIL_CHECK(what << ": element " << i << ": got " << got[i] << ", expected " << want[i]);
  }
  CHECK_MESSAGE(bad == 0, what);
}

struct OptConfig {
  cpu::SimdLevel level;
  size_t threads;
};
std::vector<OptConfig> opt_configs() {
  std::vector<OptConfig> v;
  for (cpu::SimdLevel level : cpu::available_simd_levels())
    for (size_t threads : {size_t{1}, size_t{3}}) v.push_back({level, threads});
  return v;
}
std::string config_name(const OptConfig& c) {
  return std::string(cpu::simd_level_name(c.level)) + ", " + std::to_string(c.threads) + " threads";
}

// Random floats; with `specials`, about one in 12 is +-inf, NaN or -0.0.
std::vector<float> special_floats(std::mt19937& rng, int64_t n, float range, bool specials) {
  std::vector<float> v = random_floats(rng, n, range);
  if (!specials) return v;
  std::uniform_int_distribution<int> pick(0, 47);
  for (float& x : v) {
    switch (pick(rng)) {
      case 0: x = kInf; break;
      case 1: x = -kInf; break;
      case 2: x = std::numeric_limits<float>::quiet_NaN(); break;
      case 3: x = -0.0f; break;
      default: break;
    }
  }
  return v;
}

// Runs `p` on `backend` with exact-size output, scratch and prepared buffers; `usable` receives the prepared
// header's flag (-1: no prepared data); `poison` may alter the prepared block before the run.
template <typename T, typename P>
std::vector<T> run_params(cpu::KernelBackend& backend, P p, size_t elements, int* usable = nullptr,
                          const std::function<void(std::vector<uint8_t>&)>& poison = {}) {
  std::vector<T> out(elements, T{99});
  std::vector<uint8_t> scratch(backend.scratch_bytes(cpu::OpParams{p}));
  std::vector<uint8_t> prepared(backend.prepared_bytes(cpu::OpParams{p}));
  if (usable) *usable = -1;
  if (!prepared.empty()) {
    backend.prepare(cpu::OpParams{p}, prepared);
    cpu::opt::PreparedHeader h;
    std::memcpy(&h, prepared.data(), sizeof h);
    if (usable) *usable = h.magic == cpu::opt::kPreparedMagic && h.usable ? 1 : 0;
    if (poison) poison(prepared);
    p.prepared = std::span<const uint8_t>(prepared);
  }
  p.output = out.data();
  p.scratch = std::span<uint8_t>(scratch);
  REQUIRE(cpu::run_kernel(backend, cpu::OpParams{p}).ok());
  return out;
}

template <typename T, typename P>
std::vector<T> run_ref_params(const P& p, size_t elements) {
  cpu::ReferenceKernelBackend ref;
  return run_params<T>(ref, p, elements);
}

// A float driver alone (conv2d_float_run, ...) with exactly the scratch `scratch_bytes` asks for: REQUIREs that it
// takes the parameters, returns the output.
template <typename P, typename Scratch, typename Run>
std::vector<float> run_driver(P p, size_t elements, const OptConfig& c, const Scratch& scratch_bytes, const Run& run) {
  std::vector<float> out(elements, 55.0f);
  cpu::opt::WorkerPool pool(c.threads, 0);
  std::vector<uint8_t> scratch(scratch_bytes(p, pool.size()));
  p.output = out.data();
  p.scratch = std::span<uint8_t>(scratch);
  REQUIRE_MESSAGE(run(p, c.level, pool), "the optimised float path declined the parameters");
  return out;
}

// `p` with the reference backend, then the optimised backend and the float driver alone in every configuration,
// all compared with the reference. Returns the reference's output.
template <typename P, typename Scratch, typename Run>
std::vector<float> check_float_opt(const P& p, size_t elements, const Scratch& scratch_bytes, const Run& run) {
  const std::vector<float> want = run_ref_params<float>(p, elements);
  for (const OptConfig& c : opt_configs()) {
    cpu::OptimizedKernelBackend backend(c.level, c.threads, /*min_parallel_work=*/0);
    check_same_floats(run_params<float>(backend, p, elements), want, "kernels=opt (" + config_name(c) + ")");
    check_same_floats(run_driver(p, elements, c, scratch_bytes, run), want, "float driver (" + config_name(c) + ")");
  }
  return want;
}

// The float activation bounds the loader makes (CalculateActivationRange<float>).
void set_float_activation(Activation act, float& lo, float& hi) {
  const auto r = float_range(act);
  lo = r.first;
  hi = r.second;
}

cpu::Dims4 dims4(const Dims& d) { return cpu::Dims4{d.n, d.h, d.w, d.c}; }

// Channel counts: mostly small, often past a multiple of 8, sometimes up to 70.
int32_t random_channels(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  switch (pick(0, 3)) {
    case 0: return pick(1, 70);
    case 1: return 8 * pick(1, 4) + pick(-1, 1);
    default: return pick(1, 12);
  }
}

ConvSpec random_opt_conv_spec(std::mt19937& rng, int round) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ConvSpec s;
  s.groups = pick(0, 5) == 0 ? pick(2, 3) : 1;
  const int32_t per_group_in = random_channels(rng), per_group_out = random_channels(rng);
  s.in = Dims{pick(1, 3), pick(1, 11), pick(1, 11), s.groups * per_group_in};
  s.out_c = s.groups * per_group_out;
  if (round % 6 == 0) {  // a pointwise convolution (the flattened path)
    s.groups = 1;
    s.in.c = per_group_in;
    s.out_c = per_group_out;
  } else {
    s.fh = pick(1, 5);
    s.fw = pick(1, 5);
    s.stride_h = pick(1, 3);
    s.stride_w = pick(1, 3);
    if (pick(0, 2) == 0) {
      s.dil_h = pick(1, 3);
      s.dil_w = pick(1, 3);
    }
    s.padding = pick(0, 1) ? PaddingKind::same : PaddingKind::valid;
  }
  const Activation acts[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  s.act = acts[pick(0, 3)];
  s.bias = pick(0, 3) != 0;
  if (s.out().h < 1 || s.out().w < 1) s.padding = PaddingKind::same;
  // At most a few million multiply-accumulates (the test runs under the sanitizers).
  while (s.out().size() * s.fh * s.fw * (s.in.c / s.groups) > 3'000'000 && (s.in.h > 1 || s.in.w > 1)) {
    s.in.h = std::max(1, s.in.h - 2);
    s.in.w = std::max(1, s.in.w - 2);
    if (s.out().h < 1 || s.out().w < 1) s.padding = PaddingKind::same;
  }
  return s;
}

cpu::Conv2DParams float_conv_params(const ConvSpec& s, const std::vector<float>& x, const std::vector<float>& w,
                                    const std::vector<float>& bias) {
  cpu::Conv2DParams p;
  p.dtype = DType::float32;
  p.filter_type = DType::float32;
  p.input_shape = dims4(s.in);
  p.filter_shape = dims4(s.filter());
  p.output_shape = dims4(s.out());
  p.input = x.data();
  p.filter = w.data();
  p.float_bias = s.bias ? bias.data() : nullptr;
  p.stride_h = s.stride_h;
  p.stride_w = s.stride_w;
  p.dilation_h = s.dil_h;
  p.dilation_w = s.dil_w;
  p.padding.top = s.ah().pad;
  p.padding.left = s.aw().pad;
  set_float_activation(s.act, p.float_act_min, p.float_act_max);
  return p;
}

DepthwiseSpec random_opt_depthwise_spec(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  DepthwiseSpec s;
  s.multiplier = pick(0, 2) == 0 ? pick(2, 4) : 1;
  s.in = Dims{pick(1, 3), pick(1, 12), pick(1, 12), s.multiplier > 1 ? pick(1, 20) : random_channels(rng)};
  s.fh = pick(1, 5);
  s.fw = pick(1, 5);
  s.stride_h = pick(1, 3);
  s.stride_w = pick(1, 3);
  if (pick(0, 2) == 0) {
    s.dil_h = pick(1, 3);
    s.dil_w = pick(1, 3);
  }
  s.padding = pick(0, 1) ? PaddingKind::same : PaddingKind::valid;
  const Activation acts[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  s.act = acts[pick(0, 3)];
  s.bias = pick(0, 3) != 0;
  if (s.out().h < 1 || s.out().w < 1) s.padding = PaddingKind::same;
  return s;
}

cpu::DepthwiseConv2DParams float_depthwise_params(const DepthwiseSpec& s, const std::vector<float>& x,
                                                  const std::vector<float>& w, const std::vector<float>& bias) {
  cpu::DepthwiseConv2DParams p;
  p.dtype = DType::float32;
  p.filter_type = DType::float32;
  p.input_shape = dims4(s.in);
  p.filter_shape = dims4(s.filter());
  p.output_shape = dims4(s.out());
  p.input = x.data();
  p.filter = w.data();
  p.float_bias = s.bias ? bias.data() : nullptr;
  p.stride_h = s.stride_h;
  p.stride_w = s.stride_w;
  p.dilation_h = s.dil_h;
  p.dilation_w = s.dil_w;
  p.depth_multiplier = s.multiplier;
  p.padding.top = s.ah().pad;
  p.padding.left = s.aw().pad;
  set_float_activation(s.act, p.float_act_min, p.float_act_max);
  return p;
}

// TRANSPOSE_CONV shapes: the converter's output extents, or any other (the kernel takes whatever the shape input
// says), and strides up to 4 (phases without taps when the stride exceeds the filter).
TransposeSpec random_opt_transpose_spec(std::mt19937& rng, bool wide_channels) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  TransposeSpec s;
  s.in = Dims{pick(1, 2), pick(1, 6), pick(1, 6), wide_channels ? random_channels(rng) : pick(1, 12)};
  s.out_c = wide_channels ? random_channels(rng) : pick(1, 20);
  s.stride_h = pick(1, 4);
  s.stride_w = pick(1, 4);
  s.fh = pick(1, 5);
  s.fw = pick(1, 5);
  s.padding = pick(0, 1) ? PaddingKind::same : PaddingKind::valid;
  if (pick(0, 3) == 0) {
    s.out_h = pick(1, s.in.h * s.stride_h + s.fh);
    s.out_w = pick(1, s.in.w * s.stride_w + s.fw);
  } else if (s.padding == PaddingKind::same) {
    s.out_h = s.in.h * s.stride_h;
    s.out_w = s.in.w * s.stride_w;
  } else {
    s.out_h = (s.in.h - 1) * s.stride_h + s.fh;
    s.out_w = (s.in.w - 1) * s.stride_w + s.fw;
  }
  const Activation acts[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  s.act = acts[pick(0, 3)];
  s.bias = pick(0, 3) != 0;
  return s;
}

// The loader's padding: ComputePaddingHeightWidth over the output (see ops/transpose_conv.cpp).
int32_t transpose_padding(PaddingKind padding, int32_t out, int32_t filter, int32_t stride) {
  const int64_t forward = padding == PaddingKind::same ? (int64_t{out} + stride - 1) / stride
                                                       : (int64_t{out} + stride - filter) / stride;
  if (forward < 0) return 0;
  const int64_t total = (forward - 1) * stride + filter - out;
  return total > 0 ? static_cast<int32_t>(total / 2) : 0;
}

cpu::TransposeConvParams transpose_params(const TransposeSpec& s, DType type, const void* x, const void* w) {
  cpu::TransposeConvParams p;
  p.dtype = type;
  p.input_shape = dims4(s.in);
  p.filter_shape = dims4(s.filter());
  p.output_shape = dims4(s.out());
  p.input = x;
  p.filter = w;
  p.stride_h = s.stride_h;
  p.stride_w = s.stride_w;
  p.padding.top = transpose_padding(s.padding, s.out_h, s.fh, s.stride_h);
  p.padding.left = transpose_padding(s.padding, s.out_w, s.fw, s.stride_w);
  set_float_activation(s.act, p.float_act_min, p.float_act_max);
  return p;
}

// The gather form's expected values for `p`'s padding (TransposeSpec derives it from the forward window instead).
std::vector<float> transpose_float_gather(const cpu::TransposeConvParams& p, const std::vector<float>& x,
                                          const std::vector<float>& w) {
  const Dims in{p.input_shape.n, p.input_shape.h, p.input_shape.w, p.input_shape.c};
  const Dims f{p.filter_shape.n, p.filter_shape.h, p.filter_shape.w, p.filter_shape.c};
  const Dims out{p.output_shape.n, p.output_shape.h, p.output_shape.w, p.output_shape.c};
  std::vector<float> y(static_cast<size_t>(out.size()));
  for (int32_t b = 0; b < out.n; ++b)
    for (int32_t oy = 0; oy < out.h; ++oy)
      for (int32_t ox = 0; ox < out.w; ++ox)
        for (int32_t oc = 0; oc < out.c; ++oc) {
          float total = 0.0f;
          for (int32_t iy = 0; iy < in.h; ++iy) {
            const int32_t fy = oy + p.padding.top - iy * p.stride_h;
            if (fy < 0 || fy >= f.h) continue;
            for (int32_t ix = 0; ix < in.w; ++ix) {
              const int32_t fx = ox + p.padding.left - ix * p.stride_w;
              if (fx < 0 || fx >= f.w) continue;
              for (int32_t ic = 0; ic < in.c; ++ic)
                total = total + mul(x[static_cast<size_t>(in.at(b, iy, ix, ic))],
                                    w[static_cast<size_t>(f.at(oc, fy, fx, ic))]);
            }
          }
          if (p.float_bias) total = total + p.float_bias[oc];
          y[static_cast<size_t>(out.at(b, oy, ox, oc))] =
              std::min(std::max(total, p.float_act_min), p.float_act_max);
        }
  return y;
}

// Flips `bytes` bytes of the prepared block after its header (the first packed weights): the result must change.
std::function<void(std::vector<uint8_t>&)> poison_prepared(size_t bytes) {
  return [bytes](std::vector<uint8_t>& prepared) {
    for (size_t i = 0; i < bytes; ++i) prepared.at(cpu::opt::kPreparedHeaderBytes + i) ^= 0x5A;
  };
}

bool has_special(const std::vector<float>& v) {
  return std::any_of(v.begin(), v.end(), [](float x) { return !std::isfinite(x); });
}

}  // namespace

TEST_CASE("opt float32 CONV_2D: randomized against ref (groups, strides, dilations, SAME/VALID, 1..70 channels)") {
  std::mt19937 rng(9001);
  int special_rounds = 0;
  for (int round = 0; round < 72; ++round) {
    const ConvSpec s = random_opt_conv_spec(rng, round);
    CAPTURE(round);
    CAPTURE(s.in.vec());
    CAPTURE(s.out_c);
    const bool specials = round % 4 == 3;
    special_rounds += specials;
    const auto x = special_floats(rng, s.in.size(), 2.0f, specials);
    const auto w = special_floats(rng, s.filter().size(), 1.0f, specials && round % 8 == 7);
    const auto bias = special_floats(rng, s.out_c, 1.0f, false);
    const cpu::Conv2DParams p = float_conv_params(s, x, w, bias);
    const auto want = check_float_opt(p, static_cast<size_t>(s.out().size()), cpu::opt::conv2d_float_scratch_bytes,
                                      cpu::opt::conv2d_float_run);
    if (!has_special(x) && !has_special(w)) check_same_floats(want, conv_float_expected(s, x, w, bias), "ref");
  }
  CHECK(special_rounds == 18);
}

TEST_CASE("opt float32 CONV_2D: a wide layer with many register blocks and edge pixels") {
  std::mt19937 rng(12);
  ConvSpec s;
  s.in = Dims{1, 14, 23, 19};
  s.out_c = 37;
  s.fh = s.fw = 3;
  s.padding = PaddingKind::same;
  s.act = Activation::relu6;
  for (int32_t stride : {1, 2}) {
    s.stride_h = s.stride_w = stride;
    const auto x = random_floats(rng, s.in.size(), 3.0f);
    const auto w = random_floats(rng, s.filter().size(), 1.0f);
    const auto bias = random_floats(rng, s.out_c, 1.0f);
    const auto want = check_float_opt(float_conv_params(s, x, w, bias), static_cast<size_t>(s.out().size()),
                                      cpu::opt::conv2d_float_scratch_bytes, cpu::opt::conv2d_float_run);
    check_same_floats(want, conv_float_expected(s, x, w, bias), "ref");
  }
}

TEST_CASE("opt float32 CONV_2D: pointwise layers of a few pixels (fully connected path) and of many") {
  std::mt19937 rng(77);
  for (int32_t pixels : {1, 2, 5, 31, 32, 33, 97}) {
    CAPTURE(pixels);
    ConvSpec s;
    s.in = Dims{1, 1, pixels, std::uniform_int_distribution<int>(1, 70)(rng)};
    s.out_c = std::uniform_int_distribution<int>(1, 70)(rng);
    s.act = pixels % 2 ? Activation::relu : Activation::none;
    s.bias = pixels != 2;
    const auto x = special_floats(rng, s.in.size(), 2.0f, pixels == 5);
    const auto w = random_floats(rng, s.filter().size(), 1.0f);
    const auto bias = random_floats(rng, s.out_c, 1.0f);
    const auto want = check_float_opt(float_conv_params(s, x, w, bias), static_cast<size_t>(s.out().size()),
                                      cpu::opt::conv2d_float_scratch_bytes, cpu::opt::conv2d_float_run);
    if (!has_special(x)) check_same_floats(want, conv_float_expected(s, x, w, bias), "ref");
  }
}

TEST_CASE("opt float32 CONV_2D: signed zeros and infinite weights at padded taps") {
  // -0.0 inputs and weights with a -0.0 bias: the reference's total starts at +0.0, so an output is +0.0 + -0.0 =
  // +0.0. Channel 0's weights at tap (0, 0) are infinite: -0.0 x inf is NaN where that tap lies inside the input,
  // but the top row and left column skip it (a padded tap adding 0 x inf would make them NaN too).
  ConvSpec s;
  s.in = Dims{1, 4, 5, 3};
  s.out_c = 10;
  s.fh = s.fw = 3;
  s.padding = PaddingKind::same;
  const std::vector<float> x(static_cast<size_t>(s.in.size()), -0.0f);
  std::vector<float> w(static_cast<size_t>(s.filter().size()), -0.0f);
  for (size_t ic = 0; ic < 3; ++ic) w[ic] = kInf;
  const std::vector<float> bias(10, -0.0f);
  const auto want = check_float_opt(float_conv_params(s, x, w, bias), static_cast<size_t>(s.out().size()),
                                    cpu::opt::conv2d_float_scratch_bytes, cpu::opt::conv2d_float_run);
  const Dims out = s.out();
  for (int32_t y = 0; y < out.h; ++y)
    for (int32_t x0 = 0; x0 < out.w; ++x0)
      for (int32_t c = 0; c < out.c; ++c) {
        const float v = want[static_cast<size_t>(out.at(0, y, x0, c))];
        if (c == 0 && y > 0 && x0 > 0) CHECK(std::isnan(v));
        else CHECK(std::bit_cast<uint32_t>(v) == 0u);
      }
}

TEST_CASE("opt float32 DEPTHWISE_CONV_2D: randomized against ref (multipliers 1..4, strides, dilations)") {
  std::mt19937 rng(9002);
  int multiplied = 0;
  for (int round = 0; round < 72; ++round) {
    const DepthwiseSpec s = random_opt_depthwise_spec(rng);
    CAPTURE(round);
    CAPTURE(s.in.vec());
    CAPTURE(s.multiplier);
    multiplied += s.multiplier > 1;
    const bool specials = round % 4 == 3;
    const auto x = special_floats(rng, s.in.size(), 2.0f, specials);
    const auto w = special_floats(rng, s.filter().size(), 1.0f, specials && round % 8 == 7);
    const auto bias = special_floats(rng, s.out().c, 1.0f, false);
    const cpu::DepthwiseConv2DParams p = float_depthwise_params(s, x, w, bias);
    const auto want = check_float_opt(p, static_cast<size_t>(s.out().size()),
                                      cpu::opt::depthwise_float_scratch_bytes, cpu::opt::depthwise_float_run);
    if (!has_special(x) && !has_special(w)) check_same_floats(want, depthwise_float_expected(s, x, w, bias), "ref");
  }
  CHECK(multiplied > 10);
}

TEST_CASE("opt float32 FULLY_CONNECTED: randomized against ref (batches 1..9, depths 1..300, 1..70 outputs)") {
  std::mt19937 rng(9003);
  const Activation acts[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  for (int round = 0; round < 60; ++round) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int32_t batches = pick(1, 9), depth = pick(0, 2) ? pick(1, 40) : pick(1, 300);
    const int32_t units = random_channels(rng);
    const Activation act = acts[round % 4];
    const bool specials = round % 4 == 3;
    CAPTURE(round);
    const auto x = special_floats(rng, int64_t{batches} * depth, 2.0f, specials);
    const auto w = special_floats(rng, int64_t{units} * depth, 1.0f, specials && round % 8 == 7);
    const auto bias = random_floats(rng, units, 1.0f);
    cpu::FullyConnectedParams p;
    p.dtype = DType::float32;
    p.filter_type = DType::float32;
    p.batches = batches;
    p.accum_depth = depth;
    p.output_depth = units;
    p.input = x.data();
    p.weights = w.data();
    p.float_bias = round % 3 ? bias.data() : nullptr;
    set_float_activation(act, p.float_act_min, p.float_act_max);
    const auto scratch = [](const cpu::FullyConnectedParams&, size_t) { return size_t{0}; };
    const auto want = check_float_opt(p, static_cast<size_t>(batches * units), scratch,
                                      cpu::opt::fully_connected_float_run);
    if (!has_special(x) && !has_special(w))
      check_same_floats(want, fc_float_expected(x, w, p.float_bias ? &bias : nullptr, units, depth, act), "ref");
  }
}

TEST_CASE("opt float32 TRANSPOSE_CONV: randomized against ref, prepared weights used") {
  std::mt19937 rng(9004);
  for (int round = 0; round < 72; ++round) {
    const TransposeSpec s = random_opt_transpose_spec(rng, true);
    CAPTURE(round);
    CAPTURE(s.in.vec());
    CAPTURE(s.out().vec());
    CAPTURE(s.fh);
    CAPTURE(s.fw);
    const bool specials = round % 4 == 3;
    const auto x = special_floats(rng, s.in.size(), 2.0f, specials);
    const auto w = special_floats(rng, s.filter().size(), 1.0f, specials && round % 8 == 7);
    const auto bias = random_floats(rng, s.out_c, 1.0f);
    cpu::TransposeConvParams p = transpose_params(s, DType::float32, x.data(), w.data());
    p.float_bias = s.bias ? bias.data() : nullptr;
    const auto elements = static_cast<size_t>(s.out().size());
    const auto want = run_ref_params<float>(p, elements);
    if (!has_special(x) && !has_special(w)) check_same_floats(want, transpose_float_gather(p, x, w), "ref");
    for (const OptConfig& c : opt_configs()) {
      cpu::OptimizedKernelBackend backend(c.level, c.threads, 0);
      int usable = 0;
      check_same_floats(run_params<float>(backend, p, elements, &usable), want, "kernels=opt (" + config_name(c) + ")");
      CHECK(usable == 1);
    }
  }
}

namespace {

// One randomized 8-bit TRANSPOSE_CONV: int8 (per-channel multipliers, symmetric weights) or uint8 (one multiplier,
// weights with a zero point), any output offset and activation range.
struct Quantized8 {
  TransposeSpec s;
  std::vector<uint8_t> x, w;
  std::vector<int32_t> bias;
  cpu::TransposeConvParams p;
};

Quantized8 random_transpose8(std::mt19937& rng, DType type) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Quantized8 q;
  q.s = random_opt_transpose_spec(rng, true);
  const bool u8 = type == DType::uint8;
  q.x = random_bytes<uint8_t>(rng, q.s.in.size(), 0, 255);
  q.w = random_bytes<uint8_t>(rng, q.s.filter().size(), 0, 255);
  if (!u8)  // symmetric int8 weights in [-127, 127]
    for (uint8_t& v : q.w)
      if (v == 0x80) v = 0x81;
  q.bias = random_bytes<int32_t>(rng, q.s.out_c, -(1 << 20), 1 << 20);
  q.p = transpose_params(q.s, type, q.x.data(), q.w.data());
  cpu::TransposeConvParams& p = q.p;
  p.bias = q.s.bias ? q.bias.data() : nullptr;
  p.input_offset = u8 ? -pick(0, 255) : pick(-127, 128);
  p.filter_offset = u8 ? -pick(0, 255) : 0;
  p.output_offset = u8 ? pick(0, 255) : pick(-128, 127);
  // The sums reach about taps x channels x 2^16; a shift of -8 .. -20 maps them onto the whole 8-bit range (and
  // past it: the clamp), a multiplier in [2^30, 2^31) as QuantizeMultiplier makes.
  const int32_t channels = u8 ? 1 : q.s.out_c;
  for (int32_t c = 0; c < q.s.out_c; ++c) {
    if (c < channels) {
      p.output_multiplier.push_back(pick(1 << 30, std::numeric_limits<int32_t>::max()));
      p.output_shift.push_back(pick(-20, -8));
    } else {
      p.output_multiplier.push_back(p.output_multiplier[0]);
      p.output_shift.push_back(p.output_shift[0]);
    }
  }
  const int32_t lowest = u8 ? 0 : -128, highest = u8 ? 255 : 127;
  p.act_min = pick(0, 2) == 0 ? pick(lowest, lowest + 100) : lowest;
  p.act_max = pick(0, 2) == 0 ? pick(p.act_min, highest) : highest;
  return q;
}

void check_transpose8(DType type, uint32_t seed, int rounds) {
  std::mt19937 rng(seed);
  for (int round = 0; round < rounds; ++round) {
    const Quantized8 q = random_transpose8(rng, type);
    CAPTURE(round);
    CAPTURE(q.s.in.vec());
    CAPTURE(q.s.out().vec());
    CAPTURE(q.s.fh);
    CAPTURE(q.s.fw);
    CAPTURE(q.s.stride_h);
    CAPTURE(q.s.stride_w);
    const auto elements = static_cast<size_t>(q.s.out().size());
    const auto want = run_ref_params<uint8_t>(q.p, elements);
    for (const OptConfig& c : opt_configs()) {
      cpu::OptimizedKernelBackend backend(c.level, c.threads, 0);
      int usable = 0;
      const auto got = run_params<uint8_t>(backend, q.p, elements, &usable);
      CHECK_MESSAGE(got == want, "kernels=opt (" << config_name(c) << ") differs from kernels=ref");
      CHECK(usable == 1);
    }
  }
}

}  // namespace

TEST_CASE("opt int8 TRANSPOSE_CONV: randomized against ref (per-channel requantization, phases, tails)") {
  check_transpose8(DType::int8, 9005, 72);
}

TEST_CASE("opt uint8 TRANSPOSE_CONV: randomized against ref (weights with a zero point)") {
  check_transpose8(DType::uint8, 9006, 40);
}

TEST_CASE("opt TRANSPOSE_CONV: hand-computed int8 and float32 sums, and a poisoned prepared block is read") {
  // 1x1 input of 2 channels (3, -2) + input offset 1 -> (4, -1); 2x2 filter, stride 2, output 2x2 of one channel:
  // output (y, x) = 4 w[y][x][0] - w[y][x][1] + bias 10, multiplier 2^30 (x 0.5), shift 0, offset 0.
  TransposeSpec s;
  s.in = Dims{1, 1, 1, 2};
  s.fh = s.fw = 2;
  s.stride_h = s.stride_w = 2;
  s.out_h = s.out_w = 2;
  const std::vector<int8_t> x{3, -2};
  const std::vector<int8_t> w{1, 2, 3, 4, -5, 6, 20, 0};  // taps (0,0) (0,1) (1,0) (1,1), two channels each
  const std::vector<int32_t> bias{10};
  cpu::TransposeConvParams p = transpose_params(s, DType::int8, x.data(), w.data());
  p.bias = bias.data();
  p.input_offset = 1;
  p.output_multiplier = {1 << 30};
  p.output_shift = {0};
  p.act_min = -128;
  p.act_max = 127;
  // (4 - 2 + 10) / 2 = 6, (12 - 4 + 10) / 2 = 9, (-20 - 6 + 10) / 2 = -8, (80 + 10) / 2 = 45.
  const std::vector<int8_t> want{6, 9, -8, 45};
  const auto ref = run_ref_params<int8_t>(p, 4);
  CHECK(ref == want);
  for (const OptConfig& c : opt_configs()) {
    cpu::OptimizedKernelBackend backend(c.level, c.threads, 0);
    CHECK(run_params<int8_t>(backend, p, 4) == want);
    CHECK(run_params<int8_t>(backend, p, 4, nullptr, poison_prepared(8)) != want);  // int16 weights of (0, 0)
  }
  // float32: the same numbers.
  const std::vector<float> xf{4, -1};
  std::vector<float> wf(w.begin(), w.end());
  const std::vector<float> fbias{10};
  cpu::TransposeConvParams f = transpose_params(s, DType::float32, xf.data(), wf.data());
  f.float_bias = fbias.data();
  const std::vector<float> fwant{12, 18, -16, 90};
  check_same_floats(run_ref_params<float>(f, 4), fwant, "ref");
  for (const OptConfig& c : opt_configs()) {
    cpu::OptimizedKernelBackend backend(c.level, c.threads, 0);
    check_same_floats(run_params<float>(backend, f, 4), fwant, "opt");
    const auto poisoned = run_params<float>(backend, f, 4, nullptr, poison_prepared(64));
    CHECK_FALSE(std::equal(poisoned.begin(), poisoned.end(), fwant.begin(), same_float));
  }
}

TEST_CASE("opt float32 convolutions through whole models: every level and thread count, NaN compared as NaN") {
  // The loader's own parameters (padding, activation bounds, bias) and the backend's dispatch and scratch planning.
  std::mt19937 rng(9007);
  for (int round = 0; round < 12; ++round) {
    CAPTURE(round);
    Bytes model;
    Bytes input;
    switch (round % 3) {
      case 0: {
        const ConvSpec s = random_opt_conv_spec(rng, round);
        const auto w = random_floats(rng, s.filter().size(), 1.0f);
        model = conv_model(s, w, {}, {}, random_floats(rng, s.out_c, 1.0f));
        input = bytes_of(special_floats(rng, s.in.size(), 2.0f, round % 2 == 1));
        break;
      }
      case 1: {
        const DepthwiseSpec s = random_opt_depthwise_spec(rng);
        model = depthwise_model(s, random_floats(rng, s.filter().size(), 1.0f), {}, {},
                                random_floats(rng, s.out().c, 1.0f));
        input = bytes_of(special_floats(rng, s.in.size(), 2.0f, round % 2 == 1));
        break;
      }
      default: {
        const TransposeSpec s = random_opt_transpose_spec(rng, false);
        model = transpose_model(s, DType::float32, random_floats(rng, s.filter().size(), 1.0f), {},
                                random_floats(rng, s.out_c, 1.0f), {}, {});
        input = bytes_of(special_floats(rng, s.in.size(), 2.0f, round % 2 == 1));
        break;
      }
    }
    const auto want = values_of<float>(run_ref(model, {input})[0]);
    for (const OptConfig& c : opt_configs()) {
      cpu::CpuOptions o;
      o.threads = c.threads;
      cpu::CpuBackend backend(o, std::make_unique<cpu::OptimizedKernelBackend>(c.level, c.threads, 0), nullptr);
      check_same_floats(values_of<float>(run_model(backend, model, {input})[0]), want,
                        "kernels=opt (" + config_name(c) + ")");
    }
  }
}
