// aisrv benchmarks — the CPU engine (issue 3): for every model of ../shared/testdata that has expected cases (its
// expected/cases.json, and the models people run of tests/data/models/cases.json: YOLOv8n, the SSD, DeepLab,
// MoveNet), the
// median inference latency with kernels=opt against kernels=ref, both measured in this process on the same loaded
// model and interleaved run by run (so both see the same machine state), the ratio, and the MAC rate achieved; also
// every lower SIMD level of the optimised backend this processor runs (portable C++ — what a processor without AVX2
// runs —, AVX2, AVX-VNNI, ...) against the same baseline, each level against the AVX2 level
// (cpu_MODEL_latency_median_opt_LEVEL_vs_avx2), and kernels=opt on 2 threads (--threads) against kernels=opt on one
// (after a warm-up that lets the worker pool settle its per-operator and per-model choices, in pairs of the two;
// the same pairs also split by the core-to-core round trip probed before them, _cores_near / _cores_far).
// Beside ours it prints TensorFlow Lite Micro's own reference-kernel latency on this kind of machine — a constant
// copied from ../shared/testdata/expected/EXPECTED.md, labelled as such, not measured here.
//
//   bench_cpu [--min-runs N] [--seconds S] [--model SUBSTRING] [--threads K] [--breakdown] [--layers]
//     --min-runs   at least N timed inferences per backend and model (default 15)
//     --seconds    keep sampling a model until both backends have run this long in total (default 3)
//     --model      only models whose path contains SUBSTRING
//     --breakdown  also print each backend's time per operator type (medians over the runs)
//     --threads    the thread count measured against threads=1 (default 2)
//     --layers     also print each operator's time with both backends (medians over the runs; the threads column
//                  from the steady-state pairs)
//
// Every output is first checked against the expected bytes with both backends; a mismatch is an error (exit 1).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "bench_report.hpp"
#include "core_round_trip.hpp"
#include "interpreter.hpp"
#include "model_cases.hpp"
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
  size_t threads = 2;
};

// A model with its inputs and a check of its outputs (nonempty text: how output k differs from the reference).
struct BenchCase {
  std::string model;
  std::vector<std::vector<uint8_t>> inputs;  // empty: made from `picture_inputs` once the model is loaded
  std::vector<test::ModelCaseInput> picture_inputs;
  std::function<std::string(size_t, std::span<const uint8_t>)> check;
};

std::string stem(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string s = path.substr(slash == std::string::npos ? 0 : slash + 1);
  const auto dot = s.rfind(".tflite");
  return dot == std::string::npos ? s : s.substr(0, dot);
}

// The first case of every model: ../shared/testdata/expected/cases.json (one input file, expected output files), then
// tests/data/models/cases.json (inputs made from pictures, outputs checked against the reference bytes or hashes).
std::vector<BenchCase> bench_cases() {
  std::vector<BenchCase> out;
  auto known = [&](const std::string& model) {
    return std::any_of(out.begin(), out.end(), [&](const BenchCase& c) { return c.model == model; });
  };
  std::ifstream in(test::testdata_path("expected/cases.json"));
  for (const auto& c : nlohmann::json::parse(in)) {
    const std::string model = c.at("model").get<std::string>();
    if (known(model)) continue;
    std::vector<std::vector<uint8_t>> want;
    for (const auto& o : c.at("outputs")) want.push_back(test::read_file(test::testdata_path(o.at("file"))));
    BenchCase b{model, {test::read_file(test::testdata_path(c.at("input").get<std::string>()))}, {}, nullptr};
    b.check = [want](size_t k, std::span<const uint8_t> got) -> std::string {
      if (k >= want.size()) return "";
      return got.size() == want[k].size() && std::memcmp(got.data(), want[k].data(), got.size()) == 0
                 ? ""
                 : "differs from the expected bytes";
    };
    out.push_back(std::move(b));
  }
  for (const test::ModelCase& mc : test::load_model_cases()) {
    if (known(mc.model)) continue;
    BenchCase b{mc.model, {}, mc.inputs, nullptr};
    b.check = [outputs = mc.outputs](size_t k, std::span<const uint8_t> got) {
      return k < outputs.size() ? test::compare_case_output(outputs[k], got) : std::string();
    };
    out.push_back(std::move(b));
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

// One kernel backend under measurement and what it collected.
struct Measured {
  std::string label;  // "opt (avx2)", "ref", "opt (portable)"
  std::unique_ptr<KernelBackend> backend;
  std::unique_ptr<Interpreter> model;  // loaded with this backend (its scratch and prepared data)
  std::vector<double> ms;                             // whole inferences
  std::map<std::string, std::vector<double>> types;  // per operator type, per inference
  std::vector<std::vector<double>> layers;            // per operator
  std::vector<std::vector<double>> steady_layers;     // per operator, in the threads pairs (opt and threaded only)
  std::vector<engine::LayerTime> recycle;             // the last result, refilled by the next (as the server does)
};

bool run_model(BenchCase& mc, const Options& opt) {
  const std::string name = stem(mc.model);
  const auto model = test::read_file(test::testdata_path(mc.model));
  // [0] kernels=opt as selected at run time, [1] kernels=ref, then the lower SIMD levels of opt.
  std::vector<Measured> m;
  m.push_back({"", make_kernel_backend("opt"), nullptr, {}, {}, {}, {}, {}});
  m.push_back({"", make_kernel_backend("ref"), nullptr, {}, {}, {}, {}, {}});
  for (SimdLevel level : available_simd_levels())
    if (level != detect_simd_level()) m.push_back({"", make_optimized_kernel_backend(level), nullptr, {}, {}, {}, {}, {}});
  // kernels=opt on the worker pool (threads=2), against [0] (threads=1)
  const size_t threaded = m.size();
  m.push_back({"", make_optimized_kernel_backend(detect_simd_level(), opt.threads), nullptr, {}, {}, {}, {}, {}});
  // Each backend gets its own load of the model (its arena plan, scratch and prepared data), as the engine runs it.
  for (Measured& x : m) {
    x.label = x.backend->description();
    InterpreterConfig config;
    config.arena_budget = uint64_t{1} << 30;
    config.primary = x.backend.get();
    auto loaded = Interpreter::load(model, config);
    if (!loaded) {
      std::fprintf(stderr, "bench cpu: %s: %s\n", name.c_str(), loaded.error().what().c_str());
      return false;
    }
    x.model = std::move(loaded).value();
    const auto& inputs = x.model->info().inputs;
    if (mc.inputs.empty())
      for (size_t i = 0; i < mc.picture_inputs.size() && i < inputs.size(); ++i)
        mc.inputs.push_back(test::make_case_input(mc.picture_inputs[i], inputs[i]));
    if (mc.inputs.size() != inputs.size()) {
      std::fprintf(stderr, "bench cpu: %s: %zu inputs given, the model has %zu\n", name.c_str(), mc.inputs.size(),
                   inputs.size());
      return false;
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto in = x.model->input(i);
      if (in.size() != mc.inputs[i].size()) {
        std::fprintf(stderr, "bench cpu: %s: input %zu is %zu bytes, the model wants %zu\n", name.c_str(), i,
                     mc.inputs[i].size(), in.size());
        return false;
      }
      std::memcpy(in.data(), mc.inputs[i].data(), in.size());
    }
  }
  const Interpreter& it = *m[0].model;
  uint64_t macs = 0;
  for (const PreparedOp& op : it.operators()) macs += macs_of(op.params);

  engine::InvokeContext ctx;
  auto invoke = [&](Measured& x, bool record, bool steady = false) {
    ctx.recycle = &x.recycle;
    const auto t0 = Clock::now();
    auto layers = x.model->invoke(*x.backend, nullptr, ctx);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!layers) return -1.0;
    if (steady) {
      x.steady_layers.resize(layers->size());
      for (size_t i = 0; i < layers->size(); ++i)
        x.steady_layers[i].push_back(static_cast<double>((*layers)[i].ns) / 1e6);
    }
    if (record) {
      x.ms.push_back(ms);
      std::map<std::string, double> sum;
      for (const auto& l : *layers) sum[l.op] += static_cast<double>(l.ns) / 1e6;
      for (const auto& [op, t] : sum) x.types[op].push_back(t);
      x.layers.resize(layers->size());
      for (size_t i = 0; i < layers->size(); ++i) x.layers[i].push_back(static_cast<double>((*layers)[i].ns) / 1e6);
    }
    x.recycle = std::move(*layers);
    return ms;
  };
  // Every backend must reproduce the expected bytes before anything is timed.
  double slowest_ms = 0;
  for (Measured& x : m) {
    const double first_ms = invoke(x, false);
    slowest_ms = std::max(slowest_ms, first_ms);
    if (first_ms < 0) {
      std::fprintf(stderr, "bench cpu: %s: kernels=%s: the inference failed\n", name.c_str(), x.label.c_str());
      return false;
    }
    for (size_t k = 0; k < x.model->info().outputs.size(); ++k)
      if (const std::string diff = mc.check(k, x.model->output(k)); !diff.empty()) {
        std::fprintf(stderr, "bench cpu: %s: kernels=%s output %zu: %s\n", name.c_str(), x.label.c_str(), k,
                     diff.c_str());
        return false;
      }
    invoke(x, false);  // warm-up
  }
  // Round-robin, rotating which backend goes first, so all see the same machine state over time. Networks whose
  // reference run takes seconds (YOLOv8n at 640x640) get at least 3 rounds instead of --min-runs.
  const int min_runs = slowest_ms > 1000 ? std::min(opt.min_runs, 3) : opt.min_runs;
  const double seconds = slowest_ms > 1000 ? 0 : opt.seconds;
  double total = 0;
  for (size_t round = 0; round < 100000; ++round) {
    for (size_t k = 0; k < m.size(); ++k) total += invoke(m[(round + k) % m.size()], true);
    if (static_cast<int>(m[0].ms.size()) >= min_runs && total >= seconds * 1e3) break;
  }

  const double r = median(m[1].ms);
  const bool small = r < 1.0;  // report microseconds for the tiny models
  const double scale = small ? 1e3 : 1.0;
  const std::string unit = small ? "us" : "ms";
  const double f = median(m[0].ms);
  bench::report("cpu_" + name + "_latency_median", f * scale, unit, "kernels=ref", r * scale, unit, r / f);
  if (macs > 0) {
    const double fg = static_cast<double>(macs) / (f * 1e6), rg = static_cast<double>(macs) / (r * 1e6);
    bench::report("cpu_" + name + "_mac_rate", fg, "GMAC/s", "kernels=ref", rg, "GMAC/s", fg / rg);
  }
  {
    // threads=K against threads=1 as a served model runs: the pool decides per operator and per model from the
    // times of its first inferences (WorkerPool: warm-up, then trials of both ways), so the figure is taken after
    // kSteadyWarmup inferences of both, in pairs of the two alone (alternating which goes first; no other backend
    // between them evicting their caches), median of the pairs' ratios. The round-robin runs above include the
    // pool's trials; their median is printed as info.
    constexpr int kSteadyWarmup = 40;
    for (int i = 0; i < kSteadyWarmup; ++i) {
      invoke(m[threaded], false);
      invoke(m[0], false);
    }
    // Each pair is labelled with the core-to-core round trip of a pinned probe (core_round_trip.hpp) taken at most
    // 20 ms before it, after 1 ms without inferences (the pool's workers stop polling after 200 us): the host moves
    // the vCPUs between cores that share a cache and cores that do not, and the speed-up follows.
    std::vector<double> one, many, ratio, round_trip;
    double spent = 0, probed = 0;
    const bool probe = opt.threads > 1 && bench::core_round_trip_ns(0, 1, 1).has_value();  // processors 0 and 1 here
    auto last_probe = Clock::now() - std::chrono::seconds(1);
    for (size_t pair = 0; pair < 100000; ++pair) {
      if (probe && Clock::now() - last_probe > std::chrono::milliseconds(20)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        probed = bench::core_round_trip_ns().value_or(0);
        last_probe = Clock::now();
      }
      round_trip.push_back(probed);
      const bool threaded_first = pair % 2 == 0;
      const double a = invoke(m[threaded_first ? threaded : 0], false, opt.layers);
      const double b = invoke(m[threaded_first ? 0 : threaded], false, opt.layers);
      const double tk = threaded_first ? a : b, t1 = threaded_first ? b : a;
      one.push_back(t1);
      many.push_back(tk);
      ratio.push_back(t1 / tk);
      spent += a + b;
      if (static_cast<int>(pair) + 1 >= std::max(opt.min_runs, 15) && spent >= seconds * 1e3) break;
    }
    const double t1 = median(one), tk = median(many);
    bench::report("cpu_" + name + "_latency_median_threads" + std::to_string(opt.threads), tk * scale, unit,
                  "threads=1", t1 * scale, unit, median(ratio));
    std::printf("info cpu_%s_threads%zu: %zu pairs after %d warm-up inferences, ratio p10 %.3f p90 %.3f; in the "
                "round-robin runs (the pool's trials included) %.4f vs %.4f %s\n",
                name.c_str(), opt.threads, ratio.size(), kSteadyWarmup, bench::percentile(ratio, 0.1),
                bench::percentile(ratio, 0.9), median(m[threaded].ms) * scale, f * scale, unit.c_str());
    // The same pairs by the probe: "near" (round trip at or below kNearRoundTripNs, the vCPUs share a cache) and
    // "far"; a class with fewer than 5 pairs is not reported.
    size_t counted[2] = {0, 0};
    for (int far = 0; far < 2; ++far) {
      std::vector<double> o, k, q;
      for (size_t i = 0; i < ratio.size(); ++i)
        if (round_trip[i] > 0 && (round_trip[i] > bench::kNearRoundTripNs) == (far == 1)) {
          o.push_back(one[i]);
          k.push_back(many[i]);
          q.push_back(ratio[i]);
        }
      counted[far] = q.size();
      if (q.size() >= 5)
        bench::report("cpu_" + name + "_latency_median_threads" + std::to_string(opt.threads) +
                          (far ? "_cores_far" : "_cores_near"),
                      median(k) * scale, unit, "threads=1", median(o) * scale, unit, median(q));
    }
    if (counted[0] + counted[1] > 0)
      std::printf("info cpu_%s_threads%zu: core-to-core round trip before the pairs p10 %.0f median %.0f p90 %.0f ns; "
                  "%zu pairs at or below %.0f ns (cores_near: the vCPUs share a cache), %zu above (cores_far)\n",
                  name.c_str(), opt.threads, bench::percentile(round_trip, 0.1), bench::percentile(round_trip, 0.5),
                  bench::percentile(round_trip, 0.9), counted[0], bench::kNearRoundTripNs, counted[1]);
  }
  // Every level against ref, and against the AVX2 level where that runs here (the best level is m[0]).
  auto level_of = [](const Measured& x) {
    return x.label.substr(x.label.find('(') + 1, x.label.size() - x.label.find('(') - 2);
  };
  double avx2_ms = 0;
  for (size_t k = 0; k < threaded; ++k)
    if (k != 1 && level_of(m[k]) == "avx2") avx2_ms = median(m[k].ms);
  for (size_t k = 0; k < threaded; ++k) {
    if (k == 1) continue;
    const double l = median(m[k].ms);
    const std::string level = level_of(m[k]);
    bench::report("cpu_" + name + "_latency_median_opt_" + level, l * scale, unit, "kernels=ref", r * scale, unit,
                  r / l);
    if (avx2_ms > 0 && level != "avx2")
      bench::report("cpu_" + name + "_latency_median_opt_" + level + "_vs_avx2", l * scale, unit, "opt_avx2",
                    avx2_ms * scale, unit, avx2_ms / l);
  }
  // The LSTM operator alone (its share of the model, per-operator times of the same runs): the kernel the
  // optimised backend is measured on for recurrent models.
  if (m[0].types.count("UNIDIRECTIONAL_SEQUENCE_LSTM") && m[1].types.count("UNIDIRECTIONAL_SEQUENCE_LSTM")) {
    const double lf = median(m[0].types["UNIDIRECTIONAL_SEQUENCE_LSTM"]) * 1e3;
    const double lr = median(m[1].types["UNIDIRECTIONAL_SEQUENCE_LSTM"]) * 1e3;
    if (lf > 0) bench::report("cpu_" + name + "_lstm_op_median", lf, "us", "kernels=ref", lr, "us", lr / lf);
  }
  for (const TflmAnchor& a : kTflmFromExpectedMd)
    if (name == a.model_stem)
      bench::report("cpu_" + name + "_latency_median", f * scale, unit,
                    "tflm_reference_kernels_EXPECTED.md_constant_not_measured", a.ms * scale, unit, a.ms / f);
  std::printf("info cpu_%s: %zu runs per backend, %llu MACs;", name.c_str(), m[0].ms.size(),
              static_cast<unsigned long long>(macs));
  for (const Measured& x : m)
    std::printf(" %s min %.4f max %.4f ms;", x.label.c_str(), *std::min_element(x.ms.begin(), x.ms.end()),
                *std::max_element(x.ms.begin(), x.ms.end()));
  std::printf("\n");
  if (opt.breakdown) {
    for (const auto& [op, times] : m[1].types) {
      const double rt = median(times);
      const double ft = m[0].types.count(op) ? median(m[0].types[op]) : 0.0;
      const double tt = m[threaded].types.count(op) ? median(m[threaded].types[op]) : 0.0;
      std::printf("info cpu_%s %-30s opt %9.4f ms (%5.1f%%)  ref %9.4f ms (%5.1f%%)  %6.1f x  threads%zu %9.4f ms "
                  "(%4.2f x)\n",
                  name.c_str(), op.c_str(), ft, 100.0 * ft / f, rt, 100.0 * rt / r, ft > 0 ? rt / ft : 0.0,
                  opt.threads, tt, tt > 0 ? ft / tt : 0.0);
    }
  }
  if (opt.layers) {
    for (size_t i = 0; i < it.operators().size(); ++i) {
      const PreparedOp& op = it.operators()[i];
      const double ft = median(m[0].layers[i]), rt = median(m[1].layers[i]);
      // threads: both from the steady-state pairs (above)
      const double st = median(m[0].steady_layers.at(i)), tt = median(m[threaded].steady_layers.at(i));
      const uint64_t n = macs_of(op.params);
      std::printf("info cpu_%s layer %3zu %-18s opt %8.4f ms  ref %8.4f ms  %6.1f x  %7.2f GMAC/s  threads%zu %8.4f "
                  "ms vs %8.4f ms (%4.2f x)  %s\n",
                  name.c_str(), i, op.op_name.c_str(), ft, rt, ft > 0 ? rt / ft : 0.0,
                  ft > 0 ? static_cast<double>(n) / (ft * 1e6) : 0.0, opt.threads, tt, st, tt > 0 ? st / tt : 0.0,
                  op.layer_name.c_str());
    }
  }
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"The CPU engine's optimized kernels against its reference kernels on the shared test models, per "
               "SIMD level and with threads (tools/bench cpu)"};
  app.add_option("--min-runs", opt.min_runs, "Rounds at least")->check(CLI::PositiveNumber);
  app.add_option("--seconds", opt.seconds, "Seconds per model at least")->check(CLI::NonNegativeNumber);
  app.add_option("--model", opt.model_filter, "Only models whose file name contains this");
  app.add_option("--threads", opt.threads, "Participants of the threaded run")->check(CLI::PositiveNumber);
  app.add_flag("--breakdown", opt.breakdown, "Time spent per operator kind");
  app.add_flag("--layers", opt.layers, "Time each layer");
  CLI11_PARSE(app, argc, argv);
  if (!test::testdata_dir()) {
    std::fprintf(stderr, "bench cpu: test data not found at %s (set AISRV_TESTDATA)\n",
                 test::testdata_candidate().c_str());
    return 1;
  }
  bool ok = true;
  for (BenchCase& mc : bench_cases()) {
    if (!opt.model_filter.empty() && mc.model.find(opt.model_filter) == std::string::npos) continue;
    ok = run_model(mc, opt) && ok;
  }
  return ok ? 0 : 1;
}
