// Test double — the CP2112 emulated over FunctionFS (cp2112_emulator.hpp).
#include "cp2112_emulator.hpp"

#include <endian.h>
#include <fcntl.h>
#include <linux/usb/ch9.h>
#include <linux/usb/functionfs.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace aisrv::test {

namespace {

// A vendor-defined HID collection declaring the feature reports the driver uses, one input and one output report.
// Item bytes: Usage Page (vendor 0xFF00), Usage 1, Collection (Application), then per report: Report ID, Report
// Size 8, Report Count n, Usage 1, Feature/Input/Output (Data, Var, Abs); End Collection.
std::vector<uint8_t> report_descriptor() {
  std::vector<uint8_t> d{0x06, 0x00, 0xFF, 0x09, 0x01, 0xA1, 0x01};
  auto report = [&](uint8_t id, uint8_t count, uint8_t main_item) {
    const uint8_t items[] = {0x85, id, 0x75, 0x08, 0x95, count, 0x09, 0x01, main_item, 0x02};
    d.insert(d.end(), std::begin(items), std::end(items));
  };
  report(0x02, 4, 0xB1);   // GPIO config
  report(0x03, 1, 0xB1);   // GPIO get
  report(0x04, 2, 0xB1);   // GPIO set
  report(0x05, 2, 0xB1);   // version
  report(0x06, 13, 0xB1);  // SMBus config
  report(0x20, 1, 0xB1);   // lock byte
  report(0x13, 63, 0x81);  // data read response (input)
  report(0x14, 63, 0x91);  // data write request (output)
  d.push_back(0xC0);
  return d;
}

struct Writer {
  std::vector<uint8_t> b;
  void u8(uint8_t v) { b.push_back(v); }
  void u16(uint16_t v) { u8(v & 0xFF), u8(v >> 8); }
  void u32(uint32_t v) { u16(v & 0xFFFF), u16(v >> 16); }
};

// Interface (HID class), HID descriptor, interrupt IN 0x81 and OUT 0x02 (64 bytes), for one speed.
void interface_descriptors(Writer& w, uint16_t report_len, uint8_t interval) {
  const uint8_t intf[] = {9, USB_DT_INTERFACE, 0, 0, 2, 0x03, 0, 0, 1};
  w.b.insert(w.b.end(), std::begin(intf), std::end(intf));
  w.u8(9), w.u8(0x21), w.u16(0x0111), w.u8(0), w.u8(1), w.u8(0x22), w.u16(report_len);  // HID 1.11
  for (uint8_t ep : {uint8_t(0x81), uint8_t(0x02)}) {
    w.u8(7), w.u8(USB_DT_ENDPOINT), w.u8(ep), w.u8(USB_ENDPOINT_XFER_INT), w.u16(64), w.u8(interval);
  }
}

bool write_all(int fd, const std::vector<uint8_t>& b) { return ::write(fd, b.data(), b.size()) == ssize_t(b.size()); }

}  // namespace

Cp2112Emulator::Cp2112Emulator(std::string ffs_mount) : mount_(std::move(ffs_mount)) {}

Cp2112Emulator::~Cp2112Emulator() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (ep0_ >= 0) ::close(ep0_);
}

bool Cp2112Emulator::start() {
  ep0_ = ::open((mount_ + "/ep0").c_str(), O_RDWR);
  if (ep0_ < 0) {
    error_ = "cannot open " + mount_ + "/ep0: " + std::strerror(errno);
    return false;
  }
  const auto report = report_descriptor();
  Writer body;
  interface_descriptors(body, static_cast<uint16_t>(report.size()), 1);  // full speed: 1 ms
  interface_descriptors(body, static_cast<uint16_t>(report.size()), 4);  // high speed: 2^(4-1) microframes = 1 ms
  Writer d;
  d.u32(FUNCTIONFS_DESCRIPTORS_MAGIC_V2);
  d.u32(static_cast<uint32_t>(20 + body.b.size()));
  d.u32(FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC);
  d.u32(4), d.u32(4);  // interface, HID, two endpoints per speed
  d.b.insert(d.b.end(), body.b.begin(), body.b.end());
  if (!write_all(ep0_, d.b)) {
    error_ = std::string("descriptors refused by f_fs: ") + std::strerror(errno);
    return false;
  }
  const char name[] = "CP2112 HID USB-to-SMBus Bridge";
  Writer s;
  s.u32(FUNCTIONFS_STRINGS_MAGIC);
  s.u32(static_cast<uint32_t>(16 + 2 + sizeof(name)));
  s.u32(1), s.u32(1), s.u16(0x0409);
  s.b.insert(s.b.end(), name, name + sizeof(name));
  if (!write_all(ep0_, s.b)) {
    error_ = std::string("strings refused by f_fs: ") + std::strerror(errno);
    return false;
  }
  thread_ = std::thread([this] { serve(); });
  return true;
}

void Cp2112Emulator::serve() {
  usb_functionfs_event events[8];
  while (!stop_) {
    pollfd p{ep0_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(ep0_, events, sizeof events);
    if (n <= 0) continue;
    for (ssize_t i = 0; i < n / ssize_t(sizeof events[0]); ++i)
      if (events[i].type == FUNCTIONFS_SETUP) handle_setup(reinterpret_cast<const uint8_t*>(&events[i].u.setup));
  }
}

void Cp2112Emulator::handle_setup(const uint8_t* raw) {
  usb_ctrlrequest r;
  std::memcpy(&r, raw, sizeof r);
  const uint16_t value = le16toh(r.wValue), length = le16toh(r.wLength);
  const bool in = r.bRequestType & USB_DIR_IN;
  auto answer = [&](std::vector<uint8_t> data) {
    if (data.size() > length) data.resize(length);
    (void)!::write(ep0_, data.data(), data.size());
    ++requests_;
  };
  auto stall = [&] {
    // f_fs stalls ep0 when the data stage goes the other way.
    if (in) {
      (void)!::read(ep0_, nullptr, 0);
    } else {
      (void)!::write(ep0_, nullptr, 0);
    }
  };
  const uint8_t type = r.bRequestType & USB_TYPE_MASK;
  if (type == USB_TYPE_STANDARD && in && r.bRequest == USB_REQ_GET_DESCRIPTOR && (value >> 8) == 0x22)
    return answer(report_descriptor());
  if (type != USB_TYPE_CLASS) return stall();
  constexpr uint8_t kGetReport = 0x01, kSetIdle = 0x0A, kSetReport = 0x09;
  const uint8_t id = value & 0xFF;
  const uint8_t report_type = value >> 8;  // 1 input, 2 output, 3 feature
  if (r.bRequest == kSetIdle) {
    (void)!::read(ep0_, nullptr, 0);  // status stage: acknowledged
    ++requests_;
    return;
  }
  if (r.bRequest == kGetReport && in && report_type == 3) {
    switch (id) {
      case 0x02: return answer({0x02, direction_.load(), push_pull_.load(), 0x00, 0x00});
      case 0x03: return answer({0x03, latch_.load()});
      case 0x05: return answer({0x05, 0x0C, 0x02});  // part number 0x0C (CP2112), version 2
      case 0x06: return answer({0x06, 0x00, 0x01, 0x86, 0xA0, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});
      case 0x20: return answer({0x20, 0xFF});  // nothing locked
      default: return stall();
    }
  }
  if (r.bRequest == kSetReport && !in && report_type == 3 && length > 0 && length <= 64) {
    uint8_t data[64];
    const ssize_t got = ::read(ep0_, data, length);  // the data stage
    ++requests_;
    if (got < 1 || data[0] != id) return;
    if (id == 0x02 && got >= 3) {
      direction_ = data[1];
      push_pull_ = data[2];
    } else if (id == 0x04 && got >= 3) {
      latch_ = static_cast<uint8_t>((latch_.load() & ~data[2]) | (data[1] & data[2]));
      ++sets_;
    }
    return;
  }
  stall();
}

}  // namespace aisrv::test
