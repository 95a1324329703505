// aisrv hailo8/common — reading and writing fixed-width integers in a stated byte order, for the Hailo formats
// that mix them: the HEF container header and the firmware control protocol are big-endian, firmware version
// words, NMS words and counters little-endian. Unchecked: callers check the length before they read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace aisrv::engine::hailo8::common {

inline uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
inline uint64_t load_be64(const uint8_t* p) { return (uint64_t{load_be32(p)} << 32) | load_be32(p + 4); }

inline uint16_t load_le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
inline uint64_t load_le64(const uint8_t* p) { return uint64_t{load_le32(p)} | (uint64_t{load_le32(p + 4)} << 32); }

inline void store_le16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void append_be32(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v >> 24));
  out.push_back(static_cast<uint8_t>(v >> 16));
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

}  // namespace aisrv::engine::hailo8::common
