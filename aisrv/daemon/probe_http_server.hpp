// aisrvd — the HTTP listener of --metrics (Boost.Beast): GET or HEAD on a fixed set of paths (/metrics, /healthz,
// /readyz), each answered by a route function; 404 for other paths, 405 for other methods. Every peer is hostile:
// the request head is bounded, a request must arrive (and an answer be taken) within a timeout, connections beyond a
// limit are closed at once, and nothing a peer sends reaches the inference server. It runs on its own io_context
// thread, so a slow scraper never delays inference, and binds to loopback unless remote peers are allowed.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aisrv/protocol/endpoint.hpp"
#include "aisrv/protocol/result.hpp"

namespace spdlog {
class logger;
}

namespace aisrv::daemon {

struct ProbeHttpOptions {
  size_t max_connections = 16;                  // open at once; more are closed when accepted
  std::chrono::milliseconds timeout{10000};     // to receive a whole request, to send an answer, idle keep-alive
  size_t max_request_bytes = 8192;              // request line + headers (+ a body, which is read and ignored)
  bool allow_remote = false;                    // a non-loopback address needs it (aisrvd --allow-remote)
  std::shared_ptr<spdlog::logger> logger;
};

struct HttpAnswer {
  unsigned status = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

// One path and the function that answers GET/HEAD on it (runs on the listener's thread).
struct HttpRoute {
  std::string path;
  std::function<HttpAnswer()> answer;
};

class ProbeHttpServer {
 public:
  // Binds `endpoint` (tcp only) and starts serving. Errc::invalid_argument for a unix endpoint, an address that
  // does not resolve or a non-loopback one without allow_remote; Errc::io_error when it cannot be bound.
  static Result<std::unique_ptr<ProbeHttpServer>> start(const protocol::SocketEndpoint& endpoint,
                                                        ProbeHttpOptions options, std::vector<HttpRoute> routes);
  ~ProbeHttpServer();
  ProbeHttpServer(const ProbeHttpServer&) = delete;
  ProbeHttpServer& operator=(const ProbeHttpServer&) = delete;

  // The bound address (with the port the system chose for port 0).
  const protocol::SocketEndpoint& endpoint() const;
  // Closes the listener and every connection and joins the thread. Idempotent.
  void stop();

  class Impl;

 private:
  explicit ProbeHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace aisrv::daemon
