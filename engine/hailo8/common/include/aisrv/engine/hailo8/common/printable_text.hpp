// aisrv hailo8/common — text that came from a device or from sysfs, made safe to print: bytes up to the first NUL,
// anything outside printable ASCII replaced by '?', so a device string cannot drive a terminal or a log reader.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace aisrv::engine::hailo8::common {

std::string printable_text(std::span<const uint8_t> bytes);
inline std::string printable_text(std::string_view text) {
  return printable_text(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace aisrv::engine::hailo8::common
