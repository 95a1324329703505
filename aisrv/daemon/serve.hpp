// aisrvd — serving: wires the interpreter to the configured transports, runs until SIGINT/SIGTERM, then shuts down
// in order (stop accepting, close connections, finish running requests, remove socket files). Shared by aisrvd and
// the test server in tests/ so both serve exactly the same way.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aisrv/engine/backend.hpp"
#include "aisrv/protocol/limits.h"
#include "aisrv/protocol/result.hpp"

namespace spdlog {
class logger;
}
namespace aisrv::flash {
class ModelStore;
}

namespace aisrv::daemon {

struct ServeOptions {
  std::vector<std::string> listen;  // socket endpoints (unix:PATH, tcp:...)
  std::vector<std::pair<uint32_t, uint32_t>> chains;
  uint32_t max_payload = AISRV_MAX_PAYLOAD;
  size_t io_threads = 1;
  std::vector<std::pair<uint32_t, std::string>> sensors;  // engine -> raw frame source path
  unsigned stream_fps = 10;                              // START_ACQUIRE_STREAM rate
  flash::ModelStore* store = nullptr;  // --flash (not owned; outlives serve())
  std::vector<uint32_t> boot;          // --boot N: engines that load their stored model before serving
};

// Blocks SIGINT/SIGTERM for the calling process; call before any thread is started.
void block_termination_signals();

// Exit codes of aisrvd: 0 after a clean shutdown, 1 when start-up failed (a socket could not be bound…),
// 2 for a configuration that cannot work (bad option values, chains, sensors). The reason is always logged.
inline constexpr int kExitStartup = 1;
inline constexpr int kExitUsage = 2;

// Returns the process exit code (above).
int serve(const ServeOptions& options, std::vector<std::unique_ptr<engine::InferenceBackend>> backends,
          std::shared_ptr<spdlog::logger> logger);

}  // namespace aisrv::daemon
