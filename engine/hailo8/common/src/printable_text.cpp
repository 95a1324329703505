// aisrv hailo8/common — printable_text().
#include "aisrv/engine/hailo8/common/printable_text.hpp"

namespace aisrv::engine::hailo8::common {

std::string printable_text(std::span<const uint8_t> bytes) {
  std::string s;
  for (uint8_t b : bytes) {
    if (b == 0) break;
    s += (b >= 0x20 && b < 0x7F) ? static_cast<char>(b) : '?';
  }
  return s;
}

}  // namespace aisrv::engine::hailo8::common
