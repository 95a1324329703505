// aisrv VM test helper — the UVC webcam over USB/IP (usbip_uvc_camera.hpp says what and why).
#include "usbip_uvc_camera.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

namespace aisrv::test {

namespace {

// USB/IP (Documentation/usb/usbip_protocol.rst): a 48-byte header, every field big-endian.
constexpr uint32_t kCmdSubmit = 1, kCmdUnlink = 2, kRetSubmit = 3, kRetUnlink = 4;
constexpr size_t kHeader = 48;
constexpr uint32_t kMaxPayload = 16384;  // dwMaxPayloadTransferSize: one UVC payload per bulk URB
constexpr int32_t kEpipe = -EPIPE, kEconnreset = -ECONNRESET;

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
void put_be32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}

struct Bytes {
  std::vector<uint8_t> v;
  Bytes& b(uint32_t x) { v.push_back(uint8_t(x)); return *this; }
  Bytes& w(uint32_t x) { return b(x).b(x >> 8); }
  Bytes& d(uint32_t x) { return w(x).w(x >> 16); }
  Bytes& add(const std::vector<uint8_t>& o) { v.insert(v.end(), o.begin(), o.end()); return *this; }
};

uint32_t frame_bytes(uint8_t format, uint8_t frame) {
  const uint32_t px = UsbipUvcCamera::width(frame) * UsbipUvcCamera::height(frame);
  return format == UsbipUvcCamera::kYuyv ? px * 2 : px * 2;  // MJPEG: the buffer a frame may take at most
}

constexpr uint32_t kInterval = 1000000;  // 100 ns units: 10 frames a second (what the descriptors announce)

// A frame descriptor (uncompressed 0x05 or MJPEG 0x07 subtype; the same layout), one discrete interval.
std::vector<uint8_t> frame_descriptor(uint8_t subtype, uint8_t format, uint8_t index) {
  const uint32_t w = UsbipUvcCamera::width(index), h = UsbipUvcCamera::height(index);
  Bytes f;
  f.b(30).b(0x24).b(subtype).b(index).b(0).w(w).w(h);
  f.d(w * h * 16 * 10).d(w * h * 16 * 30).d(frame_bytes(format, index)).d(kInterval).b(1).d(kInterval);
  return f.v;
}

// The configuration: an interface association, the VideoControl interface (a camera terminal feeding a streaming
// output terminal, no controls, no interrupt endpoint) and the VideoStreaming interface (input header, YUY2 and
// MJPEG formats with their frames, one bulk IN endpoint 0x81).
std::vector<uint8_t> configuration() {
  Bytes vc;  // class-specific VideoControl: header, camera terminal (ID 1), output terminal (ID 2)
  Bytes units;
  units.b(18).b(0x24).b(0x02).b(1).w(0x0201).b(0).b(0).w(0).w(0).w(0).b(3).b(0).b(0).b(0);
  units.b(9).b(0x24).b(0x03).b(2).w(0x0101).b(0).b(1).b(0);
  vc.b(13).b(0x24).b(0x01).w(0x0100).w(uint32_t(13 + units.v.size())).d(48000000).b(1).b(1).add(units.v);

  Bytes formats;
  static const uint8_t yuy2[16] = {'Y', 'U', 'Y', '2', 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};
  formats.b(27).b(0x24).b(0x04).b(UsbipUvcCamera::kYuyv).b(2);
  for (uint8_t g : yuy2) formats.b(g);
  formats.b(16).b(1).b(0).b(0).b(0).b(0);
  formats.add(frame_descriptor(0x05, UsbipUvcCamera::kYuyv, 1)).add(frame_descriptor(0x05, UsbipUvcCamera::kYuyv, 2));
  formats.b(11).b(0x24).b(0x06).b(UsbipUvcCamera::kMjpeg).b(2).b(0).b(1).b(0).b(0).b(0).b(0);
  formats.add(frame_descriptor(0x07, UsbipUvcCamera::kMjpeg, 1)).add(frame_descriptor(0x07, UsbipUvcCamera::kMjpeg, 2));
  Bytes vs;  // input header: 2 formats, endpoint 0x81, terminal link 2, bControlSize 1
  vs.b(15).b(0x24).b(0x01).b(2).w(uint32_t(15 + formats.v.size())).b(0x81).b(0).b(2).b(0).b(0).b(0).b(1).b(0).b(0);
  vs.add(formats.v);

  Bytes body;
  body.b(8).b(0x0B).b(0).b(2).b(0x0E).b(0x03).b(0).b(0);             // interface association
  body.b(9).b(0x04).b(0).b(0).b(0).b(0x0E).b(0x01).b(0).b(0);         // interface 0: VideoControl
  body.add(vc.v);
  body.b(9).b(0x04).b(1).b(0).b(1).b(0x0E).b(0x02).b(0).b(0);         // interface 1: VideoStreaming, 1 endpoint
  body.add(vs.v);
  body.b(7).b(0x05).b(0x81).b(0x02).w(512).b(0);                       // bulk IN, 512 bytes (high speed)
  Bytes c;
  c.b(9).b(0x02).w(uint32_t(9 + body.v.size())).b(2).b(1).b(0).b(0x80).b(50).add(body.v);
  return c.v;
}

std::vector<uint8_t> device_descriptor() {
  Bytes d;  // USB 2.0, miscellaneous class with IAD, vendor 0x1d6b (Linux Foundation) product 0x0102
  d.b(18).b(0x01).w(0x0200).b(0xEF).b(0x02).b(0x01).b(64).w(0x1d6b).w(0x0102).w(0x0100).b(0).b(0).b(0).b(1);
  return d.v;
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

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::unique_ptr<UsbipUvcCamera> UsbipUvcCamera::attach(int fps, std::string& error) {
  std::unique_ptr<UsbipUvcCamera> cam(new UsbipUvcCamera);
  cam->fps_ = fps;
  // The default probe: YUY2 320x240 at 10 frames a second.
  Bytes p;
  p.w(0).b(kYuyv).b(kSmall).d(kInterval).w(0).w(0).w(0).w(0).w(0).d(frame_bytes(kYuyv, kSmall)).d(kMaxPayload);
  cam->probe_ = p.v;
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

void UsbipUvcCamera::set_frames(uint8_t format, uint8_t frame, std::vector<std::vector<uint8_t>> frames) {
  std::lock_guard<std::mutex> lock(mutex_);
  frames_[{format, frame}] = std::move(frames);
}

std::pair<uint8_t, uint8_t> UsbipUvcCamera::committed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return committed_;
}

std::string UsbipUvcCamera::log() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return log_;
}

void UsbipUvcCamera::run() {
  for (;;) {
    int timeout = -1;
    if (!pending_.empty()) {
      if (in_frame_) timeout = 0;
      else timeout = int(std::max<int64_t>(0, (next_frame_ns_ - now_ns()) / 1000000) + 1);
    }
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
    control(seqnum, h + 40, out);
    return true;
  }
  if (ep == 1 && dir == 1) {
    pending_.push_back({seqnum, length});
    return true;
  }
  reply_submit(seqnum, ep, dir, kEpipe, nullptr, 0);
  return true;
}

void UsbipUvcCamera::control(uint32_t seqnum, const uint8_t s[8], const std::vector<uint8_t>& out) {
  const uint8_t type = s[0], request = s[1];
  const uint16_t value = uint16_t(s[2] | s[3] << 8), index = uint16_t(s[4] | s[5] << 8), length = uint16_t(s[6] | s[7] << 8);
  auto answer = [&](const std::vector<uint8_t>& data) {
    reply_submit(seqnum, 0, 1, 0, data.data(), uint32_t(std::min<size_t>(data.size(), length)));
  };
  auto done = [&] { reply_submit(seqnum, 0, 0, 0, nullptr, uint32_t(out.size())); };
  auto refuse = [&] {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      char line[96];
      std::snprintf(line, sizeof line, "stalled %02x %02x %04x %04x %u\n", type, request, value, index, length);
      log_ += line;
    }
    reply_submit(seqnum, 0, (type & 0x80) ? 1 : 0, kEpipe, nullptr, 0);
  };
  if (type == 0x80 && request == 6) {  // GET_DESCRIPTOR
    if (value >> 8 == 1) return answer(device_descriptor());
    if (value >> 8 == 2) return answer(configuration());
    return refuse();  // no strings, no qualifier, no BOS
  }
  if (type == 0x80 && request == 0) return answer({0, 0});  // GET_STATUS
  if (type == 0x00 && request == 9) return done();           // SET_CONFIGURATION
  if (type == 0x01 && request == 11) {                       // SET_INTERFACE: alternate setting 0 only
    in_frame_ = false;
    return value == 0 ? done() : refuse();
  }
  if (type == 0x02 && request == 1) {  // CLEAR_FEATURE(ENDPOINT_HALT): uvcvideo's "stream stopped" on a bulk camera
    in_frame_ = false;
    return done();
  }
  // UVC class requests to the VideoStreaming interface (1): probe (1) and commit (2) controls.
  const uint8_t selector = uint8_t(value >> 8);
  if ((index & 0xFF) == 1 && (selector == 1 || selector == 2)) {
    if (type == 0x21 && request == 0x01) {  // SET_CUR
      if (out.size() < 26) return refuse();
      const uint8_t fmt = out[2], frm = out[3];
      if (fmt < kYuyv || fmt > kMjpeg || frm < kSmall || frm > kLarge) return refuse();
      Bytes p;
      p.w(0).b(fmt).b(frm).d(kInterval).w(0).w(0).w(out[12] | out[13] << 8).w(0).w(0).d(frame_bytes(fmt, frm)).d(kMaxPayload);
      probe_ = p.v;
      if (selector == 2) {
        std::lock_guard<std::mutex> lock(mutex_);
        committed_ = {fmt, frm};
        in_frame_ = false;
        next_index_ = 0;
      }
      return done();
    }
    if (type == 0xA1 && (request == 0x81 || request == 0x82 || request == 0x83 || request == 0x87))
      return answer(probe_);  // GET_CUR, GET_MIN, GET_MAX, GET_DEF: the one setting there is
    if (type == 0xA1 && request == 0x86) return answer({0x03});  // GET_INFO: get and set supported
    if (type == 0xA1 && request == 0x85) return answer({26, 0});  // GET_LEN
  }
  refuse();
}

// Answers waiting bulk IN URBs with the frame's next payloads: one payload (2-byte header + data) per URB, shorter
// than the URB or of dwMaxPayloadTransferSize, which is where uvcvideo takes a payload to end.
void UsbipUvcCamera::serve_bulk() {
  while (!pending_.empty()) {
    if (!in_frame_) {
      if (now_ns() < next_frame_ns_) return;
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = frames_.find(committed_);
      if (committed_.first == 0 || it == frames_.end() || it->second.empty()) {
        next_frame_ns_ = now_ns() + 1000000000 / fps_;
        return;
      }
      current_ = it->second[next_index_ % it->second.size()];
      ++next_index_;
      offset_ = 0;
      in_frame_ = true;
      fid_ ^= 1;
      next_frame_ns_ = now_ns() + 1000000000 / fps_;
    }
    const Pending urb = pending_.front();
    pending_.erase(pending_.begin());
    uint32_t room = std::min(urb.length, kMaxPayload);
    if (room == urb.length && room < kMaxPayload) --room;  // a full URB shorter than the maximum would not end it
    if (room <= 2) {
      reply_submit(urb.seqnum, 1, 1, kEpipe, nullptr, 0);
      continue;
    }
    const size_t chunk = std::min<size_t>(room - 2, current_.size() - offset_);
    const bool last = offset_ + chunk == current_.size();
    std::vector<uint8_t> payload(2 + chunk);
    payload[0] = 2;
    payload[1] = uint8_t(0x80 | fid_ | (last ? 0x02 : 0));
    std::memcpy(payload.data() + 2, current_.data() + offset_, chunk);
    offset_ += chunk;
    reply_submit(urb.seqnum, 1, 1, 0, payload.data(), uint32_t(payload.size()));
    if (last) {
      in_frame_ = false;
      frames_sent_.fetch_add(1);
    }
  }
}

}  // namespace aisrv::test
