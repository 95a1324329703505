// aisrv host — the host side of the USB bulk framing (docs/transport-usb.md) over a small endpoint interface.
// HostEndpoints is the seam: libusb implements it in the product (UsbTransport), tests implement it over
// socketpair(AF_UNIX, SOCK_SEQPACKET) with one message per USB packet.
//
// One command: the 12-byte command packet on bulk OUT; a SET command's payload as max-packet-size packets ended by a
// short or zero-length packet; then the 4-byte status word on bulk IN; for a GET command the payload ended the same
// way. With a CRC-32 trailer (bit 31 of cmd set), a SET's header, payload and CRC go as one transfer, and a GET's
// payload transfer ends with the CRC. A stall means the device
// refused the command: the host clears both halts and reads the reason (LastError) on ep0. A command abandoned half
// way (timeout, cancel) is followed by a link reset on ep0 so the next command starts clean.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "aisrv/protocol/protocol.hpp"

namespace aisrv::client::usb {

using Deadline = std::chrono::steady_clock::time_point;

enum class Io {
  ok,
  stalled,    // the device halted the endpoint
  timeout,    // the deadline passed
  cancelled,  // HostEndpoints user cancelled (e.g. UsbTransport::cancel from another thread)
  gone,       // the device disappeared
  failed,     // anything else (detail says what)
};

struct IoResult {
  Io io = Io::ok;
  size_t bytes = 0;    // bytes moved
  bool ended = false;  // receive: a short packet or a zero-length packet ended the transfer
  std::string detail;
  // On a failure: every byte of OUT data queued before it had reached the device (so a SET whose status was being
  // awaited may have been carried out). Only meaningful once all of a command's data was handed to send().
  bool data_sent = false;

  bool ok() const { return io == Io::ok; }
};

class HostEndpoints {
 public:
  using OnData = std::function<void(std::span<const uint8_t>)>;
  virtual ~HostEndpoints() = default;

  // wMaxPacketSize of the bulk endpoints (64, 512 or 1024).
  virtual size_t max_packet() const = 0;
  // Bulk OUT: queues `data` as packets (it must stay valid until flush()); an empty span is a zero-length packet.
  // No zero-length packet is added by itself. `following`: bytes the caller will send right behind this in the same
  // command, or expects back as its answer (lets the implementation choose between a synchronous transfer and
  // transfers in flight while the answer's reads are queued).
  virtual IoResult send(std::span<const uint8_t> data, Deadline deadline, size_t following = 0) = 0;
  // Waits until everything sent is on the bus.
  virtual IoResult flush(Deadline deadline) = 0;
  // Bulk IN: reads one transfer, handing its bytes to `on_data` in order; stops once more than `limit` bytes came
  // without the transfer ending (ended = false). `read_ahead`: bytes of the next IN transfer the caller expects
  // (a GET's payload behind its status); the implementation may queue reads for them now.
  virtual IoResult receive(size_t limit, const OnData& on_data, Deadline deadline, size_t read_ahead = 0) = 0;
  // Clears the halt of both bulk endpoints (CLEAR_FEATURE(ENDPOINT_HALT)).
  virtual IoResult clear_halts() = 0;
  // Vendor control requests to the interface (protocol::usb::VendorRequest).
  virtual IoResult control_in(uint8_t request, uint16_t length, std::vector<uint8_t>& answer) = 0;
  virtual IoResult control_out(uint8_t request, uint16_t value = 0) = 0;
  // After any result other than ok, nothing of that call is left in flight.
};

class UsbHostLink {
 public:
  UsbHostLink(HostEndpoints& endpoints, std::string name) : ep_(endpoints), name_(std::move(name)) {}

  // One command. `crc`: use the CRC-32 trailer (only when the device announced AISRV_CAP_CRC32). Server errors come
  // back in response.status; a stall becomes the Error the device recorded (typed, with its message); local
  // failures are io_error / timeout / cancelled / crc_error / protocol_error.
  Status transact(const protocol::Header& header, std::span<const uint8_t> payload, protocol::Response& response,
                  bool crc, Deadline deadline);
  // Tells the device to drop what is left of an interrupted command (VendorRequest::reset_link); falls back to
  // clearing the halts on a device without it.
  // `new_session`: this host program starts anew; the device drops the previous program's session state.
  IoResult reset(bool new_session = false);
  // True after the device disappeared during a command (the transport reopens it).
  bool gone() const { return gone_; }
  // The device announced AISRV_CAP_USB_ONE_TRANSFER: a SET's header and payload go as one transfer also without the
  // CRC flag (one command packet and one device turnaround fewer per SET).
  void set_one_transfer(bool on) { one_transfer_ = on; }

 private:
  Error fail(const IoResult& r, const protocol::Header& h, const char* phase, Deadline deadline);
  Error stalled(const protocol::Header& h, const char* phase);
  // Bytes a GET's answer is expected to take on IN (the last answer to the same command, trailer, ending packet).
  size_t expected_answer(const protocol::Header& h, size_t trailer) const;

  HostEndpoints& ep_;
  std::string name_;
  bool gone_ = false;
  bool one_transfer_ = false;
  std::vector<uint8_t> head_;  // with CRC: the header and the payload's first bytes (one packet)
  std::vector<uint8_t> tail_;  // with CRC: the payload's last partial packet plus the CRC
  // Size of the last answer per (cmd, engine, tensor): how much to read ahead for the next one.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, size_t> answer_sizes_;
};

}  // namespace aisrv::client::usb
