// aisrv host — the socket host transport (Unix and TCP) over Boost.Asio, with a per-command timeout and reconnect
// on the next command after the connection was lost.
#pragma once

#include <memory>

#include "aisrv/client/transport.hpp"
#include "aisrv/protocol/endpoint.hpp"

namespace aisrv::client {

class SocketTransport final : public HostTransport {
 public:
  // Connects at once; Errc::not_found / io_error saying why when nothing listens there.
  static Result<std::unique_ptr<SocketTransport>> connect(const protocol::SocketEndpoint& endpoint,
                                                          const ConnectOptions& options);
  ~SocketTransport() override;

  Status transact(const protocol::Header& header, std::span<const uint8_t> payload,
                  protocol::Response& response) override;
  std::string describe() const override;
  void set_send_progress(SendProgress progress) override;

 private:
  class Impl;
  explicit SocketTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace aisrv::client
