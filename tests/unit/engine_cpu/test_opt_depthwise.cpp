// aisrv tests — DEPTHWISE_CONV_2D of the optimised backend against the reference backend on the shapes the
// avx512_vnni level's flat-row kernel (depthwise_avx512.cpp) splits differently from the blocked kernels: channel
// counts 1-9, 16, 24, 31, 32, 33, 64 (a pattern of weights per 32 lanes: 1 to 33 patterns, pixels straddling blocks),
// horizontal strides 1-3 (stride phases) and one beyond the flat kernel's limit, dilations, depth multipliers 2/3/8
// (a single input channel too), SAME / VALID / uneven padding at every edge, 3x3 (weights in registers) and other
// filters (5x5, 1x1, 3x1, 2x2, micro_speech's 10x8), zero points across their ranges, activation clamps, and extreme
// inputs with biases at the accumulator bound the loader allows — at every SIMD level of the architecture (skipped
// and reported where the processor lacks one), on 1 and 3 threads. Buffers are exact-size heap allocations
// (AddressSanitizer sees reads past a converted row's slack), and each case checks the optimised path ran.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "optimized_backend.hpp"
#include "opt_test_util.hpp"
#include "simd_levels.hpp"

using namespace aisrv::engine::cpu;

namespace {

using aisrv::test::Rng;

struct Case {
  std::vector<uint8_t> input, filter;
  std::vector<int32_t> bias;
  DepthwiseConv2DParams p;
  size_t out_bytes = 0;
};

// One side of the window: SAME (split as TFLite does), VALID, or a random uneven padding (the other edge too).
bool window(Rng& r, int32_t in, int32_t filter, int32_t stride, int32_t dilation, int32_t& out, int32_t& before,
            int32_t& after) {
  const int32_t effective = (filter - 1) * dilation + 1;
  const int32_t kind = r.uniform(0, 2);
  if (kind == 0) {
    out = (in + stride - 1) / stride;
    const int32_t total = std::max((out - 1) * stride + effective - in, 0);
    before = total / 2;
    after = total - before;
    return true;
  }
  before = kind == 1 ? 0 : r.uniform(0, effective - 1);
  after = kind == 1 ? 0 : r.uniform(0, effective - 1);
  if (in + before + after < effective) return false;
  out = (in + before + after - effective) / stride + 1;
  return true;
}

// A random layer of `channels` output channels. `extreme`: inputs and weights at the ends of their ranges (the
// largest |products|) and biases at the accumulator bound.
bool random_case(Rng& r, Case& c, int32_t channels, bool u8, bool extreme) {
  DepthwiseConv2DParams& p = c.p;
  p.dtype = u8 ? DType::uint8 : DType::int8;
  std::vector<int32_t> multipliers{1};
  for (int32_t m : {2, 3, 8, channels})
    if (m > 1 && channels % m == 0) multipliers.push_back(m);
  p.depth_multiplier = r.chance(0.6) ? 1 : multipliers[static_cast<size_t>(r.uniform(0, static_cast<int32_t>(multipliers.size()) - 1))];
  const int32_t ic = channels / p.depth_multiplier;
  int32_t fh = 3, fw = 3;
  if (r.chance(0.4)) {
    const int32_t shape = r.uniform(0, 4);
    const int32_t shapes[5][2] = {{5, 5}, {1, 1}, {3, 1}, {2, 2}, {10, 8}};
    fh = shapes[shape][0];
    fw = shapes[shape][1];
  }
  p.stride_h = r.pick({1, 1, 2, 3});
  p.stride_w = r.chance(0.03) ? 9 : r.pick({1, 1, 2, 2, 3});  // 9: beyond the flat kernel's phases
  p.dilation_h = r.chance(0.8) ? 1 : r.pick({2, 3});
  p.dilation_w = r.chance(0.8) ? 1 : r.pick({2, 3});
  const int32_t n = r.chance(0.15) ? 2 : 1;
  const int32_t ih = r.chance(0.1) ? 1 : r.uniform(1, 20), iw = r.chance(0.1) ? 1 : r.uniform(1, 40);
  int32_t oh = 0, ow = 0;
  if (!window(r, ih, fh, p.stride_h, p.dilation_h, oh, p.padding.top, p.padding.bottom)) return false;
  if (!window(r, iw, fw, p.stride_w, p.dilation_w, ow, p.padding.left, p.padding.right)) return false;
  p.input_shape = {n, ih, iw, ic};
  p.filter_shape = {1, fh, fw, channels};
  p.output_shape = {n, oh, ow, channels};

  const int32_t lowest = u8 ? 0 : -128, highest = u8 ? 255 : 127;
  if (u8) {
    p.input_offset = -r.pick({0, 255, 128, r.uniform(0, 255)});
    p.filter_offset = -r.pick({0, 255, 128, r.uniform(0, 255)});
    p.output_offset = r.pick({0, 255, r.uniform(0, 255)});
  } else {
    p.input_offset = -r.pick({-128, 127, 0, r.uniform(-128, 127)});
    p.output_offset = r.pick({-128, 127, r.uniform(-128, 127)});
  }
  p.act_min = lowest;
  p.act_max = highest;
  if (r.chance(0.3)) {
    p.act_min = r.uniform(lowest, highest);
    p.act_max = r.uniform(p.act_min, highest);
  }

  const auto in_n = static_cast<size_t>(p.input_shape.elements());
  const auto f_n = static_cast<size_t>(p.filter_shape.elements());
  c.input.resize(in_n);
  c.filter.resize(f_n);
  const int32_t x_end = std::abs(lowest + p.input_offset) >= std::abs(highest + p.input_offset) ? lowest : highest;
  for (auto& x : c.input)
    x = static_cast<uint8_t>(extreme && r.chance(0.9) ? x_end : r.uniform(lowest, highest));
  for (auto& w : c.filter) {
    if (u8) w = static_cast<uint8_t>(extreme ? (p.filter_offset > -128 ? 255 : 0) : r.uniform(0, 255));
    else w = static_cast<uint8_t>(static_cast<int8_t>(extreme ? r.pick({-127, 127}) : r.uniform(-127, 127)));
  }

  // Bias within the bound the loader proves: |bias| + sum |w + fo| * max |x + io| <= INT32_MAX.
  const int64_t max_x = std::max(std::abs(lowest + p.input_offset), std::abs(highest + p.input_offset));
  c.bias.resize(static_cast<size_t>(channels));
  p.output_multiplier.resize(static_cast<size_t>(channels));
  p.output_shift.resize(static_cast<size_t>(channels));
  const int32_t shared_multiplier = r.uniform(1 << 30, std::numeric_limits<int32_t>::max());
  const int32_t shared_shift = r.uniform(-14, -5);
  for (size_t ch = 0; ch < c.bias.size(); ++ch) {
    int64_t sum = 0;
    for (size_t t = 0; t < static_cast<size_t>(fh * fw); ++t) {
      const uint8_t b = c.filter[t * static_cast<size_t>(channels) + ch];
      sum += std::abs((u8 ? int32_t{b} : int32_t{static_cast<int8_t>(b)}) + p.filter_offset);
    }
    const int64_t room = std::numeric_limits<int32_t>::max() - sum * max_x;
    REQUIRE(room >= 0);
    const auto limit = static_cast<int32_t>(std::min<int64_t>(room, extreme ? room : 200000));
    c.bias[ch] = extreme && r.chance(0.7) ? (r.chance(0.5) ? limit : -limit) : r.uniform(-limit, limit);
    if (u8) {  // per tensor
      p.output_multiplier[ch] = shared_multiplier;
      p.output_shift[ch] = shared_shift;
    } else {
      p.output_multiplier[ch] = r.chance(0.2) ? (1 << 30) : r.chance(0.03) ? 0
                                                                           : r.uniform(1 << 30, std::numeric_limits<int32_t>::max());
      p.output_shift[ch] = extreme ? r.pick({-31, -20, -1, 0, 1, 2}) : r.pick({-31, -12, -8, -6, 0, 1, r.uniform(-14, -3)});
    }
  }
  p.input = c.input.data();
  p.filter = c.filter.data();
  p.bias = r.chance(0.1) && !extreme ? nullptr : c.bias.data();
  c.out_bytes = static_cast<size_t>(p.output_shape.elements());
  return true;
}

// Runs `p` on `b` with exact-size buffers; `usable`: the prepared header's flag (-1 without prepared data).
std::vector<uint8_t> run(KernelBackend& b, DepthwiseConv2DParams p, size_t out_bytes, int* usable) {
  std::vector<uint8_t> out(out_bytes, 0xA5);
  std::vector<uint8_t> scratch(b.scratch_bytes(OpParams{p}));
  std::vector<uint8_t> prepared(b.prepared_bytes(OpParams{p}));
  p.output = out.data();
  p.scratch = std::span<uint8_t>(scratch);
  *usable = -1;
  if (!prepared.empty()) {
    b.prepare(OpParams{p}, prepared);
    opt::PreparedHeader h;
    std::memcpy(&h, prepared.data(), sizeof h);
    *usable = h.magic == opt::kPreparedMagic && h.usable ? 1 : 0;
    p.prepared = std::span<const uint8_t>(prepared);
  }
  REQUIRE(run_kernel(b, OpParams{p}).ok());
  return out;
}

std::string describe(const DepthwiseConv2DParams& p) {
  return std::string(p.dtype == DType::uint8 ? "uint8" : "int8") + " in " + std::to_string(p.input_shape.n) + "x" +
         std::to_string(p.input_shape.h) + "x" + std::to_string(p.input_shape.w) + "x" +
         std::to_string(p.input_shape.c) + " filter " + std::to_string(p.filter_shape.h) + "x" +
         std::to_string(p.filter_shape.w) + " multiplier " + std::to_string(p.depth_multiplier) + " stride " +
         std::to_string(p.stride_h) + "," + std::to_string(p.stride_w) + " dilation " + std::to_string(p.dilation_h) +
         "," + std::to_string(p.dilation_w) + " pad " + std::to_string(p.padding.top) + "," +
         std::to_string(p.padding.left) + "," + std::to_string(p.padding.bottom) + "," +
         std::to_string(p.padding.right) + " offsets " + std::to_string(p.input_offset) + "," +
         std::to_string(p.filter_offset) + "," + std::to_string(p.output_offset) + " clamp " +
         std::to_string(p.act_min) + ".." + std::to_string(p.act_max);
}

void check_level(SimdLevel level) {
  ReferenceKernelBackend ref;
  Rng r(300 + static_cast<uint32_t>(level));
  int cases = 0;
  for (const int32_t channels : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 24, 31, 32, 33, 64}) {
    for (int i = 0; i < 12; ++i) {
      Case c;
      const bool u8 = i % 3 == 2, extreme = i % 4 == 3;
      if (!random_case(r, c, channels, u8, extreme)) continue;
      ++cases;
      int unused = 0;
      const auto want = run(ref, c.p, c.out_bytes, &unused);
      for (const size_t threads : {size_t{1}, size_t{3}}) {
        OptimizedKernelBackend opt(level, threads, /*min_parallel_work=*/0);
        int usable = 0;
        const auto got = run(opt, c.p, c.out_bytes, &usable);
        INFO("level " << simd_level_name(level) << " threads " << threads << " channels " << channels << " "
                      << describe(c.p));
        CHECK(usable == 1);
        if (got != want) {
          size_t k = 0;
          while (got[k] == want[k]) ++k;
          FAIL_CHECK("first difference at byte " << k << ": " << int{got[k]} << " vs " << int{want[k]});
        }
      }
    }
  }
  CHECK(cases > 100);  // the shapes were not all rejected
}

// Layers the flat kernel leaves to the 32-channel blocked one at avx512_vnni (more than 32 weight patterns: 1000
// channels; a packing over 1 MiB: 31 channels of a 20 x 30 filter; a horizontal stride of 9), at every level.
void check_beyond_flat(SimdLevel level) {
  ReferenceKernelBackend ref;
  Rng r(400 + static_cast<uint32_t>(level));
  struct Shape {
    int32_t channels, fh, fw, stride_w;
  };
  for (const Shape& shape : {Shape{1000, 3, 3, 1}, Shape{31, 20, 30, 1}, Shape{24, 3, 3, 9}}) {
    for (const bool u8 : {false, true}) {
      Case c;
      DepthwiseConv2DParams& p = c.p;
      p.dtype = u8 ? DType::uint8 : DType::int8;
      p.stride_h = 1;
      p.stride_w = shape.stride_w;
      p.padding = {shape.fh / 2, shape.fw / 2, shape.fh - 1 - shape.fh / 2, shape.fw - 1 - shape.fw / 2};
      const int32_t ih = 4, iw = 20;
      p.input_shape = {1, ih, iw, shape.channels};
      p.filter_shape = {1, shape.fh, shape.fw, shape.channels};
      p.output_shape = {1, ih, (iw - 1) / shape.stride_w + 1, shape.channels};
      p.input_offset = u8 ? -r.uniform(0, 255) : -r.uniform(-128, 127);
      p.filter_offset = u8 ? -r.uniform(0, 255) : 0;
      p.output_offset = u8 ? r.uniform(0, 255) : r.uniform(-128, 127);
      p.act_min = u8 ? 0 : -128;
      p.act_max = u8 ? 255 : 127;
      c.input.resize(static_cast<size_t>(p.input_shape.elements()));
      c.filter.resize(static_cast<size_t>(p.filter_shape.elements()));
      for (auto& x : c.input) x = static_cast<uint8_t>(r.uniform(0, 255));
      for (auto& w : c.filter) w = static_cast<uint8_t>(u8 ? r.uniform(0, 255) : r.uniform(-127, 127));
      c.bias.resize(static_cast<size_t>(shape.channels));
      for (auto& b : c.bias) b = r.uniform(-100000, 100000);
      p.output_multiplier.assign(c.bias.size(), r.uniform(1 << 30, std::numeric_limits<int32_t>::max()));
      p.output_shift.assign(c.bias.size(), shape.fh * shape.fw > 100 ? -14 : -8);
      p.input = c.input.data();
      p.filter = c.filter.data();
      p.bias = c.bias.data();
      c.out_bytes = static_cast<size_t>(p.output_shape.elements());
      int unused = 0;
      const auto want = run(ref, p, c.out_bytes, &unused);
      OptimizedKernelBackend opt(level, 1, /*min_parallel_work=*/0);
      int usable = 0;
      INFO("level " << simd_level_name(level) << " " << describe(p));
      const auto got = run(opt, p, c.out_bytes, &usable);
      CHECK(usable == 1);
      CHECK(got == want);
    }
  }
}

}  // namespace

AISRV_SIMD_LEVEL_CASES("DEPTHWISE_CONV_2D: opt equals ref on layers beyond the flat kernel's limits", check_beyond_flat)

AISRV_SIMD_LEVEL_CASES("DEPTHWISE_CONV_2D: opt equals ref on few and odd channel counts, strides, multipliers, edges",
                       check_level)
