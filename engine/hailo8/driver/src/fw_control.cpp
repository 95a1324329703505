// aisrv hailo8/driver — firmware control framing: request building, response validation, and the per-opcode
// table (name, serving CPU, critical flag) in CONTROL_PROTOCOL__OPCODE_t order.
#include "aisrv/engine/hailo8/driver/fw_control.hpp"

#include <array>

#include <fmt/format.h>

#include "aisrv/engine/hailo8/common/byte_order.hpp"

namespace aisrv::engine::hailo8::driver {
namespace {

constexpr CpuId A = CpuId::cpu0_app;
constexpr CpuId C = CpuId::cpu1_core;

// Opcode = index. Names without the HAILO_CONTROL_OPCODE_ prefix.
constexpr std::array<OpcodeTraits, kControlOpcodeCount> kOpcodes{{
    {"IDENTIFY", A, true},
    {"WRITE_MEMORY", A, false},
    {"READ_MEMORY", A, false},
    {"CONFIG_STREAM", A, false},
    {"OPEN_STREAM", A, false},
    {"CLOSE_STREAM", A, false},
    {"PHY_OPERATION", A, false},
    {"RESET", A, true},
    {"CONFIG_CORE_TOP", A, false},
    {"POWER_MEASUEMENT", A, false},
    {"SET_POWER_MEASUEMENT", A, false},
    {"GET_POWER_MEASUEMENT", A, false},
    {"START_POWER_MEASUEMENT", A, false},
    {"STOP_POWER_MEASUEMENT", A, false},
    {"START_FIRMWARE_UPDATE", A, true},
    {"WRITE_FIRMWARE_UPDATE", A, true},
    {"VALIDATE_FIRMWARE_UPDATE", A, true},
    {"FINISH_FIRMWARE_UPDATE", A, true},
    {"EXAMINE_USER_CONFIG", A, true},
    {"READ_USER_CONFIG", A, true},
    {"ERASE_USER_CONFIG", A, true},
    {"WRITE_USER_CONFIG", A, true},
    {"I2C_WRITE", A, false},
    {"I2C_READ", A, false},
    {"NN_CORE_LATENCY_MEASUREMENT_CONFIG", A, false},
    {"NN_CORE_LATENCY_MEASUREMENT_READ", A, false},
    {"SENSOR_STORE_CONFIG", A, false},
    {"SENSOR_GET_CONFIG", A, false},
    {"SENSOR_SET_GENERIC_I2C_SLAVE", A, false},
    {"SENSOR_LOAD_AND_START", A, false},
    {"SENSOR_RESET", A, false},
    {"SENSOR_GET_SECTIONS_INFO", A, false},
    {"CONTEXT_SWITCH_SET_NETWORK_GROUP_HEADER", C, false},
    {"CONTEXT_SWITCH_SET_CONTEXT_INFO", C, false},
    {"IDLE_TIME_SET_MEASUREMENT", A, false},
    {"IDLE_TIME_GET_MEASUREMENT", A, false},
    {"DOWNLOAD_CONTEXT_ACTION_LIST", C, false},
    {"CHANGE_CONTEXT_SWITCH_STATUS", C, false},
    {"APP_WD_ENABLE", A, false},
    {"APP_WD_CONFIG", A, false},
    {"APP_PREVIOUS_SYSTEM_STATE", A, false},
    {"SET_DATAFLOW_INTERRUPT", C, false},
    {"CORE_IDENTIFY", C, true},
    {"D2H_EVENT_MANAGER_SET_HOST_INFO", A, false},
    {"D2H_EVENT_MANAGER_SEND_EVENT_HOST_INFO", A, false},
    {"SWITCH_APPLICATION", C, false},
    {"GET_CHIP_TEMPERATURE", A, false},
    {"READ_BOARD_CONFIG", A, true},
    {"WRITE_BOARD_CONFIG", A, true},
    {"GET_SOC_ID", A, false},
    {"ENABLE_DEBUGGING", A, false},
    {"GET_DEVICE_INFORMATION", A, false},
    {"CONFIG_CONTEXT_SWITCH_BREAKPOINT", C, false},
    {"GET_CONTEXT_SWITCH_BREAKPOINT_STATUS", C, false},
    {"GET_CONTEXT_SWITCH_MAIN_HEADER", C, false},
    {"SET_FW_LOGGER", A, false},
    {"WRITE_SECOND_STAGE_TO_INTERNAL_MEMORY", A, true},
    {"COPY_SECOND_STAGE_TO_FLASH", A, true},
    {"SET_PAUSE_FRAMES", A, false},
    {"CONFIG_CONTEXT_SWITCH_TIMESTAMP", C, false},
    {"RUN_BIST_TEST", A, false},
    {"SET_CLOCK_FREQ", A, false},
    {"GET_HEALTH_INFORMATION", A, false},
    {"SET_THROTTLING_STATE", A, false},
    {"GET_THROTTLING_STATE", A, false},
    {"SENSOR_SET_I2C_BUS_INDEX", A, false},
    {"SET_OVERCURRENT_STATE", A, false},
    {"GET_OVERCURRENT_STATE", A, false},
    {"CORE_PREVIOUS_SYSTEM_STATE", C, false},
    {"CORE_WD_ENABLE", C, false},
    {"CORE_WD_CONFIG", C, false},
    {"CONTEXT_SWITCH_CLEAR_CONFIGURED_APPS", C, false},
    {"GET_HW_CONSTS", C, false},
    {"SET_SLEEP_STATE", A, false},
    {"CHANGE_HW_INFER_STATUS", C, false},
    {"SIGNAL_DRIVER_DOWN", C, false},
    {"CONTEXT_SWITCH_INIT_CACHE_INFO", C, false},
    {"CONTEXT_SWITCH_GET_CACHE_INFO", C, false},
    {"CONTEXT_SWITCH_UPDATE_CACHE_READ_OFFSET", C, false},
    {"CONTEXT_SWITCH_SIGNAL_CACHE_UPDATED", C, false},
}};

using common::append_be32;
using common::load_be32;

std::string opcode_label(uint32_t opcode) {
  auto t = opcode_traits(opcode);
  return t ? std::string(t->name) : fmt::format("opcode {}", opcode);
}

}  // namespace

std::optional<OpcodeTraits> opcode_traits(uint32_t opcode) {
  if (opcode >= kOpcodes.size()) return std::nullopt;
  return kOpcodes[opcode];
}

Result<std::vector<uint8_t>> build_control_request(uint32_t opcode, std::span<const std::vector<uint8_t>> params,
                                                   uint32_t sequence) {
  if (!opcode_traits(opcode)) {
    return make_error(Errc::invalid_argument, "firmware control opcode {} is unknown (valid: 0..{})", opcode,
                      kControlOpcodeCount - 1);
  }
  size_t total = kControlRequestBaseSize;
  for (const auto& p : params) total += 4 + p.size();
  if (total > kMaxControlLength) {
    return make_error(Errc::invalid_argument, "firmware control {} request is {} bytes, the limit is {}",
                      opcode_label(opcode), total, kMaxControlLength);
  }
  std::vector<uint8_t> out;
  out.reserve(total);
  append_be32(out, kControlProtocolVersion);
  append_be32(out, 0);  // flags: ack clear in requests
  append_be32(out, sequence);
  append_be32(out, opcode);
  append_be32(out, static_cast<uint32_t>(params.size()));
  for (const auto& p : params) {
    append_be32(out, static_cast<uint32_t>(p.size()));
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

Result<ControlResponse> parse_control_response(std::span<const uint8_t> b, uint32_t expected_opcode) {
  if (b.size() < kControlResponseHeaderSize) {
    return make_error(Errc::protocol_error, "firmware control response is {} bytes, shorter than the {} byte header",
                      b.size(), kControlResponseHeaderSize);
  }
  ControlResponse r;
  r.version = load_be32(b.data());
  r.flags = load_be32(b.data() + 4);
  r.sequence = load_be32(b.data() + 8);
  r.opcode = load_be32(b.data() + 12);
  r.major_status = load_be32(b.data() + 16);
  r.minor_status = load_be32(b.data() + 20);
  if (r.version != kControlProtocolVersion) {
    return make_error(Errc::protocol_error, "firmware control response has protocol version {} (expected {})",
                      r.version, kControlProtocolVersion);
  }
  if ((r.flags & 1u) == 0) {
    return make_error(Errc::protocol_error, "firmware control response to {} lacks the ack flag (flags 0x{:08x})",
                      opcode_label(expected_opcode), r.flags);
  }
  if (r.opcode != expected_opcode) {
    return make_error(Errc::protocol_error, "firmware answered {} to a {} request", opcode_label(r.opcode),
                      opcode_label(expected_opcode));
  }
  size_t at = kControlResponseHeaderSize;
  if (at == b.size()) return r;  // no payload at all
  if (b.size() - at < 4) {
    return make_error(Errc::protocol_error, "firmware control response to {} ends inside the parameter count ({} bytes)",
                      opcode_label(expected_opcode), b.size());
  }
  const uint32_t count = load_be32(b.data() + at);
  at += 4;
  for (uint32_t i = 0; i < count; ++i) {
    if (b.size() - at < 4) {
      return make_error(Errc::protocol_error,
                        "firmware control response to {} ends before parameter {} of {} ({} bytes)",
                        opcode_label(expected_opcode), i, count, b.size());
    }
    const uint32_t len = load_be32(b.data() + at);
    at += 4;
    if (len > b.size() - at) {
      return make_error(Errc::protocol_error,
                        "firmware control response to {}: parameter {} claims {} bytes, only {} remain",
                        opcode_label(expected_opcode), i, len, b.size() - at);
    }
    r.params.emplace_back(b.begin() + static_cast<std::ptrdiff_t>(at),
                          b.begin() + static_cast<std::ptrdiff_t>(at + len));
    at += len;
  }
  if (at != b.size()) {
    return make_error(Errc::protocol_error,
                      "firmware control response to {} has {} bytes after its {} parameters ({} of {} bytes parsed)",
                      opcode_label(expected_opcode), b.size() - at, count, at, b.size());
  }
  return r;
}

Status check_control_status(const ControlResponse& r) {
  if (r.major_status == 0) return ok();
  return make_error(Errc::io_error, "firmware refused {}: major status 0x{:x}, minor status 0x{:x}",
                    opcode_label(r.opcode), r.major_status, r.minor_status);
}

}  // namespace aisrv::engine::hailo8::driver
