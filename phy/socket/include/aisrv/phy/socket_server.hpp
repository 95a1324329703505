// aisrv phy — the socket transport: a Boost.Asio server on Unix domain sockets and TCP. It frames bytes with the
// stream framing of protocol/ and hands decoded requests to the interpreter; it never interprets a command.
// Each connection is one interpreter session, opened with the peer identity the socket reports (SO_PEERCRED and
// supplementary groups on Unix sockets, the remote address on TCP); the interpreter decides what the peer may do.
// Many clients at once; each client's requests are answered in order; a payload length above the limit is refused
// from the prefix before anything is allocated; a client that vanishes mid-request leaves nothing behind; idle
// connections, half-sent frames and stalled readers are dropped after their timeouts; the number of connections
// (in all and per peer) and the bytes of requests being received are bounded.
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
class Server;
}

namespace aisrv::phy {

struct SocketServerOptions {
  size_t io_threads = 2;  // Asio event-loop threads (aisrvd --io-threads): one busy with a big upload, one for the rest
  size_t max_connections = 256;         // further clients are closed at once (logged)  (aisrvd --max-connections)
  size_t max_connections_per_peer = 128;  // per Unix uid / TCP address (aisrvd --max-connections-per-peer)
  std::chrono::milliseconds frame_timeout{10000};  // a half-sent request or an unread answer that makes no progress
                                                   // this long closes the connection (aisrvd --frame-timeout)
  std::chrono::milliseconds idle_timeout{1800000};  // no request this long closes the connection; 0: never
  uint64_t max_receive_bytes = 512ull << 20;  // payload bytes of requests being received or run, all connections
  uint32_t socket_mode = 0660;                // Unix socket file mode (aisrvd --socket-mode)
  std::optional<uint32_t> socket_group;       // Unix socket file group (aisrvd --socket-group)
  bool allow_remote = false;                  // TCP on a non-loopback address (aisrvd --allow-remote)
  std::shared_ptr<spdlog::logger> logger;     // connection events (may be null)
};

class SocketServer {
 public:
  SocketServer(server::Server& server, SocketServerOptions options = {});
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
