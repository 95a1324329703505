// Unit tests: the in-process local channel — C++ API, C API, errors noted in the debug log, chaining, and
// serialisation with concurrent socket-style submissions on the same engine.
#include <doctest/doctest.h>

#include <fstream>
#include <future>
#include <thread>

#include "aisrv/phy/local_channel.hpp"
#include "aisrv/server.hpp"
#include "process.hpp"
#include "test_backend.hpp"

extern "C" int local_channel_c_scenario(aisrv_local_t* ch, uint32_t in_len, uint32_t out_len);
extern "C" int local_channel_c_acquire(aisrv_local_t* ch, const uint8_t* frame, uint32_t len);

using namespace aisrv;
using namespace aisrv::protocol;

namespace {
std::unique_ptr<server::Server> make(size_t n, std::vector<std::pair<uint32_t, uint32_t>> chains = {}) {
  std::vector<std::unique_ptr<engine::InferenceBackend>> b;
  for (size_t i = 0; i < n; ++i) b.push_back(std::make_unique<test::TestBackend>());
  server::ServerOptions o;
  o.chains = std::move(chains);
  o.session.max_queued = 32;  // one session queues 20 requests below
  auto s = server::Server::create(std::move(o), std::move(b));
  REQUIRE(s.ok());
  return std::move(s).value();
}
void load(server::Server& s, uint32_t e, test::TestModelSpec spec) {
  REQUIRE(s.engine(e)->load_model(test::make_test_model(spec), engine::Placement::external, "test").ok());
}
}  // namespace

TEST_CASE("C++ API: set input, infer, get output; errors are typed and logged") {
  auto s = make(1);
  load(*s, 0, {{8}, {8}});
  auto ch = phy::LocalChannel::open(*s, 0);
  REQUIRE(ch.ok());
  CHECK(phy::LocalChannel::open(*s, 1).error().code == Errc::bad_engine);
  std::vector<uint8_t> in{1, 2, 3, 4, 5, 6, 7, 8}, out(8);
  REQUIRE(ch->set_input(0, in).ok());
  REQUIRE(ch->start_inference().ok());
  REQUIRE(ch->get_output(0, out).ok());
  CHECK(out == test::expected_output(in, 8, 0));
  CHECK(*ch->input_length(0) == 8);
  CHECK(ch->input_length(1).error().code == Errc::bad_tensor);
  CHECK(ch->set_input(0, std::span(in).first(7)).error().code == Errc::bad_length);
  CHECK(ch->session().last_line(0).find("SET_INPUT_TENSOR: input tensor 0 'in0' takes 8 bytes, 7 were sent") !=
        std::string::npos);
  CHECK((ch->status() & AISRV_STATUS_ERROR_BAD_LENGTH) != 0);
  CHECK(ch->status() == 0);  // error bits clear when read
}

TEST_CASE("C API scenario") {
  auto s = make(1);
  load(*s, 0, {{12}, {20}});
  auto ch = phy::LocalChannel::open(*s, 0);
  REQUIRE(ch.ok());
  CHECK(local_channel_c_scenario(ch->c_handle(), 12, 20) == 0);
  CHECK(aisrv_local_start_inference(nullptr) == AISRV_STATUS_ERROR_BAD_ENGINE);
}

TEST_CASE("C API: aisrv_local_acquire_single takes the sensor's next frame into input 0 and infers") {
  test::TempDir dir;
  const std::string frames = dir.file("frames.raw");
  std::ofstream(frames, std::ios::binary) << std::string("\x01\x02\x03\x04\x40\x41\x42\x43", 8);
  std::vector<std::unique_ptr<engine::InferenceBackend>> b;
  b.push_back(std::make_unique<test::TestBackend>());
  server::ServerOptions o;
  auto src = sensors::open_raw_frame_source(frames);
  REQUIRE(src.ok());
  o.sensors.emplace_back(0, server::SensorConfig{std::move(src).value(), std::chrono::milliseconds(100), nullptr});
  auto s = server::Server::create(std::move(o), std::move(b));
  REQUIRE(s.ok());
  load(**s, 0, {{4}, {4}});
  auto ch = phy::LocalChannel::open(**s, 0);
  REQUIRE(ch.ok());
  const uint8_t f0[4] = {1, 2, 3, 4}, f1[4] = {0x40, 0x41, 0x42, 0x43};
  CHECK(local_channel_c_acquire(ch->c_handle(), f0, 4) == 0);
  CHECK(local_channel_c_acquire(ch->c_handle(), f1, 4) == 0);
  CHECK(local_channel_c_acquire(ch->c_handle(), f0, 4) == 0);  // a file source loops
}

TEST_CASE("start_inference runs the engine's chain; the chain's outputs are the session's") {
  auto s = make(2, {{0, 1}});
  load(*s, 0, {{4}, {4}});
  load(*s, 1, {{4}, {4}});
  auto ch0 = phy::LocalChannel::open(*s, 0);
  auto ch1 = ch0->to_engine(1);  // same session, engine 1
  auto other = phy::LocalChannel::open(*s, 1);  // another client of engine 1
  REQUIRE(ch1.ok());
  std::vector<uint8_t> in{9, 8, 7, 6}, out(4);
  REQUIRE(ch0->set_input(0, in).ok());
  REQUIRE(ch0->start_inference().ok());
  REQUIRE(ch1->get_output(0, out).ok());
  CHECK(out == test::expected_output(test::expected_output(in, 4, 0), 4, 0));
  // Another session sees none of it.
  CHECK(other->get_output(0, out).error().code == Errc::infer_error);
  const size_t before = s->session_count();
  ch0 = phy::LocalChannel::open(*s, 0);  // the first session still lives in ch1
  CHECK(s->session_count() == before + 1);
  { auto gone = std::move(ch1); }
  CHECK(s->session_count() == before);  // the last channel of the first session is gone: it closed
}

TEST_CASE("local calls and queued requests on one engine never overlap") {
  auto s = make(1);
  load(*s, 0, {{4}, {4}, 3, 200});
  auto ch = phy::LocalChannel::open(*s, 0);
  std::vector<Response> resp(20);
  std::vector<std::promise<void>> done(20);
  Request req{Header{static_cast<uint32_t>(Command::START_INFER), 0, 0}, {}};
  auto remote = s->open_session(server::Peer::of(server::Trust::process, "test", "queued"));
  for (int i = 0; i < 20; ++i) s->submit(*remote, req, resp[i], [&done, i] { done[i].set_value(); });
  std::thread local([&] {
    for (int i = 0; i < 20; ++i) CHECK(ch->start_inference().ok());  // TestBackend throws on overlap
  });
  local.join();
  for (auto& d : done) d.get_future().wait();
  for (auto& r : resp) CHECK(r.status == 0);
}
