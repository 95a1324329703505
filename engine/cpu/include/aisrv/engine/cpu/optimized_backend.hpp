// aisrv CPU engine — the optimised kernel backend ("opt"): the reference backend's arithmetic with faster data
// movement and multiply-accumulate loops (packed int16 GEMM — on aarch64 pairwise int8, or int8 SDOT where the CPU
// has it — for CONV_2D, FULLY_CONNECTED, channel-vectorised DEPTHWISE_CONV_2D, stacked gate FCs for the integer
// LSTM, vectorised requantization, tables for SOFTMAX and 8-bit QUANTIZE, pooling, ADD, PAD, TRANSPOSE), and PADs
// folded into the convolution they feed (folds_pads). Bit-exact with the reference backend by construction (integer
// sums are order-independent; requantization uses the same formulas) and by test.
// The instruction set is chosen at run time: on x86-64 AVX-512 VNNI, else AVX-VNNI, else AVX2, where the processor
// (cpuid) and the operating system (XGETBV: the register state it saves) have them; on aarch64 NEON, with the
// dot-product instructions where the processor has them; else portable C++ that the compiler vectorises for the
// baseline target (SSE2 on x86-64, NEON on aarch64). The engine option `simd=LEVEL` forces a level the processor has.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

// Instruction-set levels of the optimised kernels, lowest first.
enum class SimdLevel {
  portable,  // C++ only, compiled for the build's baseline target
  avx2,      // x86-64 AVX2 intrinsics (functions compiled with target("avx2"), called only when the CPU has it)
  avx_vnni,  // avx2 plus the VEX-encoded 256-bit VPDPBUSD (AVX-VNNI) for int8 / uint8 CONV_2D and FULLY_CONNECTED
  avx512_vnni,  // avx2 plus AVX-512 F/BW/VL with the 512-bit VPDPBUSD (AVX512_VNNI) for the same operators and
                // AVX-512 requantization; needs the OS to save the ZMM and opmask state (XCR0 bits 5-7)
  neon,      // aarch64 Advanced SIMD (ARMv8.0: every aarch64 processor)
  neon_dot,  // neon plus the ARMv8.2 dot-product instructions (SDOT) for int8 CONV_2D, where getauxval(AT_HWCAP)
             // reports HWCAP_ASIMDDP (functions compiled with target("+dotprod"), called only then)
};

std::string_view simd_level_name(SimdLevel level);

// The level named `name` (as simd_level_name spells it), or nullopt.
std::optional<SimdLevel> parse_simd_level(std::string_view name);

// The levels this processor runs, lowest first (always starts with `portable`).
std::vector<SimdLevel> available_simd_levels();

// The highest level this processor runs (cpuid + XGETBV on x86-64; `neon_dot` or `neon` on aarch64 by the kernel's
// hwcaps; else `portable`).
SimdLevel detect_simd_level();

// Why this processor does not run `level` (cpuid, XGETBV or the build's architecture), or "" when it does.
std::string simd_level_unavailable_reason(SimdLevel level);

// The optimised backend at `level`, or at the highest level below it that this processor runs, running
// its parallel kernels (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED) on `threads` threads (the caller's included).
std::unique_ptr<KernelBackend> make_optimized_kernel_backend(SimdLevel level, size_t threads = 1);

// The SIMD level `backend` runs at when it is an optimised backend, else nullopt (the reference backend).
std::optional<SimdLevel> simd_level_of(const KernelBackend& backend);

}  // namespace aisrv::engine::cpu
