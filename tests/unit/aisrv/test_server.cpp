// Unit tests: the command interpreter with the test-double backend — every command answered, every error case
// gives its status and a debug-log line and changes no state, chaining, cancel, per-engine serialisation.
#include <doctest/doctest.h>

#include <cstring>
#include <future>
#include <thread>

#include "aisrv/protocol/payloads.hpp"
#include "aisrv/server.hpp"
#include "recording_gpio.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using namespace aisrv::protocol;
using aisrv::server::Server;
using aisrv::test::make_test_model;
using aisrv::test::TestModelSpec;

namespace {

// A server and one session on it (the client these tests play).
struct Harness {
  std::unique_ptr<Server> server;
  std::shared_ptr<server::Session> session;
  Server* operator->() const { return server.get(); }
};

Harness make_server(size_t engines = 2, server::ServerOptions options = {}) {
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  for (size_t i = 0; i < engines; ++i) backends.push_back(std::make_unique<test::TestBackend>());
  auto s = Server::create(std::move(options), std::move(backends));
  REQUIRE(s.ok());
  Harness h{std::move(s).value(), nullptr};
  h.session = h->open_session(server::Peer::of(server::Trust::process, "local", "test"));
  return h;
}

Response call(Harness& s, Command cmd, uint32_t engine = 0, uint32_t tensor = 0, std::span<const uint8_t> payload = {}) {
  Response r;
  s->handle(*s.session, Request{Header{static_cast<uint32_t>(cmd), engine, tensor}, payload}, r);
  return r;
}

std::string log_of(Harness& s, uint32_t engine) {
  auto r = call(s, Command::GET_DEBUG_LOG, engine);
  return std::string(r.payload.begin(), r.payload.end());
}

uint32_t u32_of(const Response& r) { return *decode_u32(r.payload); }

}  // namespace

TEST_CASE("every command in the table is answered, never a silent success without a model") {
  auto s = make_server(1);
  for (unsigned i = 0; i < aisrv_command_count(); ++i) {
    const auto* row = aisrv_command_at(i);
    CAPTURE(row->name);
    Response r;
    s->handle(*s.session, Request{Header{row->value, 0, 0}, {}}, r);
    const auto cmd = static_cast<Command>(row->value);
    const bool fine_without_model = cmd == Command::GET_STATUS || cmd == Command::GET_ID || cmd == Command::HELLO ||
                                    cmd == Command::GET_VERSION || cmd == Command::GET_DEBUG_LOG ||
                                    cmd == Command::GET_ENGINE_INFO || cmd == Command::CANCEL_INFER ||
                                    cmd == Command::GET_SESSION_INFO || cmd == Command::GET_SERVER_STATS ||
                                    cmd == Command::AUTH;
    if (fine_without_model) {
      CHECK(r.status == AISRV_STATUS_OKAY);
    } else {
      CHECK(r.status != AISRV_STATUS_OKAY);
      CHECK((r.status & AISRV_STATUS_ERROR_MASK) == r.status);
    }
  }
}

TEST_CASE("unknown opcode and bad engine: status, log line, connection state intact") {
  auto s = make_server(2);
  Response r;
  s->handle(*s.session, Request{Header{0x42, 0, 0}, {}}, r);
  CHECK(r.status == AISRV_STATUS_ERROR_BAD_CMD);
  CHECK(log_of(s, 0).find("unknown opcode 0x42") != std::string::npos);
  s->handle(*s.session, Request{Header{0x1234567, 9, 0}, {}}, r);
  CHECK(r.status == AISRV_STATUS_ERROR_BAD_CMD);
  CHECK(log_of(s, AISRV_ENGINE_SERVER).find("unknown opcode 0x1234567") != std::string::npos);

  r = call(s, Command::GET_SPEC, 7);
  CHECK(r.status == AISRV_STATUS_ERROR_BAD_ENGINE);
  CHECK(r.payload.empty());
  CHECK(log_of(s, AISRV_ENGINE_SERVER).find("engine 7 does not exist (the server has 2 engines)") !=
        std::string::npos);
  CHECK(call(s, Command::GET_DEBUG_LOG, 7).status == AISRV_STATUS_ERROR_BAD_ENGINE);
  CHECK(call(s, Command::HELLO).status == AISRV_STATUS_OKAY);
}

TEST_CASE("load, write input, infer, read output, spec, timings") {
  auto s = make_server(1);
  const auto model = make_test_model(TestModelSpec{{8}, {8, 3}, 5, 0});
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, model).status == AISRV_STATUS_OKAY);

  auto spec = decode_spec(call(s, Command::GET_SPEC).payload);
  REQUIRE(spec.ok());
  CHECK(spec->input_length == 8);
  CHECK(spec->output_length == 8);
  CHECK(spec->timings_length == 20);
  CHECK(decode_spec(call(s, Command::GET_SPEC, 0, 1).payload)->output_length == 3);
  CHECK(decode_spec(call(s, Command::GET_SPEC, 0, 1).payload)->input_length == 0);
  CHECK(call(s, Command::GET_SPEC, 0, 2).status == AISRV_STATUS_ERROR_BAD_TENSOR);
  CHECK(u32_of(call(s, Command::GET_INPUT_TENSOR_LENGTH)) == 8);
  CHECK(u32_of(call(s, Command::GET_OUTPUT_TENSOR_LENGTH, 0, 1)) == 3);

  // no output before the first inference
  CHECK(call(s, Command::GET_OUTPUT_TENSOR).status == AISRV_STATUS_ERROR_INFER_ERR);

  const std::vector<uint8_t> in{1, 2, 3, 4, 5, 6, 7, 8};
  REQUIRE(call(s, Command::SET_INPUT_TENSOR, 0, 0, in).status == AISRV_STATUS_OKAY);
  CHECK(call(s, Command::GET_INPUT_TENSOR).payload == in);
  REQUIRE(call(s, Command::START_INFER).status == AISRV_STATUS_OKAY);
  CHECK(call(s, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(in, 8, 0));
  CHECK(call(s, Command::GET_OUTPUT_TENSOR, 0, 1).payload == test::expected_output(in, 3, 1));
  CHECK(call(s, Command::GET_INPUT_TENSOR).payload == in);  // inputs survive inference

  auto timings = decode_timings(call(s, Command::GET_TIMINGS).payload);
  REQUIRE(timings.ok());
  CHECK(timings->size() == 5);
  auto record = decode_timing_record(call(s, Command::GET_TIMING_RECORD).payload);
  REQUIRE(record.ok());
  CHECK(record->layers.size() == 5);
  CHECK(record->layers[0].op == "TEST_OP");
  CHECK(record->total_ns >= record->compute_ns);

  auto info = decode_tensor_info(call(s, Command::GET_TENSOR_INFO).payload);
  REQUIRE(info.ok());
  CHECK(info->format == "test");
  CHECK(info->model_bytes == model.size());
  CHECK(info->outputs.size() == 2);
  CHECK(info->outputs[1].bytes == 3);
  CHECK(info->inputs[0].zero_point[0] == 3);

  auto einfo = decode_engine_info(call(s, Command::GET_ENGINE_INFO).payload);
  REQUIRE(einfo.ok());
  CHECK(einfo->kind == "test");
  CHECK(einfo->model_loaded);
  CHECK(einfo->inferences == 1);
  CHECK(einfo->model_source == "wire (external)");

  REQUIRE(call(s, Command::UNLOAD_MODEL).status == AISRV_STATUS_OKAY);
  CHECK(call(s, Command::START_INFER).status == AISRV_STATUS_ERROR_NO_MODEL);
  CHECK(call(s, Command::UNLOAD_MODEL).status == AISRV_STATUS_ERROR_NO_MODEL);
}

TEST_CASE("bad inputs change no state and each leaves a log line") {
  auto s = make_server(1);
  REQUIRE(call(s, Command::SET_MODEL_PRIMARY, 0, 0, make_test_model({})).status == 0);
  const std::vector<uint8_t> good{9, 9, 9, 9};
  REQUIRE(call(s, Command::SET_INPUT_TENSOR, 0, 0, good).status == 0);

  const std::vector<uint8_t> short_in{1, 2, 3};
  CHECK(call(s, Command::SET_INPUT_TENSOR, 0, 0, short_in).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(log_of(s, 0).find("input tensor 0 'in0' takes 4 bytes, 3 were sent") != std::string::npos);
  CHECK(call(s, Command::SET_INPUT_TENSOR, 0, 1, good).status == AISRV_STATUS_ERROR_BAD_TENSOR);
  CHECK(call(s, Command::SET_INPUT_TENSOR, 0, 0xFFFFFFFF, good).status == AISRV_STATUS_ERROR_BAD_TENSOR);
  CHECK(call(s, Command::GET_SPEC, 0, 0, good).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(log_of(s, 0).find("GET_SPEC: takes no payload, 4 bytes were sent") != std::string::npos);
  CHECK(call(s, Command::GET_INPUT_TENSOR).payload == good);  // unchanged

  // a refused model leaves the engine without a model, and says why
  const std::vector<uint8_t> junk{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  CHECK(call(s, Command::SET_MODEL_PRIMARY, 0, 0, junk).status == AISRV_STATUS_ERROR_MODEL_ERR);
  CHECK(log_of(s, 0).find("magic 'AIST' missing") != std::string::npos);
  CHECK(call(s, Command::START_INFER).status == AISRV_STATUS_ERROR_NO_MODEL);
  CHECK(call(s, Command::SET_MODEL_PRIMARY).status == AISRV_STATUS_ERROR_MODEL_ERR);  // empty model

  // inference failure
  REQUIRE(call(s, Command::SET_MODEL_PRIMARY, 0, 0, make_test_model({})).status == 0);
  const std::vector<uint8_t> poison{0xEE, 0, 0, 0};
  REQUIRE(call(s, Command::SET_INPUT_TENSOR, 0, 0, poison).status == 0);
  CHECK(call(s, Command::START_INFER).status == AISRV_STATUS_ERROR_INFER_ERR);
  CHECK(log_of(s, 0).find("poisoned input byte 0xEE") != std::string::npos);
  CHECK(call(s, Command::GET_OUTPUT_TENSOR).status == AISRV_STATUS_ERROR_INFER_ERR);
}

TEST_CASE("status word: error bits are sticky until read, then clear") {
  auto s = make_server(1);
  CHECK(u32_of(call(s, Command::GET_STATUS)) == 0);
  CHECK(call(s, Command::START_INFER).status == AISRV_STATUS_ERROR_NO_MODEL);
  CHECK(call(s, Command::GET_SPEC, 0, 0, std::vector<uint8_t>{1}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(u32_of(call(s, Command::GET_STATUS)) == (AISRV_STATUS_ERROR_NO_MODEL | AISRV_STATUS_ERROR_BAD_LENGTH));
  CHECK(u32_of(call(s, Command::GET_STATUS)) == 0);
}

TEST_CASE("sensor and GPIO commands without hardware answer NOT_SUPPORTED and say what is missing") {
  auto s = make_server(1);
  for (auto cmd : {Command::START_ACQUIRE_SINGLE, Command::GET_ACQUIRE_MODE, Command::GET_OUTPUT_GPIO_EN,
                   Command::SET_OUTPUT_GPIO_MODE, Command::SET_SERVER}) {
    CAPTURE(static_cast<uint32_t>(cmd));
    CHECK(call(s, cmd).status == AISRV_STATUS_ERROR_NOT_SUPPORTED);
  }
  const auto log = log_of(s, 0);
  CHECK(log.find("START_ACQUIRE_SINGLE: engine 0 has no sensor configured") != std::string::npos);
  CHECK(log.find("GET_OUTPUT_GPIO_EN: engine 0 has no GPIO outputs configured") != std::string::npos);
}

TEST_CASE("output GPIO: lines follow output tensor 0 after every inference, as XMOS's threshold and max modes") {
  auto rec = std::make_shared<test::GpioRecord>();
  auto lines = std::make_unique<test::RecordingGpio>(3, rec);
  REQUIRE(lines->request().ok());  // as open_gpio_lines does at start-up
  server::ServerOptions o;
  o.gpio.emplace_back(0, std::move(lines));
  auto s = make_server(1, std::move(o));
  CHECK((decode_version(call(s, Command::GET_VERSION).payload)->capabilities & AISRV_CAP_GPIO) != 0);
  CHECK((decode_version(call(s, Command::GET_VERSION).payload)->capabilities & AISRV_CAP_I2C) == 0);
  auto u32 = [](uint32_t v) {
    std::vector<uint8_t> p;
    encode_u32(v, p);
    return p;
  };
  auto levels = [&] {
    std::lock_guard l(rec->mu);
    return rec->levels;
  };
  CHECK(u32_of(call(s, Command::GET_OUTPUT_GPIO_THRESH, 0, 2)) == static_cast<uint32_t>(-128));  // XMOS's default
  CHECK(u32_of(call(s, Command::GET_OUTPUT_GPIO_EN, 0, 1)) == 0);
  CHECK(u32_of(call(s, Command::GET_OUTPUT_GPIO_MODE)) == 0);
  const int32_t thresholds[] = {10, 20, 30};
  for (uint32_t line = 0; line < 3; ++line) {
    REQUIRE(call(s, Command::SET_OUTPUT_GPIO_EN, 0, line, u32(1)).status == 0);
    REQUIRE(call(s, Command::SET_OUTPUT_GPIO_THRESH, 0, line, u32(static_cast<uint32_t>(thresholds[line]))).status ==
            0);
  }
  CHECK(u32_of(call(s, Command::GET_OUTPUT_GPIO_THRESH, 0, 1)) == 20);
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  // The test backend's output 0 is input 0 + 1 (uint8). Threshold mode: line i high when output[i] > threshold i.
  auto infer = [&](std::vector<uint8_t> in) {
    REQUIRE(call(s, Command::SET_INPUT_TENSOR, 0, 0, in).status == 0);
    REQUIRE(call(s, Command::START_INFER).status == 0);
    return levels();
  };
  CHECK(infer({10, 25, 40, 0}) == std::vector<uint8_t>{1, 1, 1});
  CHECK(infer({5, 5, 5, 5}) == std::vector<uint8_t>{0, 0, 0});
  CHECK(infer({9, 19, 35, 0}) == std::vector<uint8_t>{0, 0, 1});  // strictly greater, as XMOS
  // Max mode: only the arg-max's line, if it exceeds its threshold; an arg-max beyond the lines drives none.
  REQUIRE(call(s, Command::SET_OUTPUT_GPIO_MODE, 0, 0, u32(1)).status == 0);
  CHECK(u32_of(call(s, Command::GET_OUTPUT_GPIO_MODE)) == 1);
  CHECK(infer({1, 50, 20, 0}) == std::vector<uint8_t>{0, 1, 0});
  CHECK(infer({1, 2, 3, 90}) == std::vector<uint8_t>{0, 0, 0});
  CHECK(infer({1, 2, 25, 0}) == std::vector<uint8_t>{0, 0, 0});  // arg-max 2, but 26 is not > 30
  CHECK(infer({1, 2, 35, 0}) == std::vector<uint8_t>{0, 0, 1});
  REQUIRE(call(s, Command::SET_OUTPUT_GPIO_EN, 0, 2, u32(0)).status == 0);  // a disabled line stays low
  CHECK(infer({1, 2, 35, 0}) == std::vector<uint8_t>{0, 0, 0});
  // INFER drives the lines too.
  REQUIRE(call(s, Command::SET_OUTPUT_GPIO_MODE, 0, 0, u32(0)).status == 0);
  std::vector<uint8_t> request;
  const std::vector<uint8_t> in{100, 100, 100, 100};
  const std::vector<InferTensor> tensors{InferTensor{0, in}};
  encode_infer_request(tensors, request);
  REQUIRE(call(s, Command::INFER, 0, 0, request).status == 0);
  CHECK(levels() == std::vector<uint8_t>{1, 1, 0});
  // Hostile or wrong values: a clear status and a log line, nothing changes.
  CHECK(call(s, Command::GET_OUTPUT_GPIO_EN, 0, 3).status == AISRV_STATUS_ERROR_BAD_TENSOR);
  CHECK(log_of(s, 0).find("GPIO output 3 does not exist (gpio:test has 3 line(s))") != std::string::npos);
  CHECK(call(s, Command::SET_OUTPUT_GPIO_THRESH, 0, 0, std::vector<uint8_t>{1, 2, 3}).status ==
        AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(call(s, Command::SET_OUTPUT_GPIO_THRESH, 0, 0, std::vector<uint8_t>{3, 2}).status ==
        AISRV_STATUS_ERROR_BAD_TENSOR);  // XMOS's form names line 3 in its payload
  CHECK(call(s, Command::SET_OUTPUT_GPIO_EN, 0, 1, std::vector<uint8_t>{1}).status == AISRV_STATUS_ERROR_BAD_TENSOR);
  CHECK(call(s, Command::SET_OUTPUT_GPIO_EN, 0, 0, std::vector<uint8_t>{1, 0}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(call(s, Command::SET_OUTPUT_GPIO_EN, 0, 0, u32(2)).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(call(s, Command::SET_OUTPUT_GPIO_MODE, 0, 0, u32(2)).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(call(s, Command::SET_OUTPUT_GPIO_MODE, 0, 1, u32(1)).status == AISRV_STATUS_ERROR_BAD_TENSOR);
  CHECK(u32_of(call(s, Command::GET_OUTPUT_GPIO_MODE)) == 0);
  // Unload drives the lines to their idle level (low: a lit LED goes out), then gives them back; a load takes them
  // again (driven low); a line held elsewhere by then is logged.
  REQUIRE(levels() == std::vector<uint8_t>{1, 1, 0});
  const int sets_before = rec->sets;
  REQUIRE(call(s, Command::UNLOAD_MODEL).status == 0);
  CHECK_FALSE(rec->held);
  CHECK(levels() == std::vector<uint8_t>{0, 0, 0});
  CHECK(rec->sets == sets_before + 1);
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  CHECK(rec->held);
  CHECK(levels() == std::vector<uint8_t>{0, 0, 0});
  REQUIRE(call(s, Command::UNLOAD_MODEL).status == 0);
  rec->busy = true;
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  CHECK(log_of(s, 0).find("output GPIO not driven: gpio:test: line 0 is in use by 'other'") != std::string::npos);
  CHECK(infer({100, 100, 100, 100}).size() == 3);  // inference goes on without the lines
  CHECK_FALSE(rec->held);
}

TEST_CASE("output GPIO: a configured idle level (active-low LEDs) at load, for disabled lines, at unload and stop") {
  auto rec = std::make_shared<test::GpioRecord>();
  rec->idle = {1, 0, 1};  // lines 0 and 2 rest high
  auto lines = std::make_unique<test::RecordingGpio>(3, rec);
  REQUIRE(lines->request().ok());
  auto levels = [&] {
    std::lock_guard l(rec->mu);
    return rec->levels;
  };
  CHECK(levels() == std::vector<uint8_t>{1, 0, 1});
  auto u32 = [](uint32_t v) {
    std::vector<uint8_t> p;
    encode_u32(v, p);
    return p;
  };
  {
    server::ServerOptions o;
    o.gpio.emplace_back(0, std::move(lines));
    auto s = make_server(1, std::move(o));
    REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
    CHECK(rec->held);
    CHECK(levels() == std::vector<uint8_t>{1, 0, 1});
    // Line 1 enabled with threshold 10 (the test backend's output is input + 1): the policy drives it; 0 and 2 stay
    // at rest.
    REQUIRE(call(s, Command::SET_OUTPUT_GPIO_EN, 0, 1, u32(1)).status == 0);
    REQUIRE(call(s, Command::SET_OUTPUT_GPIO_THRESH, 0, 1, u32(10)).status == 0);
    auto infer = [&](std::vector<uint8_t> in) {
      REQUIRE(call(s, Command::SET_INPUT_TENSOR, 0, 0, in).status == 0);
      REQUIRE(call(s, Command::START_INFER).status == 0);
      return levels();
    };
    CHECK(infer({0, 20, 0, 0}) == std::vector<uint8_t>{1, 1, 1});
    CHECK(infer({0, 2, 0, 0}) == std::vector<uint8_t>{1, 0, 1});
    // Line 0 enabled too (threshold 50): the policy drives it, low for output 1, high for 61.
    REQUIRE(call(s, Command::SET_OUTPUT_GPIO_EN, 0, 0, u32(1)).status == 0);
    REQUIRE(call(s, Command::SET_OUTPUT_GPIO_THRESH, 0, 0, u32(50)).status == 0);
    CHECK(infer({0, 20, 0, 0}) == std::vector<uint8_t>{0, 1, 1});
    // Unload: back to the idle levels (not low), then released.
    REQUIRE(call(s, Command::UNLOAD_MODEL).status == 0);
    CHECK_FALSE(rec->held);
    CHECK(levels() == std::vector<uint8_t>{1, 0, 1});
    REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
    CHECK(infer({60, 20, 0, 0}) == std::vector<uint8_t>{1, 1, 1});
    CHECK(infer({0, 20, 0, 0}) == std::vector<uint8_t>{0, 1, 1});
  }  // the server stops (daemon shutdown) with the model loaded
  CHECK_FALSE(rec->held);
  CHECK(levels() == std::vector<uint8_t>{1, 0, 1});
}

TEST_CASE("output GPIO: XMOS's payloads (1-byte EN and MODE for every line, 2-byte index + int8 THRESH)") {
  auto rec = std::make_shared<test::GpioRecord>();
  auto lines = std::make_unique<test::RecordingGpio>(4, rec);
  REQUIRE(lines->request().ok());
  server::ServerOptions o;
  o.gpio.emplace_back(0, std::move(lines));
  auto s = make_server(1, std::move(o));
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  // What XMOS's enable_output_gpio / set_output_gpio_mode_max / set_output_gpio_threshold send (tensor 0 each time).
  REQUIRE(call(s, Command::SET_OUTPUT_GPIO_EN, 0, 0, std::vector<uint8_t>{1}).status == 0);
  for (uint32_t line = 0; line < 4; ++line) CHECK(u32_of(call(s, Command::GET_OUTPUT_GPIO_EN, 0, line)) == 1);
  REQUIRE(call(s, Command::SET_OUTPUT_GPIO_MODE, 0, 0, std::vector<uint8_t>{1}).status == 0);
  CHECK(u32_of(call(s, Command::GET_OUTPUT_GPIO_MODE)) == 1);
  for (uint8_t line = 0; line < 4; ++line)
    REQUIRE(call(s, Command::SET_OUTPUT_GPIO_THRESH, 0, 0, std::vector<uint8_t>{line, 50}).status == 0);
  REQUIRE(call(s, Command::SET_OUTPUT_GPIO_THRESH, 0, 0, std::vector<uint8_t>{3, 0xF6}).status == 0);  // int8 -10
  CHECK(u32_of(call(s, Command::GET_OUTPUT_GPIO_THRESH, 0, 2)) == 50);
  CHECK(u32_of(call(s, Command::GET_OUTPUT_GPIO_THRESH, 0, 3)) == static_cast<uint32_t>(-10));
  auto infer = [&](std::vector<uint8_t> in) {
    REQUIRE(call(s, Command::SET_INPUT_TENSOR, 0, 0, in).status == 0);
    REQUIRE(call(s, Command::START_INFER).status == 0);
    std::lock_guard l(rec->mu);
    return rec->levels;
  };
  CHECK(infer({1, 2, 60, 3}) == std::vector<uint8_t>{0, 0, 1, 0});  // output 61 at 2 is the arg-max, > 50
  CHECK(infer({1, 2, 40, 3}) == std::vector<uint8_t>{0, 0, 0, 0});  // 41 is not > 50
  REQUIRE(call(s, Command::SET_OUTPUT_GPIO_MODE, 0, 0, std::vector<uint8_t>{0}).status == 0);  // XMOS's "none"
  CHECK(infer({60, 2, 40, 3}) == std::vector<uint8_t>{1, 0, 0, 1});  // threshold mode: 61 > 50, 4 > -10
  REQUIRE(call(s, Command::SET_OUTPUT_GPIO_EN, 0, 0, std::vector<uint8_t>{0}).status == 0);  // every line off
  CHECK(infer({60, 2, 40, 3}) == std::vector<uint8_t>{0, 0, 0, 0});
  CHECK(call(s, Command::SET_OUTPUT_GPIO_MODE, 0, 0, std::vector<uint8_t>{2}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(call(s, Command::SET_OUTPUT_GPIO_EN, 0, 0, std::vector<uint8_t>{7}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(log_of(s, 0).find("GPIO enable takes 0 or 1, not 7") != std::string::npos);
}

TEST_CASE("output GPIO levels for every element type the policy reads") {
  sensors::GpioPolicy p{{1, 1}, {0, 0}, sensors::GpioMode::threshold};
  TensorInfo t;
  t.dtype = DType::int8;
  CHECK(sensors::gpio_levels(p, t, std::vector<uint8_t>{0xFF, 0x01}) == std::vector<uint8_t>{0, 1});  // -1, 1
  t.dtype = DType::uint8;
  CHECK(sensors::gpio_levels(p, t, std::vector<uint8_t>{0xFF, 0x00}) == std::vector<uint8_t>{1, 0});
  t.dtype = DType::int16;
  CHECK(sensors::gpio_levels(p, t, std::vector<uint8_t>{0x00, 0x80, 0x01, 0x00}) == std::vector<uint8_t>{0, 1});
  t.dtype = DType::float32;
  std::vector<uint8_t> f(8);
  const float v[2] = {0.5f, -0.25f};
  std::memcpy(f.data(), v, 8);
  CHECK(sensors::gpio_levels(p, t, f) == std::vector<uint8_t>{1, 0});
  p.mode = sensors::GpioMode::max;  // the true arg-max, also when every value is negative (XMOS would pick 0)
  p.threshold = {-1000, -1000};
  const float n[2] = {-3.0f, -2.0f};
  std::memcpy(f.data(), n, 8);
  CHECK(sensors::gpio_levels(p, t, f) == std::vector<uint8_t>{0, 1});
  CHECK(sensors::gpio_levels(p, t, std::span<const uint8_t>(f).first(3)) == std::vector<uint8_t>{0, 0});  // no element
  t.dtype = DType::boolean;  // not read: nothing driven
  CHECK(sensors::gpio_levels(p, t, f) == std::vector<uint8_t>{0, 0});
}

TEST_CASE("GPIO specs: CHIP:LINE[,LINE...][:idle=LEVELS]") {
  auto g = sensors::parse_gpio_spec("gpiochip0:17,27");
  REQUIRE(g.ok());
  CHECK(g->chip == "gpiochip0");
  CHECK(g->lines == std::vector<uint32_t>{17, 27});
  CHECK(sensors::parse_gpio_spec("/dev/gpiochip4:3")->chip == "/dev/gpiochip4");
  for (const char* bad : {"gpiochip0", "gpiochip0:", ":1", "gpiochip0:1,", "gpiochip0:1,1", "gpiochip0:x",
                          "gpiochip0:-1"}) {
    CAPTURE(bad);
    CHECK_FALSE(sensors::parse_gpio_spec(bad).ok());
  }
  CHECK(g->idle == std::vector<uint8_t>{0, 0});  // low unless configured
  CHECK(sensors::parse_gpio_spec("gpiochip0:17,27:idle=high")->idle == std::vector<uint8_t>{1, 1});
  CHECK(sensors::parse_gpio_spec("gpiochip0:17,27:idle=low")->idle == std::vector<uint8_t>{0, 0});
  auto mixed = sensors::parse_gpio_spec("cp2112_gpio:0,1,2:idle=1,0,1");
  REQUIRE(mixed.ok());
  CHECK(mixed->chip == "cp2112_gpio");
  CHECK(mixed->lines == std::vector<uint32_t>{0, 1, 2});
  CHECK(mixed->idle == std::vector<uint8_t>{1, 0, 1});
  for (const char* bad : {"gpiochip0:1,2:idle=", "gpiochip0:1,2:idle=on", "gpiochip0:1,2:idle=1",
                          "gpiochip0:1,2:idle=1,0,", "gpiochip0:1,2:idle=1,2", "gpiochip0:1,2:idle=10",
                          "gpiochip0:idle=high", ":idle=1"}) {
    CAPTURE(bad);
    CHECK_FALSE(sensors::parse_gpio_spec(bad).ok());
  }
  auto missing = sensors::open_gpio_lines(*sensors::parse_gpio_spec("/nonexistent/gpiochip9:0"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("cannot open GPIO chip") != std::string::npos);
}

TEST_CASE("version record") {
  auto s = make_server(3);
  auto v = decode_version(call(s, Command::GET_VERSION).payload);
  REQUIRE(v.ok());
  CHECK(v->major == AISRV_PROTOCOL_MAJOR);
  CHECK(v->engines == 3);
  CHECK(v->max_payload == AISRV_MAX_PAYLOAD);
  CHECK((v->capabilities & AISRV_CAP_CANCEL) != 0);
  CHECK(v->server_version.rfind("aisrvd ", 0) == 0);
  CHECK(u32_of(call(s, Command::GET_ID)) == AISRV_SERVER_ID);
}

TEST_CASE("chaining feeds engine 0's outputs into engine 1 and runs it") {
  server::ServerOptions o;
  o.chains = {{0, 1}, {1, 2}};
  auto s = make_server(3, std::move(o));
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {6}})).status == 0);
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 1, 0, make_test_model({{6}, {2}})).status == 0);
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 2, 0, make_test_model({{2}, {5}})).status == 0);
  const std::vector<uint8_t> in{10, 20, 30, 40};
  REQUIRE(call(s, Command::SET_INPUT_TENSOR, 0, 0, in).status == 0);
  REQUIRE(call(s, Command::START_INFER, 0).status == 0);
  const auto out0 = test::expected_output(in, 6, 0);
  const auto out1 = test::expected_output(out0, 2, 0);
  const auto out2 = test::expected_output(out1, 5, 0);
  CHECK(call(s, Command::GET_OUTPUT_TENSOR, 0).payload == out0);
  CHECK(call(s, Command::GET_INPUT_TENSOR, 1).payload == out0);
  CHECK(call(s, Command::GET_OUTPUT_TENSOR, 1).payload == out1);
  CHECK(call(s, Command::GET_OUTPUT_TENSOR, 2).payload == out2);
  CHECK(decode_engine_info(call(s, Command::GET_ENGINE_INFO, 0).payload)->chained_to == "1");

  // a mismatched chain target is reported on the engine that failed, engine 0 still succeeds
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 1, 0, make_test_model({{5}, {2}})).status == 0);
  CHECK(call(s, Command::START_INFER, 0).status == 0);
  CHECK(log_of(s, 1).find("chain delivers 6 bytes for input 0, which takes 5") != std::string::npos);
  CHECK(log_of(s, 0).find("chain to engine 1 failed") != std::string::npos);
}

TEST_CASE("bad chains are refused at start-up") {
  for (auto chains : std::vector<std::vector<std::pair<uint32_t, uint32_t>>>{
           {{0, 5}}, {{1, 1}}, {{0, 1}, {0, 2}}, {{0, 1}, {1, 2}, {2, 0}}}) {
    server::ServerOptions o;
    o.chains = chains;
    std::vector<std::unique_ptr<engine::InferenceBackend>> b;
    for (int i = 0; i < 3; ++i) b.push_back(std::make_unique<test::TestBackend>());
    auto s = Server::create(std::move(o), std::move(b));
    CHECK(!s.ok());
  }
}

TEST_CASE("submit: one engine strictly in turn, engines concurrently, status answers while busy, cancel") {
  auto s = make_server(2);
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}, 50, 2000})).status == 0);
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 1, 0, make_test_model({{4}, {4}, 2, 1000})).status == 0);

  // many concurrent START_INFERs on both engines; the backend throws if called concurrently
  constexpr int kRequests = 6;
  std::vector<Response> responses(kRequests * 2);
  std::vector<std::promise<void>> done(kRequests * 2);
  std::vector<Request> requests;
  for (int i = 0; i < kRequests * 2; ++i)
    requests.push_back(Request{Header{static_cast<uint32_t>(Command::START_INFER), static_cast<uint32_t>(i % 2), 0}, {}});
  // engine 0 runs ~100 ms per inference; make the first one slow enough to observe BUSY and cancel it
  for (int i = 0; i < kRequests * 2; ++i) s->submit(*s.session, requests[i], responses[i], [&done, i] { done[i].set_value(); });

  // engine 1's queue drains while engine 0 is still on its first request
  for (int i = 1; i < kRequests * 2; i += 2) done[i].get_future().wait();
  Response st;
  Request status_req{Header{static_cast<uint32_t>(Command::GET_STATUS), 0, 0}, {}};
  std::promise<void> p;
  s->submit(*s.session, status_req, st, [&] { p.set_value(); });
  p.get_future().wait();  // answered at once, not queued behind engine 0
  CHECK((u32_of(st) & AISRV_STATUS_BUSY) != 0);
  // GET_SERVER_STATS while engine 0 runs its first request: the rest wait in its queue.
  auto busy = decode_server_stats(call(s, Command::GET_SERVER_STATS).payload);
  REQUIRE(busy.ok());
  REQUIRE(busy->engines.size() == 2);
  CHECK((busy->engines[0].state & AISRV_STATUS_BUSY) != 0);
  CHECK(busy->engines[0].queued == kRequests - 1);
  CHECK(busy->engines[0].running_session == s.session->id());
  CHECK(busy->engines[1].inferences == kRequests);
  CHECK(busy->engines[1].queued == 0);

  Response cancel_resp;
  s->handle(*s.session, Request{Header{static_cast<uint32_t>(Command::CANCEL_INFER), 0, 0}, {}}, cancel_resp);
  CHECK(cancel_resp.status == 0);
  for (int i = 0; i < kRequests * 2; i += 2) done[i].get_future().wait();
  int cancelled = 0;
  for (int i = 0; i < kRequests * 2; ++i) {
    if (responses[i].status == AISRV_STATUS_ERROR_CANCELLED) ++cancelled;
    else CHECK(responses[i].status == 0);
  }
  CHECK(cancelled == 1);
  CHECK(log_of(s, 0).find("cancelled at layer") != std::string::npos);
  auto rec = decode_timing_record(call(s, Command::GET_TIMING_RECORD, 0).payload);
  REQUIRE(rec.ok());
  CHECK(rec->queue_ns > 0);  // the last one waited behind the others
  auto stats = decode_server_stats(call(s, Command::GET_SERVER_STATS).payload);
  REQUIRE(stats.ok());
  const auto& e0 = stats->engines[0];
  CHECK(e0.kind == "test");
  CHECK(e0.model_loaded);
  CHECK(e0.inferences == kRequests - 1);
  CHECK(e0.cancelled == 1);
  CHECK(e0.failed == 0);
  CHECK(e0.queued == 0);
  CHECK(e0.running_session == 0);
  CHECK(e0.compute_ns >= (kRequests - 1) * 50 * 2000 * 1000ull);  // 50 layers x 2 ms each, busy time
  CHECK(e0.last_total_ns == rec->total_ns);
  CHECK(e0.last_queue_ns == rec->queue_ns);
  CHECK(e0.last_end_ns > 0);
  CHECK(e0.last_end_ns <= stats->uptime_ns);
  CHECK(stats->sessions == 1);
  CHECK(stats->sessions_total == 1);
}

// ---- sensor acquisition through a real raw-frame source ----
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include "process.hpp"

namespace {
Harness server_with_sensor(const std::string& path, std::chrono::milliseconds interval) {
  server::ServerOptions o;
  auto src = sensors::open_raw_frame_source(path);
  REQUIRE(src.ok());
  o.sensors.emplace_back(0, server::SensorConfig{std::move(src).value(), interval, nullptr});
  return make_server(1, std::move(o));
}
}  // namespace

TEST_CASE("acquire single from a recorded file: frames in order, looped; inject; read back") {
  test::TempDir dir;
  const std::string path = dir.file("frames.raw");
  std::ofstream(path, std::ios::binary) << std::string("\x01\x02\x03\x04\x11\x12\x13\x14\x99", 9);
  auto s = server_with_sensor(path, std::chrono::milliseconds(10));
  CHECK(call(s, Command::START_ACQUIRE_SINGLE).status == AISRV_STATUS_ERROR_NO_MODEL);
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  const std::vector<uint8_t> f0{1, 2, 3, 4}, f1{0x11, 0x12, 0x13, 0x14};
  // Tensor 1 (aisrv extension): acquire and infer in one engine turn.
  for (const auto* frame : {&f0, &f1, &f0}) {  // the trailing partial frame is skipped when looping
    REQUIRE(call(s, Command::START_ACQUIRE_SINGLE, 0, AISRV_ACQUIRE_INFER).status == 0);
    CHECK(call(s, Command::GET_SENSOR_TENSOR).payload == *frame);
    CHECK(call(s, Command::GET_INPUT_TENSOR).payload == *frame);
    CHECK(call(s, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(*frame, 4, 0));
  }
  // Tensor 0, what XMOS hosts send: input 0 only, no inference (the host sends START_INFER next, as on XMOS).
  const auto inferences = [&] { return decode_engine_info(call(s, Command::GET_ENGINE_INFO).payload)->inferences; };
  const auto before = inferences();
  REQUIRE(call(s, Command::START_ACQUIRE_SINGLE).status == 0);
  CHECK(call(s, Command::GET_INPUT_TENSOR).payload == f1);
  CHECK(inferences() == before);
  CHECK(call(s, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(f0, 4, 0));  // the last inference's
  REQUIRE(call(s, Command::START_INFER).status == 0);
  CHECK(call(s, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(f1, 4, 0));
  CHECK(inferences() == before + 1);
  CHECK(call(s, Command::START_ACQUIRE_SINGLE, 0, 2).status == AISRV_STATUS_ERROR_BAD_TENSOR);
  const std::vector<uint8_t> injected{7, 7, 7, 7};
  REQUIRE(call(s, Command::SET_SENSOR_TENSOR, 0, 0, injected).status == 0);
  REQUIRE(call(s, Command::START_ACQUIRE_SINGLE).status == 0);
  CHECK(call(s, Command::GET_SENSOR_TENSOR).payload == injected);
  CHECK(call(s, Command::SET_SENSOR_TENSOR, 0, 0, std::vector<uint8_t>{1}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(u32_of(call(s, Command::GET_ACQUIRE_MODE)) == 0);
  const std::vector<uint8_t> i2c{0x3C, 0x12, 0x80};
  CHECK(call(s, Command::START_ACQUIRE_SET_I2C, 0, 0, i2c).status == AISRV_STATUS_ERROR_NOT_SUPPORTED);
  CHECK(log_of(s, 0).find("has no I2C bus") != std::string::npos);
  auto v = decode_version(call(s, Command::GET_VERSION).payload);
  CHECK((v->capabilities & AISRV_CAP_SENSOR) != 0);

  // START_ACQUIRE_SINGLE's optional window (XMOS: u16 start x, end x, start y, end y, width, height): malformed
  // windows are refused before capturing; a raw source cannot crop and says so.
  auto window = [](std::vector<uint16_t> v) {
    std::vector<uint8_t> p;
    for (uint16_t x : v) {
      p.push_back(static_cast<uint8_t>(x));
      p.push_back(static_cast<uint8_t>(x >> 8));
    }
    return p;
  };
  CHECK(call(s, Command::START_ACQUIRE_SINGLE, 0, 0, std::vector<uint8_t>{1, 2, 3}).status ==
        AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(call(s, Command::START_ACQUIRE_SINGLE, 0, 0, window({5, 5, 0, 2, 0, 0})).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(log_of(s, 0).find("is empty") != std::string::npos);
  CHECK(call(s, Command::START_ACQUIRE_SINGLE, 0, 0, window({0, 2, 0, 2, 0, 0})).status ==
        AISRV_STATUS_ERROR_NOT_SUPPORTED);
  CHECK(log_of(s, 0).find("a crop window needs a camera") != std::string::npos);
}

TEST_CASE("camera specs: v4l2:DEVICE[:WxH[:FOURCC]]") {
  auto o = sensors::parse_v4l2_spec("v4l2:/dev/video2:640x480:YUYV");
  REQUIRE(o.ok());
  CHECK(o->device == "/dev/video2");
  CHECK((o->width == 640 && o->height == 480));
  CHECK(o->fourcc == "YUYV");
  o = sensors::parse_v4l2_spec("v4l2:/dev/video0");
  REQUIRE(o.ok());
  CHECK((o->width == 0 && o->fourcc.empty()));
  for (const char* bad : {"v4l2:", "v4l2:video0", "v4l2:/dev/video0:640", "v4l2:/dev/video0:0x480",
                          "v4l2:/dev/video0:640x480:YUV", "v4l2:/dev/video0:1x1:YUYV:extra", "/dev/video0"}) {
    CAPTURE(bad);
    CHECK_FALSE(sensors::parse_v4l2_spec(bad).ok());
  }
  // An absent camera is not an error at start (it is opened when it appears: test_sensor_frames.cpp).
  auto missing = sensors::open_v4l2_frame_source(*sensors::parse_v4l2_spec("v4l2:/nonexistent/video9"));
  REQUIRE(missing.ok());
  CHECK_FALSE((*missing)->present());
  auto not_camera = sensors::open_v4l2_frame_source(*sensors::parse_v4l2_spec("v4l2:/dev/null"));
  REQUIRE_FALSE(not_camera.ok());
  CHECK(not_camera.error().message.find("not a V4L2 device") != std::string::npos);
}

TEST_CASE("acquire stream: runs in the engine's turn in a session of its own, outlives its starter, any admin stops it") {
  test::TempDir dir;
  const std::string path = dir.file("frames.raw");
  std::ofstream(path, std::ios::binary) << std::string("abcdefgh", 8);
  auto s = server_with_sensor(path, std::chrono::milliseconds(5));
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  auto submit_as = [&](server::Session& session, Command cmd, uint32_t tensor, std::vector<uint8_t> payload = {}) {
    Response r;
    std::promise<void> p;
    Request req{Header{static_cast<uint32_t>(cmd), 0, tensor}, payload};
    s->submit(session, req, r, [&] { p.set_value(); });
    p.get_future().wait();
    return r;
  };
  auto other = s->open_session(server::Peer::of(server::Trust::process, "local", "other"));
  auto inferences = [&] { return decode_engine_info(submit_as(*other, Command::GET_ENGINE_INFO, 0).payload)->inferences; };
  const std::vector<uint8_t> stop{0, 0, 0, 0};  // the aisrv extension: u32 mode 0 (single)
  // XMOS hosts send tensor 0 and no payload: that starts the stream.
  REQUIRE(submit_as(*s.session, Command::START_ACQUIRE_STREAM, 0).status == 0);
  CHECK(u32_of(submit_as(*other, Command::GET_ACQUIRE_MODE, 0)) == AISRV_ACQUIRE_MODE_STREAM);
  CHECK(submit_as(*s.session, Command::START_ACQUIRE_SINGLE, 0).status == AISRV_STATUS_ERROR_BAD_CMD);
  CHECK(submit_as(*s.session, Command::START_ACQUIRE_STREAM, 1).status == 0);  // the starter again: idempotent
  auto denied = submit_as(*other, Command::START_ACQUIRE_STREAM, 1);
  CHECK(denied.status == AISRV_STATUS_ERROR_DENIED);
  for (int i = 0; i < 400 && inferences() < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(inferences() >= 5);
  // The starter reads the stream's outputs with GET_OUTPUT_TENSOR, as an XMOS host does; another session has none.
  const auto out = submit_as(*s.session, Command::GET_OUTPUT_TENSOR, 0);
  REQUIRE(out.status == 0);
  CHECK((out.payload == test::expected_output({'a', 'b', 'c', 'd'}, 4, 0) ||
         out.payload == test::expected_output({'e', 'f', 'g', 'h'}, 4, 0)));
  CHECK(submit_as(*s.session, Command::GET_TIMINGS, 0).status == 0);
  CHECK(submit_as(*other, Command::GET_OUTPUT_TENSOR, 0).status == AISRV_STATUS_ERROR_INFER_ERR);
  // A session that acquired nothing itself sees the stream's last frame.
  const auto frame = submit_as(*other, Command::GET_SENSOR_TENSOR, 0);
  REQUIRE(frame.status == 0);
  CHECK((frame.payload == std::vector<uint8_t>{'a', 'b', 'c', 'd'} || frame.payload == std::vector<uint8_t>{'e', 'f', 'g', 'h'}));
  // The starter leaves: the stream goes on (it drives GPIO lines for nobody in particular).
  s->close_session(*s.session);
  const auto before = inferences();
  for (int i = 0; i < 400 && inferences() < before + 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(inferences() >= before + 3);
  // Any admin stops it; stop is queued in the engine's turn, so no round runs after it.
  REQUIRE(submit_as(*other, Command::START_ACQUIRE_STREAM, 0, stop).status == 0);
  CHECK(u32_of(submit_as(*other, Command::GET_ACQUIRE_MODE, 0)) == AISRV_ACQUIRE_MODE_SINGLE);
  const auto stopped_at = inferences();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(inferences() == stopped_at);
  const auto log_answer = submit_as(*other, Command::GET_DEBUG_LOG, 0);
  const std::string log(log_answer.payload.begin(), log_answer.payload.end());
  CHECK(log.find("frame(s) inferred, 0 dropped by the camera") != std::string::npos);
  CHECK(submit_as(*other, Command::START_ACQUIRE_STREAM, 0, {2, 0, 0, 0}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(submit_as(*other, Command::START_ACQUIRE_STREAM, 0, {1, 0}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(u32_of(submit_as(*other, Command::GET_ACQUIRE_MODE, 0)) == AISRV_ACQUIRE_MODE_SINGLE);
  // restart, then let the server shut down while streaming
  REQUIRE(submit_as(*other, Command::START_ACQUIRE_STREAM, 1).status == 0);
}

TEST_CASE("acquire stream: its output GPIO lines go back to their idle level when it stops, still held") {
  test::TempDir dir;
  const std::string path = dir.file("frames.raw");
  std::ofstream(path, std::ios::binary) << std::string("abcdefgh", 8);
  auto rec = std::make_shared<test::GpioRecord>();
  rec->idle = {0, 1, 0};  // line 1 rests high (an active-low LED)
  auto lines = std::make_unique<test::RecordingGpio>(3, rec);
  REQUIRE(lines->request().ok());
  server::ServerOptions o;
  auto src = sensors::open_raw_frame_source(path);
  REQUIRE(src.ok());
  o.sensors.emplace_back(0, server::SensorConfig{std::move(src).value(), std::chrono::milliseconds(5), nullptr});
  o.gpio.emplace_back(0, std::move(lines));
  auto s = make_server(1, std::move(o));
  auto levels = [&] {
    std::lock_guard l(rec->mu);
    return rec->levels;
  };
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  for (uint32_t line = 0; line < 3; ++line) {
    std::vector<uint8_t> p;
    encode_u32(1, p);
    REQUIRE(call(s, Command::SET_OUTPUT_GPIO_EN, 0, line, p).status == 0);
    p.clear();
    encode_u32(10, p);  // every frame byte + 1 is > 10 (the test backend's output is input + 1)
    REQUIRE(call(s, Command::SET_OUTPUT_GPIO_THRESH, 0, line, p).status == 0);
  }
  REQUIRE(levels() == std::vector<uint8_t>{0, 1, 0});
  REQUIRE(call(s, Command::START_ACQUIRE_STREAM, 0, 1).status == 0);
  for (int i = 0; i < 400 && levels() != std::vector<uint8_t>{1, 1, 1}; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(levels() == std::vector<uint8_t>{1, 1, 1});  // the stream drives them
  const std::vector<uint8_t> stop{0, 0, 0, 0};
  REQUIRE(call(s, Command::START_ACQUIRE_STREAM, 0, 0, stop).status == 0);
  CHECK(levels() == std::vector<uint8_t>{0, 1, 0});  // at rest, not the last frame's result
  CHECK(rec->held);                                    // still the engine's while the model is loaded
  CHECK(log_of(s, 0).find("output GPIO gpio:test back to its idle level (the stream stopped)") != std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(levels() == std::vector<uint8_t>{0, 1, 0});  // no round after the stop drives them again
  // The next inference drives them as before.
  REQUIRE(call(s, Command::SET_INPUT_TENSOR, 0, 0, std::vector<uint8_t>{20, 0, 20, 0}).status == 0);
  REQUIRE(call(s, Command::START_INFER).status == 0);
  CHECK(levels() == std::vector<uint8_t>{1, 0, 1});
}

TEST_CASE("acquire stream: a sensor that fails stops the stream; every session gets ERROR_SENSOR once") {
  test::TempDir dir;
  const std::string path = dir.file("cam.fifo");
  REQUIRE(mkfifo(path.c_str(), 0600) == 0);
  auto s = server_with_sensor(path, std::chrono::milliseconds(5));
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  const int w = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
  REQUIRE(w >= 0);
  const uint8_t frames[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  REQUIRE(::write(w, frames, 8) == 8);
  REQUIRE(call(s, Command::START_ACQUIRE_STREAM, 0, 1).status == 0);
  for (int i = 0; i < 400 && decode_engine_info(call(s, Command::GET_ENGINE_INFO).payload)->inferences < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::close(w);  // the camera goes away
  for (int i = 0; i < 400 && u32_of(call(s, Command::GET_ACQUIRE_MODE)) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(u32_of(call(s, Command::GET_ACQUIRE_MODE)) == 0);
  CHECK((u32_of(call(s, Command::GET_STATUS)) & AISRV_STATUS_ERROR_SENSOR) != 0);
  CHECK((u32_of(call(s, Command::GET_STATUS)) & AISRV_STATUS_ERROR_SENSOR) == 0);  // once
  CHECK(log_of(s, 0).find("acquire stream stopped after an error") != std::string::npos);
  // The engine keeps serving.
  REQUIRE(call(s, Command::SET_INPUT_TENSOR, 0, 0, std::vector<uint8_t>{1, 1, 1, 1}).status == 0);
  CHECK(call(s, Command::START_INFER).status == 0);
}

TEST_CASE("acquire from a FIFO: waits for the writer's frame; a closed writer is an error") {
  test::TempDir dir;
  const std::string path = dir.file("cam.fifo");
  REQUIRE(mkfifo(path.c_str(), 0600) == 0);
  auto s = server_with_sensor(path, std::chrono::milliseconds(10));
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  const int w = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
  REQUIRE(w >= 0);
  std::thread writer([w] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const uint8_t frame[4] = {9, 8, 7, 6};
    CHECK(::write(w, frame, 4) == 4);
  });
  CHECK(call(s, Command::START_ACQUIRE_SINGLE).status == 0);
  writer.join();
  CHECK(call(s, Command::GET_SENSOR_TENSOR).payload == std::vector<uint8_t>{9, 8, 7, 6});
  ::close(w);
  CHECK(call(s, Command::START_ACQUIRE_SINGLE).status == AISRV_STATUS_ERROR_SENSOR);
  CHECK(log_of(s, 0).find("the writer closed the stream") != std::string::npos);
}

TEST_CASE("a transport's payload sink gets output tensors without a copy or declines them; errors never reach it") {
  struct Sink final : PayloadSink {
    std::vector<std::vector<uint8_t>> got;
    bool take = true;
    bool write(std::span<const uint8_t> p) override {
      if (take) got.emplace_back(p.begin(), p.end());
      return take;
    }
  } sink;
  auto s = make_server(1);
  auto with_sink = [&](Command cmd, uint32_t tensor = 0) {
    Response r;
    s->handle(*s.session, Request{Header{static_cast<uint32_t>(cmd), 0, tensor}, {}, nullptr, &sink}, r);
    return r;
  };
  const auto model = make_test_model(TestModelSpec{{8}, {8, 3}, 2, 0});
  REQUIRE(call(s, Command::SET_MODEL_SECONDARY, 0, 0, model).status == AISRV_STATUS_OKAY);
  auto r = with_sink(Command::GET_OUTPUT_TENSOR);  // no inference yet
  CHECK(r.status == AISRV_STATUS_ERROR_INFER_ERR);
  CHECK_FALSE(r.sent);
  CHECK(with_sink(Command::GET_OUTPUT_TENSOR, 5).status == AISRV_STATUS_ERROR_BAD_TENSOR);
  CHECK(sink.got.empty());
  const std::vector<uint8_t> in{9, 8, 7, 6, 5, 4, 3, 2};
  REQUIRE(call(s, Command::SET_INPUT_TENSOR, 0, 0, in).status == AISRV_STATUS_OKAY);
  REQUIRE(call(s, Command::START_INFER).status == AISRV_STATUS_OKAY);
  r = with_sink(Command::GET_OUTPUT_TENSOR, 1);
  CHECK(r.status == AISRV_STATUS_OKAY);
  CHECK(r.sent);
  CHECK(r.payload.empty());
  REQUIRE(sink.got.size() == 1);
  CHECK(sink.got[0] == test::expected_output(in, 3, 1));
  // A sink that declines gets nothing; the answer comes in the payload as usual.
  sink.take = false;
  r = with_sink(Command::GET_OUTPUT_TENSOR, 0);
  CHECK(r.status == AISRV_STATUS_OKAY);
  CHECK_FALSE(r.sent);
  CHECK(r.payload == test::expected_output(in, 8, 0));
  CHECK(sink.got.size() == 1);
  sink.take = true;
  // Other answers still come in the payload, and a later request starts with `sent` cleared.
  r = with_sink(Command::GET_INPUT_TENSOR);
  CHECK_FALSE(r.sent);
  CHECK(r.payload == in);
  CHECK(sink.got.size() == 1);
}
