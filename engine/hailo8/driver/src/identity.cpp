// aisrv hailo8/driver — decoding of the IDENTIFY and GET_DEVICE_INFORMATION responses (layouts in
// identity.hpp).
#include "aisrv/engine/hailo8/driver/identity.hpp"

#include <fmt/format.h>

#include "aisrv/engine/hailo8/common/byte_order.hpp"
#include "aisrv/engine/hailo8/common/printable_text.hpp"
#include "aisrv/engine/hailo8/hef/types.hpp"

namespace aisrv::engine::hailo8::driver {
namespace {

constexpr uint32_t kRevisionNumberMask = (1u << 27) - 1;
constexpr uint32_t kRevisionCoreFlag = 1u << 27;
constexpr uint32_t kRevisionExtendedCsFlag = 1u << 29;
constexpr uint32_t kRevisionDevFlag = 1u << 30;

// Parameters are checked for their size by param() before these read them.
uint32_t be32(const std::vector<uint8_t>& p) { return common::load_be32(p.data()); }
uint32_t le32(const std::vector<uint8_t>& p, size_t at) { return common::load_le32(p.data() + at); }

// Parameter i of `r`, required to exist and to be `exact` bytes (exact > 0) or at most `max` bytes.
Result<const std::vector<uint8_t>*> param(const ControlResponse& r, const char* control, size_t i, const char* name,
                                          size_t exact, size_t max = 0) {
  if (i >= r.params.size()) {
    return make_error(Errc::protocol_error, "{} response has {} parameters, {} (parameter {}) is missing", control,
                      r.params.size(), name, i);
  }
  const auto& p = r.params[i];
  if (exact && p.size() != exact) {
    return make_error(Errc::protocol_error, "{} response: {} is {} bytes, expected {}", control, name, p.size(),
                      exact);
  }
  if (!exact && p.size() > max) {
    return make_error(Errc::protocol_error, "{} response: {} is {} bytes, at most {} allowed", control, name, p.size(),
                      max);
  }
  return &p;
}

}  // namespace

std::string_view architecture_name(uint32_t code) {
  const auto arch = hef::device_arch_from_code(code);
  return arch ? hef::device_arch_name(*arch) : "unknown";
}

std::string FirmwareVersion::str() const {
  return fmt::format("{}.{}.{} ({},app{})", major, minor, revision, release ? "release" : "develop",
                     extended_context_switch_buffer ? ",extended context switch buffer" : "");
}

std::string DeviceInformation::supported_features_text() const {
  static constexpr std::string_view kNames[] = {"Ethernet", "MIPI", "PCIe", "current monitoring", "MDIO"};
  std::string s;
  for (size_t bit = 0; bit < std::size(kNames); ++bit) {
    if (supported_features & (1u << bit)) {
      if (!s.empty()) s += ", ";
      s += kNames[bit];
    }
  }
  return s;
}

std::string_view DeviceInformation::boot_source_name() const {
  switch (boot_source) {
    case 1: return "PCIE";
    case 2: return "FLASH";
    default: return "INVALID";
  }
}

Result<DeviceIdentity> parse_identify(const ControlResponse& r) {
  constexpr const char* kCtl = "IDENTIFY";
  DeviceIdentity id;
  id.protocol_version = be32(*AISRV_TRY(param(r, kCtl, 0, "protocol version", 4)));
  const auto& fw = *AISRV_TRY(param(r, kCtl, 1, "firmware version", 12));
  id.logger_version = be32(*AISRV_TRY(param(r, kCtl, 2, "logger version", 4)));
  id.board_name = common::printable_text(*AISRV_TRY(param(r, kCtl, 3, "board name", 0, 32)));
  id.device_architecture = be32(*AISRV_TRY(param(r, kCtl, 4, "device architecture", 4)));
  id.serial_number = common::printable_text(*AISRV_TRY(param(r, kCtl, 5, "serial number", 0, 16)));
  id.part_number = common::printable_text(*AISRV_TRY(param(r, kCtl, 6, "part number", 0, 16)));
  id.product_name = common::printable_text(*AISRV_TRY(param(r, kCtl, 7, "product name", 0, 42)));

  const uint32_t raw_revision = le32(fw, 8);
  if (raw_revision & kRevisionCoreFlag) {
    return make_error(Errc::protocol_error,
                      "IDENTIFY answered with a core-CPU firmware revision word 0x{:08x} (app firmware expected)",
                      raw_revision);
  }
  id.firmware.major = le32(fw, 0);
  id.firmware.minor = le32(fw, 4);
  id.firmware.revision = raw_revision & kRevisionNumberMask;
  id.firmware.release = (raw_revision & kRevisionDevFlag) == 0;
  id.firmware.extended_context_switch_buffer = (raw_revision & kRevisionExtendedCsFlag) != 0;
  return id;
}

Result<DeviceInformation> parse_device_information(const ControlResponse& r) {
  constexpr const char* kCtl = "GET_DEVICE_INFORMATION";
  DeviceInformation info;
  info.neural_network_core_clock_rate = be32(*AISRV_TRY(param(r, kCtl, 0, "core clock rate", 4)));
  info.supported_features = be32(*AISRV_TRY(param(r, kCtl, 1, "supported features", 8))) & 0xFF;
  info.boot_source = be32(*AISRV_TRY(param(r, kCtl, 2, "boot source", 4)));
  info.lcs = (*AISRV_TRY(param(r, kCtl, 3, "LCS", 1)))[0];
  info.soc_id = *AISRV_TRY(param(r, kCtl, 4, "SoC id", 0, 32));
  info.eth_mac_address = *AISRV_TRY(param(r, kCtl, 5, "Ethernet MAC", 0, 6));
  info.unit_level_tracking_id = *AISRV_TRY(param(r, kCtl, 6, "fuse info", 12));
  info.soc_pm_values = *AISRV_TRY(param(r, kCtl, 7, "PM values", 0, 24));
  if (r.params.size() > 8) {
    info.partial_clusters_layout_bitmap = be32(*AISRV_TRY(param(r, kCtl, 8, "partial clusters bitmap", 4)));
  }
  return info;
}

}  // namespace aisrv::engine::hailo8::driver
