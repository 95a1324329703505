// aisrv hailo8/driver — the two identification controls, decoded into plain structs.
// IDENTIFY (opcode 0) answers 8 parameters, in order (CONTROL_PROTOCOL_identify_response_t; HailoRT
// control.cpp control__parse_identify_results):
//   protocol_version u32 BE · fw_version {major, minor, revision} 3 × u32 in the firmware's little-endian order ·
//   logger_version u32 BE · board_name ≤ 32 bytes · device_architecture u32 BE · serial_number ≤ 16 ·
//   part_number ≤ 16 · product_name ≤ 42
// The firmware revision word carries flags: bit 27 core-CPU firmware (must be clear for the app CPU), bit 29
// extended context-switch buffer, bit 30 development build; the revision number is bits 0-26.
// GET_DEVICE_INFORMATION (opcode 51) answers 9 parameters (CONTROL_PROTOCOL__get_extended_device_information_
// response_t): core clock rate u32 BE · supported features (8 bytes, a u32 BE in the first 4; bit 0 Ethernet,
// 1 MIPI, 2 PCIe, 3 current monitoring, 4 MDIO) · boot source u32 BE (1 PCIe, 2 flash) · LCS u8 · SoC id ≤ 32 ·
// Ethernet MAC ≤ 6 · fuse info 12 (unit-level tracking id) · PM values ≤ 24 · partial clusters bitmap u32 BE.
// Parameters are walked by their own lengths, so a firmware that sends shorter strings is read correctly; fixed-size
// numeric fields must have exactly their size, and extra trailing parameters from a newer firmware are ignored.
// Strings go through common::printable_text (stop at NUL, non-printable bytes become '?').
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "aisrv/engine/hailo8/driver/fw_control.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::driver {

// Device architecture codes (hailo_device_architecture_t = hef::DeviceArch): "HAILO8", "HAILO8L", … by
// hef::device_arch_name; "unknown" for other codes.
std::string_view architecture_name(uint32_t code);

struct FirmwareVersion {
  uint32_t major = 0;
  uint32_t minor = 0;
  uint32_t revision = 0;  // flags removed
  bool release = true;    // bit 30 clear
  bool extended_context_switch_buffer = false;  // bit 29

  std::string str() const;  // "4.23.0 (release,app)" as hailortcli prints it
};

struct DeviceIdentity {
  uint32_t protocol_version = 0;
  FirmwareVersion firmware;
  uint32_t logger_version = 0;
  std::string board_name;
  uint32_t device_architecture = 0;
  std::string serial_number;  // empty when the device has none
  std::string part_number;
  std::string product_name;
};

struct DeviceInformation {
  uint32_t neural_network_core_clock_rate = 0;  // Hz
  uint32_t supported_features = 0;             // bit set, see above
  uint32_t boot_source = 0;                    // 0 invalid, 1 PCIe, 2 flash
  uint8_t lcs = 0;
  std::vector<uint8_t> soc_id;
  std::vector<uint8_t> eth_mac_address;
  std::vector<uint8_t> unit_level_tracking_id;
  std::vector<uint8_t> soc_pm_values;
  uint32_t partial_clusters_layout_bitmap = 0;

  std::string supported_features_text() const;  // "Ethernet, PCIe"
  std::string_view boot_source_name() const;    // "PCIE", "FLASH", "INVALID"
};

// Errc::protocol_error naming the parameter for a missing parameter, a wrong size or an app/core flag mismatch.
Result<DeviceIdentity> parse_identify(const ControlResponse& response);
Result<DeviceInformation> parse_device_information(const ControlResponse& response);

}  // namespace aisrv::engine::hailo8::driver
