// aisrv tests — the models people run (tests/data/models/cases.json: YOLOv8n, the Coral traffic SSD with
// TFLite_Detection_PostProcess, DeepLab v3, MoveNet, split_concat) through the CPU engine, every output compared
// with the reference kernels' bytes: kernels=ref, kernels=opt at every SIMD level of this processor, on 1 and 2
// threads, and verify mode. Large networks ("heavy") run fewer configurations where the machine is emulated
// (AISRV_EMULATED=1: qemu-user) — the opt backend at its best level, 1 and 2 threads — and, without emulation,
// kernels=ref and the lower SIMD levels on their first picture only.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "model_cases.hpp"
#include "simd_levels.hpp"

using namespace aisrv;
using engine::cpu::CpuBackend;
using engine::cpu::CpuOptions;

namespace {

bool emulated() {
  const char* e = std::getenv("AISRV_EMULATED");
  return e && std::string(e) == "1";
}

struct Config {
  std::string label;
  std::unique_ptr<CpuBackend> backend;
};

// The configurations a case runs with.
std::vector<Config> configs(bool full) {
  using namespace engine::cpu;
  std::vector<Config> c;
  auto add = [&](std::string label, std::unique_ptr<KernelBackend> primary, std::unique_ptr<KernelBackend> checker,
                 size_t threads) {
    CpuOptions o;
    o.threads = threads;
    o.arena_budget = uint64_t{512} << 20;
    c.push_back({std::move(label), std::make_unique<CpuBackend>(o, std::move(primary), std::move(checker))});
  };
  const SimdLevel best = detect_simd_level();
  add(fmt::format("opt ({})", simd_level_name(best)), make_optimized_kernel_backend(best, 1), nullptr, 1);
  add(fmt::format("opt ({}), 2 threads", simd_level_name(best)), make_optimized_kernel_backend(best, 2), nullptr, 2);
  if (!full) return c;
  add("ref", make_kernel_backend("ref"), nullptr, 1);
  for (SimdLevel level : available_simd_levels())
    if (level != best)
      add(fmt::format("opt ({})", simd_level_name(level)), make_optimized_kernel_backend(level, 1), nullptr, 1);
  add("opt verified against ref", make_optimized_kernel_backend(best, 1), make_kernel_backend("ref"), 1);
  return c;
}

}  // namespace

TEST_CASE("the models people run are bit-exact with the reference kernels") {
  const auto cases = test::load_model_cases();
  REQUIRE(cases.size() >= 6);
  std::map<std::string, std::vector<uint8_t>> models;
  std::map<std::string, int> seen;  // cases run so far per model
  for (const test::ModelCase& mc : cases) {
    INFO("case " << mc.name << " (" << mc.model << ")");
    auto& model = models[mc.model];
    if (model.empty()) model = test::read_file(test::testdata_path(mc.model));
    const bool first_of_model = seen[mc.model]++ == 0;
    const bool full = !mc.heavy || (!emulated() && first_of_model);
    std::vector<std::vector<uint8_t>> inputs;
    for (Config& cfg : configs(full)) {
      INFO("kernels " << cfg.label);
      auto info = cfg.backend->load(model, {});
      REQUIRE_MESSAGE(info.ok(), (info.ok() ? "" : info.error().what()));
      REQUIRE(info->inputs.size() == mc.inputs.size());
      REQUIRE(info->outputs.size() == mc.outputs.size());
      if (inputs.empty())
        for (size_t i = 0; i < mc.inputs.size(); ++i) {
          inputs.push_back(test::make_case_input(mc.inputs[i], info->inputs[i]));
          REQUIRE_MESSAGE(test::sha256_hex(inputs[i]) == mc.inputs[i].sha256,
                          "input " << i << " made from the test data differs from the one the reference outputs were "
                                      "made with (the image pipeline changed?)");
        }
      for (size_t i = 0; i < inputs.size(); ++i) {
        auto in = cfg.backend->input(i);
        REQUIRE(in.size() == inputs[i].size());
        std::copy(inputs[i].begin(), inputs[i].end(), in.begin());
      }
      auto timings = cfg.backend->invoke({});
      REQUIRE_MESSAGE(timings.ok(), (timings.ok() ? "" : timings.error().what()));
      for (size_t k = 0; k < mc.outputs.size(); ++k) {
        const std::string diff = test::compare_case_output(mc.outputs[k], cfg.backend->output(k));
        CHECK_MESSAGE(diff.empty(), "output " << k << " '" << info->outputs[k].name << "': " << diff);
      }
    }
  }
}

// The levels configs() does not run because this processor lacks them, with the reason (simd_levels.hpp).
AISRV_SIMD_LEVEL_REPORT("the models people run")
