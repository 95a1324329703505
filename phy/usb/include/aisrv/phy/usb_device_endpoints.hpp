// aisrv phy/usb — the device's view of its two bulk endpoints: the small interface between the USB framing
// (UsbConnection) and the endpoint I/O. FunctionFS implements it in the product (ffs_endpoints); tests implement it over
// socketpair(AF_UNIX, SOCK_SEQPACKET), one message per USB packet.
//
// Semantics are FunctionFS's: a receive ends when its buffer is full or when a short packet (a zero-length packet
// included) arrived; a send puts the bytes on the bus as max-packet-size packets and never adds a zero-length packet
// by itself (an empty send is one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace aisrv::phy::usb {

enum class Io {
  ok,
  cancelled,  // the host reset the link (or the device is stopping): the command in progress is dropped
  disabled,   // the interface is not configured (unplugged, bus reset, unbound) or the endpoints were closed
  failed,     // anything else (detail says what)
};

struct IoResult {
  Io io = Io::ok;
  size_t bytes = 0;    // bytes received / queued
  bool ended = false;  // receive: a short packet or a zero-length packet ended the transfer
  std::string detail;

  bool ok() const { return io == Io::ok; }
};

// Buffers one transfer lands in, filled in order as if they were one (a command packet, then a payload's storage,
// then room for the rest), so each part of a transfer can go straight where it is used.
using ReceiveParts = std::span<const std::span<uint8_t>>;

inline size_t total_size(ReceiveParts parts) {
  size_t n = 0;
  for (const auto& p : parts) n += p.size();
  return n;
}

class DeviceEndpoints {
 public:
  virtual ~DeviceEndpoints() = default;

  // Blocks until the host configured the interface; false once the endpoints are closed for good.
  virtual bool wait_enabled() = 0;
  // wMaxPacketSize of the bulk endpoints at the current speed (64, 512 or 1024), valid once enabled.
  virtual size_t max_packet() const = 0;

  // Reads one transfer from bulk OUT into `parts` (their total size a multiple of max_packet()); `bytes` of the
  // result counts what landed in all of them.
  virtual IoResult receive(ReceiveParts parts) = 0;
  // Puts `data` and then `tail` on bulk IN as one continuous stream of packets (a payload and its CRC trailer).
  // Several sends continue one transfer as long as the earlier ones are multiples of the packet size.
  virtual IoResult send(std::span<const uint8_t> data, std::span<const uint8_t> tail = {}) = 0;
  // Reports a failure of what was sent so far. An implementation may return before the host has read everything
  // (the FunctionFS one queues writes and collects their completions later).
  virtual IoResult flush() = 0;
  // Stalls both endpoints (nothing may be queued on IN). The host clears the halts.
  virtual IoResult halt() = 0;

  // Thread-safe: ends the operations in progress with Io::cancelled and refuses new ones until rearm(); queued data
  // is dropped. Used for the host's link reset.
  virtual void abort() = 0;
  // Called by the framing at a command boundary, after it has handled an abort.
  virtual void rearm() = 0;
};

}  // namespace aisrv::phy::usb
