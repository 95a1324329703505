// aisrv tests — the optimised backend's FULLY_CONNECTED against the reference backend at every SIMD level (the VNNI
// levels run weights packed at load on VPDPBUSD, FcVnniRow in opt_kernels.hpp; the others the int16 row kernel):
// depths 1..70 and outputs 1..40 (every tail of the 4-byte depth groups and of the 16-output blocks), 1..3 batches,
// int8 and uint8, per-tensor and per-channel requantization, input / filter / output zero points at the ends of
// their ranges, extreme inputs and weights with the bias pushing the accumulator to the int32 limit the loader
// allows, and one case per level with 3 threads. Each buffer is its own exact-size allocation (AddressSanitizer sees
// any access outside it). At the VNNI levels each case checks that the packed path ran (prepared data marked usable)
// and that a poisoned prepared bias changes the result.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "optimized_backend.hpp"
#include "opt_test_util.hpp"
#include "simd_levels.hpp"

using namespace aisrv::engine::cpu;

namespace {

using aisrv::test::Rng;

struct FcCase {
  FullyConnectedParams p;
  std::vector<uint8_t> input, weights;
  std::vector<int32_t> bias;
  size_t out_bytes = 0;
};

// Runs the case on `b` with exact-size buffers. `usable`: the prepared header's flag (-1: no prepared data).
std::vector<uint8_t> run_fc(KernelBackend& b, FcCase& c, int* usable = nullptr,
                            const std::function<void(std::vector<uint8_t>&)>& poison = {}) {
  FullyConnectedParams p = c.p;
  p.input = c.input.data();
  p.weights = c.weights.data();
  if (p.bias) p.bias = c.bias.data();
  return aisrv::test::run(b, p, c.out_bytes, usable, poison);
}

int32_t random_multiplier(Rng& r) {
  if (r.chance(0.25)) return 1 << 30;  // rounding ties
  if (r.chance(0.02)) return 0;
  return r.uniform(1 << 30, std::numeric_limits<int32_t>::max());
}

// A random case: depth 1..70, outputs 1..40 (or the given ones), int8 or uint8.
void random_fc(Rng& r, FcCase& c, bool u8, bool extreme, int32_t depth = 0, int32_t outputs = 0) {
  FullyConnectedParams& p = c.p;
  p = FullyConnectedParams{};
  p.dtype = u8 ? DType::uint8 : DType::int8;
  p.batches = r.chance(0.6) ? 1 : r.uniform(2, 3);
  p.accum_depth = depth > 0 ? depth : r.uniform(1, 70);
  p.output_depth = outputs > 0 ? outputs : r.uniform(1, 40);
  const int32_t lowest = u8 ? 0 : -128, highest = u8 ? 255 : 127;
  auto zero_point = [&] {  // often at the ends of the type's range
    if (r.chance(0.15)) return lowest;
    if (r.chance(0.15)) return highest;
    return r.uniform(lowest, highest);
  };
  p.input_offset = -zero_point();
  // TFLite's int8 weights are symmetric (offset 0); the kernels take any offset, so test some.
  p.filter_offset = u8 ? -zero_point() : (r.chance(0.7) ? 0 : r.uniform(-20, 20));
  p.output_offset = zero_point();
  p.act_min = lowest;
  p.act_max = highest;
  if (r.chance(0.3)) {
    p.act_min = r.uniform(lowest, highest);
    p.act_max = r.uniform(p.act_min, highest);
  }
  const auto in_n = static_cast<size_t>(p.batches) * static_cast<size_t>(p.accum_depth);
  const auto w_n = static_cast<size_t>(p.output_depth) * static_cast<size_t>(p.accum_depth);
  c.input.resize(in_n);
  c.weights.resize(w_n);
  for (auto& v : c.input) v = static_cast<uint8_t>(r.uniform(lowest, highest));
  for (auto& v : c.weights) v = static_cast<uint8_t>(r.uniform(u8 ? 0 : -127, highest));
  if (extreme) {  // inputs and weights at the end that maximises |x + io| * |w + fo|
    const int32_t x = std::abs(lowest + p.input_offset) > std::abs(highest + p.input_offset) ? lowest : highest;
    const int32_t w = u8 ? (std::abs(p.filter_offset) > std::abs(255 + p.filter_offset) ? 0 : 255) : -128;
    for (auto& v : c.input) v = r.chance(0.9) ? static_cast<uint8_t>(x) : static_cast<uint8_t>(r.uniform(lowest, highest));
    for (auto& v : c.weights) v = r.chance(0.9) ? static_cast<uint8_t>(w) : static_cast<uint8_t>(r.uniform(lowest, highest));
  }
  const int64_t max_x = std::max(std::abs(lowest + p.input_offset), std::abs(highest + p.input_offset));
  c.bias.resize(static_cast<size_t>(p.output_depth));
  const bool per_tensor = u8 || r.chance(0.4);
  p.output_multiplier.resize(c.bias.size());
  p.output_shift.resize(c.bias.size());
  for (size_t o = 0; o < c.bias.size(); ++o) {
    int64_t worst = 0;
    for (size_t k = 0; k < static_cast<size_t>(p.accum_depth); ++k) {
      const uint8_t b = c.weights[o * static_cast<size_t>(p.accum_depth) + k];
      worst += std::abs((u8 ? int32_t{b} : int32_t{static_cast<int8_t>(b)}) + p.filter_offset);
    }
    worst *= max_x;
    REQUIRE(worst <= std::numeric_limits<int32_t>::max());
    const int64_t room = std::numeric_limits<int32_t>::max() - worst;
    c.bias[o] = extreme ? static_cast<int32_t>(r.chance(0.5) ? room : -room)
                        : r.uniform(-static_cast<int32_t>(std::min<int64_t>(room, 20000)),
                                    static_cast<int32_t>(std::min<int64_t>(room, 20000)));
    if (per_tensor && o > 0) {
      p.output_multiplier[o] = p.output_multiplier[0];
      p.output_shift[o] = p.output_shift[0];
      continue;
    }
    p.output_multiplier[o] = random_multiplier(r);
    const double typical = extreme ? static_cast<double>(worst) : std::sqrt(p.accum_depth * 1.0) * 60.0 * 40.0;
    const int base = -static_cast<int>(std::lround(std::log2(std::max(typical, 1.0) / 64.0)));
    p.output_shift[o] = std::clamp(base + r.uniform(-3, 3), -31, 30);
    if (r.chance(0.03)) p.output_shift[o] = r.uniform(-31, 30);
  }
  p.bias = r.chance(0.1) && !extreme ? nullptr : c.bias.data();
  c.out_bytes = static_cast<size_t>(p.batches) * static_cast<size_t>(p.output_depth);
}

bool vnni_level(SimdLevel level) { return level == SimdLevel::avx_vnni || level == SimdLevel::avx512_vnni; }

std::string first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return "byte " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
  return "none";
}

void check_case(FcCase& c, SimdLevel level, ReferenceKernelBackend& ref, size_t threads) {
  const auto want = run_fc(ref, c);
  OptimizedKernelBackend opt(level, threads, /*min_parallel_work=*/0);
  int usable = -1;
  const auto got = run_fc(opt, c, &usable);
  INFO("level " << simd_level_name(level) << " threads " << threads
                << std::string(c.p.dtype == DType::uint8 ? " uint8" : " int8") << " batches " << c.p.batches << " depth "
                << c.p.accum_depth << " outputs " << c.p.output_depth << " offsets " << c.p.input_offset << "/"
                << c.p.filter_offset << "/" << c.p.output_offset);
  CHECK_MESSAGE(got == want, "first difference: " << first_difference(got, want));
  // The VNNI levels prepare packed weights and run them; the others prepare nothing.
  CHECK(usable == (vnni_level(level) ? 1 : -1));
}

void fc_cases_at_level(SimdLevel level) {
  Rng r(2911 + static_cast<uint32_t>(level));
  ReferenceKernelBackend ref;
  // Every (depth, outputs) tail shape at least once: depths 1..70 x outputs around the block boundaries.
  for (int32_t depth = 1; depth <= 70; ++depth) {
    for (const int32_t outputs : {1, 15, 16, 17, 40}) {
      FcCase c;
      random_fc(r, c, r.chance(0.4), r.chance(0.1), depth, outputs);
      check_case(c, level, ref, 1);
    }
  }
  for (int i = 0; i < 300; ++i) {
    FcCase c;
    random_fc(r, c, r.chance(0.4), r.chance(0.2));
    check_case(c, level, ref, 1);
  }
  // The parts of a worker pool (ranges of 16-output blocks) and a layer of mobilenet_v2's size.
  for (int i = 0; i < 20; ++i) {
    FcCase c;
    random_fc(r, c, r.chance(0.4), r.chance(0.2), r.uniform(1, 70), r.uniform(33, 140));
    check_case(c, level, ref, 3);
  }
  FcCase big;
  random_fc(r, big, false, false, 1280, 1000);
  big.p.batches = 1;
  big.input.resize(1280);
  big.out_bytes = 1000;
  check_case(big, level, ref, 1);
  check_case(big, level, ref, 2);
}

AISRV_SIMD_LEVEL_CASES("FULLY_CONNECTED: opt equals ref on depths 1..70 x outputs 1..40, int8 / uint8, zero points",
                       fc_cases_at_level)

void fc_prepared_read_at_level(SimdLevel level) {
  if (!vnni_level(level)) return;
  Rng r(77);
  ReferenceKernelBackend ref;
  OptimizedKernelBackend opt(level, 1, 0);
  for (const bool u8 : {false, true}) {
    FcCase c;
    random_fc(r, c, u8, false, 37, 21);
    c.p.bias = c.bias.data();
    c.p.act_min = u8 ? 0 : -128;
    c.p.act_max = u8 ? 255 : 127;
    // Outputs around the middle of the range, so that moving the bias moves them (no clamp hides it).
    c.p.output_offset = u8 ? 128 : 0;
    std::fill(c.p.output_multiplier.begin(), c.p.output_multiplier.end(), 1 << 30);
    std::fill(c.p.output_shift.begin(), c.p.output_shift.end(), -14);
    std::fill(c.bias.begin(), c.bias.end(), 0);
    const auto want = run_fc(ref, c);
    REQUIRE(run_fc(opt, c) == want);
    // The folded bias is read from the prepared data: moving it moves every output off its clamp-free value.
    auto poison = [](std::vector<uint8_t>& prepared) {
      auto* bias = reinterpret_cast<int32_t*>(prepared.data() + opt::kPreparedHeaderBytes);
      for (int i = 0; i < 32; ++i) bias[i] += 1 << 20;  // 32 LSB at the output's scale
    };
    CHECK(run_fc(opt, c, nullptr, poison) != want);
    // Unusable prepared data: the int16 row kernel, still exact.
    auto unusable = [](std::vector<uint8_t>& prepared) {
      opt::PreparedHeader h;
      std::memcpy(&h, prepared.data(), sizeof h);
      h.usable = 0;
      std::memcpy(prepared.data(), &h, sizeof h);
    };
    CHECK(run_fc(opt, c, nullptr, unusable) == want);
  }
}

AISRV_SIMD_LEVEL_CASES("FULLY_CONNECTED: the VNNI levels read their packed weights and bias; unusable data falls back",
                       fc_prepared_read_at_level)

}  // namespace
