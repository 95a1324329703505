// aisrv fuzz target — the USB bulk framing's pure parts: command packets, the packet assembler (transfers ended by a
// short or zero-length packet, against a payload limit), LAST_ERROR records, and the CRC-32 trailer arithmetic
// (crc32_combine must agree with summing the concatenation).
#include <cstddef>
#include <cstdint>
#include <span>

#include "aisrv/protocol/usb_link.hpp"
#include "aisrv/protocol/usb_packets.hpp"

using namespace aisrv::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  if (size >= kHeaderSize) (void)usb::decode_command_packet(in.first<kHeaderSize>());
  (void)usb::decode_last_error(in);
  if (size >= 2) {
    const size_t mps = (data[0] & 1) ? 64 : 512;
    usb::Assembler a(mps, 4096);
    size_t at = 1;
    while (at < size) {  // each packet's length is the next byte (scaled), its bytes follow
      const size_t n = std::min<size_t>(size - at - 1, (data[at] * mps) / 255);
      auto r = a.feed(in.subspan(at + 1, n));
      at += 1 + n;
      if (!r) break;
      if (a.complete()) a.reset();
    }
    const size_t cut = data[1] % size;
    const uint32_t whole = usb::crc32(0, in);
    const uint32_t parts = usb::crc32_combine(usb::crc32(0, in.first(cut)), usb::crc32(0, in.subspan(cut)), size - cut);
    if (whole != parts) __builtin_trap();
  }
  return 0;
}
