// aisrv host — the USB host transport (libusb-1.0) and device discovery.
//   usb                      the one attached device with an aisrv interface (class 0xFF, subclass 'A', protocol 1)
//   usb:VID:PID              the device with these ids (hex), e.g. usb:1209:0001
//   usb:VID:PID:SERIAL       ... and this serial number
// The transport claims the interface, reads the endpoint addresses from the configuration descriptor, resets the
// link, and frames commands with UsbHostLink. CRC-32 trailers are used once the server announced AISRV_CAP_CRC32.
// When the device goes away (unplug, daemon restart), the command in progress fails with io_error and the next
// command reopens it (waiting up to the command timeout for it to come back).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aisrv/client/transport.hpp"

namespace aisrv::client {

struct UsbTarget {
  std::optional<uint16_t> vendor_id;
  std::optional<uint16_t> product_id;
  std::string serial;  // empty: any

  std::string to_string() const;
};
// Errc::invalid_argument naming the problem for anything but the forms above.
Result<UsbTarget> parse_usb_target(std::string_view text);

struct UsbOptions {
  bool crc = true;  // offer CRC-32 trailers (used only when the server announces them)
};

class UsbTransport final : public HostTransport {
 public:
  // Errc::not_found when no matching device is attached (the message lists what is), io_error when it cannot be
  // opened or claimed (permissions: docs/transport-usb.md has a udev rule; busy: another program holds it).
  static Result<std::unique_ptr<UsbTransport>> open(const UsbTarget& target, const ConnectOptions& options,
                                                    UsbOptions usb = {});
  ~UsbTransport() override;

  Status transact(const protocol::Header& header, std::span<const uint8_t> payload,
                  protocol::Response& response) override;
  std::string describe() const override;
  void negotiated(const protocol::VersionInfo& server) override;
  uint32_t capabilities() const override;

  // Thread-safe: abandons the command in progress (it fails with Errc::cancelled; the link is reset).
  void cancel();
  // Whether commands currently carry CRC-32 trailers.
  bool crc_active() const;
  // wMaxPacketSize of the bulk endpoints of the open device (0 when none is open).
  size_t max_packet() const;

 private:
  class Impl;
  explicit UsbTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One attached device with an aisrv interface, as `aisrv scan` lists it.
struct UsbDeviceInfo {
  uint8_t bus = 0;
  uint8_t address = 0;
  std::string port_path;  // e.g. "1-1.2"
  uint16_t vendor_id = 0;
  uint16_t product_id = 0;
  std::string serial, manufacturer, product;
  std::string speed;  // "full", "high", "super", "super+", "low", "unknown"
  uint8_t interface = 0;
  uint8_t endpoint_out = 0, endpoint_in = 0;
  uint16_t max_packet = 0;
  std::string target;  // the --connect target that selects this device
  // With probing: the server's GET_VERSION answer, or why it could not be asked (e.g. in use by another program).
  bool probed = false;
  std::optional<protocol::VersionInfo> version;
  std::string probe_error;
};
// Lists attached devices that expose an aisrv interface; `probe` also asks each one for its version.
Result<std::vector<UsbDeviceInfo>> scan_usb(bool probe, std::chrono::milliseconds timeout);

}  // namespace aisrv::client
