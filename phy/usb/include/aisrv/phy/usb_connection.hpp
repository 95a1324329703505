// aisrv phy/usb — the device side of the USB bulk framing (docs/transport-usb.md), over any DeviceEndpoints:
// read a 12-byte command packet from bulk OUT; for a SET command read its payload (a transfer ended by a short or
// zero-length packet, with a CRC-32 trailer when the command packet's CRC flag is set; the payload and trailer may
// also follow the header in the command packet's own transfer, AISRV_CAP_USB_ONE_TRANSFER); hand the request to the
// interpreter; write the status word on bulk IN and, for a GET command, the payload ended the same way.
//
// Framing errors (a command packet that is not 12 bytes, data above the limit, a command addressed to no engine or
// with an unknown opcode) stall both endpoints, as the XMOS server does: the reason goes to the debug log and to the
// LastError record the host reads on ep0 after clearing the halts. Nothing is applied for a refused command.
// The connection never interprets a command beyond this framing; it reaches the interpreter through the port
// (aisrv/port.hpp, Port::handle). The USB host is one interpreter session of Trust::physical while the interface is
// enabled; a RESET_LINK with the new-session flag (a host program starting) begins a fresh one.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aisrv/phy/usb_device_endpoints.hpp"
#include "aisrv/protocol/protocol.hpp"
#include "aisrv/protocol/usb_link.hpp"

namespace spdlog {
class logger;
}
namespace aisrv::server {
class Port;
class Session;
}

namespace aisrv::phy::usb {

class PayloadBuffer;
class CrcWorker;

class UsbConnection final : private protocol::PayloadSink {
 public:
  // Errc::internal when the payload buffer cannot be mapped.
  static Result<std::unique_ptr<UsbConnection>> create(server::Port& server, DeviceEndpoints& endpoints,
                                                    std::shared_ptr<spdlog::logger> logger = nullptr);
  ~UsbConnection();
  UsbConnection(const UsbConnection&) = delete;
  UsbConnection& operator=(const UsbConnection&) = delete;

  // Serves commands until the endpoints are closed (DeviceEndpoints::wait_enabled() returns false).
  void run();

  // Vendor requests on ep0, called from the control thread. An IN request's answer (at most `length` bytes), or
  // nullopt to stall ep0 (unknown request).
  std::optional<std::vector<uint8_t>> control_in(uint8_t request, uint16_t value, uint16_t length);
  // A host-to-device request without data; false stalls ep0. reset_link returns once the link is resynchronised.
  bool control_out(uint8_t request, uint16_t value, uint16_t length);

  protocol::usb::LastError last_error() const;
  // The host's interpreter session (null while the interface is disabled). Serving thread only, or while it waits.
  std::shared_ptr<server::Session> session() const { return session_; }
  uint64_t commands_served() const { return commands_.load(); }

 private:
  enum class Step { next, link_down };

  UsbConnection(server::Port& server, DeviceEndpoints& endpoints, std::shared_ptr<spdlog::logger> logger,
             std::unique_ptr<PayloadBuffer> buffer);
  Step serve_one();
  Step io_failed(const IoResult& r, const char* phase);
  Step respond(const protocol::Header& h, bool crc);
  // Status word, then (for a GET) the payload with its CRC trailer and terminating packet; `phase` names the part
  // that failed.
  IoResult send_answer(uint32_t status, std::span<const uint8_t> payload, bool has_payload, bool crc,
                       const char*& phase);
  // PayloadSink: the interpreter offers an output tensor's bytes from the session (status OKAY); up to kSinkMax
  // they are queued at once, larger ones are declined (copied by the interpreter).
  bool write(std::span<const uint8_t> payload) override;
  // Writes `message` to the debug log as the interpreter does (engine log + status bit, or the server log) and
  // returns the line.
  std::string note(const protocol::Header& h, Errc code, const std::string& message);
  void stall(uint32_t status, const std::string& line);
  // SET data of n bytes received over donor_ (its first donor_part bytes) and the payload buffer: its first
  // `length` bytes (the payload) as one span, in place when possible.
  std::span<const uint8_t> gather(size_t n, size_t donor_part, size_t length);
  uint8_t data_byte(size_t i, size_t donor_part, std::span<const uint8_t> data) const;
  void size_donor(size_t payload_bytes);

  server::Port& server_;
  std::shared_ptr<server::Session> session_;  // the host's interpreter session while the interface is enabled
  std::atomic<bool> new_session_{false};      // RESET_LINK asked for a fresh session
  DeviceEndpoints& endpoints_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<PayloadBuffer> buffer_;
  std::unique_ptr<CrcWorker> crc_;
  std::array<uint8_t, protocol::kHeaderSize> command_{};  // the command packet as received
  // Receives SET payloads of the repeated size in place (input tensors); offered to the interpreter as a donor, the
  // session that adopts it as its input tensor gives the tensor's old storage back.
  std::vector<uint8_t> donor_;
  size_t last_input_size_ = 0;  // the last accepted SET payload of at least kDonorMin bytes
  std::array<uint8_t, protocol::usb::kStatusSize> status_{};
  std::vector<uint8_t> tail_;  // last short piece of a GET payload plus its CRC trailer
  protocol::Request request_;
  protocol::Response response_;
  bool answer_crc_ = false;             // the command being answered uses the CRC trailer
  IoResult answer_;                     // how write() went
  const char* answer_phase_ = "status";

  mutable std::mutex mu_;
  protocol::usb::LastError last_error_;
  std::atomic<uint64_t> commands_{0};
};

}  // namespace aisrv::phy::usb
