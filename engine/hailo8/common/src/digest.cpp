// aisrv hailo8/common — MD5 through OpenSSL's EVP interface, and hex formatting.
#include "aisrv/engine/hailo8/common/digest.hpp"

#include <openssl/evp.h>

namespace aisrv::engine::hailo8::common {

Result<Md5Digest> md5(std::span<const uint8_t> bytes) {
  Md5Digest out{};
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), out.data(), &len, EVP_md5(), nullptr) != 1 || len != kMd5Length)
    return make_error(Errc::internal, "MD5 computation failed (OpenSSL EVP_Digest over {} bytes)", bytes.size());
  return out;
}

std::string hex(std::span<const uint8_t> bytes, HexCase letters, std::string_view separator) {
  static constexpr char kLower[] = "0123456789abcdef";
  static constexpr char kUpper[] = "0123456789ABCDEF";
  const char* digits = letters == HexCase::lower ? kLower : kUpper;
  std::string s;
  s.reserve(bytes.size() * (2 + separator.size()));
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i) s += separator;
    s += digits[bytes[i] >> 4];
    s += digits[bytes[i] & 0xF];
  }
  return s;
}

}  // namespace aisrv::engine::hailo8::common
