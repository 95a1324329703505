// aisrv fuzz target — the CPU engine's TFLite loader: a model from arbitrary bytes (seeded with the shared test data's
// models); a model it accepts is run once on zero inputs with the optimized kernels, in a small arena.
#include <cstddef>
#include <cstdint>
#include <span>

#include "aisrv/engine/cpu/cpu_backend.hpp"

using namespace aisrv;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  engine::cpu::CpuOptions o;
  o.arena_budget = 8u << 20;
  static auto backend = std::move(engine::cpu::CpuBackend::create(o)).value();
  auto info = backend->load(std::span<const uint8_t>(data, size), engine::LoadOptions{});
  if (!info) return 0;
  uint64_t work = 0;  // keep runs short: skip models with large tensors
  for (const auto& t : info->inputs) work += t.bytes;
  for (const auto& t : info->outputs) work += t.bytes;
  if (work < (1u << 20) && info->layer_count < 200) {
    engine::InvokeContext ctx;
    (void)backend->invoke(ctx);
  }
  backend->unload();
  return 0;
}
