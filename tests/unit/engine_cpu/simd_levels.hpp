// aisrv tests — the SIMD levels of the optimised backend that this processor lacks, made visible: the tests that
// loop over available_simd_levels() include this and expand AISRV_SIMD_LEVEL_CASES("what they test", fn) once. It
// registers one test case per SIMD level of the build's architecture that calls fn(level) — skipped (doctest counts
// it as skipped) where the processor lacks the level — and one that prints each missing level with the reason
// (MESSAGE), so that a level that was not tested never passes silently (qemu-x86_64 without AVX-512, a Cortex-A53
// without the dot product).
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "aisrv/engine/cpu/optimized_backend.hpp"

namespace aisrv::test {

// Every level of the build's architecture, lowest first.
inline std::vector<engine::cpu::SimdLevel> architecture_simd_levels() {
  using engine::cpu::SimdLevel;
#if defined(__x86_64__)
  return {SimdLevel::portable, SimdLevel::avx2, SimdLevel::avx_vnni, SimdLevel::avx512_vnni};
#elif defined(__aarch64__)
  return {SimdLevel::portable, SimdLevel::neon, SimdLevel::neon_dot};
#else
  return {SimdLevel::portable};
#endif
}

inline bool simd_level_missing(engine::cpu::SimdLevel level) {
  return !engine::cpu::simd_level_unavailable_reason(level).empty();
}

inline void report_missing_simd_levels(const char* what) {
  for (engine::cpu::SimdLevel level : architecture_simd_levels())
    if (simd_level_missing(level))
      MESSAGE(what << ": SIMD level " << engine::cpu::simd_level_name(level)
                   << " skipped: " << engine::cpu::simd_level_unavailable_reason(level));
}

}  // namespace aisrv::test

#define AISRV_SIMD_LEVEL_CASE(WHAT, FN, LEVEL)                                                                   \
  TEST_CASE(WHAT ", SIMD level " #LEVEL *                                                                        \
            doctest::skip(aisrv::test::simd_level_missing(aisrv::engine::cpu::SimdLevel::LEVEL))) {               \
    FN(aisrv::engine::cpu::SimdLevel::LEVEL);                                                                    \
  }

#define AISRV_SIMD_LEVEL_REPORT(WHAT) \
  TEST_CASE(WHAT ": the SIMD levels this processor lacks") { aisrv::test::report_missing_simd_levels(WHAT); }

#if defined(__x86_64__)
#define AISRV_SIMD_LEVEL_CASES(WHAT, FN)       \
  AISRV_SIMD_LEVEL_REPORT(WHAT)                \
  AISRV_SIMD_LEVEL_CASE(WHAT, FN, portable)    \
  AISRV_SIMD_LEVEL_CASE(WHAT, FN, avx2)        \
  AISRV_SIMD_LEVEL_CASE(WHAT, FN, avx_vnni)    \
  AISRV_SIMD_LEVEL_CASE(WHAT, FN, avx512_vnni)
#elif defined(__aarch64__)
#define AISRV_SIMD_LEVEL_CASES(WHAT, FN)    \
  AISRV_SIMD_LEVEL_REPORT(WHAT)             \
  AISRV_SIMD_LEVEL_CASE(WHAT, FN, portable) \
  AISRV_SIMD_LEVEL_CASE(WHAT, FN, neon)     \
  AISRV_SIMD_LEVEL_CASE(WHAT, FN, neon_dot)
#else
#define AISRV_SIMD_LEVEL_CASES(WHAT, FN) \
  AISRV_SIMD_LEVEL_REPORT(WHAT)          \
  AISRV_SIMD_LEVEL_CASE(WHAT, FN, portable)
#endif
