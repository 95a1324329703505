// aisrv CPU engine, optimised kernels — construction (instruction-set detection, the kernel table), and the
// per-operator scratch / prepared-data needs.
#include "optimized_backend.hpp"

#include <algorithm>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace aisrv::engine::cpu {

std::string_view simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::avx2: return "avx2";
    case SimdLevel::avx_vnni: return "avx_vnni";
    case SimdLevel::avx512_vnni: return "avx512_vnni";
    case SimdLevel::neon: return "neon";
    case SimdLevel::neon_dot: return "neon_dot";
    default: return "portable";
  }
}

std::optional<SimdLevel> parse_simd_level(std::string_view name) {
  for (SimdLevel l : {SimdLevel::portable, SimdLevel::avx2, SimdLevel::avx_vnni, SimdLevel::avx512_vnni,
                      SimdLevel::neon, SimdLevel::neon_dot})
    if (simd_level_name(l) == name) return l;
  return std::nullopt;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
namespace {
// What cpuid and XGETBV say, read once. An instruction set counts only when the processor has it (cpuid) and the
// operating system saves the registers it uses (XCR0, readable with XGETBV once cpuid reports OSXSAVE): bits 1 and
// 2 (SSE and AVX state) for the 256-bit levels, and 5, 6, 7 (opmask, upper halves of ZMM0-15, ZMM16-31) for AVX-512.
struct X86Features {
  bool avx2 = false, avx_vnni = false, avx512_vnni = false;  // the levels
  bool cpu_avx2 = false, cpu_avx_vnni = false, cpu_avx512 = false, cpu_avx512_vnni = false;  // cpuid alone
  bool ymm_state = false, zmm_state = false;                                              // XCR0
};

uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));  // XGETBV is an OSXSAVE instruction: no -m flag
  return (uint64_t{edx} << 32) | eax;
}

X86Features read_x86_features() {
  X86Features f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = read_xcr0();
  f.ymm_state = (xcr0 & 0x6) == 0x6;    // XMM, YMM
  f.zmm_state = (xcr0 & 0xE6) == 0xE6;  // and opmask, ZMM_Hi256, Hi16_ZMM
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = (b >> 5) & 1;
  const bool avx512 = ((b >> 16) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);  // F, BW, VL
  const bool vnni512 = (c >> 11) & 1;                                          // AVX512_VNNI
  const unsigned max_sub = a;
  bool avx_vnni = false;
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    avx_vnni = (a >> 4) & 1;  // AVX-VNNI (VEX-encoded VPDPBUSD)
  }
  f.cpu_avx2 = avx2;
  f.cpu_avx_vnni = avx_vnni;
  f.cpu_avx512 = avx512;
  f.cpu_avx512_vnni = vnni512;
  f.avx2 = avx2 && f.ymm_state;
  f.avx_vnni = f.avx2 && avx_vnni;
  f.avx512_vnni = f.avx2 && avx512 && vnni512 && f.zmm_state;
  return f;
}

const X86Features& x86_features() {
  static const X86Features f = read_x86_features();
  return f;
}
}  // namespace
#endif

std::vector<SimdLevel> available_simd_levels() {
  std::vector<SimdLevel> v{SimdLevel::portable};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  const X86Features& f = x86_features();
  if (f.avx2) v.push_back(SimdLevel::avx2);
  if (f.avx_vnni) v.push_back(SimdLevel::avx_vnni);
  if (f.avx512_vnni) v.push_back(SimdLevel::avx512_vnni);
#elif defined(__aarch64__)
  v.push_back(SimdLevel::neon);
  if (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) v.push_back(SimdLevel::neon_dot);
#endif
  return v;
}

SimdLevel detect_simd_level() { return available_simd_levels().back(); }

std::string simd_level_unavailable_reason(SimdLevel level) {
  const auto available = available_simd_levels();
  if (std::find(available.begin(), available.end(), level) != available.end()) return {};
  const bool x86_level = level == SimdLevel::avx2 || level == SimdLevel::avx_vnni || level == SimdLevel::avx512_vnni;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (!x86_level) return "an aarch64 level (this is an x86-64 build)";
  const X86Features& f = x86_features();
  if (!f.cpu_avx2) return "the processor has no AVX2 (cpuid)";
  if (!f.ymm_state) return "the operating system does not enable the AVX register state (XCR0 bits 1-2)";
  if (level == SimdLevel::avx_vnni) return "the processor has no AVX-VNNI (cpuid leaf 7.1 EAX bit 4)";
  if (!f.cpu_avx512) return "the processor lacks AVX-512 F, BW or VL (cpuid)";
  if (!f.cpu_avx512_vnni) return "the processor has no AVX512_VNNI (cpuid)";
  return "the operating system does not enable the AVX-512 register state (XCR0 bits 5-7)";
#elif defined(__aarch64__)
  if (x86_level) return "an x86-64 level (this is an aarch64 build)";
  return "the kernel reports no dot product (HWCAP_ASIMDDP)";
#else
  (void)x86_level;
  return "this build has only the portable level";
#endif
}

namespace {
// The highest level this processor runs that is not above `requested` (levels of another architecture rank by
// their enum value, so a request for one lands on the best level here below it, or on portable).
SimdLevel effective_level(SimdLevel requested) {
  SimdLevel best = SimdLevel::portable;
  for (SimdLevel l : available_simd_levels())
    if (l <= requested) best = l;
  return best;
}
}  // namespace

std::unique_ptr<KernelBackend> make_optimized_kernel_backend(SimdLevel level, size_t threads) {
  return std::make_unique<OptimizedKernelBackend>(level, threads);
}

OptimizedKernelBackend::OptimizedKernelBackend(SimdLevel level, size_t threads, uint64_t min_parallel_work)
    : level_(effective_level(level)),
      pool_(std::max<size_t>(threads, 1), min_parallel_work, /*measure=*/min_parallel_work > 0),
      row_cursors_(std::make_unique<opt::RowCursor[]>(pool_.capacity())) {
  opt::fill_portable_kernels(kernels_);
  if (opt::uses_avx2(level_)) opt::fill_avx2_kernels(kernels_);
  if (level_ == SimdLevel::avx_vnni) opt::fill_avx_vnni_kernels(kernels_);
  if (level_ == SimdLevel::avx512_vnni) opt::fill_avx512_vnni_kernels(kernels_);
  if (level_ == SimdLevel::neon || level_ == SimdLevel::neon_dot) opt::fill_neon_kernels(kernels_);
  if (level_ == SimdLevel::neon_dot) opt::fill_neon_dot_kernels(kernels_);
}

std::optional<SimdLevel> simd_level_of(const KernelBackend& backend) {
  if (const auto* o = dynamic_cast<const OptimizedKernelBackend*>(&backend)) return o->level();
  return std::nullopt;
}

std::string OptimizedKernelBackend::description() const {
  std::string d = std::string("opt (") + std::string(simd_level_name(level_));
  if (pool_.capacity() > 1) d += ", " + std::to_string(pool_.capacity()) + " threads";
  return d + ")";
}

size_t OptimizedKernelBackend::scratch_bytes(const OpParams& op) const {
  // Kernels plan for all participants or, in an inference the pool runs on the caller alone, for one
  // (WorkerPool::size): the scratch fits both plans.
  const size_t all = pool_.capacity();
  if (const auto* c = std::get_if<Conv2DParams>(&op)) {
    const opt::GemmLayout layout = opt::conv2d_layout(*c, kernels_);
    return std::max(opt::conv2d_scratch_bytes(*c, all, layout), opt::conv2d_scratch_bytes(*c, 1, layout));
  }
  if (const auto* d = std::get_if<DepthwiseConv2DParams>(&op))
    return std::max(opt::depthwise_scratch_bytes(*d, all), opt::depthwise_scratch_bytes(*d, 1));
  if (const auto* f = std::get_if<FullyConnectedParams>(&op)) return opt::fully_connected_scratch_bytes(*f);
  if (const auto* a = std::get_if<AveragePool2DParams>(&op)) return opt::average_pool_scratch_bytes(*a);
  if (const auto* l = std::get_if<LstmParams>(&op))  // the reference kernel's buffers too: it is the fallback
    return std::max(opt::lstm_scratch_bytes(*l), ReferenceKernelBackend::scratch_bytes(op));
  if (const auto* t = std::get_if<TransposeConvParams>(&op))  // the reference kernel is the fallback
    return std::max({opt::transpose_conv_scratch_bytes(*t, all), opt::transpose_conv_scratch_bytes(*t, 1),
                     ReferenceKernelBackend::scratch_bytes(op)});
  return ReferenceKernelBackend::scratch_bytes(op);
}

size_t OptimizedKernelBackend::prepared_bytes(const OpParams& op) const {
  if (const auto* c = std::get_if<Conv2DParams>(&op)) return opt::conv2d_prepared_bytes(*c, opt::conv2d_layout(*c, kernels_));
  if (const auto* d = std::get_if<DepthwiseConv2DParams>(&op)) return opt::depthwise_prepared_bytes(*d);
  if (const auto* l = std::get_if<LstmParams>(&op)) return opt::lstm_prepared_bytes(*l);
  if (const auto* s = std::get_if<SoftmaxParams>(&op)) return opt::softmax_prepared_bytes(*s);
  if (const auto* q = std::get_if<QuantizeParams>(&op)) return opt::quantize_prepared_bytes(*q);
  if (const auto* u = std::get_if<UnaryParams>(&op)) return opt::unary_prepared_bytes(*u);
  if (const auto* t = std::get_if<TransposeConvParams>(&op)) return opt::transpose_conv_prepared_bytes(*t);
  if (const auto* f = std::get_if<FullyConnectedParams>(&op)) return opt::fully_connected_prepared_bytes(*f, kernels_);
  return 0;
}

void OptimizedKernelBackend::prepare(const OpParams& op, std::span<uint8_t> prepared) const {
  if (const auto* c = std::get_if<Conv2DParams>(&op)) opt::conv2d_prepare(*c, opt::conv2d_layout(*c, kernels_), prepared);
  else if (const auto* d = std::get_if<DepthwiseConv2DParams>(&op)) opt::depthwise_prepare(*d, kernels_.depthwise_layout, prepared);
  else if (const auto* l = std::get_if<LstmParams>(&op)) opt::lstm_prepare(*l, prepared);
  else if (const auto* s = std::get_if<SoftmaxParams>(&op)) opt::softmax_prepare(*s, prepared);
  else if (const auto* q = std::get_if<QuantizeParams>(&op)) opt::quantize_prepare(*q, prepared);
  else if (const auto* u = std::get_if<UnaryParams>(&op)) opt::unary_prepare(*u, prepared);
  else if (const auto* t = std::get_if<TransposeConvParams>(&op)) opt::transpose_conv_prepare(*t, prepared);
  else if (const auto* f = std::get_if<FullyConnectedParams>(&op)) opt::fully_connected_prepare(*f, prepared);
}

void OptimizedKernelBackend::lstm(const LstmParams& p) {
  if (!opt::lstm_run(p, kernels_)) ReferenceKernelBackend::lstm(p);
}

namespace opt {

bool requantization_in_range(const std::vector<int32_t>& multiplier, const std::vector<int32_t>& shift) {
  if (multiplier.size() != shift.size()) return false;
  for (size_t i = 0; i < multiplier.size(); ++i)
    if (multiplier[i] < 0 || shift[i] < -31 || shift[i] > 30) return false;
  return true;
}

}  // namespace opt

}  // namespace aisrv::engine::cpu
