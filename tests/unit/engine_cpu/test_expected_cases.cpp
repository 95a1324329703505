// aisrv tests — every case of ../shared/testdata/expected/cases.json through the CPU engine: load the model, write
// the input bytes, invoke, and compare every output tensor byte for byte with the file TensorFlow Lite Micro's
// reference kernels produced. Runs with kernels=ref, with kernels=opt at every SIMD level this processor has (one
// test case per level of the architecture; the levels the processor lacks are reported skipped), and
// with verify=on (opt checked against ref operator by operator) for the smaller models.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "simd_levels.hpp"
#include "testdata.hpp"

using aisrv::engine::LoadOptions;
using aisrv::engine::Placement;
using aisrv::engine::cpu::CpuBackend;
using aisrv::engine::cpu::CpuOptions;
using aisrv::engine::cpu::simd_level_name;
using aisrv::engine::cpu::SimdLevel;

namespace {

struct Case {
  std::string model, input;
  std::vector<std::string> outputs;  // expected files, in output order
};

std::vector<Case> load_cases() {
  std::ifstream in(aisrv::test::testdata_path("expected/cases.json"));
  REQUIRE(in);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<Case> cases;
  for (const auto& c : j) {
    Case k;
    k.model = c.at("model").get<std::string>();
    k.input = c.at("input").get<std::string>();
    for (const auto& o : c.at("outputs")) k.outputs.push_back(o.at("file").get<std::string>());
    cases.push_back(std::move(k));
  }
  return cases;
}

// Runs one case (`runs` inferences of the loaded model, each checked); CHECKs that every output is bit-exact.
void run_case(CpuBackend& backend, const Case& c, std::map<std::string, std::vector<uint8_t>>& model_cache,
              int runs = 1) {
  const std::string setting = std::string(backend.kernels()) + (backend.verifying() ? " verify=on" : "");
  INFO("model " << c.model << ", input " << c.input << ", kernels=" << setting);
  auto& model = model_cache[c.model];
  if (model.empty()) model = aisrv::test::read_file(aisrv::test::testdata_path(c.model));
  std::vector<std::string> log;
  LoadOptions lo;
  lo.log = [&](std::string_view line) { log.emplace_back(line); };
  auto info = backend.load(model, lo);
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? "" : info.error().what()));
  REQUIRE(info->inputs.size() == 1);
  REQUIRE(info->outputs.size() == c.outputs.size());
  const auto input = aisrv::test::read_file(aisrv::test::testdata_path(c.input));
  auto in = backend.input(0);
  REQUIRE(in.size() == input.size());
  std::copy(input.begin(), input.end(), in.begin());
  for (int run = 0; run < runs; ++run) {
    INFO("inference " << run + 1 << " of " << runs);
    auto timings = backend.invoke({});
    REQUIRE_MESSAGE(timings.ok(), (timings.ok() ? "" : timings.error().what()));
    CHECK(timings->size() == info->layer_count);
    for (size_t k = 0; k < c.outputs.size(); ++k) {
      const auto want = aisrv::test::read_file(aisrv::test::testdata_path(c.outputs[k]));
      auto got = backend.output(k);
      REQUIRE(got.size() == want.size());
      size_t diff = 0, first = want.size();
      for (size_t i = 0; i < want.size(); ++i)
        if (got[i] != want[i]) {
          if (first == want.size()) first = i;
          ++diff;
        }
      INFO("first difference at byte " << first << ": got " << (first < want.size() ? int(got[first]) : -1)
                                       << ", expected " << (first < want.size() ? int(want[first]) : -1));
      CHECK_MESSAGE(diff == 0, "output " << k << ": " << diff << " of " << want.size() << " bytes differ");
    }
  }
  // Inputs keep their bytes after the inference (GET_INPUT_TENSOR reads them back).
  CHECK(std::equal(input.begin(), input.end(), backend.input(0).begin()));
}

}  // namespace

TEST_CASE("every expected case is bit-exact with TFLite Micro's reference kernels") {
  const auto cases = load_cases();
  REQUIRE(cases.size() >= 20);
  std::map<std::string, std::vector<uint8_t>> models;
  for (const char* kernels : {"ref", "opt"}) {
    CpuOptions o;
    o.kernels = kernels;
    auto backend = CpuBackend::create(o);
    REQUIRE(backend.ok());
    REQUIRE((*backend)->kernels() == kernels);
    for (const Case& c : cases) run_case(**backend, c, models);
  }
}

// Each SIMD level of the architecture is a test case of its own (simd_levels.hpp): a level this processor lacks is
// reported as skipped, with the reason. The engine option simd=LEVEL forces the level, as a user would; the best
// level is also the kernels=opt run above (the portable C++ level is what a processor without AVX2, e.g. QEMU's
// qemu64, executes; on aarch64, the compiler-vectorised C++ beside NEON).
void expected_cases_at_level(SimdLevel level) {
  const auto cases = load_cases();
  std::map<std::string, std::vector<uint8_t>> models;
  INFO("SIMD level " << simd_level_name(level));
  CpuOptions o;
  o.simd = level;
  auto backend = CpuBackend::create(o);
  REQUIRE(backend.ok());
  CHECK((*backend)->options().find(",simd=" + std::string(simd_level_name(level)) + ",") != std::string::npos);
  for (const Case& c : cases) run_case(**backend, c, models);
}

AISRV_SIMD_LEVEL_CASES("every expected case is bit-exact with the optimised backend", expected_cases_at_level)

TEST_CASE("every expected case is bit-exact with the optimised backend on 2 and 3 threads") {
  const auto cases = load_cases();
  std::map<std::string, std::vector<uint8_t>> models;
  for (size_t threads : {2u, 3u}) {
    CpuOptions o;
    o.threads = threads;
    auto backend = CpuBackend::create(o);
    REQUIRE(backend.ok());
    REQUIRE((*backend)->threads() == threads);
    INFO("threads=" << threads);
    // As the engine runs: the worker pool measures, per operator shape and then per model, whether the workers pay
    // (worker_pool.hpp) — 20 inferences take the small models through both ways of the model-level trial
    // (13 warm-up, then each way twice in turn: the 15th and 16th on the caller), so the outputs are checked with
    // work handed out and with every operator on the caller (and its plans for one participant). The 300 M-MAC
    // networks run once (ASan time).
    for (const Case& c : cases)
      run_case(**backend, c, models,
               std::filesystem::file_size(aisrv::test::testdata_path(c.model)) > 2'000'000 ? 1 : 20);
  }
}

TEST_CASE("verify mode passes on every model when both backends agree") {
  const auto cases = load_cases();
  std::map<std::string, std::vector<uint8_t>> models;
  CpuOptions o;
  o.verify = true;
  auto backend = CpuBackend::create(o);
  REQUIRE(backend.ok());
  std::map<std::string, bool> seen;  // one input per model is enough here
  for (const Case& c : cases) {
    if (seen[c.model]) continue;
    seen[c.model] = true;
    // Verify mode runs every operator twice; the 300 M-MAC networks would dominate the test time under ASan.
    if (std::filesystem::file_size(aisrv::test::testdata_path(c.model)) > 2'000'000) continue;
    run_case(**backend, c, models);
  }
}
