// aisrv tests — reference CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED kernels on hand-computed cases: VALID and
// SAME padding, strides, dilation, groups, depth multipliers 2 and 8, per-channel requantization, offsets,
// saturation and activation clamps, uint8 with a filter zero point.
#include <doctest/doctest.h>

#include <numeric>

#include "kernel_test_util.hpp"

using namespace aisrv::engine::cpu;
using aisrv::test::pow2_multiplier;

namespace {

Conv2DParams conv(Dims4 in, Dims4 filter, Dims4 out, const void* input, const void* w, void* output) {
  Conv2DParams p;
  p.input_shape = in;
  p.filter_shape = filter;
  p.output_shape = out;
  p.input = input;
  p.filter = w;
  p.output = output;
  const auto [m, s] = pow2_multiplier(0);  // x 1
  p.output_multiplier.assign(static_cast<size_t>(out.c), m);
  p.output_shift.assign(static_cast<size_t>(out.c), s);
  p.act_min = -128;
  p.act_max = 127;
  return p;
}

}  // namespace

TEST_CASE("conv2d VALID, stride 1: 2x2 box filter over 1..9") {
  std::vector<int8_t> in = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<int8_t> w = {1, 1, 1, 1};
  std::vector<int8_t> out(4, 0);
  auto p = conv({1, 3, 3, 1}, {1, 2, 2, 1}, {1, 2, 2, 1}, in.data(), w.data(), out.data());
  ReferenceKernelBackend().conv2d(p);
  CHECK(out == std::vector<int8_t>{12, 16, 24, 28});
}

TEST_CASE("conv2d SAME, stride 1: 3x3 box filter; zero padding is skipped, not the zero point") {
  std::vector<int8_t> in = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<int8_t> w(9, 1);
  std::vector<int8_t> out(9, 0);
  auto p = conv({1, 3, 3, 1}, {1, 3, 3, 1}, {1, 3, 3, 1}, in.data(), w.data(), out.data());
  p.padding = {1, 1, 1, 1};
  ReferenceKernelBackend().conv2d(p);
  CHECK(out == std::vector<int8_t>{12, 21, 16, 27, 45, 33, 24, 39, 28});
  // With an input zero point of -1 (offset +1) every tap inside the image adds 1 more, padding taps add nothing.
  p.input_offset = 1;
  ReferenceKernelBackend().conv2d(p);
  CHECK(out == std::vector<int8_t>{16, 27, 20, 33, 54, 39, 28, 45, 32});
}

TEST_CASE("conv2d SAME, stride 2 on 4x4: padding only after (total 1)") {
  std::vector<int8_t> in(16);
  std::iota(in.begin(), in.end(), int8_t{0});  // row-major 0..15
  std::vector<int8_t> w(9, 1);
  std::vector<int8_t> out(4, 0);
  auto p = conv({1, 4, 4, 1}, {1, 3, 3, 1}, {1, 2, 2, 1}, in.data(), w.data(), out.data());
  p.stride_h = p.stride_w = 2;
  p.padding = {0, 0, 1, 1};
  ReferenceKernelBackend().conv2d(p);
  // (0,0): rows 0-2 cols 0-2 = 0+1+2+4+5+6+8+9+10 = 45; (0,1): cols 2-3 of rows 0-2 = 2+3+6+7+10+11 = 39;
  // (1,0): rows 2-3 cols 0-2 = 8+9+10+12+13+14 = 66; (1,1): 10+11+14+15 = 50.
  CHECK(out == std::vector<int8_t>{45, 39, 66, 50});
}

TEST_CASE("conv2d dilation 2") {
  std::vector<int8_t> in(25);
  std::iota(in.begin(), in.end(), int8_t{0});  // 5x5
  std::vector<int8_t> w = {1, 1, 1, 1};
  std::vector<int8_t> out(9, 0);
  auto p = conv({1, 5, 5, 1}, {1, 2, 2, 1}, {1, 3, 3, 1}, in.data(), w.data(), out.data());
  p.dilation_h = p.dilation_w = 2;
  ReferenceKernelBackend().conv2d(p);
  // out(y,x) = in(y,x) + in(y,x+2) + in(y+2,x) + in(y+2,x+2) = 4*(5y+x) + 24
  CHECK(out == std::vector<int8_t>{24, 28, 32, 44, 48, 52, 64, 68, 72});
}

TEST_CASE("conv2d per-channel multipliers, bias, saturation and relu6 clamp") {
  std::vector<int8_t> in = {10, 20};        // 1x1x1x2
  std::vector<int8_t> w = {1, 2, 3, 4, 5, 6};  // 3 output channels x 2 input channels
  std::vector<int32_t> bias = {1, -100, 0};
  std::vector<int8_t> out(3, 0);
  auto p = conv({1, 1, 1, 2}, {3, 1, 1, 2}, {1, 1, 1, 3}, in.data(), w.data(), out.data());
  p.bias = bias.data();
  p.output_multiplier = {1 << 30, 1 << 30, 1 << 30};
  p.output_shift = {0, 1, 1};  // x0.5, x1, x1
  p.output_offset = -3;
  // ch0: (10 + 40 + 1) * 0.5 = 25.5 -> 26, -3 -> 23; ch1: (30 + 80 - 100) = 10 - 3 = 7; ch2: 50 + 120 = 170 -> 127.
  ReferenceKernelBackend().conv2d(p);
  CHECK(out == std::vector<int8_t>{23, 7, 127});
  p.act_min = 0;  // relu6 on a scale of 0.1: [0, 60]
  p.act_max = 60;
  ReferenceKernelBackend().conv2d(p);
  CHECK(out == std::vector<int8_t>{23, 7, 60});
}

TEST_CASE("conv2d groups: each half of the output reads its half of the input channels") {
  std::vector<int8_t> in = {1, 2, 3, 4};  // 1x1x1x4
  std::vector<int8_t> w = {1, 1, 1, 10};  // 2 filters of 2 input channels: group 0 -> ch 0,1; group 1 -> ch 2,3
  std::vector<int8_t> out(2, 0);
  auto p = conv({1, 1, 1, 4}, {2, 1, 1, 2}, {1, 1, 1, 2}, in.data(), w.data(), out.data());
  ReferenceKernelBackend().conv2d(p);
  CHECK(out == std::vector<int8_t>{3, 43});
}

TEST_CASE("conv2d uint8 with input and filter zero points") {
  std::vector<uint8_t> in = {130, 140};  // zero point 128: real 2, 12
  std::vector<uint8_t> w = {129, 126};   // zero point 127: real 2, -1
  std::vector<uint8_t> out(1, 0);
  auto p = conv({1, 1, 1, 2}, {1, 1, 1, 2}, {1, 1, 1, 1}, in.data(), w.data(), out.data());
  p.dtype = DType::uint8;
  p.input_offset = -128;
  p.filter_offset = -127;
  p.output_offset = 100;
  p.act_min = 0;
  p.act_max = 255;
  ReferenceKernelBackend().conv2d(p);
  CHECK(out[0] == 100 + 2 * 2 - 12);
}

TEST_CASE("depthwise conv with depth multiplier 2 and SAME padding") {
  std::vector<int8_t> in = {1, 2, 3, 4};  // 1x2x2x1
  // 3x3 filter, 2 output channels: channel 0 is a box filter, channel 1 picks the centre tap times 3.
  std::vector<int8_t> w(18, 0);
  for (int t = 0; t < 9; ++t) w[static_cast<size_t>(2 * t)] = 1;
  w[2 * 4 + 1] = 3;
  std::vector<int8_t> out(8, 0);
  DepthwiseConv2DParams p;
  p.input_shape = {1, 2, 2, 1};
  p.filter_shape = {1, 3, 3, 2};
  p.output_shape = {1, 2, 2, 2};
  p.depth_multiplier = 2;
  p.padding = {1, 1, 1, 1};
  p.input = in.data();
  p.filter = w.data();
  p.output = out.data();
  p.output_multiplier = {1 << 30, 1 << 30};
  p.output_shift = {1, 1};
  p.act_min = -128;
  p.act_max = 127;
  ReferenceKernelBackend().depthwise_conv2d(p);
  CHECK(out == std::vector<int8_t>{10, 3, 10, 6, 10, 9, 10, 12});
}

TEST_CASE("depthwise conv with depth multiplier 8, stride 2, one input channel") {
  std::vector<int8_t> in = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};  // 1x4x4x1
  std::vector<int8_t> w(8);  // 1x1 filter, channel m has weight m+1
  std::iota(w.begin(), w.end(), int8_t{1});
  std::vector<int8_t> out(2 * 2 * 8, 0);
  DepthwiseConv2DParams p;
  p.input_shape = {1, 4, 4, 1};
  p.filter_shape = {1, 1, 1, 8};
  p.output_shape = {1, 2, 2, 8};
  p.depth_multiplier = 8;
  p.stride_h = p.stride_w = 2;
  p.input = in.data();
  p.filter = w.data();
  p.output = out.data();
  p.output_multiplier.assign(8, 1 << 30);
  p.output_shift.assign(8, 1);
  p.act_min = -128;
  p.act_max = 127;
  ReferenceKernelBackend().depthwise_conv2d(p);
  const int8_t picks[4] = {1, 3, 9, 11};  // inputs at (0,0), (0,2), (2,0), (2,2)
  for (int px = 0; px < 4; ++px)
    for (int m = 0; m < 8; ++m)
      CHECK(out[static_cast<size_t>(px * 8 + m)] == std::min(127, picks[px] * (m + 1)));
}

TEST_CASE("fully connected: batches, bias, input offset, per-channel scale") {
  std::vector<int8_t> in = {1, 2, 3, -1, -2, -3};  // 2 batches x 3
  std::vector<int8_t> w = {1, 0, -1, 2, 2, 2};     // 2 outputs x 3
  std::vector<int32_t> bias = {10, 0};
  std::vector<int8_t> out(4, 0);
  FullyConnectedParams p;
  p.batches = 2;
  p.accum_depth = 3;
  p.output_depth = 2;
  p.input = in.data();
  p.weights = w.data();
  p.bias = bias.data();
  p.output = out.data();
  p.input_offset = 1;
  p.output_multiplier = {1 << 30, 1 << 30};
  p.output_shift = {1, 0};  // x1, x0.5
  p.act_min = -128;
  p.act_max = 127;
  ReferenceKernelBackend().fully_connected(p);
  // batch 0: o0 = (2 - 4) + 10 = 8; o1 = 2*(2+3+4) = 18 * 0.5 = 9.  batch 1: o0 = (0 - -2) + 10 = 12;
  // o1 = 2*(0 - 1 - 2) = -6 * 0.5 = -3.
  CHECK(out == std::vector<int8_t>{8, 9, 12, -3});
}
