// aisrv hailo8/driver — one open Hailo-8: opening checks the driver version (QUERY_DRIVER_INFO, any version we
// have a layout for) and the board (QUERY_DEVICE_PROPERTIES: a Hailo-8 on PCIe), then firmware controls go through
// HAILO_FW_CONTROL with the MD5 of the request, the CPU the opcode belongs to and HailoRT's 1 s timeout, and come
// back MD5-checked and parsed. Each control carries a sequence number of its own (libhailort sends 0 on PCIe; the
// firmware echoes whatever it gets), checked in the answer; a control interrupted by a signal is reported
// (Errc::interrupted), never resent. Non-critical opcodes are refused when the firmware (reported by IDENTIFY) is not a version whose
// control layouts we know, as HailoRT does for versions other than its own.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aisrv/engine/hailo8/driver/driver_file.hpp"
#include "aisrv/engine/hailo8/driver/driver_version.hpp"
#include "aisrv/engine/hailo8/driver/fw_control.hpp"
#include "aisrv/engine/hailo8/driver/identity.hpp"
#include "aisrv/engine/hailo8/driver/ioctl_abi.hpp"

namespace aisrv::engine::hailo8::driver {

struct DevicePropertiesInfo {
  uint16_t desc_max_page_size = 0;
  uint32_t board_type = 0;
  uint32_t allocation_mode = 0;
  uint32_t dma_type = 0;
  uint64_t dma_engines_count = 0;
  bool fw_loaded = false;
};

class HailoDevice {
 public:
  // Opens `path` through `opener` and runs the two queries. Errors, one code per kind of problem:
  //   Errc::not_found     the node does not exist (the opener's)
  //   Errc::io_error      the node cannot be opened (e.g. permission denied) or a query fails (errno text)
  //   Errc::incompatible  the driver speaks no ABI we implement: an unsupported version (the message lists the
  //                       supported ones), or QUERY_DRIVER_INFO unknown to it (ENOTTY)
  //   Errc::not_supported the board is not a Hailo-8 on PCIe (board type, DMA type)
  static Result<HailoDevice> open(const std::string& path, DriverOpener& opener);

  const std::string& path() const { return path_; }
  const DriverVersion& driver_version() const { return version_; }
  DriverAbi abi() const { return abi_; }
  const IoctlNumbers& ioctls() const { return ioctls_; }
  const DevicePropertiesInfo& properties() const { return props_; }

  // One firmware control: request → validated response with major status 0.
  Result<ControlResponse> control(uint32_t opcode, std::span<const std::vector<uint8_t>> params = {},
                                  uint32_t timeout_ms = kControlTimeoutMs);

  Result<DeviceIdentity> identify();
  Result<DeviceInformation> device_information();

 private:
  HailoDevice() = default;
  Result<ControlResponse> exchange(uint32_t opcode, std::span<const std::vector<uint8_t>> params,
                                   uint32_t timeout_ms);

  std::string path_;
  std::unique_ptr<DriverFile> file_;
  DriverVersion version_;
  DriverAbi abi_ = DriverAbi::current;
  IoctlNumbers ioctls_{};
  DevicePropertiesInfo props_;
  std::optional<FirmwareVersion> firmware_;  // known after identify()
  uint32_t last_sequence_ = 0;                // of the last control sent
};

// Whether non-critical controls may be sent to firmware `fw` (major.minor of a supported driver version).
bool firmware_controls_supported(const FirmwareVersion& fw);

}  // namespace aisrv::engine::hailo8::driver
