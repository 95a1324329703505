// aisrv phy — the socket transport: a Boost.Asio server on Unix domain sockets and TCP. It frames bytes with the
// stream framing of protocol/ and hands decoded requests to the interpreter; it never interprets a command.
// Each connection is one interpreter session, opened with the peer identity the socket reports (SO_PEERCRED and
// supplementary groups on Unix sockets, the remote address on TCP); the interpreter decides what the peer may do.
// Many clients at once; each client's requests are answered in order (a client may pipeline them); a payload length
// above the limit is refused from the prefix before anything is allocated; a client that leaves takes its work with
// it (its queued and running requests are cancelled); idle connections, frames that do not arrive in time and
// stalled readers are dropped; the number of connections (in all, per peer, with slots kept for admins) and the
// bytes of requests being received (in all and per peer) are bounded; connection log lines are rate-limited per peer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "aisrv/protocol/endpoint.hpp"
#include "aisrv/protocol/result.hpp"

namespace spdlog {
class logger;
}
namespace aisrv::server {
class Port;
}

namespace aisrv::phy {

struct SocketServerOptions {
  size_t io_threads = 2;  // Asio event-loop threads (aisrvd --io-threads): one busy with a big upload, one for the rest
  size_t max_connections = 256;          // further clients are refused (aisrvd --max-connections)
  size_t reserved_connections = 16;      // of max_connections, kept for peers the server makes admin (root, the
                                         // daemon's user, --admin-group) (aisrvd --reserved-connections)
  size_t max_connections_per_peer = 64;  // per Unix uid; all TCP peers together count as one peer
                                         // (aisrvd --max-connections-per-peer)
  std::chrono::milliseconds frame_timeout{10000};  // a request must arrive, and an answer be read, within this plus
                                                   // its length at min_transfer_rate (aisrvd --frame-timeout)
  uint64_t min_transfer_rate = 1 << 20;            // bytes per second (aisrvd --min-transfer-rate)
  std::chrono::milliseconds idle_timeout{1800000};  // no request this long closes the connection; 0: never
  std::chrono::milliseconds auth_timeout{10000};    // a session that must AUTH and has not, this long after it
                                                    // connected, is closed; 0: never (aisrvd --auth-timeout)
  uint64_t max_receive_bytes = 512ull << 20;  // payload bytes of requests being received or run, all connections
  uint64_t max_receive_bytes_per_peer = 0;    // one peer's share of them; 0: half (aisrvd --max-receive-memory-per-peer)
  size_t log_burst = 5;                       // connection log lines per peer and interval, then one summary line
  std::chrono::milliseconds log_interval{10000};
  uint32_t socket_mode = 0660;                // Unix socket file mode (aisrvd --socket-mode)
  std::optional<uint32_t> socket_group;       // Unix socket file group (aisrvd --socket-group)
  bool allow_remote = false;                  // TCP on a non-loopback address (aisrvd --allow-remote)
  std::shared_ptr<spdlog::logger> logger;     // connection events (may be null)
};

class SocketServer {
 public:
  // `server`: the interpreter's port (aisrv/port.hpp). Unix peers are sessions of Trust::credentials (SO_PEERCRED),
  // TCP peers of Trust::address.
  SocketServer(server::Port& server, SocketServerOptions options = {});
  ~SocketServer();
  SocketServer(const SocketServer&) = delete;
  SocketServer& operator=(const SocketServer&) = delete;

  // Binds and listens. Unix sockets: the directory is created when missing (only the daemon's user may write it) and
  // refused when another user could replace the socket in it; the file gets the configured mode and group before
  // listen(); a stale socket file nobody listens on is replaced, a live one is an error. TCP: a non-loopback address
  // needs allow_remote and a server token (Errc::invalid_argument otherwise); port 0 picks a free port; the returned
  // endpoint is the one actually bound.
  Result<protocol::SocketEndpoint> listen(const protocol::SocketEndpoint& endpoint);
  // Takes over a socket that is already listening (socket activation: systemd created, bound and listens on it; the
  // Unix socket file stays systemd's). TCP sockets are checked as listen() checks them.
  Result<protocol::SocketEndpoint> adopt(int fd);
  // Starts the event-loop threads (call after listen()).
  void start();
  // Shutdown, step 1: no new connections.
  void stop_accepting();
  // Step 2: connections waiting for a request are closed; the others close after their answer is written. True when
  // every connection ended before the deadline.
  bool drain(std::chrono::steady_clock::time_point deadline);
  // Step 3: closes every connection, waits for requests still running in an engine, joins the threads and removes
  // the Unix socket files. Idempotent; also does steps 1 and 2 (without waiting).
  void stop();
  size_t connections() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace aisrv::phy
