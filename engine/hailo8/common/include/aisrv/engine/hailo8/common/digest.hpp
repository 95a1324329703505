// aisrv hailo8/common — MD5 (OpenSSL EVP) and hex text of byte strings. MD5 is what the Hailo formats use for
// integrity, not for security: HEF container v0 hashes its protobuf with it, and every firmware control request and
// response travels with its MD5.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::common {

inline constexpr size_t kMd5Length = 16;
using Md5Digest = std::array<uint8_t, kMd5Length>;

// Errc::internal when OpenSSL cannot compute it (e.g. a FIPS-only OpenSSL configuration without MD5).
Result<Md5Digest> md5(std::span<const uint8_t> bytes);

// "0a1b…" (lower case, no separator) by default; hex(mac, HexCase::upper, ":") gives "00:1A:…".
enum class HexCase { lower, upper };
std::string hex(std::span<const uint8_t> bytes, HexCase letters = HexCase::lower, std::string_view separator = {});

}  // namespace aisrv::engine::hailo8::common
