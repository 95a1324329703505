// Unit tests: the command and status tables, header codec, CRC32, error mapping.
#include <doctest/doctest.h>
#include <zlib.h>

#include <set>
#include <string>

#include "aisrv/protocol/crc32.h"
#include "aisrv/protocol/protocol.hpp"

using namespace aisrv;
using namespace aisrv::protocol;

TEST_CASE("command table holds the XMOS seed values") {
  CHECK(static_cast<uint32_t>(Command::NONE) == 0x00);
  CHECK(static_cast<uint32_t>(Command::GET_STATUS) == 0x01);
  CHECK(static_cast<uint32_t>(Command::GET_INPUT_TENSOR) == 0x03);
  CHECK(static_cast<uint32_t>(Command::SET_INPUT_TENSOR) == 0x83);
  CHECK(static_cast<uint32_t>(Command::SET_SERVER) == 0x04);
  CHECK(static_cast<uint32_t>(Command::START_INFER) == 0x84);
  CHECK(static_cast<uint32_t>(Command::GET_OUTPUT_TENSOR) == 0x05);
  CHECK(static_cast<uint32_t>(Command::SET_MODEL_PRIMARY) == 0x86);
  CHECK(static_cast<uint32_t>(Command::SET_MODEL_SECONDARY) == 0x87);
  CHECK(static_cast<uint32_t>(Command::SET_MODEL_PRIMARY_FLASH) == 0x96);
  CHECK(static_cast<uint32_t>(Command::SET_MODEL_SECONDARY_FLASH) == 0x97);
  CHECK(static_cast<uint32_t>(Command::GET_SPEC) == 0x08);
  CHECK(static_cast<uint32_t>(Command::GET_TIMINGS) == 0x09);
  CHECK(static_cast<uint32_t>(Command::GET_INPUT_TENSOR_LENGTH) == 0x0A);
  CHECK(static_cast<uint32_t>(Command::GET_OUTPUT_TENSOR_LENGTH) == 0x0B);
  CHECK(static_cast<uint32_t>(Command::START_ACQUIRE_SINGLE) == 0x8C);
  CHECK(static_cast<uint32_t>(Command::START_ACQUIRE_STREAM) == 0x8E);
  CHECK(static_cast<uint32_t>(Command::START_ACQUIRE_SET_I2C) == 0x8F);
  CHECK(static_cast<uint32_t>(Command::GET_ACQUIRE_MODE) == 0x0E);
  CHECK(static_cast<uint32_t>(Command::GET_SENSOR_TENSOR) == 0x0D);
  CHECK(static_cast<uint32_t>(Command::SET_SENSOR_TENSOR) == 0x8D);
  CHECK(static_cast<uint32_t>(Command::GET_DEBUG_LOG) == 0x0F);
  CHECK(static_cast<uint32_t>(Command::GET_ID) == 0x10);
  CHECK(static_cast<uint32_t>(Command::GET_OUTPUT_GPIO_EN) == 0x11);
  CHECK(static_cast<uint32_t>(Command::SET_OUTPUT_GPIO_EN) == 0x91);
  CHECK(static_cast<uint32_t>(Command::GET_OUTPUT_GPIO_THRESH) == 0x12);
  CHECK(static_cast<uint32_t>(Command::SET_OUTPUT_GPIO_THRESH) == 0x92);
  CHECK(static_cast<uint32_t>(Command::GET_OUTPUT_GPIO_MODE) == 0x13);
  CHECK(static_cast<uint32_t>(Command::SET_OUTPUT_GPIO_MODE) == 0x93);
  CHECK(static_cast<uint32_t>(Command::HELLO) == 0x55);
}

TEST_CASE("command table: unique values and names, kind matches the 0x80 bit") {
  std::set<uint32_t> values;
  std::set<std::string> names;
  for (unsigned i = 0; i < aisrv_command_count(); ++i) {
    const auto* row = aisrv_command_at(i);
    REQUIRE(row != nullptr);
    CHECK(values.insert(row->value).second);
    CHECK(names.insert(row->name).second);
    CHECK((row->kind != AISRV_KIND_GET) == is_set(row->value));
    CHECK(host_sends(row->value) == (row->kind != AISRV_KIND_GET));
    CHECK(server_returns(row->value) == (row->kind != AISRV_KIND_SET));
    CHECK(command_by_name(row->name) == row->value);
    CHECK(std::string(aisrv_command_name(row->value)) == row->name);
  }
  CHECK(aisrv_command_at(aisrv_command_count()) == nullptr);
  CHECK(!is_known(0x42));
  // INFER is the one command that carries data both ways.
  CHECK(host_sends(AISRV_CMD_INFER));
  CHECK(server_returns(AISRV_CMD_INFER));
  CHECK(!server_returns(AISRV_CMD_START_INFER));
  // Unknown opcodes follow their 0x80 bit (the framing of a command the server will refuse).
  CHECK(host_sends(0xC7));
  CHECK(!server_returns(0xC7));
  CHECK(server_returns(0x42));
  CHECK(command_name(0x42) == "UNKNOWN");
  CHECK(command_by_name("get_spec") == 0x08u);
  CHECK(!command_by_name("NOPE"));
}

TEST_CASE("status names and error mapping round-trip") {
  CHECK(status_name(0) == "OKAY");
  CHECK(status_name(AISRV_STATUS_ERROR_NO_MODEL) == "ERROR_NO_MODEL");
  CHECK(status_names(AISRV_STATUS_BUSY | AISRV_STATUS_ERROR_BAD_CMD) == "BUSY|ERROR_BAD_CMD");
  CHECK(status_name(0x80000000u) == "UNKNOWN");
  for (Errc e : {Errc::no_model, Errc::model_error, Errc::infer_error, Errc::bad_command, Errc::bad_engine,
                 Errc::bad_tensor, Errc::bad_length, Errc::not_supported, Errc::flash_error, Errc::crc_error,
                 Errc::cancelled, Errc::internal, Errc::model_changed, Errc::denied, Errc::limit}) {
    const uint32_t bit = to_status(e);
    CHECK((bit & AISRV_STATUS_ERROR_MASK) == bit);
    CHECK(from_status(bit) == e);
  }
  CHECK(to_status(Errc::timeout) == AISRV_STATUS_ERROR_INTERNAL);
  CHECK(from_status(AISRV_STATUS_BUSY) == Errc::internal);
}

TEST_CASE("header is 12 little-endian bytes") {
  std::array<uint8_t, 12> buf{};
  encode_header(Header{0x83, 2, 0x01020304}, buf);
  const std::array<uint8_t, 12> expect{0x83, 0, 0, 0, 2, 0, 0, 0, 0x04, 0x03, 0x02, 0x01};
  CHECK(buf == expect);
  const Header h = decode_header(buf);
  CHECK(h.cmd == 0x83);
  CHECK(h.engine == 2);
  CHECK(h.tensor == 0x01020304);
}

TEST_CASE("crc32 equals zlib's crc32 for any split") {
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);
  CHECK(aisrv_crc32(0, "123456789", 9) == 0xCBF43926u);  // the standard check value
  for (size_t n : {0, 1, 3, 64, 999, 1000}) {
    const uint32_t z = static_cast<uint32_t>(crc32(0, data.data(), static_cast<uInt>(n)));
    CHECK(aisrv_crc32(0, data.data(), n) == z);
    const size_t half = n / 2;
    CHECK(aisrv_crc32(aisrv_crc32(0, data.data(), half), data.data() + half, n - half) == z);
  }
}

TEST_CASE("Result carries a value or an error") {
  Result<int> good = 5;
  CHECK(good.ok());
  CHECK(*good == 5);
  Result<int> bad = make_error(Errc::bad_tensor, "index {} of {}", 3, 2);
  CHECK(!bad);
  CHECK(bad.error().code == Errc::bad_tensor);
  CHECK(bad.error().message == "index 3 of 2");
  auto chain = [](Result<int> r) -> Result<int> { return AISRV_TRY(std::move(r)) + 1; };
  CHECK(*chain(1) == 2);
  CHECK(chain(bad).error().code == Errc::bad_tensor);
}

#include "aisrv/protocol/endpoint.hpp"

TEST_CASE("socket endpoints") {
  auto u = parse_socket_endpoint("unix:/run/aisrv.sock");
  REQUIRE(u.ok());
  CHECK(u->kind == SocketEndpoint::Kind::unix_socket);
  CHECK(u->path == "/run/aisrv.sock");
  auto t = parse_socket_endpoint("tcp:7000");
  REQUIRE(t.ok());
  CHECK(t->host == "127.0.0.1");
  CHECK(t->port == 7000);
  auto h = parse_socket_endpoint("tcp:0.0.0.0:7001");
  REQUIRE(h.ok());
  CHECK(h->host == "0.0.0.0");
  auto v6 = parse_socket_endpoint("tcp:[::1]:7002");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->to_string() == "tcp:[::1]:7002");
  for (auto bad : {"unix:", "tcp:", "tcp:host:", "tcp:70000", "tcp:x:y", "udp:1", "tcp:[::1]7"})
    CHECK(!parse_socket_endpoint(bad).ok());
}
