// aisrv protocol — the USB bulk packetizer, as pure functions.
// A payload travels as max-packet-size packets; the transfer ends at the first short packet, so a payload whose
// length is an exact multiple of the packet size (including 0) is followed by a zero-length packet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace aisrv::protocol::usb {

// Packet sizes bulk endpoints use: full speed 64, high speed 512, super speed 1024.
inline constexpr size_t kFullSpeedPacket = 64;
inline constexpr size_t kHighSpeedPacket = 512;
inline constexpr size_t kSuperSpeedPacket = 1024;

// Number of packets on the bus for `length` bytes (a trailing ZLP counts as one).
size_t packet_count(size_t length, size_t max_packet);
// True when a zero-length packet must follow `length` bytes.
inline bool needs_zlp(size_t length, size_t max_packet) { return length % max_packet == 0; }

// Split a payload into the packets sent on the bus; the last element is empty when a ZLP is needed.
std::vector<std::span<const uint8_t>> split(std::span<const uint8_t> payload, size_t max_packet);

// Reassembles packets into a payload. feed() returns true when the transfer is complete (a short packet or ZLP).
class Assembler {
 public:
  Assembler(size_t max_packet, size_t max_length) : max_packet_(max_packet), max_length_(max_length) {}

  // Errc::protocol_error for a packet larger than max_packet or a packet after completion;
  // Errc::bad_length when the payload would exceed max_length.
  Result<bool> feed(std::span<const uint8_t> packet);
  bool complete() const { return complete_; }
  const std::vector<uint8_t>& payload() const { return data_; }
  std::vector<uint8_t> take() { return std::move(data_); }
  void reset() {
    data_.clear();
    complete_ = false;
  }

 private:
  size_t max_packet_;
  size_t max_length_;
  std::vector<uint8_t> data_;
  bool complete_ = false;
};

}  // namespace aisrv::protocol::usb
