// aisrvd — parsing of the daemon's engine and chain arguments ("N=KIND[:options]", "A:B") into a checked plan.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <utility>
#include <vector>

#include "aisrv/engine/registry.hpp"
#include "serve.hpp"

namespace CLI {
class App;
}

namespace aisrv::daemon {

// "--engine N=SPEC" values, in any order; engines must end up numbered 0..N-1 without gaps or duplicates.
Result<std::vector<engine::EngineSpec>> parse_engine_args(const std::vector<std::string>& args);
// "--sensor N=PATH" values.
// N=VALUE options with one value per engine (--sensor, --sensor-i2c, --gpio); `option` and `example` name them in
// errors.
Result<std::vector<std::pair<uint32_t, std::string>>> parse_engine_map(const std::vector<std::string>& args,
                                                                       std::string_view option,
                                                                       std::string_view example);
// "--chain A:B" values.
Result<std::vector<std::pair<uint32_t, uint32_t>>> parse_chain_args(const std::vector<std::string>& args);

// aisrvd reads this configuration file when it exists and no --config names another (docs/cli.md).
inline constexpr const char* kDefaultConfigFile = AISRV_SYSCONFDIR "/aisrv/aisrvd.conf";

// The options about many clients (connections, timeouts, memory, socket permissions, access, shutdown), as text
// from the command line; aisrvd and the test server take the same ones (docs/cli.md, docs/security.md).
struct ClientOptions {
  size_t max_connections = 256, max_per_peer = 64;
  int reserved_connections = -1;  // -1: max_connections / 16
  double frame_timeout_s = 10, idle_timeout_s = 1800, shutdown_timeout_s = 10, auth_timeout_s = 10;
  std::string max_receive = "512M", max_receive_per_peer, session_memory = "256M", min_transfer_rate = "1M";
  unsigned max_queued = 16;
  std::string socket_mode = "0660", socket_group, admin_group, token_file;
  bool allow_remote = false;
};
void add_client_options(CLI::App& app, ClientOptions& o);
// Checks them and fills `serve` (socket, access, session, shutdown_timeout); Errc::invalid_argument saying what is
// wrong.
Status apply_client_options(const ClientOptions& o, ServeOptions& serve);

// A group by name or number ("aisrv", "998") for --socket-group / --admin-group.
Result<uint32_t> parse_group(std::string_view text);
// An octal file mode such as "0660" or "660" (permission bits only).
Result<uint32_t> parse_mode(std::string_view text);
// The shared secret for TCP sessions: a regular file owned by the daemon's user (or root) that neither group nor
// others can read, holding 16..256 bytes (a trailing newline is not part of it).
Result<std::string> read_token_file(const std::string& path);

}  // namespace aisrv::daemon
