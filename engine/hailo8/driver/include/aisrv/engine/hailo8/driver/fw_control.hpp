// aisrv hailo8/driver — the firmware control protocol carried by the HAILO_FW_CONTROL ioctl (facts §3.1;
// HailoRT common/include/control_protocol.h and control_protocol.cpp v4.23):
//   request  = header {version = 2, flags = 0, sequence, opcode} (4 × u32 big-endian)
//              + parameter_count (u32 BE) + parameters {u32 BE length, bytes}; at most 1500 bytes
//   response = header {version, flags (ack bit 0 set), sequence, opcode, major_status, minor_status} (6 × u32 BE)
//              + optionally parameter_count and parameters, which must fill the response exactly
// Parameter payloads keep the byte order the firmware uses for each field (see identity.hpp). The transport puts
// MD5(request) next to the request and returns MD5(response) with the response; both are checked.
// Each opcode is served by one of the two firmware CPUs (app CPU 0, core CPU 1: the context-switch opcodes).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "aisrv/engine/hailo8/driver/ioctl_abi.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::driver {

inline constexpr uint32_t kControlProtocolVersion = 2;
inline constexpr size_t kControlRequestBaseSize = 20;   // header + parameter_count
inline constexpr size_t kControlResponseHeaderSize = 24;
inline constexpr uint32_t kControlTimeoutMs = 1000;     // HailoRT's default for PCIe controls

// The opcodes we use by name (CONTROL_PROTOCOL__OPCODE_t enum order); opcode_traits() knows all 80.
enum class ControlOpcode : uint32_t {
  identify = 0,
  write_memory = 1,
  read_memory = 2,
  reset = 7,
  context_switch_set_network_group_header = 32,
  context_switch_set_context_info = 33,
  download_context_action_list = 36,
  change_context_switch_status = 37,
  set_dataflow_interrupt = 41,
  core_identify = 42,
  get_device_information = 51,
  get_context_switch_main_header = 54,
  context_switch_clear_configured_apps = 71,
  get_hw_consts = 72,
  change_hw_infer_status = 74,
  signal_driver_down = 75,
};
inline constexpr uint32_t kControlOpcodeCount = 80;

struct OpcodeTraits {
  std::string_view name;  // e.g. "IDENTIFY"
  CpuId cpu;              // which firmware CPU serves it
  bool critical;          // HailoRT allows critical opcodes whatever the firmware version
};
// nullopt for opcodes ≥ 80.
std::optional<OpcodeTraits> opcode_traits(uint32_t opcode);

// Builds a request. Errc::invalid_argument for an unknown opcode or a request over 1500 bytes.
Result<std::vector<uint8_t>> build_control_request(uint32_t opcode, std::span<const std::vector<uint8_t>> params,
                                                   uint32_t sequence = 0);

struct ControlResponse {
  uint32_t version = 0;
  uint32_t flags = 0;
  uint32_t sequence = 0;
  uint32_t opcode = 0;
  uint32_t major_status = 0;
  uint32_t minor_status = 0;
  std::vector<std::vector<uint8_t>> params;
};

// Parses and validates a response to `expected_opcode`: length ≥ 24, version 2, ack bit set, same opcode, and a
// parameter list that ends exactly at the end of the response. Errc::protocol_error naming the problem otherwise.
// A non-zero firmware status is not a parse error (see check_control_status).
Result<ControlResponse> parse_control_response(std::span<const uint8_t> bytes, uint32_t expected_opcode);

// Errc::io_error "firmware refused IDENTIFY: major status 0x…, minor 0x…" when major_status ≠ 0.
Status check_control_status(const ControlResponse& response);

}  // namespace aisrv::engine::hailo8::driver
