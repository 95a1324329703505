// aisrv host — USB host transport: target parsing, device discovery by ids/serial/interface class, open + claim,
// hotplug-driven reconnect, CRC negotiation, and `aisrv scan`.
#include "aisrv/client/usb_transport.hpp"

#include <libusb-1.0/libusb.h>

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <mutex>
#include <thread>

#include "aisrv/client/usb_link.hpp"
#include "aisrv/protocol/usb_link.hpp"
#include "libusb_endpoints.hpp"

namespace aisrv::client {

namespace pusb = protocol::usb;
using usb::Deadline;

// ---------------------------------------------------------------------------------------------------- targets

std::string UsbTarget::to_string() const {
  if (!vendor_id) return "usb";
  std::string s = fmt::format("usb:{:04x}:{:04x}", *vendor_id, product_id.value_or(0));
  if (!serial.empty()) s += ":" + serial;
  return s;
}

namespace {

std::optional<uint16_t> parse_hex16(std::string_view s) {
  if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0) s.remove_prefix(2);
  if (s.empty() || s.size() > 4) return std::nullopt;
  uint16_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

Result<UsbTarget> parse_usb_target(std::string_view text) {
  UsbTarget t;
  if (text == "usb") return t;
  if (text.rfind("usb:", 0) != 0)
    return make_error(Errc::invalid_argument, "'{}' is not a USB target (usb, usb:VID:PID or usb:VID:PID:SERIAL)",
                      text);
  std::string_view rest = text.substr(4);
  const size_t c1 = rest.find(':');
  if (c1 == std::string_view::npos)
    return make_error(Errc::invalid_argument, "'{}': expected usb:VID:PID (hexadecimal ids, e.g. usb:1209:0001)",
                      text);
  const std::string_view vid = rest.substr(0, c1);
  std::string_view after = rest.substr(c1 + 1);
  const size_t c2 = after.find(':');
  const std::string_view pid = after.substr(0, c2);
  t.vendor_id = parse_hex16(vid);
  t.product_id = parse_hex16(pid);
  if (!t.vendor_id || !t.product_id)
    return make_error(Errc::invalid_argument, "'{}': vendor and product ids are 1-4 hexadecimal digits", text);
  if (c2 != std::string_view::npos) {
    t.serial = std::string(after.substr(c2 + 1));
    if (t.serial.empty()) return make_error(Errc::invalid_argument, "'{}': empty serial number", text);
  }
  return t;
}

// ---------------------------------------------------------------------------------------------------- discovery

namespace {

struct InterfaceMatch {
  uint8_t interface = 0;
  uint8_t ep_out = 0, ep_in = 0;
  uint16_t max_packet = 0;
};

// The aisrv interface of a device (class/subclass/protocol), or with `generic` the first vendor-specific interface
// with a bulk IN and a bulk OUT endpoint (an XMOS-style device). Endpoint addresses come from the descriptors.
std::optional<InterfaceMatch> find_interface(libusb_device* dev, bool generic) {
  libusb_config_descriptor* cfg = nullptr;
  if (libusb_get_active_config_descriptor(dev, &cfg) != 0 && libusb_get_config_descriptor(dev, 0, &cfg) != 0)
    return std::nullopt;
  std::optional<InterfaceMatch> strict, loose;
  for (int i = 0; i < cfg->bNumInterfaces; ++i) {
    const libusb_interface& itf = cfg->interface[i];
    for (int a = 0; a < itf.num_altsetting; ++a) {
      const libusb_interface_descriptor& d = itf.altsetting[a];
      if (d.bAlternateSetting != 0 || d.bInterfaceClass != pusb::kInterfaceClass) continue;
      InterfaceMatch m;
      m.interface = d.bInterfaceNumber;
      for (int e = 0; e < d.bNumEndpoints; ++e) {
        const libusb_endpoint_descriptor& ep = d.endpoint[e];
        if ((ep.bmAttributes & 0x03) != LIBUSB_TRANSFER_TYPE_BULK) continue;
        if (ep.bEndpointAddress & LIBUSB_ENDPOINT_IN) {
          if (!m.ep_in) m.ep_in = ep.bEndpointAddress;
        } else if (!m.ep_out) {
          m.ep_out = ep.bEndpointAddress;
          m.max_packet = ep.wMaxPacketSize & 0x7FF;
        }
      }
      if (!m.ep_in || !m.ep_out || !m.max_packet) continue;
      if (d.bInterfaceSubClass == pusb::kInterfaceSubClass && d.bInterfaceProtocol == pusb::kInterfaceProtocol) {
        if (!strict) strict = m;
      } else if (!loose) {
        loose = m;
      }
    }
  }
  libusb_free_config_descriptor(cfg);
  if (strict) return strict;
  if (generic) return loose;
  return std::nullopt;
}

std::string speed_name(int speed) {
  switch (speed) {
    case LIBUSB_SPEED_LOW: return "low";
    case LIBUSB_SPEED_FULL: return "full";
    case LIBUSB_SPEED_HIGH: return "high";
    case LIBUSB_SPEED_SUPER: return "super";
    case 5: return "super+";  // LIBUSB_SPEED_SUPER_PLUS (libusb >= 1.0.22)
    default: return "unknown";
  }
}

std::string string_descriptor(libusb_device_handle* h, uint8_t index) {
  if (!index || !h) return {};
  unsigned char buf[256];
  const int n = libusb_get_string_descriptor_ascii(h, index, buf, sizeof buf);
  return n > 0 ? std::string(reinterpret_cast<char*>(buf), static_cast<size_t>(n)) : std::string();
}

struct Candidate {
  libusb_device* dev = nullptr;  // referenced while in the list
  libusb_device_descriptor desc{};
  InterfaceMatch itf;
  std::string serial;
};

// Devices matching `t` (ids, serial, interface); each holds a reference the caller releases.
std::vector<Candidate> candidates(libusb_context* ctx, const UsbTarget& t) {
  std::vector<Candidate> out;
  libusb_device** list = nullptr;
  const ssize_t n = libusb_get_device_list(ctx, &list);
  for (ssize_t i = 0; i < n; ++i) {
    Candidate c;
    c.dev = list[i];
    if (libusb_get_device_descriptor(c.dev, &c.desc) != 0) continue;
    if (t.vendor_id && (c.desc.idVendor != *t.vendor_id || c.desc.idProduct != *t.product_id)) continue;
    auto itf = find_interface(c.dev, t.vendor_id.has_value());
    if (!itf) continue;
    c.itf = *itf;
    if (!t.serial.empty() || !t.vendor_id) {
      libusb_device_handle* h = nullptr;
      if (libusb_open(c.dev, &h) == 0) {
        c.serial = string_descriptor(h, c.desc.iSerialNumber);
        libusb_close(h);
      }
      if (!t.serial.empty() && c.serial != t.serial) continue;
    }
    libusb_ref_device(c.dev);
    out.push_back(c);
  }
  if (n >= 0) libusb_free_device_list(list, 1);
  return out;
}

std::string describe_candidates(const std::vector<Candidate>& cs) {
  std::string s;
  for (const auto& c : cs)
    s += fmt::format("{}usb:{:04x}:{:04x}{}{} (bus {} address {})", s.empty() ? "" : ", ", c.desc.idVendor,
                     c.desc.idProduct, c.serial.empty() ? "" : ":", c.serial, libusb_get_bus_number(c.dev),
                     libusb_get_device_address(c.dev));
  return s;
}

void release(std::vector<Candidate>& cs) {
  for (auto& c : cs) libusb_unref_device(c.dev);
  cs.clear();
}

}  // namespace

// ---------------------------------------------------------------------------------------------------- transport

class UsbTransport::Impl {
 public:
  Impl(UsbTarget target, ConnectOptions options, UsbOptions usb)
      : target_(std::move(target)), options_(options), usb_(usb) {}

  ~Impl() {
    close();
    if (has_hotplug_) libusb_hotplug_deregister_callback(ctx_, hotplug_);
    if (ctx_) libusb_exit(ctx_);
  }

  Status init() {
    if (const int rc = libusb_init(&ctx_); rc != 0) {
      ctx_ = nullptr;
      return make_error(Errc::io_error, "libusb_init failed: {}", libusb_error_name(rc));
    }
    if (libusb_has_capability(LIBUSB_CAP_HAS_HOTPLUG)) {
      const int vid = target_.vendor_id ? *target_.vendor_id : LIBUSB_HOTPLUG_MATCH_ANY;
      const int pid = target_.product_id ? *target_.product_id : LIBUSB_HOTPLUG_MATCH_ANY;
      has_hotplug_ = libusb_hotplug_register_callback(ctx_, LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT, LIBUSB_HOTPLUG_NO_FLAGS,
                                                      vid, pid, LIBUSB_HOTPLUG_MATCH_ANY, on_hotplug, this,
                                                      &hotplug_) == LIBUSB_SUCCESS;
    }
    return ok();
  }

  // Finds, opens and claims the device; with `wait`, keeps looking until the deadline (the device may be coming
  // back after a daemon restart or a replug).
  Status open_device(Deadline deadline, bool wait) {
    std::vector<Candidate> found;
    while (true) {
      found = candidates(ctx_, target_);
      if (found.size() == 1) break;
      if (found.size() > 1) {
        const std::string list = describe_candidates(found);
        release(found);
        return make_error(Errc::invalid_argument, "several USB devices match '{}': {}; name one with usb:VID:PID:SERIAL",
                          target_.to_string(), list);
      }
      if (!wait || std::chrono::steady_clock::now() >= deadline)
        return make_error(Errc::not_found, "no aisrv USB device matching '{}' is attached{}", target_.to_string(),
                          wait ? fmt::format(" (waited {} ms)", options_.timeout.count()) : "");
      pump(std::chrono::milliseconds(50));
    }
    Candidate c = found.front();
    libusb_device_handle* h = nullptr;
    const std::string where =
        fmt::format("/dev/bus/usb/{:03d}/{:03d}", libusb_get_bus_number(c.dev), libusb_get_device_address(c.dev));
    if (const int rc = libusb_open(c.dev, &h); rc != 0) {
      release(found);
      return make_error(Errc::io_error, "cannot open {}: {}{}", where, libusb_error_name(rc),
                        rc == LIBUSB_ERROR_ACCESS ? " (run as root or install the udev rule of docs/transport-usb.md)"
                                                  : "");
    }
    libusb_set_auto_detach_kernel_driver(h, 1);
    if (const int rc = libusb_claim_interface(h, c.itf.interface); rc != 0) {
      libusb_close(h);
      release(found);
      return make_error(Errc::io_error, "cannot claim interface {} of {}: {}{}", c.itf.interface, where,
                        libusb_error_name(rc), rc == LIBUSB_ERROR_BUSY ? " (in use by another program)" : "");
    }
    const std::string serial = c.serial.empty() ? string_descriptor(h, c.desc.iSerialNumber) : c.serial;
    description_ = fmt::format("usb:{:04x}:{:04x}{}{} ({} speed, bus {} address {})", c.desc.idVendor,
                               c.desc.idProduct, serial.empty() ? "" : ":", serial,
                               speed_name(libusb_get_device_speed(c.dev)), libusb_get_bus_number(c.dev),
                               libusb_get_device_address(c.dev));
    device_ = c.dev;  // keeps the reference taken by candidates()
    found.erase(found.begin());
    release(found);
    handle_ = h;
    interface_ = c.itf.interface;
    gone_.store(false);
    {
      std::lock_guard lock(mu_);
      endpoints_ = std::make_unique<usb::LibusbEndpoints>(ctx_, h, c.itf.interface, c.itf.ep_out, c.itf.ep_in,
                                                          c.itf.max_packet);
    }
    link_ = std::make_unique<usb::UsbHostLink>(*endpoints_, description_);
    link_->set_one_transfer(one_transfer_);
    // A previous host may have left the device in the middle of a command: start from a clean link.
    endpoints_->begin();
    const usb::IoResult r = link_->reset(/*new_session=*/true);
    if (!r.ok()) {
      close();
      return make_error(Errc::io_error, "cannot reset the link of {}: {}", description_, r.detail);
    }
    if (negotiated_) return refresh_capabilities(deadline);
    return ok();
  }

  void close() {
    {
      std::lock_guard lock(mu_);
      link_.reset();
      endpoints_.reset();
    }
    if (handle_) {
      libusb_release_interface(handle_, interface_);
      libusb_close(handle_);
      handle_ = nullptr;
    }
    if (device_) {
      libusb_unref_device(device_);
      device_ = nullptr;
    }
  }

  Status transact(const protocol::Header& header, std::span<const uint8_t> payload, protocol::Response& response) {
    const Deadline deadline = std::chrono::steady_clock::now() + options_.timeout;
    pump(std::chrono::milliseconds(0));  // hotplug: learn whether the device left since the last command
    if (!handle_ || gone_.load()) {
      close();
      AISRV_TRY(open_device(deadline, true));
    }
    endpoints_->begin();
    Status st = link_->transact(header, payload, response, crc_active_, deadline);
    if (link_->gone() || gone_.load()) close();  // the next command reopens it
    return st;
  }

  void negotiated(const protocol::VersionInfo& server) {
    negotiated_ = true;
    crc_active_ = usb_.crc && (server.capabilities & AISRV_CAP_CRC32) != 0;
    one_transfer_ = (server.capabilities & AISRV_CAP_USB_ONE_TRANSFER) != 0;
    if (link_) link_->set_one_transfer(one_transfer_);
  }

  void cancel() {
    std::lock_guard lock(mu_);
    if (endpoints_) endpoints_->cancel();
  }

  std::string describe() const { return description_.empty() ? target_.to_string() : description_; }
  bool crc_active() const { return crc_active_; }
  size_t max_packet() const { return endpoints_ ? endpoints_->max_packet() : 0; }
  uint32_t capabilities() const { return usb_.crc ? AISRV_CAP_CRC32 : 0; }

 private:
  // After a reconnect the server may be another build: ask again whether it speaks CRC trailers.
  Status refresh_capabilities(Deadline deadline) {
    protocol::Response resp;
    AISRV_TRY(link_->transact(protocol::Header{static_cast<uint32_t>(protocol::Command::GET_VERSION), 0, 0}, {}, resp,
                              false, deadline));
    if (resp.status != AISRV_STATUS_OKAY)
      return make_error(Errc::protocol_error, "{} refused GET_VERSION after reconnecting ({})", description_,
                        protocol::status_name(resp.status));
    auto v = AISRV_TRY(protocol::decode_version(resp.payload));
    negotiated(v);
    return ok();
  }

  void pump(std::chrono::milliseconds wait) {
    if (!has_hotplug_) {
      if (wait.count() > 0) std::this_thread::sleep_for(wait);
      return;
    }
    timeval tv{0, static_cast<suseconds_t>(wait.count() * 1000)};
    libusb_handle_events_timeout_completed(ctx_, &tv, nullptr);
  }

  static int LIBUSB_CALL on_hotplug(libusb_context*, libusb_device* dev, libusb_hotplug_event event, void* user) {
    auto* self = static_cast<Impl*>(user);
    if (event == LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT && dev == self->device_) self->gone_.store(true);
    return 0;
  }

  UsbTarget target_;
  ConnectOptions options_;
  UsbOptions usb_;
  libusb_context* ctx_ = nullptr;
  bool has_hotplug_ = false;
  libusb_hotplug_callback_handle hotplug_{};
  libusb_device* device_ = nullptr;
  libusb_device_handle* handle_ = nullptr;
  uint8_t interface_ = 0;
  std::mutex mu_;  // endpoints_ against cancel() from another thread
  std::unique_ptr<usb::LibusbEndpoints> endpoints_;
  std::unique_ptr<usb::UsbHostLink> link_;
  std::atomic<bool> gone_{false};
  bool negotiated_ = false;
  bool crc_active_ = false;
  bool one_transfer_ = false;
  std::string description_;
};

UsbTransport::UsbTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
UsbTransport::~UsbTransport() = default;

Result<std::unique_ptr<UsbTransport>> UsbTransport::open(const UsbTarget& target, const ConnectOptions& options,
                                                         UsbOptions usb) {
  auto impl = std::make_unique<Impl>(target, options, usb);
  AISRV_TRY(impl->init());
  AISRV_TRY(impl->open_device(std::chrono::steady_clock::now() + options.timeout, false));
  return std::unique_ptr<UsbTransport>(new UsbTransport(std::move(impl)));
}

Status UsbTransport::transact(const protocol::Header& header, std::span<const uint8_t> payload,
                              protocol::Response& response) {
  return impl_->transact(header, payload, response);
}
std::string UsbTransport::describe() const { return impl_->describe(); }
void UsbTransport::negotiated(const protocol::VersionInfo& server) { impl_->negotiated(server); }
uint32_t UsbTransport::capabilities() const { return impl_->capabilities(); }
void UsbTransport::cancel() { impl_->cancel(); }
bool UsbTransport::crc_active() const { return impl_->crc_active(); }
size_t UsbTransport::max_packet() const { return impl_->max_packet(); }

// ---------------------------------------------------------------------------------------------------- scan

Result<std::vector<UsbDeviceInfo>> scan_usb(bool probe, std::chrono::milliseconds timeout) {
  libusb_context* ctx = nullptr;
  if (const int rc = libusb_init(&ctx); rc != 0)
    return make_error(Errc::io_error, "libusb_init failed: {}", libusb_error_name(rc));
  std::vector<UsbDeviceInfo> out;
  libusb_device** list = nullptr;
  const ssize_t n = libusb_get_device_list(ctx, &list);
  for (ssize_t i = 0; i < n; ++i) {
    libusb_device* dev = list[i];
    libusb_device_descriptor desc{};
    if (libusb_get_device_descriptor(dev, &desc) != 0) continue;
    auto itf = find_interface(dev, false);
    if (!itf) continue;
    UsbDeviceInfo info;
    info.bus = libusb_get_bus_number(dev);
    info.address = libusb_get_device_address(dev);
    uint8_t ports[8];
    const int depth = libusb_get_port_numbers(dev, ports, sizeof ports);
    info.port_path = std::to_string(info.bus);
    for (int p = 0; p < depth; ++p) info.port_path += (p == 0 ? "-" : ".") + std::to_string(ports[p]);
    info.vendor_id = desc.idVendor;
    info.product_id = desc.idProduct;
    info.speed = speed_name(libusb_get_device_speed(dev));
    info.interface = itf->interface;
    info.endpoint_out = itf->ep_out;
    info.endpoint_in = itf->ep_in;
    info.max_packet = itf->max_packet;
    libusb_device_handle* h = nullptr;
    const int orc = libusb_open(dev, &h);
    if (orc == 0) {
      info.serial = string_descriptor(h, desc.iSerialNumber);
      info.manufacturer = string_descriptor(h, desc.iManufacturer);
      info.product = string_descriptor(h, desc.iProduct);
    }
    info.target = fmt::format("usb:{:04x}:{:04x}{}{}", desc.idVendor, desc.idProduct, info.serial.empty() ? "" : ":",
                              info.serial);
    if (probe) {
      info.probed = true;
      if (orc != 0) {
        info.probe_error = fmt::format("cannot open: {}", libusb_error_name(orc));
      } else if (const int crc = libusb_claim_interface(h, itf->interface); crc != 0) {
        info.probe_error = crc == LIBUSB_ERROR_BUSY ? "in use by another program"
                                                    : fmt::format("cannot claim: {}", libusb_error_name(crc));
      } else {
        {
          usb::LibusbEndpoints ep(ctx, h, itf->interface, itf->ep_out, itf->ep_in, itf->max_packet);
          usb::UsbHostLink link(ep, info.target);
          ep.begin();
          protocol::Response resp;
          const Deadline deadline = std::chrono::steady_clock::now() + timeout;
          Status st = link.reset().ok()
                          ? link.transact(protocol::Header{static_cast<uint32_t>(protocol::Command::GET_VERSION), 0, 0},
                                          {}, resp, false, deadline)
                          : Status(make_error(Errc::io_error, "link reset failed"));
          if (!st) info.probe_error = st.error().message;
          else if (resp.status != AISRV_STATUS_OKAY) info.probe_error = std::string(protocol::status_name(resp.status));
          else if (auto v = protocol::decode_version(resp.payload)) info.version = *v;
          else info.probe_error = v.error().message;
        }
        libusb_release_interface(h, itf->interface);
      }
    }
    if (h) libusb_close(h);
    out.push_back(std::move(info));
  }
  if (n >= 0) libusb_free_device_list(list, 1);
  libusb_exit(ctx);
  return out;
}

}  // namespace aisrv::client
