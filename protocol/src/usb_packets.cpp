// aisrv protocol — USB packetizer (split into max-packet-size packets with the short/ZLP terminator, reassemble).
#include "aisrv/protocol/usb_packets.hpp"

namespace aisrv::protocol::usb {

size_t packet_count(size_t length, size_t max_packet) { return length / max_packet + 1; }

std::vector<std::span<const uint8_t>> split(std::span<const uint8_t> payload, size_t max_packet) {
  std::vector<std::span<const uint8_t>> packets;
  packets.reserve(packet_count(payload.size(), max_packet));
  size_t pos = 0;
  while (payload.size() - pos >= max_packet) {
    packets.push_back(payload.subspan(pos, max_packet));
    pos += max_packet;
  }
  // The remainder is a short packet; when there is none, a zero-length packet ends the transfer.
  packets.push_back(payload.subspan(pos));
  return packets;
}

Result<bool> Assembler::feed(std::span<const uint8_t> packet) {
  if (complete_) return make_error(Errc::protocol_error, "packet received after the transfer ended");
  if (packet.size() > max_packet_)
    return make_error(Errc::protocol_error, "{}-byte packet exceeds the {}-byte max packet size", packet.size(),
                      max_packet_);
  if (data_.size() + packet.size() > max_length_)
    return make_error(Errc::bad_length, "transfer exceeds {} bytes", max_length_);
  data_.insert(data_.end(), packet.begin(), packet.end());
  complete_ = packet.size() < max_packet_;
  return complete_;
}

}  // namespace aisrv::protocol::usb
