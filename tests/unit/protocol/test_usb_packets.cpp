// Unit tests: USB packetizer — every length around packet multiples, for 64/512/1024-byte packets.
#include <doctest/doctest.h>

#include <numeric>

#include "aisrv/protocol/usb_packets.hpp"

using namespace aisrv;
using namespace aisrv::protocol::usb;

static std::vector<size_t> lengths_around_multiples(size_t p) {
  std::vector<size_t> v{0, 1, 2, p / 2};
  for (size_t n = 1; n <= 3; ++n) {
    v.push_back(n * p - 1);
    v.push_back(n * p);
    v.push_back(n * p + 1);
  }
  return v;
}

TEST_CASE("split and reassemble every length around packet multiples") {
  for (size_t p : {kFullSpeedPacket, kHighSpeedPacket, kSuperSpeedPacket}) {
    for (size_t len : lengths_around_multiples(p)) {
      CAPTURE(p);
      CAPTURE(len);
      std::vector<uint8_t> data(len);
      std::iota(data.begin(), data.end(), static_cast<uint8_t>(len));
      const auto packets = split(data, p);
      CHECK(packets.size() == packet_count(len, p));
      CHECK(packets.size() == len / p + 1);
      // all but the last are full; the last is short (possibly a ZLP)
      for (size_t i = 0; i + 1 < packets.size(); ++i) CHECK(packets[i].size() == p);
      CHECK(packets.back().size() < p);
      CHECK((packets.back().empty()) == needs_zlp(len, p));
      Assembler a(p, 1 << 20);
      for (size_t i = 0; i < packets.size(); ++i) {
        auto done = a.feed(packets[i]);
        REQUIRE(done.ok());
        CHECK(*done == (i + 1 == packets.size()));
      }
      CHECK(a.complete());
      CHECK(a.payload() == data);
    }
  }
}

TEST_CASE("assembler refuses oversize packets, overlong transfers and packets after the end") {
  Assembler a(64, 100);
  std::vector<uint8_t> big(65);
  CHECK(a.feed(big).error().code == Errc::protocol_error);
  Assembler b(64, 100);
  std::vector<uint8_t> full(64);
  REQUIRE(b.feed(full).ok());
  CHECK(b.feed(full).error().code == Errc::bad_length);
  Assembler c(64, 100);
  REQUIRE(*c.feed(std::vector<uint8_t>(3)));
  CHECK(c.feed(std::vector<uint8_t>(1)).error().code == Errc::protocol_error);
  c.reset();
  CHECK(*c.feed({}) == true);
  CHECK(c.payload().empty());
}
