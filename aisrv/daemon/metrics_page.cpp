// aisrvd — the /metrics page and the /readyz verdict.
#include "metrics_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "aisrv/build_info.hpp"
#include "aisrv/protocol/limits.h"
#include "aisrv/protocol/protocol.hpp"
#include "aisrv/protocol/status.h"
#include "aisrv/server.hpp"

namespace aisrv::daemon {

namespace {

std::string engine_label(uint32_t n) { return std::to_string(n); }

double seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

// Why engine `e` is not ready (empty: it is).
std::string engine_problem(server::Server& server, uint32_t e, bool needs_model) {
  server::EngineSlot& slot = *server.engine(e);
  if (auto why = slot.failure())
    return fmt::format("engine {} ({}): failing: its last inference failed: {}", e, slot.kind(), *why);
  if (needs_model && !slot.has_model())
    return fmt::format("engine {} ({}): no model loaded, and it is configured to have one (--boot {}); its log "
                       "says why (aisrv log {})",
                       e, slot.kind(), e, e);
  return {};
}

}  // namespace

MetricsPage::MetricsPage(server::Server& server, std::vector<uint32_t> model_engines,
                         std::chrono::system_clock::time_point started)
    : server_(server),
      model_engines_(std::move(model_engines)),
      started_(started),
      started_steady_(std::chrono::steady_clock::now()) {}

Readiness MetricsPage::readiness() const {
  Readiness r;
  if (server_.shutting_down()) {
    r.text = "not ready: the server is shutting down\n";
    return r;
  }
  for (uint32_t e = 0; e < server_.engine_count(); ++e) {
    const bool needs_model = std::find(model_engines_.begin(), model_engines_.end(), e) != model_engines_.end();
    if (auto why = engine_problem(server_, e, needs_model); !why.empty()) r.text += "not ready: " + why + "\n";
  }
  r.ready = r.text.empty();
  if (r.ready)
    r.text = fmt::format("ready: {} engine{}\n", server_.engine_count(), server_.engine_count() == 1 ? "" : "s");
  return r;
}

std::string MetricsPage::render() const {
  MetricsWriter w;
  const protocol::ServerStats stats = server_.stats();
  const server::ServerMetrics& m = server_.metrics();

  w.family("aisrv_build_info", MetricType::gauge, "The aisrvd version and the protocol version it speaks; always 1.");
  w.sample({{"version", AISRV_VERSION_STRING},
            {"protocol", fmt::format("{}.{}", AISRV_PROTOCOL_MAJOR, AISRV_PROTOCOL_MINOR)}},
           uint64_t{1});
  w.family("aisrv_start_time_seconds", MetricType::gauge, "When aisrvd started, in seconds since the Unix epoch.");
  w.sample({}, std::chrono::duration<double>(started_.time_since_epoch()).count());
  w.family("aisrv_uptime_seconds", MetricType::gauge, "Seconds since aisrvd started (monotonic clock).");
  w.sample({}, std::chrono::duration<double>(std::chrono::steady_clock::now() - started_steady_).count());

  const Readiness ready = readiness();
  w.family("aisrv_ready", MetricType::gauge, "1 when /readyz answers 200 (every engine ready), else 0.");
  w.sample({}, uint64_t{ready.ready ? 1u : 0u});
  w.family("aisrv_engine_ready", MetricType::gauge,
           "1 when the engine is ready: its last inference did not fail and it has a model if it is configured to "
           "boot one.");
  for (const auto& e : stats.engines) {
    const bool needs_model = std::find(model_engines_.begin(), model_engines_.end(), e.engine) != model_engines_.end();
    w.sample({{"engine", engine_label(e.engine)}, {"kind", e.kind}},
             uint64_t{engine_problem(server_, e.engine, needs_model).empty() ? 1u : 0u});
  }

  w.family("aisrv_inferences_total", MetricType::counter,
           "Inferences that ended, by result: completed, failed (ERROR_INFER_ERR) or cancelled (ERROR_CANCELLED).");
  for (const auto& e : stats.engines) {
    const std::string n = engine_label(e.engine);
    w.sample({{"engine", n}, {"result", "completed"}}, e.inferences);
    w.sample({{"engine", n}, {"result", "failed"}}, e.failed);
    w.sample({{"engine", n}, {"result", "cancelled"}}, e.cancelled);
  }
  w.family("aisrv_engine_queued_requests", MetricType::gauge, "Requests waiting for the engine now.");
  for (const auto& e : stats.engines) w.sample({{"engine", engine_label(e.engine)}}, uint64_t{e.queued});
  w.family("aisrv_model_loaded", MetricType::gauge, "1 when the engine has a model loaded, else 0.");
  for (const auto& e : stats.engines)
    w.sample({{"engine", engine_label(e.engine)}}, uint64_t{e.model_loaded ? 1u : 0u});
  w.family("aisrv_model_info", MetricType::gauge,
           "The engine's loaded model: its format (tflite, hef) and where it came from (wire (arena), wire "
           "(external), flash); always 1, absent without a model.");
  for (const auto& e : stats.engines)
    if (e.model_loaded)
      w.sample({{"engine", engine_label(e.engine)}, {"format", e.model_format}, {"source", e.model_source}},
               uint64_t{1});
  w.family("aisrv_model_bytes", MetricType::gauge, "Size of the engine's loaded model file in bytes (0 without one).");
  for (const auto& e : stats.engines) w.sample({{"engine", engine_label(e.engine)}}, uint64_t{e.model_bytes});

  std::array<double, server::LatencyHistogram::kBuckets> bounds{};
  for (size_t i = 0; i < bounds.size(); ++i) bounds[i] = seconds(server::LatencyHistogram::kUpperBoundsNs[i]);
  struct Hist {
    const char* name;
    const char* help;
    const server::LatencyHistogram server::EngineMetrics::*member;
  };
  const Hist hists[] = {
      {"aisrv_queue_wait_seconds",
       "Time a request waited in the engine's queue (request received to its turn), for every request that ran in "
       "the engine's turn.",
       &server::EngineMetrics::queue_wait},
      {"aisrv_compute_seconds", "The engine's compute time of each completed inference (the backend's invoke).",
       &server::EngineMetrics::compute},
      {"aisrv_transfer_seconds",
       "For requests whose inference completed: request received to answer ready, minus queue wait and compute "
       "(decoding, copying tensors in and out, encoding the answer, chained engines).",
       &server::EngineMetrics::transfer},
  };
  for (const auto& h : hists) {
    w.family(h.name, MetricType::histogram, h.help);
    for (uint32_t e = 0; e < m.engine_count(); ++e) {
      const auto snap = (m.engine(e).*h.member).snapshot();
      w.histogram({{"engine", engine_label(e)}}, bounds, snap.buckets, seconds(snap.sum_ns));
    }
  }

  w.family("aisrv_requests_total", MetricType::counter,
           "Requests answered, by status (OKAY or the error status of docs/protocol.md).");
  for (size_t slot = 0; slot < server::ServerMetrics::kStatusSlots; ++slot) {
    const uint32_t status = server::ServerMetrics::slot_status(slot);
    const std::string_view name = protocol::status_name(status);
    const uint64_t n = m.answers(slot);
    // OKAY and the error statuses of the table always (stable series); state bits and bits the table does not
    // know only once something was answered with them (they should never be).
    const bool known = name != "UNKNOWN";
    if (n == 0 && (!known || (status & AISRV_STATUS_STATE_MASK) != 0)) continue;
    w.sample({{"status", known ? std::string(name) : fmt::format("0x{:x}", status)}}, n);
  }

  const auto transports = m.transports();
  w.family("aisrv_sessions_open", MetricType::gauge, "Sessions open now, by transport.");
  for (const auto* t : transports)
    w.sample({{"transport", t->name}}, static_cast<double>(t->sessions_open.load(std::memory_order_relaxed)));
  w.family("aisrv_sessions_opened_total", MetricType::counter, "Sessions opened since start, by transport.");
  for (const auto* t : transports)
    w.sample({{"transport", t->name}}, t->sessions_opened.load(std::memory_order_relaxed));
  w.family("aisrv_request_payload_bytes_total", MetricType::counter,
           "Request payload bytes received, by transport (frame headers not counted).");
  for (const auto* t : transports) w.sample({{"transport", t->name}}, t->request_bytes.load(std::memory_order_relaxed));
  w.family("aisrv_response_payload_bytes_total", MetricType::counter,
           "Response payload bytes answered, by transport (frame headers not counted).");
  for (const auto* t : transports)
    w.sample({{"transport", t->name}}, t->response_bytes.load(std::memory_order_relaxed));

  for (const auto& source : sources_) source(w);
  return w.take();
}

}  // namespace aisrv::daemon
