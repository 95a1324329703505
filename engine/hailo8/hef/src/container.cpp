// aisrv hailo8/hef — HEF container header, size rules and integrity (MD5 via OpenSSL through hailo8/common, CRC-32 via
// zlib, XXH3-64 via libxxhash). Every number comes from the file and is treated as hostile: sums are overflow-checked
// and every mismatch is reported with both values.
#include "aisrv/engine/hailo8/hef/container.hpp"

#include <algorithm>
#include <limits>

#include <xxhash.h>
#include <zlib.h>

#include <fmt/format.h>

#include "aisrv/engine/hailo8/common/byte_order.hpp"
#include "aisrv/engine/hailo8/common/digest.hpp"

namespace aisrv::engine::hailo8::hef {
namespace {

using common::hex;
using common::load_be32;
using common::load_be64;

// Residue = everything after the header; the size rule compares it with what the header declares.
Status check_size(uint32_t version, uint64_t residue, uint64_t declared, std::string_view what) {
  if (residue == declared) return ok();
  if (residue < declared)
    return make_error(Errc::model_error,
                      "HEF v{} file is shorter than its header says: the header declares {} ({} bytes) after the "
                      "header, the file has {} bytes",
                      version, what, declared, residue);
  return make_error(Errc::model_error,
                    "HEF v{} file is longer than its header says: the header declares {} ({} bytes) after the "
                    "header, the file has {} bytes",
                    version, what, declared, residue);
}

Result<uint64_t> checked_add(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    return make_error(Errc::model_error, "HEF header field out of range: {} overflows ({} + {})", what, a, b);
  return sum;
}

Status verify_md5(std::span<const uint8_t> data, std::span<const uint8_t, common::kMd5Length> expected) {
  const common::Md5Digest computed = AISRV_TRY(common::md5(data));
  if (!std::equal(computed.begin(), computed.end(), expected.begin()))
    return make_error(Errc::model_error, "HEF v0 MD5 mismatch: the header has {}, the protobuf hashes to {}",
                      hex(expected), hex(computed));
  return ok();
}

}  // namespace

uint32_t header_size_of_version(uint32_t version) {
  switch (version) {
    case 0: return 32;
    case 1: return 28;
    case 2: return 44;
    case 3: return 56;
    default: return 0;
  }
}

Result<Container> open_container(std::span<const uint8_t> file) {
  if (file.size() < kCommonHeaderSize)
    return make_error(Errc::model_error, "not a HEF: the file has {} bytes, fewer than the {}-byte HEF header",
                      file.size(), kCommonHeaderSize);
  const uint8_t* p = file.data();
  const uint32_t magic = load_be32(p);
  if (magic != kMagic)
    return make_error(Errc::model_error, "not a HEF: wrong magic 0x{:08x} (a HEF starts with 0x{:08x}, \"\\x01HEF\")",
                      magic, kMagic);
  Container c;
  ContainerFacts& f = c.facts;
  f.version = load_be32(p + 4);
  f.proto_size = load_be32(p + 8);
  f.file_size = file.size();
  f.header_size = header_size_of_version(f.version);
  if (f.header_size == 0)
    return make_error(Errc::model_error, "unknown HEF container version {} (this reader knows versions 0 to 3)",
                      f.version);
  if (file.size() < f.header_size)
    return make_error(Errc::model_error,
                      "HEF v{} file is shorter than its header: the v{} header needs {} bytes, the file has {}",
                      f.version, f.version, f.header_size, file.size());
  const uint64_t residue = file.size() - f.header_size;
  std::span<const uint8_t> after_header = file.subspan(f.header_size);

  switch (f.version) {
    case 0: {
      // reserved u32 @12, MD5 @16 over the protobuf only.
      if (auto s = check_size(0, residue, f.proto_size, "a protobuf"); !s) return std::move(s).error();
      std::span<const uint8_t, common::kMd5Length> expected(p + 16, common::kMd5Length);
      if (auto s = verify_md5(after_header, expected); !s) return std::move(s).error();
      f.checksum_kind = "MD5";
      f.checksum_hex = hex(expected);
      c.proto = after_header;
      break;
    }
    case 1: {
      // crc u32 @12, ccws_size u64 @16, reserved u32 @24; CRC-32 over the whole residue.
      const uint32_t crc = load_be32(p + 12);
      f.ccws_size = load_be64(p + 16);
      const uint64_t declared = AISRV_TRY(checked_add(f.proto_size, f.ccws_size, "proto_size + ccws_size"));
      if (auto s = check_size(1, residue, declared, "a protobuf and CCWs"); !s) return std::move(s).error();
      const uint32_t computed =
          static_cast<uint32_t>(crc32_z(crc32_z(0L, Z_NULL, 0), after_header.data(), after_header.size()));
      if (computed != crc)
        return make_error(Errc::model_error, "HEF v1 CRC-32 mismatch: the header has 0x{:08x}, the file hashes to 0x{:08x}",
                          crc, computed);
      f.checksum_kind = "CRC32";
      f.checksum_hex = fmt::format("{:08x}", crc);
      c.proto = after_header.first(f.proto_size);
      c.ccws = after_header.subspan(f.proto_size);
      break;
    }
    case 2:
    case 3: {
      // v2: xxh3 u64 @12, ccws_size u64 @20, 2 reserved u64.
      // v3: xxh3 u64 @12, ccws_size_with_padding u64 @20, hef_padding_size u32 @28, additional_info_size u64 @32,
      //     2 reserved u64. XXH3-64 (seed 0) over the whole residue.
      const uint64_t xxh = load_be64(p + 12);
      uint64_t declared = 0;
      uint64_t ccws_with_padding = load_be64(p + 20);
      if (f.version == 2) {
        f.ccws_size = ccws_with_padding;
        declared = AISRV_TRY(checked_add(f.proto_size, f.ccws_size, "proto_size + ccws_size"));
      } else {
        f.padding_size = load_be32(p + 28);
        f.additional_info_size = load_be64(p + 32);
        if (ccws_with_padding < f.padding_size)
          return make_error(Errc::model_error,
                            "HEF v3 header field out of range: ccws_size_with_padding {} is smaller than "
                            "hef_padding_size {}",
                            ccws_with_padding, f.padding_size);
        f.ccws_size = ccws_with_padding - f.padding_size;
        const uint64_t partial =
            AISRV_TRY(checked_add(f.proto_size, ccws_with_padding, "proto_size + ccws_size_with_padding"));
        declared = AISRV_TRY(checked_add(partial, f.additional_info_size, "sizes + additional_info_size"));
      }
      if (auto s = check_size(f.version, residue, declared,
                              f.version == 2 ? "a protobuf and CCWs" : "a protobuf, padded CCWs and additional info");
          !s)
        return std::move(s).error();
      const uint64_t computed = XXH3_64bits(after_header.data(), after_header.size());
      if (computed != xxh)
        return make_error(Errc::model_error,
                          "HEF v{} XXH3-64 mismatch: the header has 0x{:016x}, the file hashes to 0x{:016x}",
                          f.version, xxh, computed);
      f.checksum_kind = "XXH3-64";
      f.checksum_hex = fmt::format("{:016x}", xxh);
      c.proto = after_header.first(f.proto_size);
      const size_t ccw_start = size_t{f.proto_size} + f.padding_size;
      c.ccws = after_header.subspan(ccw_start, static_cast<size_t>(f.ccws_size));
      break;
    }
    default:
      break;  // unreachable: header_size_of_version() returned 0
  }
  return c;
}

}  // namespace aisrv::engine::hailo8::hef
