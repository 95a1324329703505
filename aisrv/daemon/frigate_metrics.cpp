// aisrvd — the Frigate endpoints' counters on /metrics.
#include "frigate_metrics.hpp"

#include <string>

namespace aisrv::daemon {

namespace {

using phy::frigate::EndpointStats;

struct Counter {
  const char* name;
  MetricType type;
  const char* help;
  uint64_t EndpointStats::*field;
};

constexpr Counter kCounters[] = {
    {"aisrv_frigate_requests_total", MetricType::counter, "Messages a Frigate endpoint answered (every kind).",
     &EndpointStats::requests},
    {"aisrv_frigate_detect_requests_total", MetricType::counter, "Detection requests a Frigate endpoint answered.",
     &EndpointStats::detect_requests},
    {"aisrv_frigate_detections_total", MetricType::counter,
     "Detection rows replied to Frigate (rows with an object, summed over replies).", &EndpointStats::detections},
    {"aisrv_frigate_model_requests_total", MetricType::counter, "model_request messages from Frigate.",
     &EndpointStats::model_requests},
    {"aisrv_frigate_model_transfers_total", MetricType::counter, "model_data messages (model files) from Frigate.",
     &EndpointStats::model_data},
    {"aisrv_frigate_models_saved_total", MetricType::counter, "Model files from Frigate written into the model store.",
     &EndpointStats::models_saved},
    {"aisrv_frigate_models_loaded_total", MetricType::counter, "Models a Frigate endpoint loaded on its engine.",
     &EndpointStats::models_loaded},
    {"aisrv_frigate_peers", MetricType::gauge, "Frigate connections with a session now.", &EndpointStats::peers_open},
    {"aisrv_frigate_peers_opened_total", MetricType::counter, "Frigate connections that got a session.",
     &EndpointStats::peers_opened},
    {"aisrv_frigate_peers_dropped_total", MetricType::counter,
     "Frigate sessions the endpoint closed (idle, or the least recently used over its peer limit).",
     &EndpointStats::peers_dropped},
};

struct ZeroReason {
  const char* reason;
  uint64_t EndpointStats::*field;
};

constexpr ZeroReason kZeroReasons[] = {
    {"no_model", &EndpointStats::zeros_no_model},       {"bad_message", &EndpointStats::zeros_bad_message},
    {"mismatch", &EndpointStats::zeros_mismatch},       {"model_type", &EndpointStats::zeros_model_type},
    {"inference", &EndpointStats::zeros_inference},
};

}  // namespace

MetricsSource frigate_metrics(const std::vector<std::unique_ptr<phy::frigate::FrigateEndpoint>>& endpoints) {
  return [&endpoints](MetricsWriter& w) {
    std::vector<EndpointStats> stats;
    std::vector<MetricLabels> labels;
    for (const auto& e : endpoints) {
      stats.push_back(e->stats());
      labels.push_back({{"endpoint", e->config().endpoint}, {"engine", std::to_string(e->config().engine)}});
    }
    for (const Counter& c : kCounters) {
      w.family(c.name, c.type, c.help);
      for (size_t i = 0; i < stats.size(); ++i) w.sample(labels[i], stats[i].*c.field);
    }
    w.family("aisrv_frigate_zero_replies_total", MetricType::counter,
             "Detection requests answered with all-zero rows, by reason (no_model, bad_message, mismatch, "
             "model_type, inference).");
    for (size_t i = 0; i < stats.size(); ++i)
      for (const ZeroReason& z : kZeroReasons) {
        MetricLabels l = labels[i];
        l.emplace_back("reason", z.reason);
        w.sample(l, stats[i].*z.field);
      }
  };
}

}  // namespace aisrv::daemon
