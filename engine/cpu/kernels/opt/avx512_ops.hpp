// aisrv CPU engine, optimised kernels — the AVX-512 building blocks shared by the avx512_vnni level's files
// (vnni_kernels.cpp, depthwise_avx512.cpp). Like avx2_ops.hpp: every function carries its target attribute and has
// internal linkage (an unnamed namespace in each file that includes this), so no AVX-512 copy can stand in for a
// baseline one at link time. Include only from files compiled for x86-64 with GCC or Clang.
#pragma once

#include <immintrin.h>

#include <cstdint>

#define AISRV_AVX512_OPS __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace aisrv::engine::cpu::opt {

namespace {  // internal linkage on purpose: see the file comment

// fp::saturating_rounding_doubling_high_mul(a, m) on 16 lanes for m >= 0: bits 31..62 of the signed 64-bit
// a * m + 2^30, even and odd 32-bit lanes separately (why that is the reference's value: srdhm in avx2_ops.hpp).
// `m_odd` holds each odd lane's multiplier in the even position below it (m >> 32 per 64-bit lane); a kernel with
// per-lane constants made at prepare keeps it there, the others pass the two-argument form.
AISRV_AVX512_OPS inline __m512i srdhm16(__m512i a, __m512i m, __m512i m_odd) {
  const __m512i half = _mm512_set1_epi64(int64_t{1} << 30);
  const __m512i even = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epi32(a, m), half), 31);
  const __m512i odd = _mm512_slli_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(a, 32), m_odd), half), 1);
  return _mm512_mask_blend_epi32(0xAAAA, even, odd);
}

AISRV_AVX512_OPS inline __m512i srdhm16(__m512i a, __m512i m) { return srdhm16(a, m, _mm512_srli_epi64(m, 32)); }

}  // namespace

}  // namespace aisrv::engine::cpu::opt
