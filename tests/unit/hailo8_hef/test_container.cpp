// aisrv tests — the HEF container: header layouts of versions 0-3, size rules, checksums, and the error messages
// (wrong magic, unknown version, shorter/longer with both numbers, checksum expected vs computed, out-of-range
// header fields). Containers are built by hef_builder.hpp from the layouts in hailo8-facts.md §1.1-1.3.
#include <doctest/doctest.h>

#include <string>

#include "aisrv/engine/hailo8/hef/container.hpp"
#include "aisrv/engine/hailo8/hef/reader.hpp"
#include "hef_builder.hpp"

using namespace aisrv;
using namespace aisrv::engine::hailo8;
namespace th = aisrv::test::hef;

namespace {
std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

std::string error_of(std::span<const uint8_t> f) {
  auto r = hef::open_container(f);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::model_error);
  return r.error().message;
}
}  // namespace

TEST_CASE("header sizes per version follow the facts") {
  CHECK(hef::header_size_of_version(0) == 32);
  CHECK(hef::header_size_of_version(1) == 28);
  CHECK(hef::header_size_of_version(2) == 44);
  CHECK(hef::header_size_of_version(3) == 56);
  CHECK(hef::header_size_of_version(4) == 0);
}

TEST_CASE("valid containers of every version locate the protobuf and the CCWs") {
  const auto proto = bytes("protobuf-bytes");
  const auto ccws = bytes("CCW-SECTION-0123");
  const auto extra = bytes("additional");

  auto v0 = th::container(0, proto);
  CHECK(v0.size() == 32 + proto.size());
  auto c0 = hef::open_container(v0);
  REQUIRE(c0.ok());
  CHECK(c0->facts.version == 0);
  CHECK(c0->facts.checksum_kind == "MD5");
  CHECK(std::string(c0->proto.begin(), c0->proto.end()) == "protobuf-bytes");
  CHECK(c0->ccws.empty());

  auto v1 = th::container(1, proto, ccws);
  auto c1 = hef::open_container(v1);
  REQUIRE(c1.ok());
  CHECK(c1->facts.header_size == 28);
  CHECK(c1->facts.checksum_kind == "CRC32");
  CHECK(std::string(c1->ccws.begin(), c1->ccws.end()) == "CCW-SECTION-0123");

  auto v2 = th::container(2, proto, ccws);
  auto c2 = hef::open_container(v2);
  REQUIRE(c2.ok());
  CHECK(c2->facts.checksum_kind == "XXH3-64");
  CHECK(c2->facts.ccws_size == ccws.size());
  CHECK(std::string(c2->proto.begin(), c2->proto.end()) == "protobuf-bytes");

  // v3: CCWs start after the padding; additional info sits after the CCWs and is only hashed.
  auto v3 = th::container(3, proto, ccws, 7, extra);
  CHECK(v3.size() == 56 + proto.size() + 7 + ccws.size() + extra.size());
  auto c3 = hef::open_container(v3);
  REQUIRE(c3.ok());
  CHECK(c3->facts.padding_size == 7);
  CHECK(c3->facts.additional_info_size == extra.size());
  CHECK(c3->facts.ccws_size == ccws.size());
  CHECK(std::string(c3->ccws.begin(), c3->ccws.end()) == "CCW-SECTION-0123");
}

TEST_CASE("too short, wrong magic and unknown versions are named") {
  std::vector<uint8_t> tiny = {0x01, 0x48, 0x45};
  CHECK(error_of(tiny).find("3 bytes") != std::string::npos);

  auto f = th::container(0, bytes("x"));
  f[0] = 0x48;
  f[1] = 0x45;
  f[2] = 0x46;
  f[3] = 0x00;
  const auto magic = error_of(f);
  CHECK(magic.find("wrong magic 0x48454600") != std::string::npos);

  auto g = th::container(0, bytes("x"));
  th::put_be32(g, 4, 9);
  const auto version = error_of(g);
  CHECK(version.find("unknown HEF container version 9") != std::string::npos);

  // A v2 header needs 44 bytes.
  std::vector<uint8_t> h(30, 0);
  th::put_be32(h, 0, 0x01484546);
  th::put_be32(h, 4, 2);
  const auto short_header = error_of(h);
  CHECK(short_header.find("needs 44 bytes") != std::string::npos);
  CHECK(short_header.find("has 30") != std::string::npos);
}

TEST_CASE("size mismatches report both numbers") {
  auto f = th::container(0, bytes("0123456789"));
  f.pop_back();  // protobuf now 9 bytes, header says 10
  const auto shorter = error_of(f);
  CHECK(shorter.find("shorter") != std::string::npos);
  CHECK(shorter.find("(10 bytes)") != std::string::npos);
  CHECK(shorter.find("has 9 bytes") != std::string::npos);

  auto g = th::container(1, bytes("proto"), bytes("ccws"));
  g.push_back(0);
  const auto longer = error_of(g);
  CHECK(longer.find("longer") != std::string::npos);
  CHECK(longer.find("(9 bytes)") != std::string::npos);
  CHECK(longer.find("has 10 bytes") != std::string::npos);

  // Sizes whose sum overflows are out of range, not wrapped around.
  auto h = th::container(2, bytes("p"), bytes("c"));
  th::put_be64(h, 20, ~0ull);
  CHECK(error_of(h).find("overflows") != std::string::npos);

  auto v3 = th::container(3, bytes("p"), bytes("cc"), 0);
  th::put_be32(v3, 28, 5);  // padding larger than ccws_size_with_padding (2)
  const auto pad = error_of(v3);
  CHECK(pad.find("smaller than hef_padding_size 5") != std::string::npos);
}

TEST_CASE("checksum mismatches say expected and computed") {
  auto v0 = th::container(0, bytes("protobuf"));
  v0.back() ^= 1;
  const auto md5 = error_of(v0);
  CHECK(md5.find("MD5 mismatch") != std::string::npos);
  CHECK(md5.find("the header has") != std::string::npos);

  auto v1 = th::container(1, bytes("protobuf"), bytes("ccw"));
  const uint32_t stored = th::get_be32(v1, 12);
  v1.back() ^= 0x80;
  const auto crc = error_of(v1);
  CHECK(crc.find("CRC-32 mismatch") != std::string::npos);
  CHECK(crc.find(fmt::format("0x{:08x}", stored)) != std::string::npos);

  auto v2 = th::container(2, bytes("protobuf"), bytes("ccw"));
  v2[50] ^= 4;
  CHECK(error_of(v2).find("v2 XXH3-64 mismatch") != std::string::npos);
  auto v3 = th::container(3, bytes("protobuf"), bytes("ccw"), 3, bytes("info"));
  v3.back() ^= 4;  // the additional info is covered by the hash
  CHECK(error_of(v3).find("v3 XXH3-64 mismatch") != std::string::npos);
}

TEST_CASE("a container whose protobuf does not parse is refused after the integrity check") {
  const std::vector<uint8_t> garbage = {0xff, 0xff, 0xff, 0xff, 0x0f};
  auto f = th::container(2, garbage, bytes("ccw"));
  auto r = hef::read_hef(f);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::model_error);
  CHECK(r.error().message.find("does not parse") != std::string::npos);
  CHECK(r.error().message.find("5 bytes after the 44-byte v2 header") != std::string::npos);
}
