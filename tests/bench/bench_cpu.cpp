// aisrv benchmarks — the CPU engine (issue 3): for every model of ../shared/testdata that has expected cases, the
// median inference latency with kernels=opt against kernels=ref, both measured in this process on the same loaded
// model and interleaved run by run (so both see the same machine state), the ratio, and the MAC rate achieved.
// Beside ours it prints TensorFlow Lite Micro's own reference-kernel latency on this kind of machine — a constant
// copied from ../shared/testdata/expected/EXPECTED.md, labelled as such, not measured here.
//
//   bench_cpu [--min-runs N] [--seconds S] [--model SUBSTRING] [--breakdown] [--layers]
//     --min-runs   at least N timed inferences per backend and model (default 15)
//     --seconds    keep sampling a model until both backends have run this long in total (default 3)
//     --model      only models whose path contains SUBSTRING
//     --breakdown  also print each backend's time per operator type (medians over the runs)
//     --layers     also print each operator's time with both backends (medians over the runs)
//
// Every output is first checked against the expected bytes with both backends; a mismatch is an error (exit 1).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "bench_report.hpp"
#include "interpreter.hpp"
#include "testdata.hpp"

using namespace aisrv;
using namespace aisrv::engine::cpu;
using Clock = std::chrono::steady_clock;

namespace {

// TFLite Micro reference kernels, "build B" (-O2 -DNDEBUG), median of 20 Invoke() calls, run 1 — the figures of
// the "Timing anchor" table in ../shared/testdata/expected/EXPECTED.md (AMD EPYC Zen 3 KVM guest, taskset -c 1).
// Documented constants, not measured by this program. Models without an entry there have none.
struct TflmAnchor {
  const char* model_stem;
  double ms;
};
constexpr TflmAnchor kTflmFromExpectedMd[] = {
    {"person_detect", 11.84},
    {"mobilenet_v1_0.25_128_quant", 26.97},  // uint8: TFLite reference uint8 kernels inside TFLM (EXPECTED.md)
    {"mobilenet_v2_quantized_1x3x224x224", 356.8},
};

struct Options {
  int min_runs = 15;
  double seconds = 3.0;
  std::string model_filter;
  bool breakdown = false;
  bool layers = false;
};

struct ModelCase {
  std::string model, input;
  std::vector<std::string> outputs;
};

std::string stem(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string s = path.substr(slash == std::string::npos ? 0 : slash + 1);
  const auto dot = s.rfind(".tflite");
  return dot == std::string::npos ? s : s.substr(0, dot);
}

// The first case of every model in cases.json.
std::vector<ModelCase> models_with_cases() {
  std::ifstream in(test::testdata_path("expected/cases.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<ModelCase> out;
  for (const auto& c : j) {
    const std::string model = c.at("model").get<std::string>();
    if (std::any_of(out.begin(), out.end(), [&](const ModelCase& m) { return m.model == model; })) continue;
    ModelCase m{model, c.at("input").get<std::string>(), {}};
    for (const auto& o : c.at("outputs")) m.outputs.push_back(o.at("file").get<std::string>());
    out.push_back(std::move(m));
  }
  return out;
}

// Multiply-accumulates of one operator, counted as OPS.md counts them (CONV_2D, DEPTHWISE_CONV_2D,
// FULLY_CONNECTED, the LSTM's input and recurrent weights per step).
uint64_t macs_of(const OpParams& op) {
  if (const auto* c = std::get_if<Conv2DParams>(&op))
    return static_cast<uint64_t>(c->output_shape.elements()) * static_cast<uint64_t>(c->filter_shape.h) *
           static_cast<uint64_t>(c->filter_shape.w) * static_cast<uint64_t>(c->filter_shape.c);
  if (const auto* d = std::get_if<DepthwiseConv2DParams>(&op))
    return static_cast<uint64_t>(d->output_shape.elements()) * static_cast<uint64_t>(d->filter_shape.h) *
           static_cast<uint64_t>(d->filter_shape.w);
  if (const auto* f = std::get_if<FullyConnectedParams>(&op))
    return uint64_t(f->batches) * uint64_t(f->output_depth) * uint64_t(f->accum_depth);
  if (const auto* l = std::get_if<LstmParams>(&op))
    return uint64_t(l->batches) * uint64_t(l->time_steps) * 4 * uint64_t(l->state_dim) *
           (uint64_t(l->input_dim) + uint64_t(l->state_dim));
  return 0;
}

double median(std::vector<double> v) { return bench::percentile(std::move(v), 0.5); }

bool run_model(const ModelCase& mc, const Options& opt) {
  const std::string name = stem(mc.model);
  const auto model = test::read_file(test::testdata_path(mc.model));
  const auto input = test::read_file(test::testdata_path(mc.input));
  auto fast = make_kernel_backend("opt");
  auto ref = make_kernel_backend("ref");
  if (!fast || !ref) {
    std::fprintf(stderr, "bench cpu: this build has no kernels=opt\n");
    return false;
  }
  // One load for both backends: scratch is planned for both (verify-mode layout), the model and arena are shared.
  InterpreterConfig config;
  config.arena_budget = uint64_t{1} << 30;
  config.primary = fast.get();
  config.checker = ref.get();
  auto loaded = Interpreter::load(model, config);
  if (!loaded) {
    std::fprintf(stderr, "bench cpu: %s: %s\n", name.c_str(), loaded.error().what().c_str());
    return false;
  }
  Interpreter& it = **loaded;
  auto in = it.input(0);
  if (in.size() != input.size()) {
    std::fprintf(stderr, "bench cpu: %s: input is %zu bytes, the model wants %zu\n", name.c_str(), input.size(),
                 in.size());
    return false;
  }
  std::memcpy(in.data(), input.data(), input.size());
  uint64_t macs = 0;
  for (const PreparedOp& op : it.operators()) macs += macs_of(op.params);

  engine::InvokeContext ctx;
  auto invoke = [&](KernelBackend& b, std::map<std::string, std::vector<double>>* per_type,
                    std::vector<std::vector<double>>* per_layer) {
    const auto t0 = Clock::now();
    auto layers = it.invoke(b, nullptr, ctx);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (layers && per_type) {
      std::map<std::string, double> sum;
      for (const auto& l : *layers) sum[l.op] += static_cast<double>(l.ns) / 1e6;
      for (const auto& [op, t] : sum) (*per_type)[op].push_back(t);
      for (size_t i = 0; i < layers->size() && i < per_layer->size(); ++i)
        (*per_layer)[i].push_back(static_cast<double>((*layers)[i].ns) / 1e6);
    }
    return layers ? ms : -1.0;
  };
  // Both backends must reproduce the expected bytes before anything is timed.
  for (KernelBackend* b : {fast.get(), ref.get()}) {
    if (invoke(*b, nullptr, nullptr) < 0) return false;
    const auto want = test::read_file(test::testdata_path(mc.outputs[0]));
    const auto got = it.output(0);
    if (got.size() != want.size() || std::memcmp(got.data(), want.data(), want.size()) != 0) {
      std::fprintf(stderr, "bench cpu: %s: kernels=%s output differs from the expected bytes\n", name.c_str(),
                   std::string(b->name()).c_str());
      return false;
    }
  }
  invoke(*fast, nullptr, nullptr);  // warm-up
  invoke(*ref, nullptr, nullptr);

  std::vector<double> fast_ms, ref_ms;
  std::map<std::string, std::vector<double>> fast_types, ref_types;
  std::vector<std::vector<double>> fast_layers(it.operators().size()), ref_layers(it.operators().size());
  double total = 0;
  for (int i = 0; i < 10000; ++i) {
    // Alternate which backend goes first, so neither always runs right after the other's cache footprint.
    const bool fast_first = (i % 2) == 0;
    for (int k = 0; k < 2; ++k) {
      const bool is_fast = (k == 0) == fast_first;
      const double ms = is_fast ? invoke(*fast, &fast_types, &fast_layers) : invoke(*ref, &ref_types, &ref_layers);
      (is_fast ? fast_ms : ref_ms).push_back(ms);
      total += ms;
    }
    if (static_cast<int>(fast_ms.size()) >= opt.min_runs && total >= opt.seconds * 1e3) break;
  }
  const double f = median(fast_ms), r = median(ref_ms);
  const double f_gmacs = static_cast<double>(macs) / (f * 1e6), r_gmacs = static_cast<double>(macs) / (r * 1e6);
  bench::report("cpu_" + name + "_latency_median", f, "ms", "kernels=ref", r, "ms", r / f);
  if (macs > 0)
    bench::report("cpu_" + name + "_mac_rate", f_gmacs, "GMAC/s", "kernels=ref", r_gmacs, "GMAC/s", f_gmacs / r_gmacs);
  for (const TflmAnchor& a : kTflmFromExpectedMd)
    if (name == a.model_stem)
      bench::report("cpu_" + name + "_latency_median", f, "ms", "tflm_reference_kernels_EXPECTED.md_constant_not_measured",
                    a.ms, "ms", a.ms / f);
  std::printf("info cpu_%s: %zu runs per backend, %llu MACs, opt min %.3f ms max %.3f ms, ref min %.3f ms max %.3f ms\n",
              name.c_str(), fast_ms.size(), static_cast<unsigned long long>(macs),
              *std::min_element(fast_ms.begin(), fast_ms.end()), *std::max_element(fast_ms.begin(), fast_ms.end()),
              *std::min_element(ref_ms.begin(), ref_ms.end()), *std::max_element(ref_ms.begin(), ref_ms.end()));
  if (opt.breakdown) {
    for (const auto& [op, times] : ref_types) {
      const double rt = median(times);
      const double ft = fast_types.count(op) ? median(fast_types[op]) : 0.0;
      std::printf("info cpu_%s %-30s opt %9.3f ms (%5.1f%%)  ref %9.3f ms (%5.1f%%)  %6.1f x\n", name.c_str(),
                  op.c_str(), ft, 100.0 * ft / f, rt, 100.0 * rt / r, ft > 0 ? rt / ft : 0.0);
    }
  }
  if (opt.layers) {
    for (size_t i = 0; i < fast_layers.size(); ++i) {
      const PreparedOp& op = it.operators()[i];
      const double ft = median(fast_layers[i]), rt = median(ref_layers[i]);
      const uint64_t m = macs_of(op.params);
      std::printf("info cpu_%s layer %3zu %-18s opt %8.3f ms  ref %8.3f ms  %6.1f x  %7.2f GMAC/s  %s\n", name.c_str(),
                  i, op.op_name.c_str(), ft, rt, ft > 0 ? rt / ft : 0.0, ft > 0 ? static_cast<double>(m) / (ft * 1e6) : 0.0,
                  op.layer_name.c_str());
    }
  }
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_cpu: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--min-runs") opt.min_runs = std::max(1, std::stoi(value()));
    else if (a == "--seconds") opt.seconds = std::stod(value());
    else if (a == "--model") opt.model_filter = value();
    else if (a == "--breakdown") opt.breakdown = true;
    else if (a == "--layers") opt.layers = true;
    else {
      std::fprintf(stderr, "usage: bench_cpu [--min-runs N] [--seconds S] [--model SUBSTRING] [--breakdown] [--layers]\n");
      return 2;
    }
  }
  if (!test::testdata_dir()) {
    std::fprintf(stderr, "bench cpu: test data not found at %s (set AISRV_TESTDATA)\n",
                 test::testdata_candidate().c_str());
    return 1;
  }
  bool ok = true;
  for (const ModelCase& mc : models_with_cases()) {
    if (!opt.model_filter.empty() && mc.model.find(opt.model_filter) == std::string::npos) continue;
    ok = run_model(mc, opt) && ok;
  }
  return ok ? 0 : 1;
}
