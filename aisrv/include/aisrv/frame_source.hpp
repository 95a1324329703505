// aisrv interpreter — the acquisition port: where START_ACQUIRE_* gets a sensor frame. The interpreter only sees
// this interface; a frame source delivers exactly the bytes of one frame (the engine's input tensor 0).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "aisrv/protocol/result.hpp"

namespace aisrv::server {

class FrameSource {
 public:
  virtual ~FrameSource() = default;
  // e.g. "file:/var/lib/frames.raw"
  virtual std::string describe() const = 0;
  // Fills `frame` completely with the next frame, or fails saying why.
  virtual Status capture(std::span<uint8_t> frame) = 0;
  // Writes a sensor register over the sensor's I2C bus (START_ACQUIRE_SET_I2C).
  virtual Status write_register(uint8_t address, uint8_t reg, uint8_t value) {
    return make_error(Errc::not_supported, "{} has no I2C bus (register {:#04x}:{:#04x} not written)", describe(),
                      address, reg);
  }
};

// Raw frames read one after another from a file (played in a loop), a named pipe or a character device, e.g. a
// camera pipeline writing scaled raw frames into a FIFO. Errc::not_found when the path cannot be opened.
Result<std::unique_ptr<FrameSource>> open_raw_frame_source(const std::string& path);

}  // namespace aisrv::server
