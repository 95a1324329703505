// aisrv protocol — the USB bulk link beyond the packet rule of usb_packets.hpp: how an aisrv interface is recognised,
// the CRC flag of the command packet and the CRC trailer it announces, and the vendor control requests on ep0 (the
// reason of the last stall, link reset). Shared by the FunctionFS device (phy/usb) and the libusb host (host/client);
// specified in docs/transport-usb.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "aisrv/protocol/protocol.hpp"

namespace aisrv::protocol::usb {

// Default ids of an aisrv gadget: pid.codes' test VID:PID (tools/usb-gadget; a product sets its own).
inline constexpr uint16_t kDefaultVendorId = 0x1209;
inline constexpr uint16_t kDefaultProductId = 0x0001;

// The aisrv interface: vendor-specific class, subclass 'A', protocol = framing version. Hosts find aisrv devices by
// this triple, whatever their ids.
inline constexpr uint8_t kInterfaceClass = 0xFF;
inline constexpr uint8_t kInterfaceSubClass = 0x41;
inline constexpr uint8_t kInterfaceProtocol = 0x01;
inline constexpr const char* kInterfaceName = "aisrv";

// Bit 31 of the command packet's cmd word: this command carries a CRC-32 trailer (SET: after the payload on OUT;
// GET: after the payload on IN). A host sets it only when GET_VERSION announced AISRV_CAP_CRC32; the device strips
// it before the interpreter sees the opcode.
inline constexpr uint32_t kCrcFlag = 0x80000000u;
inline constexpr size_t kCrcSize = 4;
inline constexpr size_t kStatusSize = 4;

// Vendor requests on ep0 (bmRequestType: vendor, recipient interface; wIndex = interface number).
enum class VendorRequest : uint8_t {
  last_error = 0x01,  // device-to-host: the LastError record of the last stall
  reset_link = 0x02,  // host-to-device, no data: drop the command in progress and queued data; resync
};
inline constexpr uint8_t kRequestTypeVendorInterfaceIn = 0xC1;   // IN | vendor | interface
inline constexpr uint8_t kRequestTypeVendorInterfaceOut = 0x41;  // OUT | vendor | interface

// Why the device stalled its endpoints: the status the error stands for and the debug-log line written for it.
struct LastError {
  uint32_t status = 0;  // one error bit (AISRV_STATUS_*), 0 when there was no stall yet
  uint32_t stalls = 0;  // stalls since the device started
  std::string message;
};
// Layout: u32 status, u32 stalls, u16 message length, message bytes (truncated to fit `max_size`, at least 10).
std::vector<uint8_t> encode_last_error(const LastError& e, size_t max_size);
Result<LastError> decode_last_error(std::span<const uint8_t> in);
// RESET_LINK wValue bit: the host program starts anew, so the device ends the host's interpreter session (its tensors,
// outputs, error bits) and begins a fresh one. Without it a reset only resynchronises the framing.
inline constexpr uint16_t kResetNewSession = 0x0001;

// wLength a host asks for with VendorRequest::last_error.
inline constexpr uint16_t kLastErrorMaxSize = 10 + AISRV_DEBUG_LOG_LINE_MAX;

// CRC-32 (IEEE, the value of aisrv_crc32 in crc32.h) through zlib's table-driven implementation, which is many times
// faster on large payloads. Start with crc = 0, chain the result.
uint32_t crc32(uint32_t crc, std::span<const uint8_t> data);
// CRC of A followed by B, from crc(A), crc(B) and B's length (zlib's crc32_combine): lets parts be summed in parallel.
uint32_t crc32_combine(uint32_t crc_a, uint32_t crc_b, size_t length_b);

// The command packet: the 12-byte header with the CRC flag folded into cmd.
void encode_command_packet(const Header& h, bool crc, std::span<uint8_t, kHeaderSize> out);
struct CommandPacket {
  Header header;  // cmd without the flag
  bool crc = false;
};
CommandPacket decode_command_packet(std::span<const uint8_t, kHeaderSize> in);

}  // namespace aisrv::protocol::usb
