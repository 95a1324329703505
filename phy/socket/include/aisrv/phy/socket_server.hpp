// aisrv phy — the socket transport: a Boost.Asio server on Unix domain sockets and TCP. It frames bytes with the
// stream framing of protocol/ and hands decoded requests to the interpreter; it never interprets a command.
// Many clients at once; each client's requests are answered in order; a payload length above the limit is refused
// from the prefix before anything is allocated; a client that vanishes mid-request leaves nothing behind.
#pragma once

#include <cstddef>
#include <memory>
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
  size_t io_threads = 1;        // threads running the Asio event loop (aisrvd --io-threads; 1 is the lowest latency)
  size_t max_connections = 256; // further clients are accepted and closed at once (logged)
  std::shared_ptr<spdlog::logger> logger;  // connection events (may be null)
};

class SocketServer {
 public:
  SocketServer(server::Server& server, SocketServerOptions options = {});
  ~SocketServer();
  SocketServer(const SocketServer&) = delete;
  SocketServer& operator=(const SocketServer&) = delete;

  // Binds and listens. Unix sockets are created with mode 0660; a stale socket file nobody listens on is replaced,
  // a live one is an error. TCP port 0 picks a free port; the returned endpoint is the one actually bound.
  Result<protocol::SocketEndpoint> listen(const protocol::SocketEndpoint& endpoint);
  // Starts the event-loop threads (call after listen()).
  void start();
  // Stops accepting, closes every connection, waits for requests still running in an engine, joins the threads and
  // removes the Unix socket files. Idempotent.
  void stop();
  size_t connections() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace aisrv::phy
