// aisrv sensors — the acquisition port: where START_ACQUIRE_* gets a sensor frame. The interpreter only sees
// this interface; a frame source delivers exactly the bytes of one frame as the engine's input tensor 0 takes them
// (a camera converts, crops, resizes and quantizes its picture for it; a raw source reads bytes of that size).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <chrono>
#include <optional>
#include <vector>

#include "aisrv/image/image.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::sensors {

// The window of the sensor's picture START_ACQUIRE_SINGLE asks for (XMOS's payload: start x, end x, start y, end y;
// ends exclusive), cropped and resized to the input tensor. None: the whole picture.
struct AcquireWindow {
  uint32_t x0 = 0, x1 = 0, y0 = 0, y1 = 0;
};

// One frame as the sensor delivered it, before it is fitted to an input: a camera's picture (RGB or grey, already
// decoded), or a raw source's bytes exactly as the input takes them.
struct SensorFrame {
  image::Image picture;           // a camera's picture (channels 1 or 3), or empty
  std::vector<uint8_t> bytes;     // a raw source's bytes, or empty
  std::string what;               // the source as it was when grabbed ("v4l2:/dev/video0 640x480 YUYV"), for messages
  uint64_t sequence = 0;          // the source's frame number (V4L2: the driver's sequence)
  // When the sensor finished the frame (CLOCK_MONOTONIC, the steady_clock's epoch on Linux; V4L2: the buffer's
  // timestamp). Zero when the source cannot tell.
  std::chrono::nanoseconds captured{0};
  std::chrono::nanoseconds convert_ns{0};  // time spent turning the buffer into `picture` (decode, colour)
};

class FrameSource {
 public:
  virtual ~FrameSource() = default;
  // e.g. "file:/var/lib/frames.raw", "v4l2:/dev/video0 640x480 YUYV"
  virtual std::string describe() const = 0;
  // Waits (up to the source's timeout) for the next frame, for an input like `input`. Blocking: the server calls it
  // outside the engine's turn, on the sensor's own thread, one call at a time. A frame the sensor spoiled (a driver
  // error flag, a short buffer, a corrupt JPEG) fails with Errc::sensor_error, "bad frame: …", and counts in
  // bad_frames(); a sensor that is absent, gone or stalled fails with Errc::sensor_error too, without counting.
  virtual Status grab(const protocol::TensorInfo& input, SensorFrame& out) = 0;
  // Fits a grabbed frame to `input`: crop to `window`, resize, lay out and quantize (engine/image) for a picture;
  // a size check and a copy for raw bytes. Fills `frame` (input.bytes long; the buffer the session adopts as its
  // input tensor, so nothing is copied after it) completely, or fails saying why.
  virtual Status fit(const SensorFrame& grabbed, const protocol::TensorInfo& input,
                     const std::optional<AcquireWindow>& window, std::span<uint8_t> frame) const;
  // grab, then fit.
  Status capture(const protocol::TensorInfo& input, const std::optional<AcquireWindow>& window,
                 std::span<uint8_t> frame) {
    SensorFrame f;
    AISRV_TRY(grab(input, f));
    return fit(f, input, window, frame);
  }
  // Frames the source skipped since it started (a stream that could not keep up; never queued).
  virtual uint64_t dropped() const { return 0; }
  // Bad frames (see grab) since the source started; a stream skips them and goes on.
  virtual uint64_t bad_frames() const { return 0; }
  // False while the device is absent (unplugged, not yet plugged in); the next grab tries to open it.
  virtual bool present() const { return true; }
  // Writes a sensor register over the sensor's I2C bus (START_ACQUIRE_SET_I2C).
  virtual Status write_register(uint8_t address, uint8_t reg, uint8_t value) {
    return make_error(Errc::not_supported, "{} has no I2C bus (register {:#04x}:{:#04x} not written)", describe(),
                      address, reg);
  }
};

// The bad-frame decision and the conversion of one captured buffer to a picture, shared by the V4L2 and libcamera
// sources and unit-tested on crafted buffers. `flags_error`: the driver marked the buffer bad (V4L2_BUF_FLAG_ERROR).
// Uncompressed formats need stride * height bytes; MJPEG must decode without a single libjpeg warning (a truncated
// or corrupt frame, which libjpeg would otherwise pad with grey). Fails with Errc::sensor_error, "bad frame: …".
struct BufferFormat {
  uint32_t pixelformat = 0;  // V4L2 FOURCC: YUYV, RGB3, BGR3, GREY, MJPG
  uint32_t width = 0, height = 0, stride = 0;
};
Status decode_buffer(const BufferFormat& format, bool flags_error, std::span<const uint8_t> data, image::Image& out,
                     const std::string& what);

// Raw frames read one after another from a file (played in a loop), a named pipe or a character device, e.g. a
// camera pipeline writing scaled raw frames into a FIFO. Errc::not_found when the path cannot be opened.
Result<std::unique_ptr<FrameSource>> open_raw_frame_source(const std::string& path);

// A V4L2 camera (docs/sensors-gpio.md): "v4l2:/dev/videoN[:WxH[:FOURCC]]". Capture with mmap streaming buffers, newest
// frame first; YUYV, RGB24, BGR24, GREY and MJPEG (decoded by libjpeg-turbo) converted to RGB or grey, then cropped,
// resized and quantized for the input (engine/image). The device is opened when the source is made if it is there;
// an absent or vanished device is opened again at the next grab (hotplug).
// A camera spec "PREFIX:NAME[:WxH[:FOURCC]]" read from the end, because NAME may itself contain ':' (udev's
// /dev/v4l/by-path names, libcamera's camera ids): the last field is a size, or a FOURCC after a size (or an empty
// one). `is_format` says which FOURCCs the source takes; `formats` names them in the error for another one (empty:
// any four-letter code is a format). Sizes are checked to be 1..16384. Errors name `spec`.
struct CameraSpec {
  std::string name;
  uint32_t width = 0, height = 0;  // 0: not given
  std::string fourcc;              // empty: not given
};
Result<CameraSpec> split_camera_spec(const std::string& spec, const std::string& rest,
                                     const std::function<bool(const std::string&)>& is_format,
                                     std::string_view formats = {});

struct V4l2Options {
  std::string device;
  uint32_t width = 0, height = 0;  // 0: the device's current size
  std::string fourcc;              // empty: the first of YUYV, RGB3, BGR3, GREY, MJPG the device offers
  int timeout_ms = 2000;           // a frame must arrive within this
};
Result<V4l2Options> parse_v4l2_spec(const std::string& spec);  // "v4l2:/dev/video0:640x480:YUYV"
Result<std::unique_ptr<FrameSource>> open_v4l2_frame_source(const V4l2Options& options);

}  // namespace aisrv::sensors
