// aisrv host — the host-transport interface: moves one command (header + payload) to a server and brings back its
// status and payload. Implementations: sockets (Unix/TCP), USB (libusb), SPI (C99 MCU client). A transport knows
// only framing; it raises local errors (I/O, timeout, protocol violation) as Errc values.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "aisrv/protocol/result.hpp"

#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/protocol.hpp"

namespace aisrv::client {

class HostTransport {
 public:
  virtual ~HostTransport() = default;

  // Sends one request and receives its response into `response`. After a local error the transport is ready for a
  // new attempt (it reconnects on the next call when the link was lost).
  virtual Status transact(const protocol::Header& header, std::span<const uint8_t> payload,
                          protocol::Response& response) = 0;
  // What the transport talks to, e.g. "unix:/run/aisrv.sock".
  virtual std::string describe() const = 0;
  // Called with the server's GET_VERSION answer after a successful handshake (capability negotiation).
  virtual void negotiated(const protocol::VersionInfo& server) { (void)server; }
  // Capability bits this transport offers (announced back to the server where the transport supports it).
  virtual uint32_t capabilities() const { return 0; }
  // How much of a large request payload has left, for progress bars (called from transact; empty: off). Transports
  // that cannot tell never call it.
  using SendProgress = std::function<void(uint64_t sent, uint64_t total)>;
  virtual void set_send_progress(SendProgress progress) { (void)progress; }
};

struct ConnectOptions {
  std::chrono::milliseconds timeout{10000};  // per command
  std::string token;  // sent with AUTH after the handshake when not empty (servers with aisrvd --token-file)
};

// The token in a file (a trailing newline is not part of it), for ConnectOptions::token.
Result<std::string> read_token_file(const std::string& path);

}  // namespace aisrv::client
