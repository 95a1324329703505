// aisrv tests — the "cpu" InferenceBackend end to end on models built in the test: options and registration,
// load / input / invoke / output, per-operator timings, float32 graph I/O, inputs kept after invoke, the arena
// budget with both placements, cancellation, reload / unload, and the kernel-backend selection.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include <unistd.h>

#include "aisrv/engine/builtin.hpp"
#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "test_models.hpp"

using namespace aisrv;
using namespace aisrv::engine;
using engine::cpu::CpuBackend;
using engine::cpu::CpuOptions;

namespace {

std::unique_ptr<CpuBackend> make(CpuOptions o = {}) {
  auto b = CpuBackend::create(o);
  REQUIRE(b.ok());
  return std::move(b).value();
}

struct Log {
  std::vector<std::string> lines;
  LogFn fn() {
    return [this](std::string_view l) { lines.emplace_back(l); };
  }
  bool contains(std::string_view s) const {
    for (const auto& l : lines)
      if (l.find(s) != std::string::npos) return true;
    return false;
  }
};

}  // namespace

TEST_CASE("cpu options: defaults, values, refusals") {
  auto spec = parse_engine_spec("cpu");
  REQUIRE(spec.ok());
  auto o = cpu::parse_cpu_options(*spec);
  REQUIRE(o.ok());
  CHECK(o->kernels == "opt");
  CHECK_FALSE(o->verify);
  CHECK(o->arena_budget == cpu::kDefaultArenaBudget);
  spec = parse_engine_spec("cpu:kernels=ref,verify=on,arena=8M");
  o = cpu::parse_cpu_options(*spec);
  REQUIRE(o.ok());
  CHECK(o->kernels == "ref");
  CHECK(o->verify);
  CHECK(o->arena_budget == 8u << 20);
  CHECK(o->threads == 1);
  spec = parse_engine_spec("cpu:threads=3");
  o = cpu::parse_cpu_options(*spec);
  REQUIRE(o.ok());
  CHECK(o->threads == 3);
  spec = parse_engine_spec("cpu:threads=auto");
  o = cpu::parse_cpu_options(*spec);
  REQUIRE(o.ok());
  CHECK(o->threads == std::min<size_t>(static_cast<size_t>(sysconf(_SC_NPROCESSORS_ONLN)), cpu::kMaxThreads));
  for (const char* bad : {"cpu:kernels=fast", "cpu:verify=maybe", "cpu:arena=lots", "cpu:arena=0", "cpu:colour=red",
                          "cpu:threads=0", "cpu:threads=65", "cpu:threads=2K", "cpu:threads=-1", "cpu:threads=",
                          "cpu:kernels=ref,threads=2", "cpu:simd=avx512", "cpu:simd=", "cpu:kernels=ref,simd=portable"}) {
    auto s = parse_engine_spec(bad);
    REQUIRE(s.ok());
    auto r = cpu::parse_cpu_options(*s);
    CHECK_MESSAGE(!r.ok(), bad);
    if (!r.ok()) CHECK(r.error().code == Errc::invalid_argument);
  }
}

TEST_CASE("simd=LEVEL forces a level the processor runs, refuses one it lacks, and GET_ENGINE_INFO names it") {
  BackendRegistry registry;
  register_builtin_backends(registry);
  const auto available = cpu::available_simd_levels();
  for (cpu::SimdLevel level : {cpu::SimdLevel::portable, cpu::SimdLevel::avx2, cpu::SimdLevel::avx_vnni,
                               cpu::SimdLevel::avx512_vnni, cpu::SimdLevel::neon, cpu::SimdLevel::neon_dot}) {
    const std::string name(cpu::simd_level_name(level));
    INFO("simd=" << name);
    auto spec = parse_engine_spec("cpu:kernels=opt,simd=" + name + ",threads=2");
    REQUIRE(spec.ok());
    auto backend = registry.create(*spec);
    if (std::find(available.begin(), available.end(), level) == available.end()) {
      REQUIRE_FALSE(backend.ok());
      CHECK(backend.error().code == Errc::invalid_argument);
      CHECK(backend.error().what().find("simd=" + name + ": this processor does not run it") != std::string::npos);
      continue;
    }
    REQUIRE(backend.ok());
    CHECK((*backend)->options() == "kernels=opt,simd=" + name + ",threads=2,verify=off,arena=67108864");
    Log log;
    LoadOptions lo;
    lo.log = log.fn();
    REQUIRE((*backend)->load(test::small_net_model(), lo).ok());
    CHECK(log.contains("cpu: kernels=opt (" + name + ", 2 threads)"));
  }
  // auto is the default: the best level
  auto spec = parse_engine_spec("cpu:simd=auto");
  REQUIRE(spec.ok());
  auto backend = registry.create(*spec);
  REQUIRE(backend.ok());
  CHECK((*backend)->options().find(",simd=" + std::string(cpu::simd_level_name(cpu::detect_simd_level())) + ",") !=
        std::string::npos);
}

TEST_CASE("the registry builds the cpu backend; kernels=opt is the default and names its SIMD level") {
  BackendRegistry registry;
  register_builtin_backends(registry);
  auto spec = parse_engine_spec("cpu:arena=4M");
  REQUIRE(spec.ok());
  auto backend = registry.create(*spec);
  REQUIRE(backend.ok());
  CHECK((*backend)->kind() == "cpu");
  CHECK((*backend)->options() == "kernels=opt,simd=" + std::string(cpu::simd_level_name(cpu::detect_simd_level())) +
                                      ",threads=1,verify=off,arena=4194304");
  Log log;
  LoadOptions lo;
  lo.log = log.fn();
  auto info = (*backend)->load(test::small_net_model(), lo);
  REQUIRE(info.ok());
  const std::string level(cpu::simd_level_name(cpu::detect_simd_level()));
  CHECK(log.contains("cpu: kernels=opt (" + level + ")"));
  CHECK_FALSE(log.contains("requested"));
  CHECK(log.contains("bytes of prepared kernel data"));

  auto ref_spec = parse_engine_spec("cpu:kernels=ref,verify=on");
  REQUIRE(ref_spec.ok());
  auto ref = registry.create(*ref_spec);
  REQUIRE(ref.ok());
  CHECK((*ref)->options() == "kernels=ref,threads=1,verify=on,arena=67108864");
  Log ref_log;
  lo.log = ref_log.fn();
  REQUIRE((*ref)->load(test::small_net_model(), lo).ok());
  CHECK(ref_log.contains("cpu: kernels=ref, verified operator by operator against kernels=ref"));
}

TEST_CASE("load, infer, read outputs, timings per operator") {
  auto b = make();
  CHECK(b->input(0).empty());
  CHECK(b->output(0).empty());
  auto none = b->invoke({});
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == Errc::no_model);

  auto info = b->load(test::small_net_model(), {});
  REQUIRE(info.ok());
  CHECK(info->format == "tflite");
  REQUIRE(info->inputs.size() == 1);
  REQUIRE(info->outputs.size() == 1);
  CHECK(info->inputs[0].name == "input");
  CHECK(info->inputs[0].dtype == DType::int8);
  CHECK(info->inputs[0].shape == std::vector<int32_t>{1, 6, 6, 1});
  CHECK(info->inputs[0].bytes == 36);
  CHECK(info->inputs[0].scale == std::vector<float>{1.0f / 64});
  CHECK(info->outputs[0].bytes == 3);
  CHECK(info->layer_count == 6);
  CHECK(info->arena_bytes > 0);
  CHECK(b->input(1).empty());
  CHECK(b->output(1).empty());

  auto in = b->input(0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(static_cast<int8_t>(i * 7 % 50 - 20));
  const std::vector<uint8_t> written(in.begin(), in.end());
  auto t = b->invoke({});
  REQUIRE(t.ok());
  REQUIRE(t->size() == 6);
  const char* ops[] = {"CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "MEAN", "FULLY_CONNECTED", "SOFTMAX"};
  const char* names[] = {"conv0", "dw1", "pw2", "mean3", "fc4", "probabilities"};
  for (size_t i = 0; i < 6; ++i) {
    CHECK((*t)[i].op == ops[i]);
    CHECK((*t)[i].name == names[i]);
  }
  // Softmax output: probabilities summing to ~1.
  auto out = b->output(0);
  int sum = 0;
  for (uint8_t v : out) sum += static_cast<int8_t>(v) + 128;
  CHECK(std::abs(sum - 256) <= 3);
  const std::vector<uint8_t> first(out.begin(), out.end());
  // Inputs keep their bytes; a second inference gives the same result.
  CHECK(std::equal(written.begin(), written.end(), b->input(0).begin()));
  REQUIRE(b->invoke({}).ok());
  CHECK(std::equal(first.begin(), first.end(), b->output(0).begin()));
}

TEST_CASE("a recycled result is refilled with this model's operators, whatever it held") {
  auto b = make();
  REQUIRE(b->load(test::small_net_model(), {}).ok());
  const char* ops[] = {"CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "MEAN", "FULLY_CONNECTED", "SOFTMAX"};
  const char* names[] = {"conv0", "dw1", "pw2", "mean3", "fc4", "probabilities"};
  auto check = [&](const std::vector<engine::LayerTime>& t) {
    REQUIRE(t.size() == 6);
    for (size_t i = 0; i < 6; ++i) {
      CHECK(t[i].op == ops[i]);
      CHECK(t[i].name == names[i]);
    }
  };
  // Longer (another model's 9 layers, long names, old times) and shorter lists than the model's 6 operators.
  for (size_t held : {size_t{9}, size_t{2}, size_t{0}}) {
    std::vector<engine::LayerTime> old(held);
    for (auto& l : old) l = engine::LayerTime{std::string(40, 'x'), "UNIDIRECTIONAL_SEQUENCE_LSTM", 123456789};
    engine::InvokeContext ctx;
    ctx.recycle = &old;
    auto t = b->invoke(ctx);
    REQUIRE(t.ok());
    check(*t);
    CHECK(old.empty());  // taken
    uint64_t total = 0;
    for (const auto& l : *t) total += l.ns;
    CHECK(total > 0);
    CHECK(total < uint64_t{123456789} * 6);  // this inference's times, not the old ones
    // Handed back again: the same storage is refilled.
    const engine::LayerTime* storage = t->data();
    std::vector<engine::LayerTime> back = std::move(*t);
    ctx.recycle = &back;
    auto again = b->invoke(ctx);
    REQUIRE(again.ok());
    check(*again);
    CHECK(again->data() == storage);
  }
}

TEST_CASE("float32 graph inputs and outputs") {
  auto b = make();
  auto info = b->load(test::float_io_model(), {});
  REQUIRE(info.ok());
  CHECK(info->inputs[0].dtype == DType::float32);
  CHECK(info->inputs[0].bytes == 16);
  CHECK(info->outputs[0].dtype == DType::float32);
  const float x[4] = {1.0f, 0.5f, -0.25f, 2.0f};
  std::memcpy(b->input(0).data(), x, sizeof x);
  REQUIRE(b->invoke({}).ok());
  float y[2];
  REQUIRE(b->output(0).size() == sizeof y);
  std::memcpy(y, b->output(0).data(), sizeof y);
  CHECK(y[0] == doctest::Approx((1.0 + 1.0 - 0.75 + 8.0) / 16 + 1.0 / 32).epsilon(0.02));
  CHECK(y[1] == doctest::Approx((-0.25 - 1.0) / 16 - 1.0 / 16).epsilon(0.02));
}

TEST_CASE("arena budget: refused with the numbers; Placement::arena counts the model") {
  const auto model = test::small_net_model();
  CpuOptions o;
  o.arena_budget = 64;
  auto b = make(o);
  auto r = b->load(model, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::model_error);
  CHECK(r.error().message.find("arena budget is 64 bytes") != std::string::npos);
  CHECK(b->invoke({}).error().code == Errc::no_model);

  // A budget that fits the activations but not activations + model.
  auto probe = make();
  const size_t arena = probe->load(model, {})->arena_bytes;
  o.arena_budget = arena + 64;
  auto c = make(o);
  CHECK(c->load(model, {}).ok());
  LoadOptions primary;
  primary.placement = Placement::arena;
  auto refused = c->load(model, primary);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find(fmt::format("of model placed in the arena")) != std::string::npos);
  CHECK(refused.error().message.find(std::to_string(model.size())) != std::string::npos);
  o.arena_budget = arena + model.size() + 128;
  auto d = make(o);
  auto ok = d->load(model, primary);
  REQUIRE(ok.ok());
  REQUIRE(d->invoke({}).ok());
}

TEST_CASE("both placements compute the same result") {
  const auto model = test::small_net_model();
  std::vector<uint8_t> outs[2];
  int k = 0;
  for (Placement pl : {Placement::external, Placement::arena}) {
    auto b = make();
    LoadOptions lo;
    lo.placement = pl;
    REQUIRE(b->load(model, lo).ok());
    auto in = b->input(0);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 13);
    REQUIRE(b->invoke({}).ok());
    outs[k++].assign(b->output(0).begin(), b->output(0).end());
  }
  CHECK(outs[0] == outs[1]);
}

TEST_CASE("cancellation between operators") {
  auto b = make();
  REQUIRE(b->load(test::small_net_model(), {}).ok());
  std::atomic<bool> cancel{true};
  InvokeContext ctx;
  ctx.cancel = &cancel;
  auto r = b->invoke(ctx);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::cancelled);
  cancel = false;
  CHECK(b->invoke(ctx).ok());
}

TEST_CASE("a failed load leaves no model; unload drops it") {
  auto b = make();
  REQUIRE(b->load(test::small_net_model(), {}).ok());
  std::vector<uint8_t> junk(100, 0x5a);
  auto r = b->load(junk, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::model_error);
  CHECK(b->invoke({}).error().code == Errc::no_model);
  REQUIRE(b->load(test::small_net_model(), {}).ok());
  b->unload();
  CHECK(b->input(0).empty());
  CHECK(b->invoke({}).error().code == Errc::no_model);
}
