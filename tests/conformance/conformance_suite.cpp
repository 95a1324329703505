// aisrv conformance suite — every command and every error case, through the client library, independent of the
// transport. Each transport re-runs it unchanged:
//   AISRV_CONF_CONNECT   target to test (unix:…, tcp:…, usb…, spi-sim:…); when unset the suite starts the test
//                        server itself, on a Unix socket, on TCP when AISRV_CONF_TRANSPORT=tcp, or on the simulated
//                        SPI wire (aisrv_test_server --spi sim:PATH, connect spi-sim:PATH) when =spi-sim
//   AISRV_CONF_MODEL     model file for engine 0 (default: a test-double model, which needs the test server)
//   AISRV_CONF_INPUT     raw input tensor 0 for that model;  AISRV_CONF_EXPECTED  expected output tensor 0 bytes
//   AISRV_CONF_CASES     the shared wire-case table (default tests/conformance/cases.json of the source tree)
//   AISRV_CONF_TOKEN_FILE  token sent with AUTH after connecting (a TCP target: TCP peers are users until they AUTH)
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "aisrv/client/client.hpp"
#include "aisrv/protocol/limits.h"
#include "process.hpp"
#include "test_backend.hpp"
#include "testdata.hpp"

using namespace aisrv;
using namespace aisrv::protocol;

namespace {

struct Target {
  std::string connect;
  std::string token;  // sent with AUTH after connecting (TCP peers are users until they AUTH)
  std::vector<uint8_t> model, input, expected;
  std::unique_ptr<test::TempDir> dir;
  std::unique_ptr<test::ServerProcess> server;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Target& target() {
  static Target t = [] {
    Target t;
    t.connect = env("AISRV_CONF_CONNECT");
    if (const auto tf = env("AISRV_CONF_TOKEN_FILE"); !tf.empty()) t.token = std::move(client::read_token_file(tf)).value();
    if (t.connect.empty()) {
      t.dir = std::make_unique<test::TempDir>();
      const std::string sock = t.dir->file("conf.sock");
      const bool tcp = env("AISRV_CONF_TRANSPORT") == "tcp";
      const bool spi_sim = env("AISRV_CONF_TRANSPORT") == "spi-sim";
      const std::string spi_sock = t.dir->file("spi.sock");
      std::vector<std::string> args{AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--engines", "2"};
      if (tcp) {
        const std::string token_file = t.dir->file("token");
        t.token = "conformance-token-0123456789abcdef";
        std::ofstream(token_file) << t.token << "\n";
        ::chmod(token_file.c_str(), 0600);
        args.insert(args.end(), {"--listen", "tcp:0", "--token-file", token_file});
      }
      if (spi_sim) args.insert(args.end(), {"--spi", "sim:" + spi_sock});
      t.server = std::make_unique<test::ServerProcess>(args, sock);
      t.connect = "unix:" + sock;
      if (tcp) t.connect = t.server->wait_log("listening on (tcp:[0-9.]+:[0-9]+)");
      if (spi_sim) t.connect = "spi-sim:" + spi_sock;
    }
    if (const auto model = env("AISRV_CONF_MODEL"); !model.empty()) {
      t.model = test::read_file(model);
      t.input = test::read_file(env("AISRV_CONF_INPUT"));
      if (const auto e = env("AISRV_CONF_EXPECTED"); !e.empty()) t.expected = test::read_file(e);
    } else {
      t.model = test::make_test_model(test::TestModelSpec{{16}, {16}, 4, 0});
      t.input.resize(16);
      for (size_t i = 0; i < 16; ++i) t.input[i] = static_cast<uint8_t>(i * 3);
      t.expected = test::expected_output(t.input, 16, 0);
    }
    return t;
  }();
  return t;
}

client::Client connect() {
  client::ConnectOptions o;
  o.token = target().token;
  auto c = client::Client::connect(target().connect, o);
  if (!c) FAIL("cannot connect to " << target().connect << ": " << c.error().what());
  return std::move(c).value();
}

void load(client::Client& c) {
  auto st = c.load_model(0, target().model);
  REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
}

}  // namespace

TEST_CASE("handshake, id, hello, version") {
  auto c = connect();
  CHECK(c.server_version().major == AISRV_PROTOCOL_MAJOR);
  CHECK(c.server_version().engines >= 1);
  CHECK(*c.id() == AISRV_SERVER_ID);
  CHECK(c.hello().ok());
}

TEST_CASE("unknown opcodes and bad engines are refused and the link stays in sync") {
  auto c = connect();
  const uint32_t engines = c.server_version().engines;
  for (uint32_t op : {0x42u, 0x7Fu, 0xFEu, 0x12345678u}) {
    auto r = c.call(op, 0, 0);
    REQUIRE(!r);
    CHECK(r.error().code == Errc::bad_command);
    CHECK(r.error().message.find("unknown opcode") != std::string::npos);
    CHECK(c.hello().ok());
  }
  auto r = c.spec(engines);
  REQUIRE(!r);
  CHECK(r.error().code == Errc::bad_engine);
  CHECK(r.error().message.find("does not exist") != std::string::npos);
  CHECK(c.status(0xFFFFFFFEu).error().code == Errc::bad_engine);
  CHECK(c.hello().ok());
  auto log = c.debug_log(AISRV_ENGINE_SERVER);
  REQUIRE(log.ok());
  CHECK(log->find("does not exist") != std::string::npos);
  CHECK(c.call(static_cast<uint32_t>(Command::NONE), 0, 0).error().code == Errc::bad_command);
}

TEST_CASE("without a model: NO_MODEL everywhere a model is needed") {
  auto c = connect();
  (void)c.unload_model(0);
  CHECK(c.start_inference(0).error().code == Errc::no_model);
  CHECK(c.spec(0).error().code == Errc::no_model);
  CHECK(c.tensor_info(0).error().code == Errc::no_model);
  CHECK(c.get_output(0, 0).error().code == Errc::no_model);
  CHECK(c.set_input(0, 0, target().input).error().code == Errc::no_model);
  CHECK(c.timings(0).error().code == Errc::no_model);
  CHECK(c.unload_model(0).error().code == Errc::no_model);
  auto info = c.engine_info(0);
  REQUIRE(info.ok());
  CHECK(!info->model_loaded);
}

TEST_CASE("model lifecycle, inference and every read-back command") {
  auto c = connect();
  load(c);
  auto spec = c.spec(0);
  REQUIRE(spec.ok());
  CHECK(spec->input_length == target().input.size());
  if (!target().expected.empty()) CHECK(spec->output_length == target().expected.size());
  CHECK(*c.input_length(0, 0) == target().input.size());
  auto info = c.tensor_info(0);
  REQUIRE(info.ok());
  CHECK(info->model_bytes == target().model.size());
  REQUIRE(!info->inputs.empty());
  REQUIRE(!info->outputs.empty());
  CHECK(info->inputs[0].bytes == target().input.size());

  REQUIRE(c.set_input(0, 0, target().input).ok());
  CHECK(*c.get_input(0, 0) == target().input);
  REQUIRE(c.start_inference(0).ok());
  auto out = c.get_output(0, 0);
  REQUIRE(out.ok());
  CHECK(out->size() == spec->output_length);
  if (!target().expected.empty()) CHECK(*out == target().expected);
  auto t = c.timings(0);
  REQUIRE(t.ok());
  CHECK(t->size() * 4 == spec->timings_length);
  auto rec = c.timing_record(0);
  REQUIRE(rec.ok());
  CHECK(rec->layers.size() == t->size());
  auto einfo = c.engine_info(0);
  REQUIRE(einfo.ok());
  CHECK(einfo->model_loaded);
  CHECK(einfo->inferences >= 1);
  // the same inference again gives the same bytes
  REQUIRE(c.start_inference(0).ok());
  CHECK(*c.get_output(0, 0) == *out);
  REQUIRE(c.unload_model(0).ok());
  CHECK(c.start_inference(0).error().code == Errc::no_model);
}

TEST_CASE("wrong lengths and indices: each has its status, a log line, and changes nothing") {
  auto c = connect();
  load(c);
  REQUIRE(c.set_input(0, 0, target().input).ok());
  std::vector<uint8_t> wrong(target().input.size() + 1, 0x5A);
  auto r = c.set_input(0, 0, wrong);
  REQUIRE(!r);
  CHECK(r.error().code == Errc::bad_length);
  CHECK(r.error().message.find(std::to_string(target().input.size())) != std::string::npos);
  wrong.resize(target().input.size() - 1);
  CHECK(c.set_input(0, 0, wrong).error().code == Errc::bad_length);
  CHECK(c.set_input(0, 0, {}).error().code == Errc::bad_length);
  CHECK(*c.get_input(0, 0) == target().input);  // unchanged
  CHECK(c.set_input(0, AISRV_MAX_TENSORS, target().input).error().code == Errc::bad_tensor);
  CHECK(c.get_output(0, 0xFFFFFFFFu).error().code == Errc::bad_tensor);
  CHECK(c.spec(0, AISRV_MAX_TENSORS).error().code == Errc::bad_tensor);
  // a payload on a command that takes none
  const std::vector<uint8_t> junk{1, 2, 3};
  CHECK(c.call(static_cast<uint32_t>(Command::GET_SPEC), 0, 0, junk).error().code == Errc::bad_length);
  CHECK(c.call(static_cast<uint32_t>(Command::START_INFER), 0, 0, junk).error().code == Errc::bad_length);
  auto log = c.debug_log(0);
  REQUIRE(log.ok());
  CHECK(log->find("SET_INPUT_TENSOR") != std::string::npos);
  CHECK(log->find("takes no payload") != std::string::npos);
  // the status word saw the errors once
  auto word = c.status(0);
  REQUIRE(word.ok());
  CHECK((*word & AISRV_STATUS_ERROR_BAD_LENGTH) != 0);
  CHECK((*word & AISRV_STATUS_ERROR_BAD_TENSOR) != 0);
  CHECK((*c.status(0) & AISRV_STATUS_ERROR_MASK) == 0);
  // and the engine still works
  REQUIRE(c.start_inference(0).ok());
  if (!target().expected.empty()) CHECK(*c.get_output(0, 0) == target().expected);
}

TEST_CASE("malformed models are refused with a reason; an engine without a model stays without") {
  auto c = connect();
  // A failed replace keeps the old model on engines that prepare a model beside the loaded one (the CPU engine);
  // this case starts from no model so every engine answers the same.
  (void)c.unload_model(0);
  std::mt19937 rng(1234);
  std::vector<uint8_t> junk(4096);
  for (auto& b : junk) b = static_cast<uint8_t>(rng());
  auto r = c.load_model(0, junk);
  REQUIRE(!r);
  CHECK(r.error().code == Errc::model_error);
  CHECK(!r.error().message.empty());
  CHECK(c.start_inference(0).error().code == Errc::no_model);
  CHECK(c.load_model(0, {}).error().code == Errc::model_error);
  // a truncated real model
  std::vector<uint8_t> half(target().model.begin(), target().model.begin() + target().model.size() / 2);
  CHECK(c.load_model(0, half).error().code == Errc::model_error);
  load(c);
  REQUIRE(c.set_input(0, 0, target().input).ok());
  CHECK(c.start_inference(0).ok());
}

TEST_CASE("sensor, GPIO and server-upgrade commands without hardware say what is missing") {
  auto c = connect();
  for (auto cmd : {Command::START_ACQUIRE_SINGLE, Command::START_ACQUIRE_STREAM, Command::GET_ACQUIRE_MODE,
                   Command::GET_SENSOR_TENSOR, Command::GET_OUTPUT_GPIO_EN, Command::GET_OUTPUT_GPIO_THRESH,
                   Command::GET_OUTPUT_GPIO_MODE, Command::SET_SERVER}) {
    CAPTURE(command_name(static_cast<uint32_t>(cmd)));
    auto r = c.call(static_cast<uint32_t>(cmd), 0, 0);
    REQUIRE(!r);
    CHECK(r.error().code == Errc::not_supported);
    CHECK(!r.error().message.empty());
  }
  const std::vector<uint8_t> one{1, 0, 0, 0};
  for (auto cmd : {Command::SET_OUTPUT_GPIO_EN, Command::SET_OUTPUT_GPIO_THRESH, Command::SET_OUTPUT_GPIO_MODE}) {
    CHECK(c.call(static_cast<uint32_t>(cmd), 0, 0, one).error().code == Errc::not_supported);
  }
}

TEST_CASE("debug log returns its last lines") {
  auto c = connect();
  for (int i = 0; i < 3; ++i) (void)c.start_inference(1);
  auto all = c.debug_log(1);
  auto last = c.debug_log(1, 1);
  REQUIRE(all.ok());
  REQUIRE(last.ok());
  CHECK(std::count(last->begin(), last->end(), '\n') == 1);
  CHECK(all->size() >= last->size());
  CHECK(all->find(*last) != std::string::npos);
}

TEST_CASE("large payloads near the transport's packet and buffer sizes round-trip") {
  auto c = connect();
  const uint32_t limit = c.server_version().max_payload;
  // A model upload of a few MiB of junk is read completely and refused by the engine, not by the transport.
  std::vector<uint8_t> big(std::min<uint32_t>(limit, 3u << 20) - 1, 0xA5);
  CHECK(c.load_model(0, big).error().code == Errc::model_error);
  CHECK(c.hello().ok());
  load(c);
}

TEST_CASE("INFER: all inputs in, all outputs out in one round trip, as SET+START+GET gives them") {
  auto c = connect();
  REQUIRE((c.server_version().capabilities & AISRV_CAP_INFER) != 0);
  load(c);
  const auto info = c.tensor_info(0);
  REQUIRE(info.ok());
  std::vector<std::vector<uint8_t>> inputs;
  for (size_t i = 0; i < info->inputs.size(); ++i)
    inputs.push_back(i == 0 ? target().input : std::vector<uint8_t>(info->inputs[i].bytes, 0));
  const std::vector<std::span<const uint8_t>> spans(inputs.begin(), inputs.end());
  std::vector<std::vector<uint8_t>> outs;
  REQUIRE(c.infer(0, spans, outs).ok());
  REQUIRE(outs.size() == info->outputs.size());
  if (!target().expected.empty()) CHECK(outs[0] == target().expected);
  for (size_t i = 0; i < inputs.size(); ++i) REQUIRE(c.set_input(0, static_cast<uint32_t>(i), inputs[i]).ok());
  REQUIRE(c.start_inference(0).ok());
  for (size_t i = 0; i < outs.size(); ++i) CHECK(*c.get_output(0, static_cast<uint32_t>(i)) == outs[i]);
  CHECK(c.timing_record(0).ok());
  // a record without every input, or a malformed one, is refused and the link stays in step
  std::vector<uint8_t> none;
  protocol::encode_infer_request({}, none);
  if (!info->inputs.empty())
    CHECK(c.call(static_cast<uint32_t>(Command::INFER), 0, 0, none).error().code == Errc::bad_tensor);
  CHECK(c.call(static_cast<uint32_t>(Command::INFER), 0, 0, std::vector<uint8_t>{9, 9}).error().code ==
        Errc::bad_length);
  CHECK(c.hello().ok());
}

TEST_CASE("every connection is a session: its tensors, outputs and errors are its own") {
  auto a = connect();
  auto who = a.session_info();
  REQUIRE(who.ok());
  CHECK(who->role == Role::admin);
  CHECK(who->authenticated);
  CHECK(target().connect.rfind(who->transport == "spi" ? "spi" : who->transport, 0) == 0);
  const bool two_at_once = target().connect.rfind("unix:", 0) == 0 || target().connect.rfind("tcp:", 0) == 0;
  if (!two_at_once) return;  // one USB program or SPI master at a time: isolation is covered by the unit tests
  load(a);
  REQUIRE(a.set_input(0, 0, target().input).ok());
  REQUIRE(a.start_inference(0).ok());
  CHECK(a.set_input(0, 9, target().input).error().code == Errc::bad_tensor);
  auto b = connect();
  CHECK((*b.status(0) & AISRV_STATUS_ERROR_MASK) == 0);          // a's error is a's
  CHECK(b.get_output(0, 0).error().code == Errc::infer_error);  // b ran nothing
  CHECK(*b.get_input(0, 0) == std::vector<uint8_t>(target().input.size(), 0));
  CHECK((*a.status(0) & AISRV_STATUS_ERROR_BAD_TENSOR) != 0);
  CHECK(b.session_info()->id != who->id);
  CHECK(*a.get_input(0, 0) == target().input);
  if (!target().expected.empty()) CHECK(*a.get_output(0, 0) == target().expected);
}

// ---- the shared wire cases (tests/conformance/cases.json), run by this suite and by the Python client's tests ----

namespace {

uint32_t status_bit(const std::string& name) {
  if (name == "OKAY") return AISRV_STATUS_OKAY;
#define AISRV_X_BIT(n, bit, text) \
  if (name == #n) return bit;
  AISRV_STATUS_TABLE(AISRV_X_BIT)
#undef AISRV_X_BIT
  FAIL("cases.json names an unknown status " << name);
  return 0;
}

std::vector<uint8_t> hex_bytes(const std::string& h) {
  std::vector<uint8_t> v;
  for (size_t i = 0; i + 1 < h.size(); i += 2) v.push_back(static_cast<uint8_t>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return v;
}

// A payload word of the table (see its "about").
std::vector<uint8_t> payload_of(client::Client& c, const std::string& word) {
  const auto& t = target();
  if (word.empty()) return {};
  if (word == "model") return t.model;
  if (word == "input") return t.input;
  if (word == "expected") return t.expected;
  if (word == "input+1") {
    auto v = t.input;
    v.push_back(0x5A);
    return v;
  }
  if (word == "input-1") return std::vector<uint8_t>(t.input.begin(), t.input.end() - 1);
  if (word.rfind("hex:", 0) == 0) return hex_bytes(word.substr(4));
  if (word.rfind("junk:", 0) == 0) return std::vector<uint8_t>(std::stoul(word.substr(5)), 0x5A);
  if (word == "infer:input") {
    const auto info = c.tensor_info(0);
    REQUIRE(info.ok());
    std::vector<std::vector<uint8_t>> inputs;
    for (size_t i = 0; i < info->inputs.size(); ++i)
      inputs.push_back(i == 0 ? t.input : std::vector<uint8_t>(info->inputs[i].bytes, 0));
    std::vector<InferTensor> tensors;
    for (size_t i = 0; i < inputs.size(); ++i) tensors.push_back({static_cast<uint32_t>(i), inputs[i]});
    std::vector<uint8_t> out;
    encode_infer_request(tensors, out);
    return out;
  }
  FAIL("cases.json uses an unknown payload word " << word);
  return {};
}

bool decodes(const std::string& record, std::span<const uint8_t> p) {
  if (record == "version") return decode_version(p).ok();
  if (record == "tensor_info") return decode_tensor_info(p).ok();
  if (record == "engine_info") return decode_engine_info(p).ok();
  if (record == "timing_record") return decode_timing_record(p).ok();
  if (record == "timings") return decode_timings(p).ok();
  if (record == "session_info") return decode_session_info(p).ok();
  if (record == "server_stats") return decode_server_stats(p).ok();
  if (record == "model_metadata") return decode_model_metadata(p).ok();
  FAIL("cases.json names an unknown record " << record);
  return false;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("the shared wire cases (tests/conformance/cases.json)") {
  const std::string path = env("AISRV_CONF_CASES").empty() ? AISRV_CONFORMANCE_CASES : env("AISRV_CONF_CASES");
  std::ifstream in(path);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  const auto table = nlohmann::json::parse(in);
  for (const auto& k : table.at("cases")) {
    const std::string name = k.at("name");
    CAPTURE(name);
    auto c = connect();
    for (const auto& step : k.at("steps")) {
      CAPTURE(step.dump());
      const uint32_t cmd = step.contains("op") ? step["op"].get<uint32_t>()
                                               : command_by_name(step.at("cmd").get<std::string>()).value();
      uint32_t engine = 0;
      if (step.contains("engine"))
        engine = step["engine"].is_string() ? c.server_version().engines : step["engine"].get<uint32_t>();
      const uint32_t tensor = step.value("tensor", 0u);
      const auto payload = payload_of(c, step.value("send", std::string()));
      auto r = c.call(cmd, engine, tensor, payload);
      const std::string want = step.at("status");
      if (want == "any") continue;
      const uint32_t bit = status_bit(want);
      if (bit == AISRV_STATUS_OKAY) {
        REQUIRE_MESSAGE(r.ok(), (r ? "" : r.error().what()));
      } else {
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == from_status(bit));
        if (step.contains("message"))
          CHECK_MESSAGE(r.error().message.find(replace_all(step["message"], "{input_len}",
                                                           std::to_string(target().input.size()))) != std::string::npos,
                        r.error().message);
        continue;
      }
      if (step.contains("expect")) {
        const std::string word = step["expect"];
        if (!(word == "expected" && target().expected.empty())) CHECK(*r == payload_of(c, word));
      }
      if (step.contains("decode")) CHECK(decodes(step["decode"], *r));
      if (step.contains("outputs")) {
        auto outs = decode_infer_answer(*r);
        REQUIRE(outs.ok());
        const auto& words = step["outputs"];
        REQUIRE(outs->size() >= words.size());
        for (size_t i = 0; i < words.size(); ++i) {
          const std::string word = words[i];
          if (word == "expected" && target().expected.empty()) continue;
          const auto want_bytes = payload_of(c, word);
          CHECK(std::vector<uint8_t>((*outs)[i].begin(), (*outs)[i].end()) == want_bytes);
        }
      }
    }
  }
}

TEST_CASE("a server started by the suite shuts down cleanly (no leaks under ASan)") {
  auto& t = target();
  if (!t.server) return;  // an external target is managed by whoever started it
  const int code = t.server->stop();
  CHECK_MESSAGE(code == 0, t.server->log());
}
