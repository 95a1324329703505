// aisrv VM test helper — the UVC webcam's device model (uvc_camera_model.hpp says what and why).
#include "uvc_camera_model.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace aisrv::test {

namespace {

struct Bytes {
  std::vector<uint8_t> v;
  Bytes& b(uint32_t x) { v.push_back(uint8_t(x)); return *this; }
  Bytes& w(uint32_t x) { return b(x).b(x >> 8); }
  Bytes& d(uint32_t x) { return w(x).w(x >> 16); }
  Bytes& add(const std::vector<uint8_t>& o) { v.insert(v.end(), o.begin(), o.end()); return *this; }
};

// The most bytes a frame may take (MJPEG frames are smaller; uvcvideo sizes its buffers from this).
uint32_t frame_bytes(uint8_t /*format*/, uint8_t frame) {
  return UvcCamera::width(frame) * UvcCamera::height(frame) * 2;
}

constexpr uint32_t kInterval = 1000000;  // 100 ns units: 10 frames a second (what the descriptors announce)

// A frame descriptor (uncompressed 0x05 or MJPEG 0x07 subtype; the same layout), one discrete interval.
std::vector<uint8_t> frame_descriptor(uint8_t subtype, uint8_t format, uint8_t index) {
  const uint32_t w = UvcCamera::width(index), h = UvcCamera::height(index);
  Bytes f;
  f.b(30).b(0x24).b(subtype).b(index).b(0).w(w).w(h);
  f.d(w * h * 16 * 10).d(w * h * 16 * 30).d(frame_bytes(format, index)).d(kInterval).b(1).d(kInterval);
  return f.v;
}

std::vector<uint8_t> probe_control(uint8_t format, uint8_t frame, uint16_t quality) {
  Bytes p;
  p.w(0).b(format).b(frame).d(kInterval).w(0).w(0).w(quality).w(0).w(0).d(frame_bytes(format, frame));
  p.d(UvcCamera::kMaxPayload);
  return p.v;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

UvcCamera::UvcCamera(int fps) : fps_(fps > 0 ? fps : 10), probe_(probe_control(kYuyv, kSmall, 0)) {}

// The configuration: an interface association, the VideoControl interface (a camera terminal feeding a streaming
// output terminal, no controls, no interrupt endpoint) and the VideoStreaming interface (input header, YUY2 and
// MJPEG formats with their frames, one bulk IN endpoint 0x81).
std::vector<uint8_t> UvcCamera::configuration() {
  Bytes units;  // camera terminal (ID 1), output terminal (ID 2)
  units.b(18).b(0x24).b(0x02).b(1).w(0x0201).b(0).b(0).w(0).w(0).w(0).b(3).b(0).b(0).b(0);
  units.b(9).b(0x24).b(0x03).b(2).w(0x0101).b(0).b(1).b(0);
  Bytes vc;  // class-specific VideoControl header
  vc.b(13).b(0x24).b(0x01).w(0x0100).w(uint32_t(13 + units.v.size())).d(48000000).b(1).b(1).add(units.v);

  Bytes formats;
  static const uint8_t yuy2[16] = {'Y', 'U', 'Y', '2', 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};
  formats.b(27).b(0x24).b(0x04).b(kYuyv).b(2);
  for (uint8_t g : yuy2) formats.b(g);
  formats.b(16).b(1).b(0).b(0).b(0).b(0);
  formats.add(frame_descriptor(0x05, kYuyv, 1)).add(frame_descriptor(0x05, kYuyv, 2));
  formats.b(11).b(0x24).b(0x06).b(kMjpeg).b(2).b(0).b(1).b(0).b(0).b(0).b(0);
  formats.add(frame_descriptor(0x07, kMjpeg, 1)).add(frame_descriptor(0x07, kMjpeg, 2));
  Bytes vs;  // input header: 2 formats, endpoint 0x81, terminal link 2, bControlSize 1
  vs.b(15).b(0x24).b(0x01).b(2).w(uint32_t(15 + formats.v.size())).b(kStreamEndpoint).b(0).b(2).b(0).b(0).b(0).b(1);
  vs.b(0).b(0).add(formats.v);

  Bytes body;
  body.b(8).b(0x0B).b(0).b(2).b(0x0E).b(0x03).b(0).b(0);             // interface association
  body.b(9).b(0x04).b(0).b(0).b(0).b(0x0E).b(0x01).b(0).b(0);         // interface 0: VideoControl
  body.add(vc.v);
  body.b(9).b(0x04).b(1).b(0).b(1).b(0x0E).b(0x02).b(0).b(0);         // interface 1: VideoStreaming, 1 endpoint
  body.add(vs.v);
  body.b(7).b(0x05).b(kStreamEndpoint).b(0x02).w(512).b(0);           // bulk IN, 512 bytes (high speed)
  Bytes c;
  c.b(9).b(0x02).w(uint32_t(9 + body.v.size())).b(2).b(1).b(0).b(0x80).b(50).add(body.v);
  return c.v;
}

std::vector<uint8_t> UvcCamera::device_descriptor() {
  Bytes d;  // USB 2.0, miscellaneous class with IAD, vendor 0x1d6b (Linux Foundation) product 0x0102
  d.b(18).b(0x01).w(0x0200).b(0xEF).b(0x02).b(0x01).b(64).w(0x1d6b).w(0x0102).w(0x0100).b(0).b(0).b(0).b(1);
  return d.v;
}

void UvcCamera::set_frames(uint8_t format, uint8_t frame, std::vector<std::vector<uint8_t>> frames) {
  std::lock_guard<std::mutex> lock(mutex_);
  frames_[{format, frame}] = std::move(frames);
}

std::pair<uint8_t, uint8_t> UvcCamera::committed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return committed_;
}

std::string UvcCamera::log() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return log_;
}

void UvcCamera::note(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  log_ += line + "\n";
}

std::optional<std::vector<uint8_t>> UvcCamera::control(const uint8_t s[8], const std::vector<uint8_t>& out) {
  const uint8_t type = s[0], request = s[1];
  const uint16_t value = uint16_t(s[2] | s[3] << 8), index = uint16_t(s[4] | s[5] << 8), length = uint16_t(s[6] | s[7] << 8);
  auto answer = [&](std::vector<uint8_t> data) {
    if (data.size() > length) data.resize(length);
    return std::optional<std::vector<uint8_t>>(std::move(data));
  };
  auto refuse = [&] {
    char line[96];
    std::snprintf(line, sizeof line, "stalled %02x %02x %04x %04x %u", type, request, value, index, length);
    note(line);
    return std::optional<std::vector<uint8_t>>();
  };
  if (type == 0x80 && request == 6) {  // GET_DESCRIPTOR
    if (value >> 8 == 1) return answer(device_descriptor());
    if (value >> 8 == 2) return answer(configuration());
    return refuse();  // no strings, no qualifier, no BOS
  }
  if (type == 0x80 && request == 0) return answer({0, 0});                   // GET_STATUS
  if (type == 0x00 && request == 9) return std::vector<uint8_t>{};           // SET_CONFIGURATION
  if (type == 0x01 && request == 11) {                                       // SET_INTERFACE: alternate setting 0 only
    restart_stream();
    if (value != 0) return refuse();
    return std::vector<uint8_t>{};
  }
  if (type == 0x02 && request == 1) {  // CLEAR_FEATURE(ENDPOINT_HALT): uvcvideo's "stream stopped" on a bulk camera
    restart_stream();
    return std::vector<uint8_t>{};
  }
  // UVC class requests to the VideoStreaming interface (1): probe (1) and commit (2) controls.
  const uint8_t selector = uint8_t(value >> 8);
  if ((index & 0xFF) == 1 && (selector == 1 || selector == 2)) {
    if (type == 0x21 && request == 0x01) {  // SET_CUR
      if (out.size() < 26) return refuse();
      const uint8_t fmt = out[2], frm = out[3];
      if (fmt < kYuyv || fmt > kMjpeg || frm < kSmall || frm > kLarge) return refuse();
      probe_ = probe_control(fmt, frm, uint16_t(out[12] | out[13] << 8));
      if (selector == 2) {
        std::lock_guard<std::mutex> lock(mutex_);
        committed_ = {fmt, frm};
        in_frame_ = false;
        next_index_ = 0;
      }
      return std::vector<uint8_t>{};
    }
    if (type == 0xA1 && (request == 0x81 || request == 0x82 || request == 0x83 || request == 0x87))
      return answer(probe_);  // GET_CUR, GET_MIN, GET_MAX, GET_DEF: the one setting there is
    if (type == 0xA1 && request == 0x86) return answer({0x03});  // GET_INFO: get and set supported
    if (type == 0xA1 && request == 0x85) return answer({26, 0});  // GET_LEN
  }
  return refuse();
}

int UvcCamera::wait_ms() const {
  if (in_frame_) return 0;
  return int(std::max<int64_t>(0, (next_frame_ns_ - now_ns()) / 1000000) + 1);
}

// One payload per transfer, shorter than the transfer or of dwMaxPayloadTransferSize, which is where uvcvideo takes
// a payload to end. A transfer too short for a header gets an empty vector (the transport stalls it).
std::optional<std::vector<uint8_t>> UvcCamera::next_payload(uint32_t length) {
  uint32_t room = std::min(length, kMaxPayload);
  if (room == length && room < kMaxPayload) --room;  // a full transfer shorter than the maximum would not end it
  if (room <= 2) return std::vector<uint8_t>{};
  if (!in_frame_) {
    if (now_ns() < next_frame_ns_) return std::nullopt;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = frames_.find(committed_);
    if (committed_.first == 0 || it == frames_.end() || it->second.empty()) {
      next_frame_ns_ = now_ns() + 1000000000 / fps_;
      return std::nullopt;
    }
    current_ = it->second[next_index_ % it->second.size()];
    ++next_index_;
    offset_ = 0;
    in_frame_ = true;
    fid_ ^= 1;
    next_frame_ns_ = now_ns() + 1000000000 / fps_;
  }
  const size_t chunk = std::min<size_t>(room - 2, current_.size() - offset_);
  const bool last = offset_ + chunk == current_.size();
  std::vector<uint8_t> payload(2 + chunk);
  payload[0] = 2;
  payload[1] = uint8_t(0x80 | fid_ | (last ? 0x02 : 0));
  std::memcpy(payload.data() + 2, current_.data() + offset_, chunk);
  offset_ += chunk;
  if (last) {
    in_frame_ = false;
    frames_sent_.fetch_add(1);
  }
  return payload;
}

}  // namespace aisrv::test
