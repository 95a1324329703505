// aisrvd — what the metrics listener serves (docs/metrics.md): the /metrics page in the Prometheus text format from
// the server's counters and instruments plus the families other parts of the daemon add (MetricsSource), and the
// /readyz verdict (every engine ready, a model on every engine configured to boot one, not shutting down).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "metrics_writer.hpp"

namespace aisrv::server {
class Server;
}

namespace aisrv::daemon {

struct Readiness {
  bool ready = false;
  std::string text;  // "ready: …" or one line per reason it is not
};

class MetricsPage {
 public:
  // `model_engines`: engines configured to have a model (--boot N); `started`: when the process started.
  MetricsPage(server::Server& server, std::vector<uint32_t> model_engines,
              std::chrono::system_clock::time_point started);

  // Adds families to every page. Call before the listener serves (the list is not locked).
  void add_source(MetricsSource source) { sources_.push_back(std::move(source)); }

  std::string render() const;
  Readiness readiness() const;

 private:
  server::Server& server_;
  std::vector<uint32_t> model_engines_;
  std::chrono::system_clock::time_point started_;
  std::chrono::steady_clock::time_point started_steady_;
  std::vector<MetricsSource> sources_;
};

}  // namespace aisrv::daemon
