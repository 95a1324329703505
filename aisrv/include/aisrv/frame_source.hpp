// aisrv interpreter — the acquisition port: where START_ACQUIRE_* gets a sensor frame. The interpreter only sees
// this interface; a frame source delivers exactly the bytes of one frame as the engine's input tensor 0 takes them
// (a camera converts, crops, resizes and quantizes its picture for it; a raw source reads bytes of that size).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <optional>

#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::server {

// The window of the sensor's picture START_ACQUIRE_SINGLE asks for (XMOS's payload: start x, end x, start y, end y;
// ends exclusive), cropped and resized to the input tensor. None: the whole picture.
struct AcquireWindow {
  uint32_t x0 = 0, x1 = 0, y0 = 0, y1 = 0;
};

class FrameSource {
 public:
  virtual ~FrameSource() = default;
  // e.g. "file:/var/lib/frames.raw", "v4l2:/dev/video0 640x480 YUYV"
  virtual std::string describe() const = 0;
  // Fills `frame` (input.bytes long) completely with the next frame for `input`, or fails saying why.
  virtual Status capture(const protocol::TensorInfo& input, const std::optional<AcquireWindow>& window,
                         std::span<uint8_t> frame) = 0;
  // Frames the source skipped since it started (a stream that could not keep up; never queued).
  virtual uint64_t dropped() const { return 0; }
  // Writes a sensor register over the sensor's I2C bus (START_ACQUIRE_SET_I2C).
  virtual Status write_register(uint8_t address, uint8_t reg, uint8_t value) {
    return make_error(Errc::not_supported, "{} has no I2C bus (register {:#04x}:{:#04x} not written)", describe(),
                      address, reg);
  }
};

// Raw frames read one after another from a file (played in a loop), a named pipe or a character device, e.g. a
// camera pipeline writing scaled raw frames into a FIFO. Errc::not_found when the path cannot be opened.
Result<std::unique_ptr<FrameSource>> open_raw_frame_source(const std::string& path);

// A V4L2 camera (docs/sensors-gpio.md): "v4l2:/dev/videoN[:WxH[:FOURCC]]". Capture with mmap streaming buffers, newest
// frame first; YUYV, RGB24, BGR24, GREY and MJPEG (decoded by libjpeg-turbo) converted to RGB or grey, then cropped,
// resized and quantized for the input (engine/image). The device is opened at the first capture and reopened after
// it went away.
struct V4l2Options {
  std::string device;
  uint32_t width = 0, height = 0;  // 0: the device's current size
  std::string fourcc;              // empty: the first of YUYV, RGB3, BGR3, GREY, MJPG the device offers
  int timeout_ms = 2000;           // a frame must arrive within this
};
Result<V4l2Options> parse_v4l2_spec(const std::string& spec);  // "v4l2:/dev/video0:640x480:YUYV"
Result<std::unique_ptr<FrameSource>> open_v4l2_frame_source(const V4l2Options& options);

}  // namespace aisrv::server
