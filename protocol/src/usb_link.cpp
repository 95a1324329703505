// aisrv protocol — USB link helpers: last-error record codec, CRC-32 via zlib, command packet with the CRC flag.
#include "aisrv/protocol/usb_link.hpp"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "aisrv/protocol/bytes.hpp"

namespace aisrv::protocol::usb {

std::vector<uint8_t> encode_last_error(const LastError& e, size_t max_size) {
  std::vector<uint8_t> out;
  ByteWriter w(out);
  w.u32(e.status);
  w.u32(e.stalls);
  const size_t room = max_size > 10 ? max_size - 10 : 0;
  const size_t n = std::min({e.message.size(), room, size_t{0xFFFF}});
  w.u16(static_cast<uint16_t>(n));
  w.bytes(std::span(reinterpret_cast<const uint8_t*>(e.message.data()), n));
  return out;
}

Result<LastError> decode_last_error(std::span<const uint8_t> in) {
  ByteReader r(in);
  LastError e;
  e.status = r.u32("status");
  e.stalls = r.u32("stalls");
  const uint16_t n = r.u16("message length");
  auto text = r.bytes(n, "message");
  AISRV_TRY(r.status());
  e.message.assign(text.begin(), text.end());
  return e;
}

uint32_t crc32(uint32_t crc, std::span<const uint8_t> data) {
  // zlib's crc32_z takes a size_t length; crc32 (uInt) is used in steps for portability to older zlibs.
  const uint8_t* p = data.data();
  size_t left = data.size();
  uLong c = crc;
  while (left > 0) {
    const size_t step = std::min<size_t>(left, std::numeric_limits<uInt>::max() & ~size_t{0xFFF});
    c = ::crc32(c, p, static_cast<uInt>(step));
    p += step;
    left -= step;
  }
  return static_cast<uint32_t>(c);
}

uint32_t crc32_combine(uint32_t crc_a, uint32_t crc_b, size_t length_b) {
  return static_cast<uint32_t>(::crc32_combine(crc_a, crc_b, static_cast<z_off_t>(length_b)));
}

void encode_command_packet(const Header& h, bool crc, std::span<uint8_t, kHeaderSize> out) {
  Header flagged = h;
  if (crc) flagged.cmd |= kCrcFlag;
  encode_header(flagged, out);
}

CommandPacket decode_command_packet(std::span<const uint8_t, kHeaderSize> in) {
  CommandPacket p;
  p.header = decode_header(in);
  p.crc = (p.header.cmd & kCrcFlag) != 0;
  p.header.cmd &= ~kCrcFlag;
  return p;
}

}  // namespace aisrv::protocol::usb
