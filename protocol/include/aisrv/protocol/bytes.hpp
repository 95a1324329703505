// aisrv protocol — bounds-checked little-endian byte writer/reader used by every payload codec.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace aisrv::protocol {

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}

  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    u32(bits);
  }
  void bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  // u8 length + bytes (truncated to 255).
  void str8(std::string_view s) {
    const size_t n = s.size() > 255 ? 255 : s.size();
    u8(static_cast<uint8_t>(n));
    out_.insert(out_.end(), s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
  }
  // u32 length + bytes.
  void str32(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>& out_;
};

// Every read checks the remaining length; after the first failure every later read fails too, and
// `status()` names the field that did not fit.
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}

  uint8_t u8(const char* field) { return static_cast<uint8_t>(get(1, field)); }
  uint16_t u16(const char* field) { return static_cast<uint16_t>(get(2, field)); }
  uint32_t u32(const char* field) { return static_cast<uint32_t>(get(4, field)); }
  uint64_t u64(const char* field) { return get(8, field); }
  int32_t i32(const char* field) { return static_cast<int32_t>(u32(field)); }
  float f32(const char* field) {
    const uint32_t bits = u32(field);
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  std::span<const uint8_t> bytes(size_t n, const char* field) {
    if (!need(n, field)) return {};
    auto s = in_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  std::string str8(const char* field) {
    const size_t n = u8(field);
    auto b = bytes(n, field);
    return std::string(b.begin(), b.end());
  }
  std::string str32(const char* field, size_t max) {
    const size_t n = u32(field);
    if (failed_) return {};
    if (n > max) {
      fail(field, "length above limit");
      return {};
    }
    auto b = bytes(n, field);
    return std::string(b.begin(), b.end());
  }

  // Fails the read with `error` (a count above its limit, unknown flag bits): later reads fail too.
  void refuse(Error error) {
    if (failed_) return;
    failed_ = true;
    error_ = std::move(error);
  }

  size_t remaining() const { return in_.size() - pos_; }
  bool failed() const { return failed_; }
  // Error when a read failed or (if `exact`) bytes are left over.
  Status status(bool exact = true) const {
    if (failed_) return error_;
    if (exact && remaining() != 0)
      return make_error(Errc::protocol_error, "{} unexpected trailing byte(s)", remaining());
    return ok();
  }

 private:
  bool need(size_t n, const char* field) {
    if (failed_) return false;
    if (in_.size() - pos_ < n) {
      fail(field, "truncated");
      return false;
    }
    return true;
  }
  uint64_t get(int n, const char* field) {
    if (!need(static_cast<size_t>(n), field)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(in_[pos_ + i]) << (8 * i);
    pos_ += static_cast<size_t>(n);
    return v;
  }
  void fail(const char* field, const char* why) {
    failed_ = true;
    error_ = make_error(Errc::protocol_error, "field '{}' {} at byte {}", field, why, pos_);
  }

  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  bool failed_ = false;
  Error error_;
};

}  // namespace aisrv::protocol
