// aisrvd — the Frigate detector endpoints' counters as /metrics families (aisrv_frigate_*, docs/metrics.md): one
// MetricsSource for all endpoints, a sample per endpoint labelled with its endpoint and engine.
#pragma once

#include <memory>
#include <vector>

#include "aisrv/phy/frigate_endpoint.hpp"
#include "metrics_writer.hpp"

namespace aisrv::daemon {

// `endpoints` must outlive the source (serve() stops the metrics listener before it destroys them).
MetricsSource frigate_metrics(const std::vector<std::unique_ptr<phy::frigate::FrigateEndpoint>>& endpoints);

}  // namespace aisrv::daemon
