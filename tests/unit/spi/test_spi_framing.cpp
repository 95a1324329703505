// aisrv tests — the SPI link framing (protocol/spi_link.h) as pure functions: header layouts byte by byte, frames
// built and checked, CRC over header and payload catching every single-bit error, the chunk arithmetic for every
// length around chunk boundaries, and the error table.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "aisrv/protocol/crc32.h"
#include "aisrv/protocol/spi_link.h"
#include "aisrv/protocol/status.h"

namespace {

aisrv_spi_request_t sample_request(uint16_t length) {
  aisrv_spi_request_t r{};
  r.type = AISRV_SPI_DATA;
  r.seq = 0x17;
  r.xfer = 0x0203;
  r.length = length;
  r.cmd = 0x86;
  r.engine = 1;
  r.tensor = 2;
  r.total = 100000;
  r.offset = 4056;
  r.want = 0x0405;
  return r;
}

}  // namespace

TEST_CASE("request header: field positions, little-endian, magic") {
  uint8_t h[AISRV_SPI_HEADER_SIZE];
  const auto r = sample_request(0x0A0B);
  aisrv_spi_encode_request(&r, h);
  const std::vector<uint8_t> expected{0xA5, 0x02, 0x17, 0x00, 0x03, 0x02, 0x0B, 0x0A,  // magic type seq flags xfer len
                                      0x86, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,  // cmd engine
                                      0x02, 0x00, 0x00, 0x00, 0xA0, 0x86, 0x01, 0x00,  // tensor total
                                      0xD8, 0x0F, 0x00, 0x00, 0x05, 0x04, 0x00, 0x00};  // offset want reserved
  CHECK(std::vector<uint8_t>(h, h + sizeof h) == expected);
  aisrv_spi_request_t d{};
  aisrv_spi_decode_request(h, &d);
  CHECK(d.type == r.type);
  CHECK(d.seq == r.seq);
  CHECK(d.xfer == r.xfer);
  CHECK(d.length == r.length);
  CHECK(d.cmd == r.cmd);
  CHECK(d.engine == r.engine);
  CHECK(d.tensor == r.tensor);
  CHECK(d.total == r.total);
  CHECK(d.offset == r.offset);
  CHECK(d.want == r.want);
}

TEST_CASE("reply header: field positions, little-endian, magic") {
  aisrv_spi_reply_t r{};
  r.state = AISRV_SPI_STATE_READY | AISRV_SPI_STATE_REJECTED;
  r.seq = 9;
  r.error = AISRV_SPI_E_BAD_CRC;
  r.xfer = 0x1234;
  r.length = 16;
  r.status = AISRV_STATUS_ERROR_NO_MODEL;
  r.cmd = 0x05;
  r.frame = 4092;
  r.total = 0x01020304;
  r.offset = 32;
  r.boot = 0xCAFEF00D;
  uint8_t h[AISRV_SPI_HEADER_SIZE];
  aisrv_spi_encode_reply(&r, h);
  const std::vector<uint8_t> expected{0x5A, 0x0A, 0x09, 0x03, 0x34, 0x12, 0x10, 0x00,  // magic state seq error xfer len
                                      0x04, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,  // status cmd
                                      0xFC, 0x0F, 0x00, 0x00, 0x04, 0x03, 0x02, 0x01,  // frame reserved total
                                      0x20, 0x00, 0x00, 0x00, 0x0D, 0xF0, 0xFE, 0xCA};  // offset boot
  CHECK(std::vector<uint8_t>(h, h + sizeof h) == expected);
  aisrv_spi_reply_t d{};
  aisrv_spi_decode_reply(h, &d);
  CHECK(d.state == r.state);
  CHECK(d.error == r.error);
  CHECK(d.xfer == r.xfer);
  CHECK(d.length == r.length);
  CHECK(d.status == r.status);
  CHECK(d.frame == r.frame);
  CHECK(d.total == r.total);
  CHECK(d.offset == r.offset);
  CHECK(d.boot == r.boot);
}

TEST_CASE("a built frame is header, payload, CRC-32 over both; parse gives back the fields and the payload") {
  for (uint16_t len : {0, 1, 3, 4, 255, 4056}) {
    CAPTURE(len);
    std::vector<uint8_t> payload(len);
    for (size_t i = 0; i < len; ++i) payload[i] = static_cast<uint8_t>(i * 7 + 1);
    std::vector<uint8_t> frame(AISRV_SPI_OVERHEAD + len);
    const auto r = sample_request(len);
    REQUIRE(aisrv_spi_build_request(&r, payload.data(), frame.data()) == frame.size());
    const uint32_t crc = aisrv_crc32(0, frame.data(), AISRV_SPI_HEADER_SIZE + len);
    CHECK(frame[AISRV_SPI_HEADER_SIZE + len] == (crc & 0xFF));
    CHECK(frame[AISRV_SPI_HEADER_SIZE + len + 3] == (crc >> 24));
    // the frame followed by filler, as the slave receives it
    std::vector<uint8_t> rx = frame;
    rx.resize(frame.size() + 40, AISRV_SPI_FILLER);
    aisrv_spi_request_t d{};
    const uint8_t* p = nullptr;
    REQUIRE(aisrv_spi_parse_request(rx.data(), rx.size(), 4056, &d, &p) == AISRV_SPI_E_NONE);
    CHECK(d.length == len);
    CHECK(std::vector<uint8_t>(p, p + len) == payload);
  }
}

TEST_CASE("every single-bit error in a frame is caught") {
  std::vector<uint8_t> payload(60);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> frame(AISRV_SPI_OVERHEAD + payload.size());
  auto r = sample_request(static_cast<uint16_t>(payload.size()));
  aisrv_spi_build_request(&r, payload.data(), frame.data());
  std::set<int> outcomes;
  for (size_t bit = 0; bit < frame.size() * 8; ++bit) {
    auto bad = frame;
    bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    aisrv_spi_request_t d{};
    const auto e = aisrv_spi_parse_request(bad.data(), bad.size(), 4056, &d, nullptr);
    CAPTURE(bit);
    CHECK(e != AISRV_SPI_E_NONE);
    outcomes.insert(e);
  }
  // a flipped magic, a length beyond the bytes, and everything else by the CRC
  CHECK(outcomes.count(AISRV_SPI_E_BAD_MAGIC));
  CHECK(outcomes.count(AISRV_SPI_E_BAD_LENGTH));
  CHECK(outcomes.count(AISRV_SPI_E_BAD_CRC));
}

TEST_CASE("replies are checked the same way") {
  aisrv_spi_reply_t r{};
  r.state = AISRV_SPI_STATE_READY;
  r.length = 5;
  r.total = 5;
  const uint8_t answer[5] = {1, 2, 3, 4, 5};
  std::vector<uint8_t> frame(AISRV_SPI_OVERHEAD + 5);
  aisrv_spi_build_reply(&r, answer, frame.data());
  aisrv_spi_reply_t d{};
  const uint8_t* a = nullptr;
  REQUIRE(aisrv_spi_parse_reply(frame.data(), frame.size(), 100, &d, &a) == AISRV_SPI_E_NONE);
  CHECK(std::vector<uint8_t>(a, a + 5) == std::vector<uint8_t>(answer, answer + 5));
  frame[AISRV_SPI_HEADER_SIZE + 2] ^= 0x40;
  CHECK(aisrv_spi_parse_reply(frame.data(), frame.size(), 100, &d, &a) == AISRV_SPI_E_BAD_CRC);
  frame[0] = AISRV_SPI_MAGIC_REQUEST;  // a request is not a reply
  CHECK(aisrv_spi_parse_reply(frame.data(), frame.size(), 100, &d, &a) == AISRV_SPI_E_BAD_MAGIC);
}

TEST_CASE("malformed receptions: too short, filler only, length past the bytes or the chunk, bad type") {
  std::vector<uint8_t> frame(AISRV_SPI_OVERHEAD + 8);
  auto r = sample_request(8);
  const uint8_t payload[8] = {};
  aisrv_spi_build_request(&r, payload, frame.data());
  aisrv_spi_request_t d{};
  for (size_t n = 0; n < AISRV_SPI_OVERHEAD; ++n)
    CHECK(aisrv_spi_parse_request(frame.data(), n, 4056, &d, nullptr) == AISRV_SPI_E_NO_FRAME);
  // a CS window cut one byte short of the CRC
  CHECK(aisrv_spi_parse_request(frame.data(), frame.size() - 1, 4056, &d, nullptr) == AISRV_SPI_E_BAD_LENGTH);
  // the chunk is larger than the negotiated one
  CHECK(aisrv_spi_parse_request(frame.data(), frame.size(), 7, &d, nullptr) == AISRV_SPI_E_BAD_LENGTH);
  const std::vector<uint8_t> filler(64, AISRV_SPI_FILLER);
  CHECK(aisrv_spi_parse_request(filler.data(), filler.size(), 4056, &d, nullptr) == AISRV_SPI_E_NO_FRAME);
  for (uint8_t type : {0, 5, 0x83}) {
    auto t = sample_request(0);
    t.type = type;
    std::vector<uint8_t> f(AISRV_SPI_OVERHEAD);
    aisrv_spi_build_request(&t, nullptr, f.data());
    CHECK(aisrv_spi_parse_request(f.data(), f.size(), 4056, &d, nullptr) == AISRV_SPI_E_BAD_TYPE);
  }
  auto flagged = sample_request(0);
  flagged.flags = 1;
  std::vector<uint8_t> f(AISRV_SPI_OVERHEAD);
  aisrv_spi_build_request(&flagged, nullptr, f.data());
  CHECK(aisrv_spi_parse_request(f.data(), f.size(), 4056, &d, nullptr) == AISRV_SPI_E_BAD_TYPE);
}

TEST_CASE("chunk arithmetic for every length around chunk boundaries") {
  CHECK(aisrv_spi_chunk_size(AISRV_SPI_DEFAULT_FRAME) == 4056);
  CHECK(aisrv_spi_chunk_size(AISRV_SPI_MIN_FRAME) == 28);
  CHECK(aisrv_spi_chunk_size(AISRV_SPI_MIN_FRAME - 1) == 0);
  CHECK(aisrv_spi_chunk_size(AISRV_SPI_MAX_FRAME) == 65499);
  CHECK(aisrv_spi_frame_count(10, 0) == 0);
  for (uint32_t chunk : {28u, 220u, 4056u}) {
    for (uint32_t k = 0; k <= 4; ++k) {
      for (int d = -2; d <= 2; ++d) {
        const int64_t total_signed = int64_t{k} * chunk + d;
        if (total_signed < 0) continue;
        const auto total = static_cast<uint32_t>(total_signed);
        CAPTURE(chunk);
        CAPTURE(total);
        const uint32_t frames = aisrv_spi_frame_count(total, chunk);
        CHECK(frames == (total == 0 ? 1 : (total + chunk - 1) / chunk));
        // the chunks tile [0, total) exactly, each at most `chunk`, only the last one short
        uint32_t covered = 0;
        for (uint32_t i = 0; i < frames; ++i) {
          const uint32_t n = aisrv_spi_chunk_at(total, chunk, i * chunk);
          CHECK(n <= chunk);
          if (i + 1 < frames) CHECK(n == chunk);
          if (total > 0) CHECK(n > 0);
          covered += n;
        }
        CHECK(covered == total);
        CHECK(aisrv_spi_chunk_at(total, chunk, frames * chunk) == 0);
      }
    }
  }
}

TEST_CASE("every link error has a name and a meaning") {
  for (unsigned e = AISRV_SPI_E_NONE; e <= AISRV_SPI_E_TIMEOUT; ++e) {
    CHECK(std::string(aisrv_spi_error_name(e)) != "UNKNOWN");
    CHECK(std::string(aisrv_spi_error_text(e)).size() > 10);
  }
  CHECK(std::string(aisrv_spi_error_name(AISRV_SPI_E_BAD_CRC)) == "BAD_CRC");
  CHECK(std::string(aisrv_spi_error_name(200)) == "UNKNOWN");
}
