// Unit tests: socket stream framing (prefix codecs, whole frames, partial input, limits).
#include <doctest/doctest.h>

#include "aisrv/protocol/stream_framing.hpp"

using namespace aisrv;
using namespace aisrv::protocol;
using namespace aisrv::protocol::stream;

TEST_CASE("request frame: worked example from docs/protocol.md") {
  // SET_INPUT_TENSOR, engine 0, tensor 0, 4 payload bytes 01 02 03 04
  const std::vector<uint8_t> payload{1, 2, 3, 4};
  const auto frame = encode_request(Header{0x83, 0, 0}, payload);
  const std::vector<uint8_t> expect{0x83, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1, 2, 3, 4};
  CHECK(frame == expect);
  auto d = decode_request(frame, kMaxPayload);
  REQUIRE(d.ok());
  REQUIRE(d->has_value());
  CHECK((*d)->consumed == frame.size());
  CHECK((*d)->request.header.cmd == 0x83);
  CHECK(std::vector<uint8_t>((*d)->request.payload.begin(), (*d)->request.payload.end()) == payload);
}

TEST_CASE("response frame: worked example") {
  const std::vector<uint8_t> payload{0x56, 0x53, 0x49, 0x41};
  const auto frame = encode_response(0, payload);
  const std::vector<uint8_t> expect{0, 0, 0, 0, 4, 0, 0, 0, 0x56, 0x53, 0x49, 0x41};
  CHECK(frame == expect);
  auto d = decode_response(frame, kMaxPayload);
  REQUIRE(d.ok());
  REQUIRE(d->has_value());
  CHECK((*d)->status == 0);
  CHECK((*d)->payload.size() == 4);
}

TEST_CASE("partial frames wait for more bytes at every cut point") {
  std::vector<uint8_t> payload(100, 0xAB);
  const auto frame = encode_request(Header{0x86, 1, 0}, payload);
  for (size_t cut = 0; cut < frame.size(); ++cut) {
    auto d = decode_request(std::span(frame).first(cut), kMaxPayload);
    REQUIRE(d.ok());
    CHECK(!d->has_value());
  }
  const auto resp = encode_response(AISRV_STATUS_ERROR_NO_MODEL, payload);
  for (size_t cut = 0; cut < resp.size(); ++cut) {
    auto d = decode_response(std::span(resp).first(cut), kMaxPayload);
    REQUIRE(d.ok());
    CHECK(!d->has_value());
  }
}

TEST_CASE("two frames back to back decode one at a time") {
  auto a = encode_request(Header{0x01, 0, 0}, {});
  auto b = encode_request(Header{0x83, 0, 1}, std::vector<uint8_t>{9});
  std::vector<uint8_t> both = a;
  both.insert(both.end(), b.begin(), b.end());
  auto first = decode_request(both, kMaxPayload);
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK((*first)->consumed == 16);
  auto second = decode_request(std::span(both).subspan((*first)->consumed), kMaxPayload);
  REQUIRE(second->has_value());
  CHECK((*second)->request.header.tensor == 1);
  CHECK((*second)->request.payload[0] == 9);
}

TEST_CASE("lengths above the limit are refused from the prefix alone") {
  auto prefix = encode_request_prefix(Header{0x86, 0, 0}, 1001);
  auto r = decode_request_prefix(prefix, 1000);
  REQUIRE(!r);
  CHECK(r.error().code == Errc::bad_length);
  CHECK(decode_request_prefix(prefix, 1001).ok());
  auto huge = encode_request_prefix(Header{0x86, 0, 0}, 0xFFFFFFFFu);
  CHECK(decode_request(huge, kMaxPayload).error().code == Errc::bad_length);
  auto rp = encode_response_prefix(0, 0xFFFFFFFFu);
  CHECK(decode_response(rp, kMaxPayload).error().code == Errc::protocol_error);
}
