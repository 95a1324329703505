// aisrv hailo8/driver — supported driver versions and their ioctl layouts.
#include "aisrv/engine/hailo8/driver/driver_version.hpp"

#include <array>

#include <fmt/format.h>

namespace aisrv::engine::hailo8::driver {
namespace {

// Versions whose hailo_ioctl_common.h we compared (hailo-ai/hailort-drivers tags and release branches): 4.18.0 and
// 4.18.1 … 4.20.1 share one layout; 4.21.0, 4.21.1, 4.22.0 and 4.23.0 the other.
constexpr std::array<DriverVersion, 9> kSupported{{
    {4, 18, 0}, {4, 18, 1}, {4, 19, 0}, {4, 20, 0}, {4, 20, 1}, {4, 21, 0}, {4, 21, 1}, {4, 22, 0}, {4, 23, 0},
}};

}  // namespace

std::string DriverVersion::str() const { return fmt::format("{}.{}.{}", major, minor, revision); }

std::string_view driver_abi_name(DriverAbi abi) {
  return abi == DriverAbi::v4_18 ? "4.18-4.20" : "4.21-4.23";
}

std::span<const DriverVersion> supported_driver_versions() { return kSupported; }

std::string supported_driver_versions_text() {
  std::string out;
  for (const auto& v : kSupported) {
    if (!out.empty()) out += ", ";
    out += v.str();
  }
  return out;
}

Result<DriverAbi> select_abi(const DriverVersion& v) {
  for (const auto& s : kSupported) {
    if (s == v) return (v.minor <= 20) ? DriverAbi::v4_18 : DriverAbi::current;
  }
  return make_error(Errc::incompatible, "hailo_pci driver {} is not supported (supported driver versions: {})",
                    v.str(), supported_driver_versions_text());
}

IoctlNumbers ioctl_numbers(const DriverVersion& v, DriverAbi abi) {
  if (abi == DriverAbi::v4_18) return kIoctlsV4_18;
  IoctlNumbers n = kIoctlsCurrent;
  if (v.major == 4 && v.minor < 23) n.memory_transfer = kIoctlsV4_18.memory_transfer;  // removed in 4.23
  return n;
}

}  // namespace aisrv::engine::hailo8::driver
