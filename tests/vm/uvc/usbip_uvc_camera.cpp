// aisrv VM test helper — the UVC webcam over USB/IP (usbip_uvc_camera.hpp says what and why).
#include "usbip_uvc_camera.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace aisrv::test {

namespace {

// USB/IP (Documentation/usb/usbip_protocol.rst): a 48-byte header, every field big-endian.
constexpr uint32_t kCmdSubmit = 1, kCmdUnlink = 2, kRetSubmit = 3, kRetUnlink = 4;
constexpr size_t kHeader = 48;
constexpr int32_t kEpipe = -EPIPE, kEconnreset = -ECONNRESET;

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
void put_be32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}

bool read_all(int fd, uint8_t* p, size_t n) {
  while (n) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= size_t(r);
  }
  return true;
}

bool write_all(int fd, const uint8_t* p, size_t n) {
  while (n) {
    const ssize_t r = ::write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= size_t(r);
  }
  return true;
}

}  // namespace

std::unique_ptr<UsbipUvcCamera> UsbipUvcCamera::attach(int fps, std::string& error) {
  std::unique_ptr<UsbipUvcCamera> cam(new UsbipUvcCamera(fps));
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    error = std::string("socketpair: ") + std::strerror(errno);
    return nullptr;
  }
  cam->fd_ = sv[0];
  cam->stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  cam->thread_ = std::thread([c = cam.get()] { c->run(); });
  // "port sockfd devid speed": port 0 of the high-speed root hub, USB_SPEED_HIGH (3). vhci keeps the socket.
  std::ofstream attach("/sys/devices/platform/vhci_hcd.0/attach");
  attach << "0 " << sv[1] << " " << 0x10002 << " 3";
  attach.flush();
  const bool ok = static_cast<bool>(attach);
  attach.close();
  ::close(sv[1]);
  if (!ok) {
    error = "writing /sys/devices/platform/vhci_hcd.0/attach failed (vhci-hcd loaded? port 0 free?)";
    return nullptr;  // the destructor stops the thread
  }
  return cam;
}

UsbipUvcCamera::~UsbipUvcCamera() {
  {
    std::ofstream detach("/sys/devices/platform/vhci_hcd.0/detach");
    detach << "0";
  }
  if (stop_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void UsbipUvcCamera::run() {
  for (;;) {
    const int timeout = pending_.empty() ? -1 : wait_ms();
    pollfd p[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    const int r = ::poll(p, 2, timeout);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || (p[1].revents & POLLIN)) return;
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
      if (!handle_one()) return;  // vhci closed the connection (detached)
    serve_bulk();
  }
}

void UsbipUvcCamera::reply_submit(uint32_t seqnum, uint32_t ep, uint32_t dir, int32_t status, const uint8_t* data,
                                  uint32_t len) {
  std::vector<uint8_t> out(kHeader + (dir == 1 ? len : 0));
  put_be32(&out[0], kRetSubmit);
  put_be32(&out[4], seqnum);
  put_be32(&out[12], dir);
  put_be32(&out[16], ep);
  put_be32(&out[20], uint32_t(status));
  put_be32(&out[24], len);  // actual_length
  if (dir == 1 && len) std::memcpy(&out[kHeader], data, len);
  (void)write_all(fd_, out.data(), out.size());
}

bool UsbipUvcCamera::handle_one() {
  uint8_t h[kHeader];
  if (!read_all(fd_, h, kHeader)) return false;
  const uint32_t command = be32(h), seqnum = be32(h + 4), dir = be32(h + 12), ep = be32(h + 16);
  if (command == kCmdUnlink) {
    const uint32_t victim = be32(h + 20);
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& q) { return q.seqnum == victim; });
    int32_t status = 0;  // already answered
    if (it != pending_.end()) {
      pending_.erase(it);
      status = kEconnreset;
    }
    uint8_t out[kHeader] = {};
    put_be32(out, kRetUnlink);
    put_be32(out + 4, seqnum);
    put_be32(out + 20, uint32_t(status));
    return write_all(fd_, out, kHeader);
  }
  if (command != kCmdSubmit) return false;
  const uint32_t length = be32(h + 24);
  if (be32(h + 32) != 0 && be32(h + 32) != 0xFFFFFFFF) return false;  // isochronous packets: this device has none
  if (length > (1u << 24)) return false;
  std::vector<uint8_t> out;
  if (dir == 0 && length) {
    out.resize(length);
    if (!read_all(fd_, out.data(), length)) return false;
  }
  if (ep == 0) {
    const auto in = control(h + 40, out);
    if (!in) reply_submit(seqnum, 0, (h[40] & 0x80) ? 1 : 0, kEpipe, nullptr, 0);
    else if (h[40] & 0x80) reply_submit(seqnum, 0, 1, 0, in->data(), uint32_t(in->size()));
    else reply_submit(seqnum, 0, 0, 0, nullptr, uint32_t(out.size()));
    return true;
  }
  if (ep == (kStreamEndpoint & 0x0F) && dir == 1) {
    pending_.push_back({seqnum, length});
    return true;
  }
  reply_submit(seqnum, ep, dir, kEpipe, nullptr, 0);
  return true;
}

void UsbipUvcCamera::serve_bulk() {
  while (!pending_.empty()) {
    const auto payload = next_payload(pending_.front().length);
    if (!payload) return;  // no frame due yet
    const Pending urb = pending_.front();
    pending_.erase(pending_.begin());
    if (payload->empty()) reply_submit(urb.seqnum, 1, 1, kEpipe, nullptr, 0);
    else reply_submit(urb.seqnum, 1, 1, 0, payload->data(), uint32_t(payload->size()));
  }
}

}  // namespace aisrv::test
