// aisrv tests — shared by the optimised kernels' ref-vs-opt tests (test_opt_*.cpp): the seeded random source (a
// failing case is reproduced by its seed) and the call of one kernel with exact-size buffers and its prepared data.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <random>
#include <span>
#include <vector>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "optimized_backend.hpp"

namespace aisrv::test {

struct Rng {
  std::mt19937 g;
  explicit Rng(uint32_t seed) : g(seed) {}
  int32_t uniform(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(g); }
  bool chance(double p) { return std::bernoulli_distribution(p)(g); }
  template <typename T>
  T pick(std::initializer_list<T> v) {
    return *(v.begin() + uniform(0, static_cast<int32_t>(v.size()) - 1));
  }
};

// Runs one kernel call `p` on `b` with exact-size output and scratch (ASan sees any overrun) and, where the backend
// asks for it, its own prepared block (`poison` may alter it first). `usable`: set to the prepared header's flag
// when the backend prepared data (-1 when it asked for none).
template <typename P>
std::vector<uint8_t> run(engine::cpu::KernelBackend& b, P p, size_t out_bytes, int* usable = nullptr,
                         const std::function<void(std::vector<uint8_t>&)>& poison = {}) {
  using engine::cpu::OpParams;
  std::vector<uint8_t> out(out_bytes, 0xA5);
  std::vector<uint8_t> scratch(b.scratch_bytes(OpParams{p}));
  std::vector<uint8_t> prepared(b.prepared_bytes(OpParams{p}));
  p.output = out.data();
  p.scratch = std::span<uint8_t>(scratch);
  if (usable) *usable = -1;
  if constexpr (requires { p.prepared; }) {
    if (!prepared.empty()) {
      b.prepare(OpParams{p}, prepared);
      engine::cpu::opt::PreparedHeader h;
      std::memcpy(&h, prepared.data(), sizeof h);
      if (usable) *usable = h.magic == engine::cpu::opt::kPreparedMagic && h.usable ? 1 : 0;
      if (poison) poison(prepared);
      p.prepared = std::span<const uint8_t>(prepared);
    }
  }
  REQUIRE(engine::cpu::run_kernel(b, OpParams{p}).ok());
  return out;
}

}  // namespace aisrv::test
