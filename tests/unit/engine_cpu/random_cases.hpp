// aisrv tests — the random source of the CPU engine's randomized ref-vs-opt cases (test_opt_*.cpp): a seeded
// generator, so a failing case is reproduced by its seed.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <random>

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

}  // namespace aisrv::test
