// aisrv CLI — `aisrv monitor`: a live view of every engine (like `hailortcli monitor`) from GET_SERVER_STATS polled
// every --interval: state, model, inferences per second, engine utilisation, last latency, errors, queue depth and the
// clients connected. On a terminal the screen is redrawn in place; with --json, or when stdout is not a terminal, one
// JSON object per sample and line.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "cli_context.hpp"

namespace aisrv::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;  // set by SIGINT/SIGTERM: leave the loop, restore the terminal
extern "C" void on_interrupt(int) { g_interrupted = 1; }

struct MonitorArgs {
  double interval = 1.0;
  uint64_t count = 0;  // samples; 0 = until interrupted
};

std::string state_text(const protocol::EngineStats& e) {
  if (e.state & AISRV_STATUS_SENSING) return "sensing";
  if (e.state & AISRV_STATUS_BUSY) return "busy";
  return e.model_loaded ? "ready" : "no model";
}

std::string duration_text(uint64_t ns) {
  const uint64_t s = ns / 1'000'000'000;
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {} s", s / 60, s % 60);
  return fmt::format("{} h {} min", s / 3600, (s / 60) % 60);
}

// One sample: the counters and the rates since the previous sample (none for the first).
nlohmann::json sample_json(const protocol::ServerStats& now, const protocol::ServerStats* prev) {
  nlohmann::json engines = nlohmann::json::array();
  const double dt = prev && now.uptime_ns > prev->uptime_ns ? static_cast<double>(now.uptime_ns - prev->uptime_ns) : 0;
  for (const auto& e : now.engines) {
    nlohmann::json j{{"engine", e.engine},
                     {"kind", e.kind},
                     {"state", state_text(e)},
                     {"model", e.model_loaded ? nlohmann::json{{"format", e.model_format},
                                                               {"source", e.model_source},
                                                               {"bytes", e.model_bytes}}
                                              : nlohmann::json(nullptr)},
                     {"inferences", e.inferences},
                     {"failed", e.failed},
                     {"cancelled", e.cancelled},
                     {"queued", e.queued},
                     {"running_session", e.running_session},
                     {"last_latency_ms", static_cast<double>(e.last_total_ns) / 1e6},
                     {"last_compute_ms", static_cast<double>(e.last_compute_ns) / 1e6}};
    const protocol::EngineStats* p = nullptr;
    if (prev)
      for (const auto& q : prev->engines)
        if (q.engine == e.engine) p = &q;
    if (p && dt > 0) {
      j["inferences_per_s"] = static_cast<double>(e.inferences - p->inferences) * 1e9 / dt;
      j["busy_percent"] = 100.0 * static_cast<double>(e.compute_ns - p->compute_ns) / dt;
      j["errors_per_s"] = static_cast<double>((e.failed + e.cancelled) - (p->failed + p->cancelled)) * 1e9 / dt;
    }
    engines.push_back(std::move(j));
  }
  return {{"uptime_s", static_cast<double>(now.uptime_ns) / 1e9},
          {"sessions", now.sessions},
          {"sessions_total", now.sessions_total},
          {"engines", engines}};
}

void draw(const std::string& target, const nlohmann::json& s) {
  std::string out = "\x1b[H\x1b[2J";  // home, clear
  out += fmt::format("aisrv monitor — {} — up {}, {} client{} connected ({} since start)   (Ctrl-C quits)\n\n", target,
                     duration_text(static_cast<uint64_t>(s["uptime_s"].get<double>() * 1e9)),
                     s["sessions"].get<uint32_t>(), s["sessions"].get<uint32_t>() == 1 ? "" : "s",
                     s["sessions_total"].get<uint64_t>());
  out += fmt::format("{:>3} {:<7} {:<9} {:<22} {:>9} {:>6} {:>11} {:>10} {:>7} {:>6}\n", "eng", "kind", "state",
                     "model", "infer/s", "busy", "last ms", "total", "errors", "queue");
  for (const auto& e : s["engines"]) {
    std::string model = "-";
    if (!e["model"].is_null())
      model = fmt::format("{} {} KiB", e["model"]["format"].get<std::string>(), e["model"]["bytes"].get<uint32_t>() / 1024);
    const std::string rate = e.contains("inferences_per_s") ? fmt::format("{:.1f}", e["inferences_per_s"].get<double>()) : "…";
    const std::string busy = e.contains("busy_percent") ? fmt::format("{:.0f}%", e["busy_percent"].get<double>()) : "…";
    out += fmt::format("{:>3} {:<7} {:<9} {:<22} {:>9} {:>6} {:>11.3f} {:>10} {:>7} {:>6}\n", e["engine"].get<uint32_t>(),
                       e["kind"].get<std::string>(), e["state"].get<std::string>(), model.substr(0, 22), rate, busy,
                       e["last_latency_ms"].get<double>(), e["inferences"].get<uint64_t>(),
                       e["failed"].get<uint64_t>() + e["cancelled"].get<uint64_t>(), e["queued"].get<uint32_t>());
  }
  std::cout << out << std::flush;
}

}  // namespace

void add_monitor_commands(CLI::App& app, CliContext& ctx) {
  auto a = std::make_shared<MonitorArgs>();
  auto* mon = app.add_subcommand(
      "monitor", "Live view of every engine (GET_SERVER_STATS): state, model, inferences/s, utilisation, last latency, "
                 "errors, queue depth, clients connected. Redraws in place on a terminal; with --json or when stdout "
                 "is not a terminal, prints one JSON object per sample and line");
  mon->add_option("--interval", a->interval, "Seconds between samples (default 1)")->check(CLI::Range(0.05, 3600.0));
  mon->add_option("-n,--count", a->count, "Stop after this many samples (default: until Ctrl-C)");
  mon->callback([&ctx, a] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      if (!(c->server_version().capabilities & AISRV_CAP_STATS))
        return make_error(Errc::not_supported, "the server ({}) does not offer GET_SERVER_STATS (protocol 1.2)",
                          c->server_version().server_version);
      const bool live = !ctx.options.json && isatty(STDOUT_FILENO);
      g_interrupted = 0;
      struct sigaction sa {};
      sa.sa_handler = on_interrupt;
      struct sigaction old_int {}, old_term {};
      sigaction(SIGINT, &sa, &old_int);
      sigaction(SIGTERM, &sa, &old_term);
      std::optional<protocol::ServerStats> prev;
      Status result = ok();
      for (uint64_t i = 0; !g_interrupted && (a->count == 0 || i < a->count); ++i) {
        if (i > 0) {
          const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(a->interval);
          while (!g_interrupted && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          if (g_interrupted) break;
        }
        auto now = c->server_stats();
        if (!now) {
          result = std::move(now).error();
          break;
        }
        const auto j = sample_json(*now, prev ? &*prev : nullptr);
        if (live) draw(ctx.target(), j);
        else std::cout << j.dump() << std::endl;
        prev = std::move(*now);
      }
      sigaction(SIGINT, &old_int, nullptr);
      sigaction(SIGTERM, &old_term, nullptr);
      return result;
    });
  });
}

}  // namespace aisrv::cli
