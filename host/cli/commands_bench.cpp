// aisrv CLI — `aisrv bench`: inferences per second and latency of the engine's model (like `hailortcli benchmark`),
// N inferences or T seconds, over the connection or through the in-process channel of a server embedded in this
// process (--in-process), with one or several clients; the server's own counters (GET_SERVER_STATS) split each
// inference into compute, queue and transfer. A progress bar on a terminal; one JSON object with --json.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "aisrv/engine/builtin.hpp"
#include "aisrv/engine/registry.hpp"
#include "aisrv/engine_slot.hpp"
#include "aisrv/phy/local_channel.hpp"
#include "aisrv/server.hpp"
#include "cli_context.hpp"
#include "file_io.hpp"
#include "progress.hpp"

namespace aisrv::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::string model;
  uint64_t count = 0;
  double seconds = 0;
  unsigned warmup = 3;
  unsigned clients = 1;
  std::string in_process;
  std::vector<std::string> inputs;
  bool arena = false;
};

// One client's way of running an inference on the engine.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual Status infer(std::span<const std::span<const uint8_t>> inputs) = 0;
};

// Over the connection: INFER (or SET/START/GET on servers without it), the client library's reused buffers.
class ClientRunner final : public Runner {
 public:
  ClientRunner(client::Client c, uint32_t engine) : client_(std::move(c)), engine_(engine) {}
  Status infer(std::span<const std::span<const uint8_t>> inputs) override {
    return client_.infer(engine_, inputs, outputs_);
  }

 private:
  client::Client client_;
  uint32_t engine_;
  std::vector<std::vector<uint8_t>> outputs_;
};

// The in-process channel: set each input, start, read each output into this runner's buffers.
class LocalRunner final : public Runner {
 public:
  LocalRunner(phy::LocalChannel channel, const engine::ModelInfo& info) : channel_(std::move(channel)) {
    for (const auto& t : info.outputs) outputs_.emplace_back(t.bytes);
  }
  Status infer(std::span<const std::span<const uint8_t>> inputs) override {
    for (size_t i = 0; i < inputs.size(); ++i) AISRV_TRY(channel_.set_input(static_cast<uint32_t>(i), inputs[i]));
    AISRV_TRY(channel_.start_inference());
    for (size_t i = 0; i < outputs_.size(); ++i) AISRV_TRY(channel_.get_output(static_cast<uint32_t>(i), outputs_[i]));
    return ok();
  }

 private:
  phy::LocalChannel channel_;
  std::vector<std::vector<uint8_t>> outputs_;
};

// What is being measured: runners, the model's tensors and the server's counters.
struct Target {
  std::unique_ptr<server::Server> embedded;  // --in-process: the server living in this process (outlives the runners)
  std::string describe;  // "unix:/run/aisrv/aisrv.sock", "in-process cpu"
  std::string kind;      // engine kind
  uint32_t engine = 0;
  protocol::ModelTensors tensors;
  std::vector<std::unique_ptr<Runner>> runners;
  std::function<Result<protocol::ServerStats>()> stats;  // empty: the server has no GET_SERVER_STATS
};

Result<Target> remote_target(CliContext& ctx, const BenchArgs& a) {
  Target t;
  t.engine = ctx.options.engine;
  auto* c = AISRV_TRY(ctx.client());
  t.describe = c->transport().describe();
  if (!a.model.empty()) {
    const auto bytes = AISRV_TRY(read_file(a.model));
    ProgressBar bar(!ctx.options.json, fmt::format("engine {}: uploading", t.engine));
    AISRV_TRY(c->load_model(t.engine, bytes, a.arena ? client::Placement::arena : client::Placement::external,
                            [&bar](uint64_t sent, uint64_t total) { bar.update(sent, total); }));
  }
  t.tensors = AISRV_TRY(c->tensor_info(t.engine));
  t.kind = AISRV_TRY(c->engine_info(t.engine)).kind;
  if (c->server_version().capabilities & AISRV_CAP_STATS) t.stats = [c] { return c->server_stats(); };
  for (unsigned i = 0; i < a.clients; ++i)
    t.runners.push_back(std::make_unique<ClientRunner>(AISRV_TRY(ctx.connect()), t.engine));
  return t;
}

Result<Target> in_process_target(const BenchArgs& a) {
  if (a.model.empty())
    return make_error(Errc::invalid_argument, "--in-process needs the MODEL to load into the embedded engine");
  engine::BackendRegistry registry;
  engine::register_builtin_backends(registry);
  const auto spec = AISRV_TRY(engine::parse_engine_spec(a.in_process));
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  backends.push_back(AISRV_TRY(registry.create(spec)));
  Target t;
  t.embedded = AISRV_TRY(server::Server::create(server::ServerOptions{}, std::move(backends)));
  t.describe = "in-process " + spec.text;
  t.kind = spec.kind;
  auto* slot = t.embedded->engine(0);
  const auto bytes = AISRV_TRY(read_file(a.model));
  AISRV_TRY(slot->load_model(bytes, a.arena ? engine::Placement::arena : engine::Placement::external, "bench"));
  const auto model = slot->model();
  t.tensors.format = model->info.format;
  t.tensors.model_bytes = model->bytes;
  t.tensors.inputs = model->info.inputs;
  t.tensors.outputs = model->info.outputs;
  auto* server = t.embedded.get();
  t.stats = [server]() -> Result<protocol::ServerStats> { return server->stats(); };
  for (unsigned i = 0; i < a.clients; ++i)
    t.runners.push_back(
        std::make_unique<LocalRunner>(AISRV_TRY(phy::LocalChannel::open(*server, 0, "aisrv bench")), model->info));
  return t;
}

// Inputs: the given files, else a fixed pseudo-random pattern (not zeros, which some kernels short-cut).
Result<std::vector<std::vector<uint8_t>>> bench_inputs(const protocol::ModelTensors& m, const BenchArgs& a) {
  if (a.inputs.size() > m.inputs.size())
    return make_error(Errc::invalid_argument, "{} input files given; the model has {} input(s)", a.inputs.size(),
                      m.inputs.size());
  std::vector<std::vector<uint8_t>> in;
  uint32_t x = 0x9E3779B9u;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    if (i < a.inputs.size()) {
      in.push_back(AISRV_TRY(read_file(a.inputs[i])));
      if (in.back().size() != m.inputs[i].bytes)
        return make_error(Errc::invalid_argument, "{} holds {} bytes; input {} '{}' takes {}", a.inputs[i],
                          in.back().size(), i, m.inputs[i].name, m.inputs[i].bytes);
      continue;
    }
    std::vector<uint8_t> v(m.inputs[i].bytes);
    for (auto& b : v) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      b = static_cast<uint8_t>(x >> 24);
    }
    if (m.inputs[i].dtype == protocol::DType::float32)  // finite floats in [-1, 1)
      for (size_t k = 0; k + 4 <= v.size(); k += 4) {
        const float f = static_cast<float>(static_cast<int8_t>(v[k])) / 128.0f;
        std::memcpy(v.data() + k, &f, 4);
      }
    in.push_back(std::move(v));
  }
  return in;
}

double ms(double ns) { return ns / 1e6; }

double percentile(const std::vector<uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size())));
  return static_cast<double>(sorted[i]);
}

const protocol::EngineStats* engine_stats(const protocol::ServerStats& s, uint32_t engine) {
  for (const auto& e : s.engines)
    if (e.engine == engine) return &e;
  return nullptr;
}

Status run_bench(CliContext& ctx, const BenchArgs& a) {
  Target t = AISRV_TRY(a.in_process.empty() ? remote_target(ctx, a) : in_process_target(a));
  const auto inputs = AISRV_TRY(bench_inputs(t.tensors, a));
  const std::vector<std::span<const uint8_t>> spans(inputs.begin(), inputs.end());
  const uint32_t stats_engine = t.embedded ? 0 : t.engine;

  for (auto& r : t.runners)
    for (unsigned i = 0; i < a.warmup; ++i) AISRV_TRY(r->infer(spans));

  const bool by_count = a.count > 0;
  const double seconds = by_count ? 0 : (a.seconds > 0 ? a.seconds : 5.0);
  std::optional<protocol::ServerStats> before;
  if (t.stats) before = AISRV_TRY(t.stats());

  std::atomic<uint64_t> claimed{0}, done{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::optional<Error> failure;
  std::vector<std::vector<uint64_t>> latencies(t.runners.size());
  std::vector<Clock::time_point> finished(t.runners.size());
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (size_t k = 0; k < t.runners.size(); ++k) {
    threads.emplace_back([&, k] {
      auto& lat = latencies[k];
      lat.reserve(by_count ? a.count / t.runners.size() + 1 : 4096);
      while (!stop.load()) {
        if (by_count ? claimed.fetch_add(1) >= a.count : Clock::now() >= deadline) break;
        const auto t0 = Clock::now();
        auto st = t.runners[k]->infer(spans);
        if (!st) {
          std::lock_guard lock(mu);
          if (!failure) failure = std::move(st).error();
          stop.store(true);
          break;
        }
        lat.push_back(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()));
        done.fetch_add(1);
      }
      finished[k] = Clock::now();
    });
  }
  {
    ProgressBar bar(!ctx.options.json, "benchmark", ProgressBar::Unit::items);
    const auto total_ms = static_cast<uint64_t>(seconds * 1000);
    while (done.load() < (by_count ? a.count : UINT64_MAX) && !stop.load() && (by_count || Clock::now() < deadline)) {
      if (by_count)
        bar.update(done.load(), a.count);
      else
        bar.update(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count()),
                   total_ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (auto& th : threads) th.join();
    if (by_count) bar.update(done.load(), a.count);
    else bar.update(total_ms, total_ms);
  }
  const double wall = std::chrono::duration<double>(*std::max_element(finished.begin(), finished.end()) - start).count();
  if (failure) return *failure;

  std::vector<uint64_t> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const uint64_t n = all.size();
  const double mean = n ? static_cast<double>(std::accumulate(all.begin(), all.end(), uint64_t{0})) / static_cast<double>(n) : 0;
  const double fps = wall > 0 ? static_cast<double>(n) / wall : 0;

  nlohmann::json j{{"target", t.describe},
                   {"engine", t.engine},
                   {"kind", t.kind},
                   {"model", a.model},
                   {"format", t.tensors.format},
                   {"clients", t.runners.size()},
                   {"inferences", n},
                   {"seconds", wall},
                   {"fps", fps},
                   {"latency_ms",
                    {{"mean", ms(mean)},
                     {"p50", ms(percentile(all, 50))},
                     {"p90", ms(percentile(all, 90))},
                     {"p99", ms(percentile(all, 99))},
                     {"max", ms(n ? static_cast<double>(all.back()) : 0)}}}};
  std::string server_line, transfer_line;
  if (before) {
    const auto after = AISRV_TRY(t.stats());
    const auto* b = engine_stats(*before, stats_engine);
    const auto* e = engine_stats(after, stats_engine);
    if (b && e && e->inferences > b->inferences) {
      const double k = static_cast<double>(e->inferences - b->inferences);
      const double compute = static_cast<double>(e->compute_ns - b->compute_ns) / k;
      const double queue = static_cast<double>(e->queue_ns - b->queue_ns) / k;
      const double total = static_cast<double>(e->total_ns - b->total_ns) / k;
      // Share of the measured time the engine computed (above 100 % only when other clients kept it busy too).
      const double busy = wall > 0 ? 100.0 * static_cast<double>(e->compute_ns - b->compute_ns) / (wall * 1e9) : 0;
      const double transfer = std::max(0.0, mean - total);
      j["server"] = {{"inferences", e->inferences - b->inferences},
                     {"compute_ms", ms(compute)},
                     {"queue_ms", ms(queue)},
                     {"total_ms", ms(total)},
                     {"busy_percent", busy}};
      j["transfer_ms"] = ms(transfer);
      server_line = fmt::format("  server     compute {:.3f} ms, queue {:.3f} ms, total {:.3f} ms per inference; engine "
                                "busy {:.0f} %{}\n",
                                ms(compute), ms(queue), ms(total), busy,
                                e->inferences - b->inferences > n ? " (other clients ran inferences too)" : "");
      transfer_line = fmt::format("  transfer   {:.3f} ms per inference (client round trip - server total: the link, "
                                  "framing, copies)\n",
                                  ms(transfer));
    }
  }
  if (ctx.options.json) {
    ctx.print_json(j);
    return ok();
  }
  fmt::print("bench engine {} ({}) over {}: {} client{}, {} inferences in {:.2f} s\n", t.engine, t.kind, t.describe,
             t.runners.size(), t.runners.size() == 1 ? "" : "s", n, wall);
  fmt::print("  throughput {:.1f} inferences/s\n", fps);
  fmt::print("  latency    mean {:.3f} ms, p50 {:.3f}, p90 {:.3f}, p99 {:.3f}, max {:.3f} ms (round trip)\n", ms(mean),
             ms(percentile(all, 50)), ms(percentile(all, 90)), ms(percentile(all, 99)),
             ms(n ? static_cast<double>(all.back()) : 0));
  fmt::print("{}{}", server_line, transfer_line);
  return ok();
}

}  // namespace

void add_bench_commands(CLI::App& app, CliContext& ctx) {
  auto a = std::make_shared<BenchArgs>();
  auto* bench = app.add_subcommand(
      "bench", "Measure inferences per second and latency on the engine's model (like hailortcli benchmark): N "
               "inferences (--count) or T seconds (--time, default 5), from one or several clients (--clients), over "
               "the connection or through the in-process channel of a server embedded in this process "
               "(--in-process). The server's counters split each inference into compute, queue and transfer");
  bench->add_option("MODEL", a->model,
                    "Model file to load first (.tflite, .hef); default: the model the engine has (needed with "
                    "--in-process)");
  auto* count = bench->add_option("-n,--count", a->count, "Run this many inferences (all clients together)")
                    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  auto* time = bench->add_option("--time", a->seconds, "Run for this many seconds (default 5)")
                   ->check(CLI::Range(0.01, 86400.0));
  count->excludes(time);
  bench->add_option("--warmup", a->warmup, "Inferences per client before measuring (default 3)")
      ->check(CLI::Range(0u, 10000u));
  bench->add_option("--clients", a->clients,
                    "Client connections (or in-process channels) running inferences at once, each its own session "
                    "(default 1): the server's throughput when several programs share it")
      ->check(CLI::Range(1u, 64u));
  bench->add_option("--in-process", a->in_process,
                    "Run the model in an engine embedded in this process, through the in-process channel (no socket, "
                    "no daemon): an engine spec as aisrvd --engine takes, e.g. cpu or cpu:kernels=ref");
  bench->add_option("-i,--input", a->inputs, "Raw bytes of input 0, 1, ... (default: a fixed pseudo-random pattern)");
  bench->add_flag("--arena", a->arena, "Load MODEL inside the engine's arena budget (SET_MODEL_PRIMARY)");
  bench->callback([&ctx, a] { ctx.run([&]() -> Status { return run_bench(ctx, *a); }); });
}

}  // namespace aisrv::cli
