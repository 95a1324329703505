// aisrv tests — reference kernels other than the convolutions, on hand-computed cases: average pool rounding,
// ADD rescaling / broadcasting / saturation, SOFTMAX, MEAN, PAD, TRANSPOSE, QUANTIZE in every form, DEQUANTIZE,
// CONCATENATION with rescaling, RESHAPE copy.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "kernel_test_util.hpp"

using namespace aisrv::engine::cpu;
using aisrv::test::shape_of;

TEST_CASE("average pool rounds halves away from zero (int8) and up (uint8), skipping padding cells") {
  std::vector<int8_t> in = {-1, -2, 3, 4};  // 1x2x2x1
  std::vector<int8_t> out(2, 0);
  AveragePool2DParams p;
  p.input_shape = {1, 2, 2, 1};
  p.output_shape = {1, 1, 2, 1};
  p.filter_h = 2;
  p.filter_w = 1;
  p.stride_h = 1;
  p.stride_w = 1;
  p.input = in.data();
  p.output = out.data();
  p.act_min = -128;
  p.act_max = 127;
  ReferenceKernelBackend().average_pool2d(p);
  CHECK(out == std::vector<int8_t>{1, 1});  // (-1 + 3) / 2 = 1, (-2 + 4) / 2 = 1
  std::vector<int8_t> neg = {-1, -2, -5, -6};
  p.input = neg.data();
  ReferenceKernelBackend().average_pool2d(p);
  CHECK(out == std::vector<int8_t>{-3, -4});  // -3, -4 exactly
  p.output_shape = {1, 1, 1, 1};
  p.filter_w = 2;
  std::vector<int8_t> half = {-1, -2, 0, 0};  // -3 / 4 = -0.75 -> -1
  p.input = half.data();
  ReferenceKernelBackend().average_pool2d(p);
  CHECK(out[0] == -1);
  // A SAME window hanging over the edge averages only the cells inside: 3x3 at (0,0) with padding 1 sees 4 cells.
  std::vector<uint8_t> u = {1, 2, 2, 2};
  std::vector<uint8_t> uo(1, 0);
  AveragePool2DParams q = p;
  q.dtype = DType::uint8;
  q.filter_h = q.filter_w = 3;
  q.padding = {1, 1, 1, 1};
  q.input = u.data();
  q.output = uo.data();
  q.act_min = 0;
  q.act_max = 255;
  ReferenceKernelBackend().average_pool2d(q);
  CHECK(uo[0] == 2);  // 7 / 4 = 1.75 -> 2
}

namespace {

AddParams same_scale_add(Shape a, Shape b, Shape o) {
  AddParams p;
  auto extend = [](Shape s) {
    Shape r;
    r.rank = kMaxRank;
    r.dims.fill(1);
    for (int i = 0; i < s.rank; ++i) r.dims[static_cast<size_t>(kMaxRank - s.rank + i)] = s[i];
    return r;
  };
  p.input1_shape = extend(a);
  p.input2_shape = extend(b);
  p.output_shape = extend(o);
  // Both inputs and the output share one scale: multipliers 0.5, 0.5 and 2^-19 (TFLite's ADD preparation).
  p.input1_multiplier = p.input2_multiplier = 1 << 30;
  p.input1_shift = p.input2_shift = 0;
  p.output_multiplier = 1 << 30;
  p.output_shift = -18;
  p.act_min = -128;
  p.act_max = 127;
  return p;
}

}  // namespace

TEST_CASE("add with equal scales is exact, saturates, and broadcasts") {
  std::vector<int8_t> a = {3, 100, -100, 7};
  std::vector<int8_t> b = {4, 100, -100, -7};
  std::vector<int8_t> out(4, 0);
  AddParams p = same_scale_add(shape_of({1, 4}), shape_of({1, 4}), shape_of({1, 4}));
  p.input1 = a.data();
  p.input2 = b.data();
  p.output = out.data();
  ReferenceKernelBackend().add(p);
  CHECK(out == std::vector<int8_t>{7, 127, -128, 0});
  // Zero points: input 1 has zero point 1, output zero point -2 -> (3-1) + 4 - 2.
  p.input1_offset = -1;
  p.output_offset = -2;
  ReferenceKernelBackend().add(p);
  CHECK(out[0] == 4);
  // Broadcast a [2,1] column over a [2,3] matrix.
  std::vector<int8_t> m = {1, 2, 3, 4, 5, 6};
  std::vector<int8_t> col = {10, 20};
  std::vector<int8_t> bo(6, 0);
  AddParams q = same_scale_add(shape_of({2, 3}), shape_of({2, 1}), shape_of({2, 3}));
  q.input1 = m.data();
  q.input2 = col.data();
  q.output = bo.data();
  ReferenceKernelBackend().add(q);
  CHECK(bo == std::vector<int8_t>{11, 12, 13, 24, 25, 26});
}

TEST_CASE("softmax: uniform rows give 1/depth, a dominant logit gives ~1") {
  SoftmaxParams p;
  p.outer_size = 2;
  p.depth = 4;
  // input scale 0.5, beta 1: 0.5 * 2^26 = 2^25 -> (2^30, 26); diff_min = -floor(31 * 2^26 / 2^26) = -31.
  p.input_multiplier = 1 << 30;
  p.input_left_shift = 26;
  p.diff_min = -31;
  std::vector<int8_t> in = {5, 5, 5, 5, 100, 0, 0, 0};
  std::vector<int8_t> out(8, 0);
  p.input = in.data();
  p.output = out.data();
  ReferenceKernelBackend().softmax(p);
  for (int i = 0; i < 4; ++i) CHECK(out[static_cast<size_t>(i)] == -64);  // 0.25 * 256 - 128
  CHECK(out[4] == 127);                                                    // saturated at 255/256
  for (int i = 5; i < 8; ++i) CHECK(out[static_cast<size_t>(i)] == -128);  // exp(-50) and beyond diff_min
  // Against a float softmax on a spread of logits: within one step.
  std::vector<int8_t> logits = {0, 1, 2, 3, -4, 6, 2, 2};
  p.outer_size = 1;
  p.depth = 8;
  p.input = logits.data();
  ReferenceKernelBackend().softmax(p);
  double sum = 0;
  for (int8_t v : logits) sum += std::exp(0.5 * v);
  for (size_t i = 0; i < 8; ++i) {
    const double want = std::exp(0.5 * logits[i]) / sum * 256.0 - 128.0;
    CHECK_MESSAGE(std::abs(out[i] - std::min(127.0, std::round(want))) <= 1.0, "class " << i);
  }
}

TEST_CASE("mean of int8 over axes 1 and 2 with the count folded into the multiplier") {
  MeanParams p;
  p.input_shape = shape_of({1, 2, 2, 2});
  p.reduced = {false, true, true, false};
  p.output_elements = 2;
  p.reduced_elements = 4;
  // equal scales: multiplier 1.0 = (2^30, 1); count 4 -> shift 2 -> multiplier 2^30, shift -1.
  p.multiplier = 1 << 30;
  p.shift = -1;
  std::vector<int8_t> in = {1, -1, 2, -2, 3, -3, 4, -4};  // channel 0: 1..4, channel 1: -1..-4
  std::vector<int8_t> out(2, 0);
  std::vector<uint8_t> scratch(8);
  p.input = in.data();
  p.output = out.data();
  p.scratch = scratch;
  ReferenceKernelBackend().mean(p);
  CHECK(out == std::vector<int8_t>{3, -3});  // 2.5 -> 3, -2.5 -> -3
  p.input_zero_point = -2;  // sums are taken relative to the zero point: (10 + 8) / 4 = 4.5 -> 5
  ReferenceKernelBackend().mean(p);
  CHECK(out[0] == 5);
  // float mean
  std::vector<float> fin = {1, 10, 2, 20, 3, 30, 4, 40};
  std::vector<float> fout(2, 0);
  p.dtype = DType::float32;
  p.input = fin.data();
  p.output = fout.data();
  ReferenceKernelBackend().mean(p);
  CHECK(fout == std::vector<float>{2.5f, 25.0f});
}

TEST_CASE("pad fills with the pad value around the input") {
  std::vector<int8_t> in = {1, 2, 3, 4};  // 2x2
  std::vector<int8_t> out(12, 0);
  PadParams p;
  p.element_size = 1;
  p.input_shape = shape_of({2, 2});
  p.output_shape = shape_of({3, 4});
  p.before = {1, 0};
  p.after = {0, 2};
  p.pad_value[0] = static_cast<uint8_t>(int8_t{-5});
  p.input = in.data();
  p.output = out.data();
  ReferenceKernelBackend().pad(p);
  CHECK(out == std::vector<int8_t>{-5, -5, -5, -5, 1, 2, -5, -5, 3, 4, -5, -5});
  std::vector<float> fin = {1.5f, -2.5f};
  std::vector<float> fout(4, 9.0f);
  PadParams f;
  f.element_size = 4;
  f.input_shape = shape_of({1, 2});
  f.output_shape = shape_of({1, 4});
  f.before = {0, 1};
  f.after = {0, 1};
  f.input = fin.data();
  f.output = fout.data();
  ReferenceKernelBackend().pad(f);
  CHECK(fout == std::vector<float>{0.0f, 1.5f, -2.5f, 0.0f});
}

TEST_CASE("transpose NCHW -> NHWC") {
  std::vector<int8_t> in(12);
  std::iota(in.begin(), in.end(), int8_t{0});  // [1, 3, 2, 2]: c-major
  std::vector<int8_t> out(12, 0);
  TransposeParams p;
  p.element_size = 1;
  p.input_shape = shape_of({1, 3, 2, 2});
  p.output_shape = shape_of({1, 2, 2, 3});
  p.perm = {0, 2, 3, 1};
  p.input = in.data();
  p.output = out.data();
  ReferenceKernelBackend().transpose(p);
  CHECK(out == std::vector<int8_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
}

TEST_CASE("quantize float -> int8 / uint8 rounds half away from zero and saturates") {
  std::vector<float> in = {0.5f, -0.375f, 1000.0f, -1000.0f, std::nanf(""), 0.125f};
  std::vector<int8_t> out(6, 0);
  QuantizeParams p;
  p.input_type = DType::float32;
  p.output_type = DType::int8;
  p.elements = 6;
  p.output_scale = 0.25f;
  p.output_zero_point = -1;
  p.input = in.data();
  p.output = out.data();
  ReferenceKernelBackend().quantize(p);
  CHECK(out == std::vector<int8_t>{1, -3, 127, -128, -1, 0});  // 2-1, -1.5->-2 -1, sat, sat, NaN->zp, 0.5->1 -1
  std::vector<uint8_t> uout(6, 0);
  p.output_type = DType::uint8;
  p.output_zero_point = 128;
  p.output = uout.data();
  ReferenceKernelBackend().quantize(p);
  CHECK(uout == std::vector<uint8_t>{130, 126, 255, 0, 128, 129});
}

TEST_CASE("quantize int8 <-> uint8 and rescaling requantization") {
  std::vector<int8_t> in = {-128, -1, 0, 127};
  std::vector<uint8_t> out(4, 0);
  QuantizeParams p;
  p.input_type = DType::int8;
  p.output_type = DType::uint8;
  p.elements = 4;
  p.input_zero_point = -128;
  p.output_zero_point = 0;
  p.multiplier = 1 << 30;  // scale ratio 1
  p.shift = 1;
  p.input = in.data();
  p.output = out.data();
  ReferenceKernelBackend().quantize(p);
  CHECK(out == std::vector<uint8_t>{0, 127, 128, 255});
  std::vector<int8_t> back(4, 0);
  QuantizeParams r = p;
  r.input_type = DType::uint8;
  r.output_type = DType::int8;
  r.input_zero_point = 0;
  r.output_zero_point = -128;
  r.input = out.data();
  r.output = back.data();
  ReferenceKernelBackend().quantize(r);
  CHECK(back == in);
  // int8 -> int8 with the scale doubling (ratio 0.5): (q - zp) / 2 rounded.
  std::vector<int8_t> halved(4, 0);
  QuantizeParams h = p;
  h.output_type = DType::int8;
  h.input_zero_point = 0;
  h.output_zero_point = 0;
  h.shift = 0;
  h.output = halved.data();
  ReferenceKernelBackend().quantize(h);
  CHECK(halved == std::vector<int8_t>{-64, 0, 0, 64});  // -0.5 rounds up to 0 in the high multiply
}

TEST_CASE("dequantize") {
  std::vector<int8_t> in = {-128, 0, 127};
  std::vector<float> out(3, 0);
  DequantizeParams p;
  p.input_type = DType::int8;
  p.elements = 3;
  p.scale = 0.5;
  p.zero_point = -128;
  p.input = in.data();
  p.output = out.data();
  ReferenceKernelBackend().dequantize(p);
  CHECK(out == std::vector<float>{0.0f, 64.0f, 127.5f});
}

TEST_CASE("concatenation copies matching inputs and rescales the others") {
  std::vector<int8_t> a = {1, 2, 3, 4};  // [2, 2]
  std::vector<int8_t> b = {10, 20};      // [2, 1], scale twice the output's, zero point 2
  std::vector<int8_t> out(6, 0);
  ConcatenationParams p;
  p.dtype = DType::int8;
  p.element_size = 1;
  p.outer_size = 2;
  p.inner_size = 1;
  p.output_scale = 0.5f;
  p.output_zero_point = 0;
  p.inputs = {{a.data(), 2, false, 0.5f, 0}, {b.data(), 1, true, 1.0f, 2}};
  p.output = out.data();
  ReferenceKernelBackend().concatenation(p);
  CHECK(out == std::vector<int8_t>{1, 2, 16, 3, 4, 36});  // (10-2)*2 = 16, (20-2)*2 = 36
}

TEST_CASE("copy (RESHAPE) moves the bytes unchanged") {
  std::vector<uint8_t> in = {1, 2, 3, 4, 5};
  std::vector<uint8_t> out(5, 0);
  CopyParams p;
  p.input = in.data();
  p.output = out.data();
  p.bytes = 5;
  ReferenceKernelBackend().copy(p);
  CHECK(out == in);
}
