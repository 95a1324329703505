// aisrv CPU engine — the "cpu" InferenceBackend: options, kernel-backend selection, and the load / input / invoke /
// output lifecycle on top of the Interpreter.
#include "aisrv/engine/cpu/cpu_backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "interpreter.hpp"

namespace aisrv::engine::cpu {

Result<CpuOptions> parse_cpu_options(const EngineSpec& spec) {
  CpuOptions o;
  for (const auto& [key, value] : spec.options) {
    if (key == "kernels") {
      if (value != "ref" && value != "opt")
        return make_error(Errc::invalid_argument, "cpu: kernels={} is not one of ref, opt", value);
      o.kernels = value;
    } else if (key == "threads") {
      if (value == "auto") {
        o.threads = static_cast<size_t>(std::clamp<long>(sysconf(_SC_NPROCESSORS_ONLN), 1, kMaxThreads));
      } else {
        size_t n = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc{} || end != value.data() + value.size() || n < 1 || n > kMaxThreads)
          return make_error(Errc::invalid_argument, "cpu: threads={} is not auto or a count from 1 to {}", value,
                            kMaxThreads);
        o.threads = n;
      }
    } else if (key == "simd") {
      if (value == "auto") {
        o.simd.reset();
        continue;
      }
      const std::optional<SimdLevel> level = parse_simd_level(value);
      if (!level)
        return make_error(Errc::invalid_argument,
                          "cpu: simd={} is not one of auto, portable, avx2, avx_vnni, avx512_vnni, neon, neon_dot",
                          value);
      const auto available = available_simd_levels();
      if (std::find(available.begin(), available.end(), *level) == available.end()) {
        std::string names;
        for (SimdLevel l : available) names += (names.empty() ? "" : ", ") + std::string(simd_level_name(l));
        return make_error(Errc::invalid_argument, "cpu: simd={}: this processor does not run it (it runs: {})", value,
                          names);
      }
      o.simd = *level;
    } else if (key == "verify") {
      o.verify = AISRV_TRY(parse_bool(value));
    } else if (key == "arena") {
      o.arena_budget = AISRV_TRY(parse_size(value));
      if (o.arena_budget == 0) return make_error(Errc::invalid_argument, "cpu: arena=0 leaves no memory");
    } else {
      return make_error(Errc::invalid_argument,
                        "cpu: unknown option '{}' (known: kernels, simd, threads, verify, arena)", key);
    }
  }
  if (o.simd && o.kernels != "opt")
    return make_error(Errc::invalid_argument, "cpu: simd={} needs kernels=opt (the reference kernels are plain C++)",
                      simd_level_name(*o.simd));
  if (o.threads > 1 && o.kernels != "opt")
    return make_error(Errc::invalid_argument, "cpu: threads={} needs kernels=opt (the reference kernels run on one thread)",
                      o.threads);
  return o;
}

Result<std::unique_ptr<CpuBackend>> CpuBackend::create(const CpuOptions& options) {
  std::unique_ptr<KernelBackend> primary = options.simd && options.kernels == "opt"
                                               ? make_optimized_kernel_backend(*options.simd, options.threads)
                                               : make_kernel_backend(options.kernels, options.threads);
  if (!primary) return make_error(Errc::invalid_argument, "cpu: kernels={} is not one of ref, opt", options.kernels);
  std::unique_ptr<KernelBackend> checker = options.verify ? make_kernel_backend("ref") : nullptr;
  return std::make_unique<CpuBackend>(options, std::move(primary), std::move(checker));
}

CpuBackend::CpuBackend(CpuOptions options, std::unique_ptr<KernelBackend> primary,
                       std::unique_ptr<KernelBackend> checker)
    : options_(std::move(options)), primary_(std::move(primary)), checker_(std::move(checker)) {}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::options() const {
  const std::optional<SimdLevel> level = simd_level_of(*primary_);
  return fmt::format("kernels={}{},threads={},verify={},arena={}", primary_->name(),
                     level ? ",simd=" + std::string(simd_level_name(*level)) : std::string(), options_.threads,
                     checker_ ? "on" : "off", options_.arena_budget);
}

Result<ModelInfo> CpuBackend::load(std::span<const uint8_t> model, const LoadOptions& options) {
  unload();
  InterpreterConfig config;
  config.arena_budget = options_.arena_budget;
  config.placement = options.placement;
  config.primary = primary_.get();
  config.checker = checker_.get();
  config.log = options.log;
  auto loaded = Interpreter::load(model, config);
  if (!loaded) return std::move(loaded).error();  // the caller logs the reason (the interpreter's engine slot does)
  model_ = std::move(loaded).value();
  if (options.log)
    options.log(checker_ ? fmt::format("cpu: kernels={}, verified operator by operator against kernels={}",
                                       primary_->description(), checker_->description())
                         : fmt::format("cpu: kernels={}", primary_->description()));
  return model_->info();
}

void CpuBackend::unload() { model_.reset(); }

std::unique_ptr<InferenceBackend> CpuBackend::make_sibling() const {
  // The same kernels at the same SIMD level (simd= or the level detected when this backend was made).
  const std::optional<SimdLevel> level = simd_level_of(*primary_);
  std::unique_ptr<KernelBackend> primary = level ? make_optimized_kernel_backend(*level, options_.threads)
                                                 : make_kernel_backend(primary_->name(), options_.threads);
  if (!primary || primary->name() != primary_->name()) return nullptr;
  std::unique_ptr<KernelBackend> checker;
  if (checker_) {
    checker = make_kernel_backend(checker_->name());
    if (!checker) return nullptr;
  }
  return std::make_unique<CpuBackend>(options_, std::move(primary), std::move(checker));
}

std::span<uint8_t> CpuBackend::input(size_t index) { return model_ ? model_->input(index) : std::span<uint8_t>{}; }

std::span<const uint8_t> CpuBackend::output(size_t index) const {
  return model_ ? model_->output(index) : std::span<const uint8_t>{};
}

Result<std::vector<LayerTime>> CpuBackend::invoke(const InvokeContext& ctx) {
  if (!model_) return make_error(Errc::no_model, "cpu: no model loaded");
  return model_->invoke(*primary_, checker_.get(), ctx);
}

void register_cpu_backend(BackendRegistry& registry) {
  registry.add("cpu",
               "TensorFlow Lite INT8 interpreter; options kernels=ref|opt (default opt), simd=auto|LEVEL (opt's "
               "instruction set: portable, avx2, avx_vnni, avx512_vnni, neon, neon_dot; default auto = the best "
               "here), threads=K|auto (default 1), "
               "verify=on|off (compare every operator with ref), arena=SIZE (default 64M)",
               [](const EngineSpec& spec) -> Result<std::unique_ptr<InferenceBackend>> {
                 const CpuOptions options = AISRV_TRY(parse_cpu_options(spec));
                 std::unique_ptr<InferenceBackend> backend = AISRV_TRY(CpuBackend::create(options));
                 return backend;
               });
}

}  // namespace aisrv::engine::cpu
