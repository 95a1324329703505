// aisrv CPU engine — the optimised kernel backend ("opt"): the reference backend's arithmetic with faster data
// movement and multiply-accumulate loops (packed int16 GEMM for CONV_2D / FULLY_CONNECTED, channel-vectorised
// DEPTHWISE_CONV_2D, vectorised requantization, pooling, ADD, PAD, TRANSPOSE). Bit-exact with the reference
// backend by construction (integer sums are order-independent; requantization uses the same formulas) and by test.
// The instruction set is chosen at run time: x86-64 AVX2 where the processor has it, else portable C++ that the
// compiler vectorises for the baseline target (SSE2 on x86-64, NEON on aarch64).
#pragma once

#include <memory>
#include <string_view>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

// Instruction-set levels of the optimised kernels, lowest first.
enum class SimdLevel {
  portable,  // C++ only, compiled for the build's baseline target
  avx2,      // x86-64 AVX2 intrinsics (functions compiled with target("avx2"), called only when the CPU has it)
};

std::string_view simd_level_name(SimdLevel level);

// The highest level this processor runs (cpuid on x86-64; `portable` elsewhere).
SimdLevel detect_simd_level();

// The optimised backend at `level`, or at the highest supported level below it when the processor lacks it.
std::unique_ptr<KernelBackend> make_optimized_kernel_backend(SimdLevel level);

}  // namespace aisrv::engine::cpu
