// aisrv hailo8/driver — the device tools behind `aisrv hailo scan` and `aisrv hailo identify` as a library:
// scan lists the Hailo devices (path, PCI address and id, and driver/firmware/board/architecture when the device
// can be opened and identified); identify reports one device in detail (firmware version, architecture, board
// name, serial, part and product, plus GET_DEVICE_INFORMATION when the firmware answers it). Without a device both
// return Errc::not_found "no Hailo-8 device found (looked in /sys/class/hailo_chardev and /dev/hailo*)".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "aisrv/engine/hailo8/driver/device.hpp"
#include "aisrv/engine/hailo8/driver/discovery.hpp"

namespace aisrv::engine::hailo8::driver {

struct ScanEntry {
  DiscoveredDevice device;
  std::optional<DriverVersion> driver;     // when the node could be opened and queried
  std::optional<DeviceIdentity> identity;  // when IDENTIFY answered
  std::string problem;                     // why driver/identity are missing
};

// Every discovered device that may be a Hailo-8, each opened and identified. Errc::not_found when there is none
// (the message names the places looked in, and any non-Hailo-8 accelerators that were seen).
Result<std::vector<ScanEntry>> scan(DriverOpener& opener, const DiscoveryPaths& paths = {});

struct IdentifyReport {
  std::string path;
  DriverVersion driver;
  DriverAbi abi = DriverAbi::current;
  DevicePropertiesInfo properties;
  DeviceIdentity identity;
  std::optional<DeviceInformation> information;
  std::string information_problem;  // why GET_DEVICE_INFORMATION is missing
};

// `device` = a node such as /dev/hailo0; empty → the first Hailo-8 that discovery finds.
Result<IdentifyReport> identify(DriverOpener& opener, const std::optional<std::string>& device,
                                const DiscoveryPaths& paths = {});

std::string format_scan(const std::vector<ScanEntry>& entries);
std::string format_identify(const IdentifyReport& report);

}  // namespace aisrv::engine::hailo8::driver
