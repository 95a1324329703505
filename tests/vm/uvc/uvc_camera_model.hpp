// aisrv VM test helper (test code only) — the USB Video Class webcam the VM tests play, independent of how its USB
// transfers travel: its descriptors (a UVC 1.0 camera with a bulk streaming endpoint 0x81 and two formats —
// uncompressed YUY2 and MJPEG, each at 320x240 and 640x480), its answers to standard and UVC class control requests
// (probe/commit), and its video stream: the frames the test hands it (set_frames), cut into UVC payloads (2-byte
// header, FID toggling per frame, EOF on the last payload), one payload per bulk IN transfer, paced at `fps`.
// The transports derive from it: usbip_uvc_camera.* (USB/IP, vhci-hcd) and usbredir_uvc_camera.* (QEMU's usbredir
// protocol, a usb-redir device on an emulated xHCI). Written from the UVC 1.5 class specification.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace aisrv::test {

class UvcCamera {
 public:
  static constexpr uint8_t kYuyv = 1, kMjpeg = 2;            // bFormatIndex
  static constexpr uint8_t kSmall = 1, kLarge = 2;           // bFrameIndex: 320x240, 640x480
  static constexpr uint8_t kStreamEndpoint = 0x81;
  static constexpr uint32_t kMaxPayload = 16384;             // dwMaxPayloadTransferSize
  static uint32_t width(uint8_t frame) { return frame == kSmall ? 320 : 640; }
  static uint32_t height(uint8_t frame) { return frame == kSmall ? 240 : 480; }

  virtual ~UvcCamera() = default;

  // The frames streamed for a format and size, one after another in a loop (a frame may be corrupt on purpose).
  void set_frames(uint8_t format, uint8_t frame, std::vector<std::vector<uint8_t>> frames);
  uint64_t frames_sent() const { return frames_sent_.load(); }
  // What the host committed (VS_COMMIT_CONTROL): {format, frame}, {0, 0} before.
  std::pair<uint8_t, uint8_t> committed() const;
  std::string log() const;  // requests seen that the device refused, for messages

  static std::vector<uint8_t> device_descriptor();
  static std::vector<uint8_t> configuration();

 protected:
  explicit UvcCamera(int fps);

  // A control transfer on endpoint 0 (SETUP packet `setup`, OUT data `out`): the IN data to answer, or nullopt for
  // a stall (logged). OUT requests answer an empty vector. Called from the transport's thread only.
  std::optional<std::vector<uint8_t>> control(const uint8_t setup[8], const std::vector<uint8_t>& out);
  // The streaming interface's alternate setting was (re)selected or the endpoint reset: the frame restarts.
  void restart_stream() { in_frame_ = false; }
  // The next payload for a bulk IN transfer of `length` bytes: nullopt when no frame is due yet (see wait_ms).
  std::optional<std::vector<uint8_t>> next_payload(uint32_t length);
  // How long until next_payload may have data for a waiting transfer (0: now), in ms.
  int wait_ms() const;
  void note(const std::string& line);  // adds to log()

 private:
  int fps_;
  std::atomic<uint64_t> frames_sent_{0};
  mutable std::mutex mutex_;
  std::map<std::pair<uint8_t, uint8_t>, std::vector<std::vector<uint8_t>>> frames_;
  std::string log_;
  // Streaming state (the transport thread's; committed_ also read under mutex_).
  std::vector<uint8_t> probe_;  // 26 bytes (UVC 1.0 probe/commit control)
  std::pair<uint8_t, uint8_t> committed_{0, 0};
  std::vector<uint8_t> current_;  // the frame being sent
  size_t offset_ = 0;             // bytes of current_ sent
  bool in_frame_ = false;
  uint8_t fid_ = 0;
  size_t next_index_ = 0;
  int64_t next_frame_ns_ = 0;
};

}  // namespace aisrv::test
