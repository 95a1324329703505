// aisrv hailo8/driver — which hailo_pci driver versions we talk to, and with which ioctl layout.
// HailoRT refuses any driver whose major.minor.revision differs from its own; we accept every version whose
// ioctl layout we implement (checked against each version's header) and name them when refusing another.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "aisrv/engine/hailo8/driver/ioctl_abi.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::driver {

struct DriverVersion {
  uint32_t major = 0;
  uint32_t minor = 0;
  uint32_t revision = 0;

  std::string str() const;
  friend bool operator==(const DriverVersion&, const DriverVersion&) = default;
};

// The ioctl layout generations (see ioctl_abi.hpp).
enum class DriverAbi : uint8_t {
  v4_18,    // 4.18.0 – 4.20.1
  current,  // 4.21.0 – 4.23.0
};

std::string_view driver_abi_name(DriverAbi abi);

// Every driver version we accept, oldest first.
std::span<const DriverVersion> supported_driver_versions();
// "4.18.0, 4.18.1, …, 4.23.0"
std::string supported_driver_versions_text();

// The layout of a supported version; Errc::incompatible naming the version and the supported list otherwise.
Result<DriverAbi> select_abi(const DriverVersion& version);

// The ioctl request numbers of a driver version (MEMORY_TRANSFER is 0 from 4.23 on).
IoctlNumbers ioctl_numbers(const DriverVersion& version, DriverAbi abi);

}  // namespace aisrv::engine::hailo8::driver
