// aisrv hailo8/driver — the seam between our code and the kernel: an open /dev/hailoN and the ioctl call.
// Everything above it (version check, device properties, firmware control) talks to this interface, so tests can
// put a test double in its place that answers like the driver. LinuxDriverOpener is the real thing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::driver {

// What to do when a signal interrupts an ioctl (EINTR). Only requests without side effects may be restarted: the
// driver may have acted on the others before it was interrupted (FW_CONTROL: the control is on the chip already and
// the driver was only waiting for the answer), so restarting them would repeat the effect. HailoRT never restarts
// (hailort: `run_hailo_ioctl` returns the errno; EINTR becomes HAILO_DRIVER_INTERRUPTED).
enum class Restart { on_eintr, never };

class DriverFile {
 public:
  virtual ~DriverFile() = default;
  // ioctl(fd, request, arg); `arg` points to ioc::size_of(request) bytes (nullptr for size-0 requests).
  // Returns 0, or the errno the call failed with (EINTR only with Restart::never).
  virtual int ioctl(uint32_t request, void* arg, Restart restart) = 0;
};

class DriverOpener {
 public:
  virtual ~DriverOpener() = default;
  // Opens a device node read-write (close-on-exec). Errc::not_found when it does not exist, Errc::io_error with the
  // errno text otherwise (e.g. permission denied).
  virtual Result<std::unique_ptr<DriverFile>> open(const std::string& path) = 0;
};

// open(2) + ioctl(2) on the real device node.
class LinuxDriverOpener final : public DriverOpener {
 public:
  Result<std::unique_ptr<DriverFile>> open(const std::string& path) override;
};

}  // namespace aisrv::engine::hailo8::driver
