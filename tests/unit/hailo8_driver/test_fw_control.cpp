// aisrv tests — the firmware control protocol: golden request bytes built by hand from the facts (big-endian header
// fields, parameter framing), MD5 against values computed with coreutils md5sum, the per-opcode CPU table, response
// validation (short, overlong, bad version/ack/opcode, truncated parameters), and IDENTIFY / GET_DEVICE_INFORMATION
// decoding.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "aisrv/engine/hailo8/common/digest.hpp"
#include "aisrv/engine/hailo8/common/printable_text.hpp"
#include "aisrv/engine/hailo8/driver/fw_control.hpp"
#include "aisrv/engine/hailo8/driver/identity.hpp"
#include "hailo_driver_double.hpp"

using namespace aisrv;
using namespace aisrv::engine::hailo8::driver;
namespace common = aisrv::engine::hailo8::common;
using aisrv::test::control_response;

TEST_CASE("IDENTIFY and GET_DEVICE_INFORMATION requests, byte for byte") {
  // version 2, flags 0, sequence 0, opcode, parameter_count 0 — five big-endian u32
  const std::vector<uint8_t> identify{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  auto r = build_control_request(0, {});
  REQUIRE(r.ok());
  CHECK(*r == identify);
  const std::vector<uint8_t> info{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x33, 0, 0, 0, 0};
  CHECK(*build_control_request(51, {}) == info);
  // MD5 of both, from `printf … | md5sum`
  CHECK(common::hex(*common::md5(identify)) == "6a3d1c7fe84cfe2f184d69c2376dcc43");
  CHECK(common::hex(*common::md5(info)) == "805c6653e07cf1b7bda24ea40625d6ae");
  CHECK(common::hex(*common::md5({})) == "d41d8cd98f00b204e9800998ecf8427e");
}

TEST_CASE("request parameters are {u32 BE length, bytes}; payload bytes are copied as given") {
  // CHANGE_CONTEXT_SWITCH_STATUS reset: state 0 (u8), application 255 (u8), batch size 0 (u16), batch count 0 (u16);
  // sequence 7 to see its position
  const std::vector<std::vector<uint8_t>> params{{0x00}, {0xFF}, {0x00, 0x00}, {0x34, 0x12}};
  const std::vector<uint8_t> want{0, 0, 0, 2,  0, 0, 0, 0,  0, 0, 0, 7,  0, 0, 0, 37,  0, 0, 0, 4,  //
                                  0, 0, 0, 1, 0x00,                                                  //
                                  0, 0, 0, 1, 0xFF,                                                  //
                                  0, 0, 0, 2, 0x00, 0x00,                                            //
                                  0, 0, 0, 2, 0x34, 0x12};
  auto r = build_control_request(37, params, 7);
  REQUIRE(r.ok());
  CHECK(*r == want);
}

TEST_CASE("requests over 1500 bytes and unknown opcodes are refused") {
  const std::vector<std::vector<uint8_t>> fits{std::vector<uint8_t>(1500 - 20 - 4)};
  CHECK(build_control_request(1, fits).ok());
  const std::vector<std::vector<uint8_t>> big{std::vector<uint8_t>(1500 - 20 - 3)};
  auto r = build_control_request(1, big);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("1501 bytes, the limit is 1500") != std::string::npos);
  auto u = build_control_request(80, {});
  REQUIRE_FALSE(u);
  CHECK(u.error().code == Errc::invalid_argument);
}

TEST_CASE("each opcode goes to its CPU: context-switch opcodes to the core CPU (1), the rest to the app CPU (0)") {
  struct Case {
    uint32_t opcode;
    const char* name;
    CpuId cpu;
    bool critical;
  };
  for (const Case& c : {Case{0, "IDENTIFY", CpuId::cpu0_app, true}, Case{1, "WRITE_MEMORY", CpuId::cpu0_app, false},
                        Case{7, "RESET", CpuId::cpu0_app, true},
                        Case{32, "CONTEXT_SWITCH_SET_NETWORK_GROUP_HEADER", CpuId::cpu1_core, false},
                        Case{33, "CONTEXT_SWITCH_SET_CONTEXT_INFO", CpuId::cpu1_core, false},
                        Case{36, "DOWNLOAD_CONTEXT_ACTION_LIST", CpuId::cpu1_core, false},
                        Case{37, "CHANGE_CONTEXT_SWITCH_STATUS", CpuId::cpu1_core, false},
                        Case{41, "SET_DATAFLOW_INTERRUPT", CpuId::cpu1_core, false},
                        Case{42, "CORE_IDENTIFY", CpuId::cpu1_core, true},
                        Case{51, "GET_DEVICE_INFORMATION", CpuId::cpu0_app, false},
                        Case{54, "GET_CONTEXT_SWITCH_MAIN_HEADER", CpuId::cpu1_core, false},
                        Case{71, "CONTEXT_SWITCH_CLEAR_CONFIGURED_APPS", CpuId::cpu1_core, false},
                        Case{72, "GET_HW_CONSTS", CpuId::cpu1_core, false},
                        Case{74, "CHANGE_HW_INFER_STATUS", CpuId::cpu1_core, false},
                        Case{75, "SIGNAL_DRIVER_DOWN", CpuId::cpu1_core, false},
                        Case{79, "CONTEXT_SWITCH_SIGNAL_CACHE_UPDATED", CpuId::cpu1_core, false}}) {
    auto t = opcode_traits(c.opcode);
    REQUIRE(t.has_value());
    CHECK(t->name == c.name);
    CHECK(t->cpu == c.cpu);
    CHECK(t->critical == c.critical);
  }
  CHECK_FALSE(opcode_traits(80).has_value());
}

TEST_CASE("responses: header-only, with parameters, and firmware status") {
  auto bare = control_response(0, {});
  bare.resize(24);  // header only: no parameter count at all
  auto r = parse_control_response(bare, 0);
  REQUIRE(r.ok());
  CHECK(r->params.empty());

  auto with = parse_control_response(control_response(51, {{1, 2, 3}, {}, {9}}), 51);
  REQUIRE(with.ok());
  REQUIRE(with->params.size() == 3);
  CHECK(with->params[0] == std::vector<uint8_t>{1, 2, 3});
  CHECK(with->params[1].empty());
  CHECK(with->params[2] == std::vector<uint8_t>{9});

  auto refused = parse_control_response(control_response(51, {}, 0x11, 0x22), 51);
  REQUIRE(refused.ok());
  auto s = check_control_status(*refused);
  REQUIRE_FALSE(s);
  CHECK(s.error().message == "firmware refused GET_DEVICE_INFORMATION: major status 0x11, minor status 0x22");
}

TEST_CASE("malformed responses are refused with the reason") {
  auto expect = [](const std::vector<uint8_t>& bytes, uint32_t opcode, const std::string& text) {
    auto r = parse_control_response(bytes, opcode);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::protocol_error);
    CHECK_MESSAGE(r.error().message.find(text) != std::string::npos, r.error().message);
  };
  auto ok = control_response(0, {{1, 2, 3, 4}});
  expect(std::vector<uint8_t>(ok.begin(), ok.begin() + 23), 0, "23 bytes, shorter than the 24 byte header");
  expect(control_response(0, {}, 0, 0, 1, 1), 0, "protocol version 1 (expected 2)");
  expect(control_response(0, {}, 0, 0, 0), 0, "lacks the ack flag");
  expect(control_response(7, {}), 0, "firmware answered RESET to a IDENTIFY request");
  // overlong: 3 bytes after the last parameter
  auto longer = ok;
  longer.insert(longer.end(), {0xAA, 0xBB, 0xCC});
  expect(longer, 0, "3 bytes after its 1 parameters");
  // truncated: the parameter claims 4 bytes, 2 remain
  expect(std::vector<uint8_t>(ok.begin(), ok.end() - 2), 0, "parameter 0 claims 4 bytes, only 2 remain");
  // a count of 2 with one parameter present
  auto counted = ok;
  counted[27] = 2;
  expect(counted, 0, "ends before parameter 1 of 2");
  // 2 bytes of a parameter count
  auto stub = control_response(0, {});
  stub.resize(26);
  expect(stub, 0, "ends inside the parameter count");
}

TEST_CASE("IDENTIFY decoding") {
  // revision word: bit 29 (extended context switch buffer) + revision 5; release build
  auto r = parse_control_response(control_response(0, test::identify_params(4, 23, (1u << 29) | 5)), 0);
  REQUIRE(r.ok());
  auto id = parse_identify(*r);
  REQUIRE(id.ok());
  CHECK(id->protocol_version == 2);
  CHECK(id->firmware.major == 4);
  CHECK(id->firmware.minor == 23);
  CHECK(id->firmware.revision == 5);
  CHECK(id->firmware.release);
  CHECK(id->firmware.extended_context_switch_buffer);
  CHECK(id->firmware.str() == "4.23.5 (release,app,extended context switch buffer)");
  CHECK(id->board_name == "Hailo-8");
  CHECK(id->device_architecture == 1);
  CHECK(architecture_name(id->device_architecture) == "HAILO8");
  // hailo_device_architecture_t, named by the HEF model's table (one list of these names).
  CHECK(architecture_name(0) == "HAILO8_A0");
  CHECK(architecture_name(2) == "HAILO8L");
  CHECK(architecture_name(3) == "HAILO15H");
  CHECK(architecture_name(6) == "HAILO10H");
  CHECK(architecture_name(7) == "MARS");
  CHECK(architecture_name(8) == "unknown");
  CHECK(id->serial_number == "HLLWM2B233500123");
  CHECK(id->part_number == "HM218B1C2FAE");
  CHECK(id->product_name == "HAILO-8 AI ACC M.2 M KEY MODULE EXT TEMP");

  // development build (bit 30)
  auto dev = parse_identify(*parse_control_response(control_response(0, test::identify_params(4, 20, 1u << 30)), 0));
  REQUIRE(dev.ok());
  CHECK_FALSE(dev->firmware.release);
  CHECK(dev->firmware.str() == "4.20.0 (develop,app)");

  // core firmware flag (bit 27) on an app-CPU answer
  auto core = parse_identify(*parse_control_response(control_response(0, test::identify_params(4, 23, 1u << 27)), 0));
  REQUIRE_FALSE(core);
  CHECK(core.error().message.find("core-CPU firmware") != std::string::npos);
}

TEST_CASE("IDENTIFY decoding walks parameters by their lengths and checks them") {
  // shorter strings than the struct's slots are fine
  auto params = test::identify_params();
  params[3] = test::text_bytes("H8");
  params[5] = {};
  auto id = parse_identify(*parse_control_response(control_response(0, params), 0));
  REQUIRE(id.ok());
  CHECK(id->board_name == "H8");
  CHECK(id->serial_number.empty());
  CHECK(id->part_number == "HM218B1C2FAE");

  auto too_long = test::identify_params();
  too_long[3] = std::vector<uint8_t>(33, 'x');
  auto e1 = parse_identify(*parse_control_response(control_response(0, too_long), 0));
  REQUIRE_FALSE(e1);
  CHECK(e1.error().message == "IDENTIFY response: board name is 33 bytes, at most 32 allowed");

  auto bad_fw = test::identify_params();
  bad_fw[1].resize(8);
  auto e2 = parse_identify(*parse_control_response(control_response(0, bad_fw), 0));
  REQUIRE_FALSE(e2);
  CHECK(e2.error().message == "IDENTIFY response: firmware version is 8 bytes, expected 12");

  auto missing = test::identify_params();
  missing.resize(6);
  auto e3 = parse_identify(*parse_control_response(control_response(0, missing), 0));
  REQUIRE_FALSE(e3);
  CHECK(e3.error().message == "IDENTIFY response has 6 parameters, part number (parameter 6) is missing");
}

TEST_CASE("device strings stop at NUL and hide control characters") {
  const std::vector<uint8_t> raw{'A', 0x1B, '[', '2', 'J', 'z', 0, 'h', 'i'};
  CHECK(common::printable_text(std::span<const uint8_t>(raw)) == "A?[2Jz");
}

TEST_CASE("GET_DEVICE_INFORMATION decoding") {
  auto info = parse_device_information(*parse_control_response(control_response(51, test::device_information_params()), 51));
  REQUIRE(info.ok());
  CHECK(info->neural_network_core_clock_rate == 400000000u);
  CHECK(info->supported_features == 0x04);
  CHECK(info->supported_features_text() == "PCIe");
  CHECK(info->boot_source_name() == "PCIE");
  CHECK(info->lcs == 3);
  CHECK(info->unit_level_tracking_id.size() == 12);
  CHECK(info->unit_level_tracking_id[0] == 0x11);
  auto params = test::device_information_params();
  params[1].resize(4);
  auto bad = parse_device_information(*parse_control_response(control_response(51, params), 51));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "GET_DEVICE_INFORMATION response: supported features is 4 bytes, expected 8");
}
