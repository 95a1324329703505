// aisrv hailo8/driver — finding Hailo devices without opening them: the driver's class directory
// /sys/class/hailo_chardev/<name>/ (attributes board_location = PCI address, device_id = "vendor:device" in hex,
// accelerator_type = 0 NNC / 1 SoC) and, for setups where only the node is visible (containers), /dev/hailo<N>.
// Both roots are parameters so tests run on directory trees they build.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::driver {

struct DiscoveryPaths {
  std::filesystem::path sysfs_class = "/sys/class/hailo_chardev";
  std::filesystem::path dev_dir = "/dev";
};

inline constexpr std::string_view kHailo8PciId = "1e60:2864";

struct DiscoveredDevice {
  std::string name;                             // "hailo0"
  std::string dev_path;                         // "<dev_dir>/hailo0"
  bool in_sysfs = false;                        // listed in the class directory
  bool node_exists = false;                     // the device node is present
  std::optional<std::string> board_location;    // "0000:01:00.0"
  std::optional<std::string> device_id;         // "1e60:2864"
  std::optional<uint32_t> accelerator_type;     // 0 NNC, 1 SoC
  std::vector<std::string> notes;               // attributes that could not be read or parsed, and why

  // Not known to be anything else: accelerator type 0 (or unreadable) and PCI id 1e60:2864 (or unreadable).
  bool maybe_hailo8() const;
};

// Devices in name order (hailo0, hailo1, …, hailo10). A missing class directory and a missing dev_dir just mean
// "none there"; an existing class directory that cannot be listed is Errc::io_error. Attributes are checked:
// board_location must be a PCI address ("0000:01:00.0"), device_id a PCI id ("1e60:2864"), accelerator_type a
// number; anything else is left unset and noted (printable text only).
Result<std::vector<DiscoveredDevice>> discover(const DiscoveryPaths& paths = {});

// "no Hailo-8 device found (looked in /sys/class/hailo_chardev and /dev/hailo*)" for the given paths.
std::string no_device_message(const DiscoveryPaths& paths = {});
// no_device_message() followed by what discovery did see that is not a usable Hailo-8: "; other Hailo accelerators
// present: hailo1 (accelerator type 1, PCI id 1e60:45c4)" and "; listed without a device node: /dev/hailo0".
std::string no_hailo8_message(const std::vector<DiscoveredDevice>& found, const DiscoveryPaths& paths = {});

}  // namespace aisrv::engine::hailo8::driver
