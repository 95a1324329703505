// aisrv hailo8 — the device check that runs before libhailort is loaded: our driver layer finds the
// Hailo-8 (driver::discover over sysfs and /dev) and opens it (driver::HailoDevice::open: QUERY_DRIVER_INFO accepted
// for every driver ABI we implement, QUERY_DEVICE_PROPERTIES a Hailo-8 on PCIe with its firmware loaded). The answer
// is the device HailoRT is to use, identified by the PCI address from its sysfs board_location. Every refusal is
// Errc::infer_error and its message starts with the kind of problem:
//   "no Hailo-8 device found (looked in …)"          nothing discovered (and what was seen instead)
//   "no Hailo-8 at /dev/hailoN: …"                  the given device= is missing, or is not a Hailo-8 on PCIe
//   "driver version unsupported: /dev/hailoN: …"    the driver speaks no ABI we implement (names the supported ones)
//   "cannot use the Hailo-8 at /dev/hailoN: …"      it cannot be opened or queried, has no firmware, no PCI address
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "aisrv/engine/hailo8/driver/discovery.hpp"
#include "aisrv/engine/hailo8/driver/driver_file.hpp"
#include "aisrv/engine/hailo8/driver/driver_version.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8 {

struct CheckedDevice {
  std::string path;                           // the device node checked, e.g. "/dev/hailo0"
  std::optional<std::string> board_location;  // PCI address for HailoRT's device_ids; none: HailoRT picks
  driver::DriverVersion driver;               // what QUERY_DRIVER_INFO reported
  std::vector<std::string> notes;             // devices passed over and why (for the debug log)
};

// `device` empty: every discovered Hailo-8 is checked in number order. When all pass and no other accelerator has a
// node, HailoRT may pick any of them (no board_location: it takes the first free one); otherwise the first that
// passes is selected by its PCI address so HailoRT cannot pick a device we refused; when none passes, the first
// one's problem is the error.
// `device` given: exactly that node is checked and selected by its PCI address (required).
Result<CheckedDevice> check_device(driver::DriverOpener& opener, const driver::DiscoveryPaths& paths,
                                   const std::string& device);

}  // namespace aisrv::engine::hailo8
