// aisrv hailo8/hef — the HEF container: the big-endian header (versions 0-3), the size rules and the integrity
// check (MD5 for v0, CRC-32 for v1, XXH3-64 for v2/v3), all verified before anything looks at the protobuf.
// Layouts and rules: hailo8-facts.md §1.1-1.3.
#pragma once

#include <cstdint>
#include <span>

#include "aisrv/engine/hailo8/hef/types.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::hef {

inline constexpr uint32_t kMagic = 0x01484546;  // bytes 01 48 45 46
inline constexpr uint32_t kCommonHeaderSize = 12;

// Header size of a container version (32, 28, 44, 56), 0 for an unknown version.
uint32_t header_size_of_version(uint32_t version);

struct Container {
  ContainerFacts facts;
  std::span<const uint8_t> proto;  // the protobuf message
  std::span<const uint8_t> ccws;   // v1-v3: the config-code-word section (empty for v0)
};

// Checks magic, version, the size rule and the checksum. Errc::model_error naming the problem: wrong magic, unknown
// version, a file shorter or longer than its header says (both numbers), a checksum mismatch (expected and
// computed), a field out of range. The returned spans point into `file`.
Result<Container> open_container(std::span<const uint8_t> file);

}  // namespace aisrv::engine::hailo8::hef
