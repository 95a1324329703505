// Unit tests of the Frigate endpoint's pieces: `--frigate` values (endpoints, engines, options, remote addresses),
// Frigate's messages told apart and checked (hostile headers become BadMessage, never exceptions), and detections
// into the 20x6 rows (score order, threshold, 20 at most, normalised and clamped boxes, zeros after).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "aisrv/phy/frigate_endpoint.hpp"
#include "frigate_messages.hpp"
#include "frigate_rows.hpp"

using namespace aisrv;
using namespace aisrv::phy::frigate;

namespace {

std::span<const uint8_t> bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

Message parse(const std::vector<std::string>& parts) {
  std::vector<std::span<const uint8_t>> spans;
  for (const auto& p : parts) spans.push_back(bytes(p));
  return parse_message(spans);
}

results::Detection det(int cls, double score, double x0, double y0, double x1, double y1) {
  results::Detection d;
  d.class_id = cls;
  d.score = score;
  d.box = {x0, y0, x1, y1};
  return d;
}

}  // namespace

TEST_CASE("--frigate values") {
  auto c = parse_endpoint_spec("ipc:///tmp/cache/zmq_detector=1", 2, false);
  REQUIRE(c.ok());
  CHECK(c->endpoint == "ipc:///tmp/cache/zmq_detector");
  CHECK(c->engine == 1);
  CHECK_FALSE(c->accept_models);
  CHECK(c->threshold == doctest::Approx(0.4));
  CHECK(c->max_peers == 32);

  c = parse_endpoint_spec("tcp://127.0.0.1:5555=0,accept-models,threshold=0.25,mean=127.5,std=127.5,peers=4,idle=30,"
                          "max-message=8M",
                          1, false);
  REQUIRE_MESSAGE(c.ok(), (c.ok() ? std::string() : c.error().message));
  CHECK(c->accept_models);
  CHECK(c->threshold == doctest::Approx(0.25));
  CHECK(c->mean == std::vector<float>{127.5f});
  CHECK(c->std == std::vector<float>{127.5f});
  CHECK(c->max_peers == 4);
  CHECK(c->idle == std::chrono::seconds(30));
  CHECK(c->max_message == 8u << 20);
  CHECK(parse_endpoint_spec("tcp://localhost:5555=0,mean=1:2:3,std=4:5:6", 1, false).ok());

  // Refused, each with a message naming what is wrong.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"ipc:///x", "no '=ENGINE'"},
      {"ipc:///x=2", "engine 2 does not exist"},
      {"ipc:///x=a", "engine 'a' is not a number"},
      {"inproc://x=0", "neither ipc://PATH nor tcp://HOST:PORT"},
      {"ipc://=0", "has no path"},
      {"tcp://127.0.0.1=0", "is not tcp://HOST:PORT"},
      {"tcp://127.0.0.1:70000=0", "port '70000'"},
      {"tcp://0.0.0.0:5555=0", "--allow-remote"},
      {"tcp://*:5555=0", "--allow-remote"},
      {"ipc:///x=0,bogus", "unknown option 'bogus'"},
      {"ipc:///x=0,threshold=2", "threshold must be 0..1"},
      {"ipc:///x=0,threshold=", "needs a value"},
      {"ipc:///x=0,accept-models=1", "takes no value"},
      {"ipc:///x=0,mean=1", "mean and std go together"},
      {"ipc:///x=0,mean=1:2,std=1:2", "one value or three"},
      {"ipc:///x=0,mean=1,std=0", "std must be above 0"},
      {"ipc:///x=0,peers=0", "peers must be"},
      {"ipc:///x=0,idle=0.5", "idle must be"},
      {"ipc:///x=0,max-message=1", "max-message must be"},
  };
  for (const auto& [spec, why] : bad) {
    auto r = parse_endpoint_spec(spec, 2, false);
    REQUIRE_MESSAGE(!r.ok(), spec);
    CHECK(r.error().code == Errc::invalid_argument);
    CHECK_MESSAGE(r.error().message.find(why) != std::string::npos, spec << ": " << r.error().message);
  }
  CHECK(parse_endpoint_spec("tcp://0.0.0.0:5555=0", 1, true).ok());
}

TEST_CASE("Frigate's messages") {
  auto m = parse({R"({"model_request": true, "model_name": "yolov8n.tflite"})"});
  REQUIRE(std::holds_alternative<ModelRequest>(m));
  CHECK(std::get<ModelRequest>(m).name == "yolov8n.tflite");

  m = parse({R"({"model_data": true, "model_name": "m.tflite"})", "FILE"});
  REQUIRE(std::holds_alternative<ModelData>(m));
  CHECK(std::get<ModelData>(m).file.size() == 4);

  const std::string px(2 * 3 * 3, '\x7f');
  m = parse({R"({"shape": [1, 2, 3, 3], "dtype": "uint8", "model_type": "ssd"})", px});
  REQUIRE(std::holds_alternative<DetectRequest>(m));
  const auto& d = std::get<DetectRequest>(m);
  CHECK(d.height == 2);
  CHECK(d.width == 3);
  CHECK(d.channels == 3);
  CHECK(d.model_type == "ssd");
  CHECK(d.pixels.size() == px.size());

  struct Case {
    std::vector<std::string> parts;
    const char* why;
    bool mismatch;
  };
  const std::vector<Case> cases = {
      {{}, "0 message parts", false},
      {{"{}", "a", "b"}, "3 message parts", false},
      {{"not json", px}, "not JSON", false},
      {{"[1]", px}, "not a JSON object", false},
      {{std::string(5000, ' ') + "{}", px}, "a header of 5002 bytes", false},
      {{R"({"model_request": true})"}, "no \"model_name\"", false},
      {{R"({"model_request": true, "model_name": ""})"}, "1..255", false},
      {{R"({"model_request": true, "model_name": "a\u0001b"})"}, "control characters", false},
      {{R"({"model_request": true, "model_name": "x"})", "y"}, "with a second part", false},
      {{R"({"model_data": true, "model_name": "x"})"}, "without the model file", false},
      {{R"({"shape": [1, 2, 3, 3], "dtype": "uint8"})"}, "without the tensor part", false},
      {{R"({"dtype": "uint8"})", px}, "no \"shape\"", false},
      {{R"({"shape": [1, 2, 3, 3]})", px}, "no \"dtype\"", false},
      {{R"({"shape": [1, -2, 3, 3], "dtype": "uint8"})", px}, "sizes", false},
      {{R"({"shape": [1, 2.5, 3, 3], "dtype": "uint8"})", px}, "sizes", false},
      {{R"({"shape": [1, 2, 3, 3], "dtype": "uint8", "model_type": 7})", px}, "not a string", false},
      {{R"({"shape": [2, 2, 3, 3], "dtype": "uint8"})", px}, "is not [1, H, W, C]", true},
      {{R"({"shape": [1, 2, 3], "dtype": "uint8"})", px}, "is not [1, H, W, C]", true},
      {{R"({"shape": [1, 2, 3, 3], "dtype": "float32"})", px}, "dtype \"float32\"", true},
      {{R"({"shape": [1, 2, 3, 3], "dtype": "uint8"})", px + "x"}, "is 18 bytes but the tensor part has 19", true},
      {{R"({"shape": [1, 1048576, 1048576, 1048576], "dtype": "uint8"})", px}, "but the tensor part has 18", true},
  };
  for (const auto& c : cases) {
    auto r = parse(c.parts);
    REQUIRE_MESSAGE(std::holds_alternative<BadMessage>(r), c.why);
    const auto& b = std::get<BadMessage>(r);
    CHECK_MESSAGE(b.why.find(c.why) != std::string::npos, c.why << " vs " << b.why);
    CHECK(b.mismatch == c.mismatch);
  }
  CHECK(model_request_reply(true, false) == R"({"model_available":true,"model_loaded":false})");
  CHECK(model_data_reply(false, true) == R"({"model_loaded":true,"model_saved":false})");
}

TEST_CASE("detections into Frigate's rows") {
  std::vector<results::Detection> d = {
      det(2, 0.5, 10, 20, 30, 40),      // 100x200 input
      det(7, 0.9, -5, 150, 120, 260),   // clamped to the input
      det(1, 0.3, 0, 0, 1, 1),          // below the threshold
      det(4, 0.45, 60, 80, 50, 70),     // corners given the other way round
  };
  Rows rows;
  rows.fill(1.0f);
  REQUIRE(fill_rows(d, 100, 200, 0.4f, rows) == 3);
  const std::vector<float> first(rows.begin(), rows.begin() + 18);
  CHECK(first == std::vector<float>{7, 0.9f, 0.75f, 0, 1, 1,  //
                                    2, 0.5f, 0.1f, 0.1f, 0.2f, 0.3f,  //
                                    4, 0.45f, 0.35f, 0.5f, 0.4f, 0.6f});
  for (size_t i = 18; i < rows.size(); ++i) CHECK(rows[i] == 0.0f);

  std::vector<results::Detection> many;
  for (int i = 0; i < 30; ++i) many.push_back(det(i, 0.5 + i / 100.0, 0, 0, 10, 10));
  many.push_back(det(99, std::nan(""), 0, 0, 10, 10));
  REQUIRE(fill_rows(many, 10, 10, 0.4f, rows) == 20);
  CHECK(rows[0] == 29);
  CHECK(rows[19 * 6] == 10);
  for (size_t r = 1; r < 20; ++r) CHECK(rows[r * 6 + 1] <= rows[(r - 1) * 6 + 1]);

  REQUIRE(fill_rows({}, 10, 10, 0.4f, rows) == 0);
  for (float v : rows) CHECK(v == 0.0f);
}
