// aisrv CPU engine — the InferenceBackend for TensorFlow Lite INT8 models ("TFL3" flatbuffers), kind "cpu":
//   aisrvd --engine 0=cpu[:kernels=ref|opt][,simd=auto|LEVEL][,threads=K|auto][,verify=on|off][,arena=SIZE]
// kernels  which KernelBackend runs the operators: "opt" (default; SIMD level chosen at run time) or "ref".
// simd     opt's instruction-set level: auto (default: the best this processor runs) or one it runs (portable, avx2,
//          avx_vnni, avx512_vnni, neon, neon_dot); a level the processor lacks is refused.
// threads  threads of the optimised kernels' CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED (default 1; `auto` = the
//          online processors). Started with the engine, asleep between operators; bit-exact with threads=1.
// verify   run the reference backend beside it, operator by operator, and fail the inference at the first
//          operator whose output differs (debug log names operator, type, element and both values).
// arena    budget for the planned activation arena, plus the model itself when it is loaded with
//          Placement::arena (SET_MODEL_PRIMARY). Default 64 MiB.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "aisrv/engine/backend.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "aisrv/engine/registry.hpp"

namespace aisrv::engine::cpu {

inline constexpr uint64_t kDefaultArenaBudget = uint64_t{64} << 20;
inline constexpr size_t kMaxThreads = 64;  // threads=K accepts 1..kMaxThreads; auto is clamped to it

struct CpuOptions {
  std::string kernels = "opt";  // as requested
  // kernels=opt at this level (one the processor runs); none: the best it runs
  std::optional<SimdLevel> simd = std::nullopt;
  size_t threads = 1;  // `auto` resolved
  bool verify = false;
  uint64_t arena_budget = kDefaultArenaBudget;
};

// Options from an engine spec ("cpu:kernels=ref,arena=8M"); Errc::invalid_argument for unknown keys or values.
Result<CpuOptions> parse_cpu_options(const EngineSpec& spec);

class Interpreter;

class CpuBackend : public InferenceBackend {
 public:
  // Kernel backends by name as the options say.
  static Result<std::unique_ptr<CpuBackend>> create(const CpuOptions& options);
  // Explicit kernel backends; a non-null `checker` turns verify mode on (any pair of backends can be compared).
  CpuBackend(CpuOptions options, std::unique_ptr<KernelBackend> primary, std::unique_ptr<KernelBackend> checker);
  ~CpuBackend() override;

  std::string_view kind() const override { return "cpu"; }
  std::string options() const override;

  Result<ModelInfo> load(std::span<const uint8_t> model, const LoadOptions& options) override;
  void unload() override;
  // A CpuBackend with the same options and kernel backends of the same names and SIMD level (their own instances:
  // threads, prepared state), so a replacement model gets its own arena beside the loaded one; nullptr when a kernel
  // backend has no name make_kernel_backend knows (one injected by a test): the old model is then unloaded first.
  std::unique_ptr<InferenceBackend> make_sibling() const override;
  std::span<uint8_t> input(size_t index) override;
  std::span<const uint8_t> output(size_t index) const override;
  Result<std::vector<LayerTime>> invoke(const InvokeContext& ctx) override;

  // The kernel backend that runs the operators ("ref", "opt").
  std::string_view kernels() const { return primary_->name(); }
  size_t threads() const { return options_.threads; }
  bool verifying() const { return checker_ != nullptr; }

 private:
  CpuOptions options_;
  std::unique_ptr<KernelBackend> primary_;
  std::unique_ptr<KernelBackend> checker_;
  std::unique_ptr<Interpreter> model_;
};

// Adds kind "cpu" to a registry (engine/src/builtin.cpp calls it).
void register_cpu_backend(BackendRegistry& registry);

}  // namespace aisrv::engine::cpu
