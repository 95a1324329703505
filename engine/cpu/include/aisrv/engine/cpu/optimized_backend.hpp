// aisrv CPU engine — the optimised kernel backend ("opt"): the reference backend's arithmetic with faster data
// movement and multiply-accumulate loops (packed int16 GEMM — on aarch64 pairwise int8, or int8 SDOT where the CPU
// has it — for CONV_2D, FULLY_CONNECTED, channel-vectorised DEPTHWISE_CONV_2D, stacked gate FCs for the integer
// LSTM, vectorised requantization, tables for SOFTMAX and 8-bit QUANTIZE, pooling, ADD, PAD, TRANSPOSE), and PADs
// folded into the convolution they feed (folds_pads). Bit-exact with the reference backend by construction (integer
// sums are order-independent; requantization uses the same formulas) and by test.
// The instruction set is chosen at run time: x86-64 AVX2 where the processor has it; on aarch64 NEON, with the
// dot-product instructions where the processor has them; else portable C++ that the compiler vectorises for the
// baseline target (SSE2 on x86-64, NEON on aarch64).
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

// Instruction-set levels of the optimised kernels, lowest first.
enum class SimdLevel {
  portable,  // C++ only, compiled for the build's baseline target
  avx2,      // x86-64 AVX2 intrinsics (functions compiled with target("avx2"), called only when the CPU has it)
  neon,      // aarch64 Advanced SIMD (ARMv8.0: every aarch64 processor)
  neon_dot,  // neon plus the ARMv8.2 dot-product instructions (SDOT) for int8 CONV_2D, where getauxval(AT_HWCAP)
             // reports HWCAP_ASIMDDP (functions compiled with target("+dotprod"), called only then)
};

std::string_view simd_level_name(SimdLevel level);

// The levels this processor runs, lowest first (always starts with `portable`).
std::vector<SimdLevel> available_simd_levels();

// The highest level this processor runs (cpuid on x86-64; `neon_dot` or `neon` on aarch64 by the kernel's hwcaps;
// else `portable`).
SimdLevel detect_simd_level();

// The optimised backend at `level`, or at the highest level below it that this processor runs, running
// its parallel kernels (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED) on `threads` threads (the caller's included).
std::unique_ptr<KernelBackend> make_optimized_kernel_backend(SimdLevel level, size_t threads = 1);

}  // namespace aisrv::engine::cpu
