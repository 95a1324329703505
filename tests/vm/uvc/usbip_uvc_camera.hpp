// aisrv VM test helper (test code only) — a USB Video Class webcam played by the test over USB/IP: the kernel's
// vhci-hcd takes one end of a socket as a USB device on its root hub (/sys/devices/platform/vhci_hcd.0/attach), and
// this object answers the URBs vhci sends over it (the USB/IP protocol: CMD_SUBMIT / RET_SUBMIT, CMD_UNLINK /
// RET_UNLINK). The device is a UVC 1.0 camera with a bulk streaming endpoint and two formats — uncompressed YUY2 and
// MJPEG, each at 320x240 and 640x480 — so the kernel's own uvcvideo driver binds to it and offers /dev/videoN. The
// frames it streams are the bytes the test hands it (set_frames), cut into UVC payloads (2-byte header, FID toggling
// per frame, EOF on the last payload), paced at `fps`. Written from the UVC 1.5 class specification and the kernel's
// USB/IP protocol documentation (Documentation/usb/usbip_protocol.rst); see tests/vm/uvc/vm_uvc_test.cpp for why
// USB/IP rather than the usb_f_uvc gadget over dummy_hcd.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace aisrv::test {

class UsbipUvcCamera {
 public:
  static constexpr uint8_t kYuyv = 1, kMjpeg = 2;            // bFormatIndex
  static constexpr uint8_t kSmall = 1, kLarge = 2;           // bFrameIndex: 320x240, 640x480
  static uint32_t width(uint8_t frame) { return frame == kSmall ? 320 : 640; }
  static uint32_t height(uint8_t frame) { return frame == kSmall ? 240 : 480; }

  // Makes the device and attaches it to vhci-hcd's port 0 (high speed). Empty with `error` set when that fails.
  static std::unique_ptr<UsbipUvcCamera> attach(int fps, std::string& error);
  ~UsbipUvcCamera();  // detaches (the host sees an unplug) and stops the thread

  // The frames streamed for a format and size, one after another in a loop (a frame may be corrupt on purpose).
  void set_frames(uint8_t format, uint8_t frame, std::vector<std::vector<uint8_t>> frames);
  uint64_t frames_sent() const { return frames_sent_.load(); }
  // What the host committed (VS_COMMIT_CONTROL): {format, frame}, {0, 0} before.
  std::pair<uint8_t, uint8_t> committed() const;
  std::string log() const;  // requests seen that the device refused, for messages

 private:
  UsbipUvcCamera() = default;
  void run();
  bool handle_one();
  void serve_bulk();
  void reply_submit(uint32_t seqnum, uint32_t ep, uint32_t dir, int32_t status, const uint8_t* data, uint32_t len);
  void control(uint32_t seqnum, const uint8_t setup[8], const std::vector<uint8_t>& out);

  int fd_ = -1;        // our end; vhci-hcd holds the other
  int stop_fd_ = -1;   // eventfd: ends the thread
  int fps_ = 10;
  std::thread thread_;
  std::atomic<uint64_t> frames_sent_{0};
  mutable std::mutex mutex_;
  std::map<std::pair<uint8_t, uint8_t>, std::vector<std::vector<uint8_t>>> frames_;
  std::string log_;
  // Streaming state (the thread's, committed_ also read under mutex_).
  std::vector<uint8_t> probe_;  // 26 bytes (UVC 1.0 probe/commit control)
  std::pair<uint8_t, uint8_t> committed_{0, 0};
  struct Pending {
    uint32_t seqnum, length;
  };
  std::vector<Pending> pending_;  // bulk IN URBs waiting for data, oldest first
  std::vector<uint8_t> current_;  // the frame being sent
  size_t offset_ = 0;             // bytes of current_ sent
  bool in_frame_ = false;
  uint8_t fid_ = 0;
  size_t next_index_ = 0;
  int64_t next_frame_ns_ = 0;
};

}  // namespace aisrv::test
