// aisrv protocol — C++ table lookups, header codec and the error-code <-> status-bit mapping.
#include "aisrv/protocol/protocol.hpp"

#include <algorithm>
#include <cctype>

namespace aisrv {

uint32_t to_status(Errc code) {
  switch (code) {
    case Errc::no_model: return AISRV_STATUS_ERROR_NO_MODEL;
    case Errc::model_error: return AISRV_STATUS_ERROR_MODEL_ERR;
    case Errc::infer_error: return AISRV_STATUS_ERROR_INFER_ERR;
    case Errc::bad_command: return AISRV_STATUS_ERROR_BAD_CMD;
    case Errc::bad_engine: return AISRV_STATUS_ERROR_BAD_ENGINE;
    case Errc::bad_tensor: return AISRV_STATUS_ERROR_BAD_TENSOR;
    case Errc::bad_length: return AISRV_STATUS_ERROR_BAD_LENGTH;
    case Errc::not_supported: return AISRV_STATUS_ERROR_NOT_SUPPORTED;
    case Errc::flash_error: return AISRV_STATUS_ERROR_FLASH;
    case Errc::crc_error: return AISRV_STATUS_ERROR_CRC;
    case Errc::cancelled: return AISRV_STATUS_ERROR_CANCELLED;
    case Errc::model_changed: return AISRV_STATUS_ERROR_MODEL_CHANGED;
    case Errc::denied: return AISRV_STATUS_ERROR_DENIED;
    case Errc::limit: return AISRV_STATUS_ERROR_LIMIT;
    case Errc::sensor_error: return AISRV_STATUS_ERROR_SENSOR;
    default: return AISRV_STATUS_ERROR_INTERNAL;
  }
}

Errc from_status(uint32_t status) {
  const uint32_t errors = status & AISRV_STATUS_ERROR_MASK;
  const uint32_t lowest = errors & (~errors + 1u);
  switch (lowest) {
    case AISRV_STATUS_ERROR_NO_MODEL: return Errc::no_model;
    case AISRV_STATUS_ERROR_MODEL_ERR: return Errc::model_error;
    case AISRV_STATUS_ERROR_INFER_ERR: return Errc::infer_error;
    case AISRV_STATUS_ERROR_BAD_CMD: return Errc::bad_command;
    case AISRV_STATUS_ERROR_BAD_ENGINE: return Errc::bad_engine;
    case AISRV_STATUS_ERROR_BAD_TENSOR: return Errc::bad_tensor;
    case AISRV_STATUS_ERROR_BAD_LENGTH: return Errc::bad_length;
    case AISRV_STATUS_ERROR_NOT_SUPPORTED: return Errc::not_supported;
    case AISRV_STATUS_ERROR_FLASH: return Errc::flash_error;
    case AISRV_STATUS_ERROR_CRC: return Errc::crc_error;
    case AISRV_STATUS_ERROR_CANCELLED: return Errc::cancelled;
    case AISRV_STATUS_ERROR_MODEL_CHANGED: return Errc::model_changed;
    case AISRV_STATUS_ERROR_DENIED: return Errc::denied;
    case AISRV_STATUS_ERROR_LIMIT: return Errc::limit;
    case AISRV_STATUS_ERROR_SENSOR: return Errc::sensor_error;
    default: return Errc::internal;
  }
}

std::string_view errc_name(Errc code) {
  switch (code) {
    case Errc::no_model: return "no_model";
    case Errc::model_error: return "model_error";
    case Errc::infer_error: return "infer_error";
    case Errc::bad_command: return "bad_command";
    case Errc::bad_engine: return "bad_engine";
    case Errc::bad_tensor: return "bad_tensor";
    case Errc::bad_length: return "bad_length";
    case Errc::not_supported: return "not_supported";
    case Errc::flash_error: return "flash_error";
    case Errc::crc_error: return "crc_error";
    case Errc::cancelled: return "cancelled";
    case Errc::internal: return "internal";
    case Errc::model_changed: return "model_changed";
    case Errc::denied: return "denied";
    case Errc::limit: return "limit";
    case Errc::sensor_error: return "sensor_error";
    case Errc::io_error: return "io_error";
    case Errc::timeout: return "timeout";
    case Errc::protocol_error: return "protocol_error";
    case Errc::incompatible: return "incompatible";
    case Errc::not_found: return "not_found";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::interrupted: return "interrupted";
  }
  return "unknown";
}

}  // namespace aisrv

namespace aisrv::protocol {

bool is_known(uint32_t cmd) { return aisrv_command_info(cmd) != nullptr; }

bool host_sends(uint32_t cmd) { return aisrv_command_sends_data(cmd) != 0; }

bool server_returns(uint32_t cmd) { return aisrv_command_returns_data(cmd) != 0; }

std::string_view command_name(uint32_t cmd) { return aisrv_command_name(cmd); }

std::optional<uint32_t> command_by_name(std::string_view name) {
  for (unsigned i = 0; i < aisrv_command_count(); ++i) {
    const auto* row = aisrv_command_at(i);
    const std::string_view n = row->name;
    if (n.size() == name.size() &&
        std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return std::toupper(static_cast<unsigned char>(a)) == std::toupper(static_cast<unsigned char>(b));
        }))
      return row->value;
  }
  return std::nullopt;
}

std::string_view status_name(uint32_t status) { return aisrv_status_name(status); }

std::string status_names(uint32_t status) {
  if (status == 0) return "OKAY";
  std::string out;
  for (uint32_t bit = 1; bit != 0; bit <<= 1) {
    if (!(status & bit)) continue;
    if (!out.empty()) out += '|';
    out += aisrv_status_name(bit);
  }
  return out;
}

void encode_header(const Header& h, std::span<uint8_t, kHeaderSize> out) {
  const aisrv_header_t c{h.cmd, h.engine, h.tensor};
  aisrv_header_encode(&c, out.data());
}

Header decode_header(std::span<const uint8_t, kHeaderSize> in) {
  aisrv_header_t c;
  aisrv_header_decode(in.data(), &c);
  return Header{c.cmd, c.engine, c.tensor};
}

}  // namespace aisrv::protocol
