// aisrvd — serving: wires the interpreter to the configured transports, runs until SIGINT/SIGTERM, then shuts down
// in order (stop accepting, close connections, finish running requests, remove socket files). Shared by aisrvd and
// the test server in tests/ so both serve exactly the same way.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aisrv/engine/backend.hpp"
#include "aisrv/phy/frigate_endpoint.hpp"
#include "aisrv/phy/socket_server.hpp"
#include "aisrv/protocol/limits.h"
#include "aisrv/protocol/result.hpp"
#include "aisrv/protocol/spi_link.h"
#include "aisrv/server.hpp"
#include "probe_http_server.hpp"

namespace spdlog {
class logger;
}
namespace aisrv::flash {
class ModelStore;
}

namespace aisrv::daemon {

struct ServeOptions {
  std::vector<std::string> listen;  // socket endpoints (unix:PATH, tcp:...)
  std::string usb_ffs;              // FunctionFS mount to serve USB on (empty: no USB)
  std::vector<std::pair<uint32_t, uint32_t>> chains;
  uint32_t max_payload = AISRV_MAX_PAYLOAD;
  std::vector<std::pair<uint32_t, std::string>> sensors;  // engine -> frame source (v4l2:… or a raw frame path)
  std::vector<std::pair<uint32_t, std::string>> sensor_i2c;  // engine -> its sensor's I2C bus (/dev/i2c-N)
  std::vector<std::pair<uint32_t, std::string>> gpio;        // engine -> output GPIO lines (CHIP:LINE[,LINE...])
  unsigned stream_fps = 10;                              // START_ACQUIRE_STREAM rate
  flash::ModelStore* store = nullptr;  // --flash (not owned; outlives serve())
  std::vector<uint32_t> boot;          // --boot N: engines that load their stored model before serving
  // SPI slave ports (sim:PATH, /dev/spidevB.C) and their link settings (docs/transport-spi.md).
  std::vector<std::string> spi;
  uint16_t spi_frame = AISRV_SPI_DEFAULT_FRAME;  // largest SPI transaction (fixed: every transaction's size)
  bool spi_fixed = false;                        // the slave controller needs the transfer length in advance
  uint8_t spi_mode = 0;                          // SPI mode 0..3 (spidev)
  uint32_t spi_timeout_ms = 5000;                // an incomplete SPI transfer idle this long is discarded
  // Many clients (docs/security.md): connection limits, timeouts, socket permissions (io_threads and logger of
  // `socket` are set by serve), who may do what, per-session caps.
  phy::SocketServerOptions socket;
  server::AccessOptions access;
  server::SessionLimits session;
  // --frigate: Frigate detector endpoints (docs/frigate.md), checked by phy::frigate::parse_endpoint_spec.
  std::vector<phy::frigate::EndpointConfig> frigate;
  // SIGTERM/SIGINT: how long requests in flight may take to be answered before running inferences are cancelled.
  std::chrono::milliseconds shutdown_timeout{10000};
  // --metrics tcp:HOST:PORT: Prometheus /metrics and the /healthz and /readyz probes over HTTP (empty: none;
  // docs/metrics.md) and the listener's limits (its logger and allow_remote are set by serve from the above).
  std::string metrics;
  ProbeHttpOptions metrics_http;
  // Warnings found while checking the options (apply_client_options), logged by the program at start-up.
  std::vector<std::string> notes;
};

// Blocks SIGINT/SIGTERM for the calling process; call before any thread is started.
void block_termination_signals();

// Exit codes of aisrvd: 0 after a clean shutdown, 1 when start-up failed (a socket could not be bound…),
// 2 for a configuration that cannot work (bad option values, chains, sensors), 3 when a shutdown did not finish in
// time (--shutdown-timeout, plus a grace period after running inferences were cancelled) and the process left
// without waiting. The reason is always logged.
inline constexpr int kExitStartup = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitShutdownTimeout = 3;

// Returns the process exit code (above).
int serve(const ServeOptions& options, std::vector<std::unique_ptr<engine::InferenceBackend>> backends,
          std::shared_ptr<spdlog::logger> logger);

}  // namespace aisrv::daemon
