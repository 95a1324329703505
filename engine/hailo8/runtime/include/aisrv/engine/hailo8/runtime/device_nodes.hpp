// aisrv hailo8/runtime — the minimal device check the HailoRT path needs before it loads libhailort: which
// /dev/hailoN nodes exist, and the PCI id (sysfs board_location) HailoRT's VDevice uses to select one of them.
// Both roots are injectable for tests. (The full discovery with QUERY_DRIVER_INFO lives in the driver layer,
// engine/hailo8/driver/; this module only answers "is there a device node" for the HailoRT glue.)
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::runtime {

struct DeviceRoots {
  std::filesystem::path dev = "/dev";
  std::filesystem::path sysfs_class = "/sys/class/hailo_chardev";
};

// Device nodes named hailo<N> under roots.dev, in order of N.
std::vector<std::filesystem::path> find_device_nodes(const DeviceRoots& roots);

// The board_location attribute (PCI BDF such as "0000:01:00.0") of the node `node` (e.g. "/dev/hailo0"), read from
// <sysfs_class>/<hailoN>/board_location. Errc::not_found with the path when it cannot be read or is malformed.
Result<std::string> board_location(const DeviceRoots& roots, const std::filesystem::path& node);

}  // namespace aisrv::engine::hailo8::runtime
