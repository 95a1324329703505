// aisrv CPU engine, optimised kernels — construction (instruction-set detection, the kernel table), and the
// per-operator scratch / prepared-data needs.
#include "optimized_backend.hpp"

#include <algorithm>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace aisrv::engine::cpu {

std::string_view simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::avx2: return "avx2";
    case SimdLevel::neon: return "neon";
    case SimdLevel::neon_dot: return "neon_dot";
    default: return "portable";
  }
}

std::vector<SimdLevel> available_simd_levels() {
  std::vector<SimdLevel> v{SimdLevel::portable};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2")) v.push_back(SimdLevel::avx2);
#elif defined(__aarch64__)
  v.push_back(SimdLevel::neon);
  if (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) v.push_back(SimdLevel::neon_dot);
#endif
  return v;
}

SimdLevel detect_simd_level() { return available_simd_levels().back(); }

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
    : level_(effective_level(level)), pool_(std::max<size_t>(threads, 1), min_parallel_work) {
  opt::fill_portable_kernels(kernels_);
  if (level_ == SimdLevel::avx2) opt::fill_avx2_kernels(kernels_);
  if (level_ == SimdLevel::neon || level_ == SimdLevel::neon_dot) opt::fill_neon_kernels(kernels_);
  if (level_ == SimdLevel::neon_dot) opt::fill_neon_dot_kernels(kernels_);
}

std::string OptimizedKernelBackend::description() const {
  std::string d = std::string("opt (") + std::string(simd_level_name(level_));
  if (pool_.size() > 1) d += ", " + std::to_string(pool_.size()) + " threads";
  return d + ")";
}

size_t OptimizedKernelBackend::scratch_bytes(const OpParams& op) const {
  if (const auto* c = std::get_if<Conv2DParams>(&op))
    return opt::conv2d_scratch_bytes(*c, pool_.size(), opt::conv2d_layout(*c, kernels_));
  if (const auto* d = std::get_if<DepthwiseConv2DParams>(&op)) return opt::depthwise_scratch_bytes(*d, pool_.size());
  if (const auto* f = std::get_if<FullyConnectedParams>(&op)) return opt::fully_connected_scratch_bytes(*f);
  if (const auto* a = std::get_if<AveragePool2DParams>(&op)) return opt::average_pool_scratch_bytes(*a);
  if (const auto* l = std::get_if<LstmParams>(&op))  // the reference kernel's buffers too: it is the fallback
    return std::max(opt::lstm_scratch_bytes(*l), ReferenceKernelBackend::scratch_bytes(op));
  if (const auto* t = std::get_if<TransposeConvParams>(&op))  // the reference kernel is the fallback
    return std::max(opt::transpose_conv_scratch_bytes(*t, pool_.size()), ReferenceKernelBackend::scratch_bytes(op));
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
