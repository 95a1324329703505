// Unit tests: many sessions on one interpreter — each session's tensors, outputs, timings, error bits and log lines
// are its own; a model change under a session's inputs or outputs is reported, never run or labelled wrongly; INFER;
// access rules (admin group, token); flash-transfer ownership; per-session memory cap and queue depth; a closing
// session's queued work is answered and its state freed; round-robin turns; shutdown.
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "aisrv/flash/store.hpp"
#include "aisrv/protocol/flash_payloads.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/server.hpp"
#include "flash_test_util.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using namespace aisrv::protocol;
using aisrv::server::Peer;
using aisrv::server::Server;
using aisrv::server::Session;
using aisrv::test::make_test_model;
using aisrv::test::TestModelSpec;

namespace {

std::unique_ptr<Server> make_server(size_t engines = 2, server::ServerOptions options = {}) {
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  for (size_t i = 0; i < engines; ++i) backends.push_back(std::make_unique<test::TestBackend>());
  auto s = Server::create(std::move(options), std::move(backends));
  REQUIRE(s.ok());
  return std::move(s).value();
}

std::shared_ptr<Session> local(Server& s, std::string name = "test") { return s.open_session(Peer::of(server::Trust::process, "local", name)); }

Response call(Server& s, Session& who, Command cmd, uint32_t engine = 0, uint32_t tensor = 0,
              std::span<const uint8_t> payload = {}) {
  Response r;
  s.handle(who, Request{Header{static_cast<uint32_t>(cmd), engine, tensor}, payload}, r);
  return r;
}

std::string log_of(Server& s, Session& who, uint32_t engine, uint32_t arg = 0) {
  auto r = call(s, who, Command::GET_DEBUG_LOG, engine, arg);
  return std::string(r.payload.begin(), r.payload.end());
}

uint32_t status_of(Server& s, Session& who, uint32_t engine = 0) {
  return *decode_u32(call(s, who, Command::GET_STATUS, engine).payload);
}

std::vector<uint8_t> bytes(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

// Submits and returns a future of the response.
struct Pending {
  Request request;
  Response response;
  std::promise<void> done;
};
std::shared_ptr<Pending> submit(Server& s, Session& who, Command cmd, uint32_t engine = 0, uint32_t tensor = 0) {
  auto p = std::make_shared<Pending>();
  p->request = Request{Header{static_cast<uint32_t>(cmd), engine, tensor}, {}};
  s.submit(who, p->request, p->response, [p] { p->done.set_value(); });
  return p;
}

}  // namespace

TEST_CASE("two sessions on one engine: each gets the outputs of its own inputs, interleaved any way") {
  auto s = make_server(1);
  auto a = local(*s, "a"), b = local(*s, "b");
  REQUIRE(call(*s, *a, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  const auto in_a = bytes(4, 10), in_b = bytes(4, 20);
  // a writes, b writes, a runs, b reads before running: b has no output yet, a's is a's
  REQUIRE(call(*s, *a, Command::SET_INPUT_TENSOR, 0, 0, in_a).status == 0);
  REQUIRE(call(*s, *b, Command::SET_INPUT_TENSOR, 0, 0, in_b).status == 0);
  REQUIRE(call(*s, *a, Command::START_INFER).status == 0);
  CHECK(call(*s, *b, Command::GET_OUTPUT_TENSOR).status == AISRV_STATUS_ERROR_INFER_ERR);
  REQUIRE(call(*s, *b, Command::START_INFER).status == 0);
  CHECK(call(*s, *a, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(in_a, 4, 0));
  CHECK(call(*s, *b, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(in_b, 4, 0));
  CHECK(call(*s, *a, Command::GET_INPUT_TENSOR).payload == in_a);
  CHECK(call(*s, *b, Command::GET_INPUT_TENSOR).payload == in_b);
  // a third session that never wrote an input runs on zeros, not on anyone's bytes
  auto c = local(*s, "c");
  REQUIRE(call(*s, *c, Command::START_INFER).status == 0);
  CHECK(call(*s, *c, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(bytes(4, 0), 4, 0));
  CHECK(call(*s, *c, Command::GET_INPUT_TENSOR).payload == bytes(4, 0));
  // timings are per session too
  CHECK(decode_timing_record(call(*s, *a, Command::GET_TIMING_RECORD).payload)->layers.size() == 3);
  auto d = local(*s, "d");
  CHECK(decode_timing_record(call(*s, *d, Command::GET_TIMING_RECORD).payload)->layers.empty());
}

TEST_CASE("many threads, many sessions, one engine: no wrong output ever") {
  auto s = make_server(1);
  auto admin = local(*s);
  REQUIRE(call(*s, *admin, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{16}, {16}, 1, 20})).status == 0);
  std::atomic<int> wrong{0}, ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      auto me = local(*s, "t" + std::to_string(t));
      for (int i = 0; i < 30; ++i) {
        const auto in = bytes(16, static_cast<uint8_t>((t * 31 + i) % 0xE0));  // never 0xEE (the poison byte)
        const auto st1 = call(*s, *me, Command::SET_INPUT_TENSOR, 0, 0, in).status;
        const auto st2 = call(*s, *me, Command::START_INFER).status;
        const auto out = call(*s, *me, Command::GET_OUTPUT_TENSOR);
        if (st1 || st2 || out.payload != test::expected_output(in, 16, 0)) {
          if (++wrong < 5) MESSAGE("thread " << t << " round " << i << ": " << st1 << " " << st2 << " " << out.status);
        } else {
          ++ok;
        }
      }
      s->close_session(*me);
    });
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(ok == 16 * 30);
}

TEST_CASE("error bits and log lines belong to the session that caused them; shared lines reach everyone") {
  auto s = make_server(1);
  auto a = local(*s, "a"), b = local(*s, "b");
  CHECK(call(*s, *a, Command::START_INFER).status == AISRV_STATUS_ERROR_NO_MODEL);
  CHECK(call(*s, *a, Command::GET_SPEC, 5).status == AISRV_STATUS_ERROR_BAD_ENGINE);
  CHECK(status_of(*s, *b) == 0);  // b raised nothing
  CHECK(status_of(*s, *a) == AISRV_STATUS_ERROR_NO_MODEL);
  CHECK(status_of(*s, *a) == 0);  // cleared by reading
  CHECK(log_of(*s, *a, 0).find("START_INFER: engine 0 has no model loaded") != std::string::npos);
  CHECK(log_of(*s, *b, 0).find("START_INFER") == std::string::npos);
  CHECK(log_of(*s, *a, AISRV_ENGINE_SERVER).find("engine 5 does not exist") != std::string::npos);
  CHECK(log_of(*s, *b, AISRV_ENGINE_SERVER).find("engine 5 does not exist") == std::string::npos);
  // a model load is everyone's business
  REQUIRE(call(*s, *a, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({})).status == 0);
  CHECK(log_of(*s, *b, 0).find("model loaded from wire") != std::string::npos);
  // OWN: only the session's own lines; NEW: only what it has not read
  CHECK(log_of(*s, *a, 0, AISRV_DEBUG_LOG_OWN).find("model loaded from") == std::string::npos);
  CHECK(log_of(*s, *a, 0, AISRV_DEBUG_LOG_OWN | 1).find("START_INFER: engine 0 has no model") != std::string::npos);
  (void)log_of(*s, *b, 0);
  CHECK(log_of(*s, *b, 0, AISRV_DEBUG_LOG_NEW).empty());
  CHECK(call(*s, *b, Command::GET_INPUT_TENSOR, 0, 3).status == AISRV_STATUS_ERROR_BAD_TENSOR);
  const auto fresh = log_of(*s, *b, 0, AISRV_DEBUG_LOG_NEW);
  CHECK(fresh.find("input tensor 3 does not exist") != std::string::npos);
  CHECK(std::count(fresh.begin(), fresh.end(), '\n') == 1);
}

TEST_CASE("a model change under a session's inputs or outputs is an error, never a run on stale bytes") {
  auto s = make_server(1);
  auto a = local(*s, "a"), admin = local(*s, "admin");
  REQUIRE(call(*s, *admin, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}})).status == 0);
  REQUIRE(call(*s, *a, Command::SET_INPUT_TENSOR, 0, 0, bytes(4, 7)).status == 0);
  REQUIRE(call(*s, *a, Command::START_INFER).status == 0);
  // another session replaces the model (same shapes, so the stale bytes would fit)
  REQUIRE(call(*s, *admin, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}, 2})).status == 0);
  auto r = call(*s, *a, Command::GET_OUTPUT_TENSOR);
  CHECK(r.status == AISRV_STATUS_ERROR_MODEL_CHANGED);
  CHECK(r.payload.empty());
  CHECK(log_of(*s, *a, 0).find("computed by the engine's previous model") != std::string::npos);
  CHECK(call(*s, *a, Command::GET_OUTPUT_TENSOR).status == AISRV_STATUS_ERROR_INFER_ERR);  // dropped
  CHECK(call(*s, *a, Command::GET_INPUT_TENSOR).status == AISRV_STATUS_ERROR_MODEL_CHANGED);
  CHECK(call(*s, *a, Command::START_INFER).status == AISRV_STATUS_ERROR_MODEL_CHANGED);
  CHECK(log_of(*s, *a, 0).find("input(s) 0 were written for the engine's previous model") != std::string::npos);
  CHECK((status_of(*s, *a) & AISRV_STATUS_ERROR_MODEL_CHANGED) != 0);
  // written again for the new model: runs
  REQUIRE(call(*s, *a, Command::SET_INPUT_TENSOR, 0, 0, bytes(4, 8)).status == 0);
  REQUIRE(call(*s, *a, Command::START_INFER).status == 0);
  CHECK(call(*s, *a, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(bytes(4, 8), 4, 0));
  // two inputs, one rewritten after a change: still refused, naming the stale one
  REQUIRE(call(*s, *admin, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4, 2}, {4}})).status == 0);
  REQUIRE(call(*s, *a, Command::SET_INPUT_TENSOR, 0, 0, bytes(4, 1)).status == 0);
  REQUIRE(call(*s, *a, Command::SET_INPUT_TENSOR, 0, 1, bytes(2, 1)).status == 0);
  REQUIRE(call(*s, *admin, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4, 2}, {4}})).status == 0);
  REQUIRE(call(*s, *a, Command::SET_INPUT_TENSOR, 0, 0, bytes(4, 1)).status == 0);
  CHECK(call(*s, *a, Command::START_INFER).status == AISRV_STATUS_ERROR_MODEL_CHANGED);
  CHECK(log_of(*s, *a, 0, 1).find("input(s) 1 were written") != std::string::npos);
  // an unload: no model, as before
  REQUIRE(call(*s, *admin, Command::UNLOAD_MODEL).status == 0);
  CHECK(call(*s, *a, Command::START_INFER).status == AISRV_STATUS_ERROR_NO_MODEL);
}

TEST_CASE("INFER: every input in, every output out, one call; the session's tensors stay as they were") {
  auto s = make_server(1);
  auto a = local(*s);
  CHECK(call(*s, *a, Command::INFER).status == AISRV_STATUS_ERROR_NO_MODEL);
  REQUIRE(call(*s, *a, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4, 3}, {5, 2}, 2})).status == 0);
  const auto in0 = bytes(4, 3), in1 = bytes(3, 9), kept = bytes(4, 1);
  REQUIRE(call(*s, *a, Command::SET_INPUT_TENSOR, 0, 0, kept).status == 0);
  std::vector<uint8_t> req;
  const InferTensor both[] = {{1, in1}, {0, in0}};  // any order
  encode_infer_request(both, req);
  auto r = call(*s, *a, Command::INFER, 0, 0, req);
  REQUIRE(r.status == 0);
  auto outs = decode_infer_answer(r.payload);
  REQUIRE(outs.ok());
  REQUIRE(outs->size() == 2);
  CHECK(std::vector<uint8_t>((*outs)[0].begin(), (*outs)[0].end()) == test::expected_output(in0, 5, 0));
  CHECK(std::vector<uint8_t>((*outs)[1].begin(), (*outs)[1].end()) == test::expected_output(in0, 2, 1));
  CHECK(call(*s, *a, Command::GET_INPUT_TENSOR).payload == kept);
  CHECK(call(*s, *a, Command::GET_OUTPUT_TENSOR).status == AISRV_STATUS_ERROR_INFER_ERR);
  CHECK(decode_timing_record(call(*s, *a, Command::GET_TIMING_RECORD).payload)->layers.size() == 2);
  // refusals: a missing input, a wrong length, a malformed record, an input named twice
  std::vector<uint8_t> one;
  const InferTensor only0[] = {{0, in0}};
  encode_infer_request(only0, one);
  CHECK(call(*s, *a, Command::INFER, 0, 0, one).status == AISRV_STATUS_ERROR_BAD_TENSOR);
  std::vector<uint8_t> wrong;
  const InferTensor bad_len[] = {{0, in1}, {1, in1}};
  encode_infer_request(bad_len, wrong);
  CHECK(call(*s, *a, Command::INFER, 0, 0, wrong).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(call(*s, *a, Command::INFER, 0, 0, std::vector<uint8_t>{1, 0, 0}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  std::vector<uint8_t> twice;
  const InferTensor dup[] = {{0, in0}, {0, in0}};
  encode_infer_request(dup, twice);
  CHECK(call(*s, *a, Command::INFER, 0, 0, twice).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(log_of(*s, *a, 0, 1).find("INFER request: index 0 given twice") != std::string::npos);
  CHECK(call(*s, *a, Command::INFER, 0, 1, req).status == AISRV_STATUS_ERROR_BAD_TENSOR);
}

TEST_CASE("access: with an admin group, other Unix users may use models but not change what is shared") {
  server::ServerOptions o;
  o.access.admin_gid = 4242;
  auto s = make_server(1, std::move(o));
  Peer stranger = Peer::of(server::Trust::credentials, "unix");
  stranger.uid = 65000;
  stranger.gid = 65000;
  Peer member = stranger;
  member.uid = 65001;
  member.groups = {100, 4242};
  auto user = s->open_session(stranger), admin = s->open_session(member);
  CHECK(user->role() == Role::user);
  CHECK(admin->role() == Role::admin);
  const auto model = make_test_model({{4}, {4}, 1, 0});
  auto r = call(*s, *user, Command::SET_MODEL_SECONDARY, 0, 0, model);
  CHECK(r.status == AISRV_STATUS_ERROR_DENIED);
  CHECK(log_of(*s, *user, 0).find("needs the admin role") != std::string::npos);
  CHECK(status_of(*s, *user) == AISRV_STATUS_ERROR_DENIED);
  CHECK(s->engine(0)->model() == nullptr);  // nothing changed
  REQUIRE(call(*s, *admin, Command::SET_MODEL_SECONDARY, 0, 0, model).status == 0);
  for (auto cmd : {Command::UNLOAD_MODEL, Command::SET_MODEL_PRIMARY_FLASH, Command::SET_FLASH_ERASE,
                   Command::START_ACQUIRE_STREAM})
    CHECK(call(*s, *user, cmd).status == AISRV_STATUS_ERROR_DENIED);
  CHECK(call(*s, *user, Command::CANCEL_INFER, 0, AISRV_CANCEL_ANY).status == AISRV_STATUS_ERROR_DENIED);
  CHECK(call(*s, *user, Command::CANCEL_INFER, 0, AISRV_CANCEL_OWN).status == 0);
  // using is fine
  REQUIRE(call(*s, *user, Command::SET_INPUT_TENSOR, 0, 0, bytes(4, 2)).status == 0);
  REQUIRE(call(*s, *user, Command::START_INFER).status == 0);
  CHECK(call(*s, *user, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(bytes(4, 2), 4, 0));
  CHECK(s->engine(0)->model() != nullptr);
  auto info = decode_session_info(call(*s, *user, Command::GET_SESSION_INFO).payload);
  REQUIRE(info.ok());
  CHECK(info->role == Role::user);
  CHECK(info->peer.find("uid 65000") != std::string::npos);
  // root and the daemon's own user are admins without the group; without a group everyone is
  Peer root = stranger;
  root.uid = 0;
  CHECK(s->open_session(root)->role() == Role::admin);
  auto open = make_server(1);
  CHECK(open->open_session(stranger)->role() == Role::admin);
}

TEST_CASE("token: a TCP session may only identify itself until AUTH with the right token") {
  server::ServerOptions o;
  o.access.token = "0123456789abcdef-secret";
  auto s = make_server(1, std::move(o));
  Peer remote = Peer::of(server::Trust::address, "tcp", "192.0.2.7:40000");
  remote.loopback = false;
  auto t = s->open_session(remote);
  CHECK_FALSE(t->authenticated());
  CHECK(call(*s, *t, Command::HELLO).status == 0);
  CHECK(call(*s, *t, Command::GET_VERSION).status == 0);
  CHECK(call(*s, *t, Command::GET_STATUS).status == AISRV_STATUS_ERROR_DENIED);
  CHECK(call(*s, *t, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({})).status == AISRV_STATUS_ERROR_DENIED);
  // before AUTH a session reads only its own lines: why it was refused, nothing the server shares
  REQUIRE(call(*s, *local(*s), Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({})).status == 0);
  CHECK(log_of(*s, *t, 0).find("must first send AUTH") != std::string::npos);
  CHECK(log_of(*s, *t, 0).find("model loaded") == std::string::npos);
  const std::string wrong = "0123456789abcdef-secreT", right = "0123456789abcdef-secret";
  auto token = [](const std::string& s, size_t n) { return std::span(reinterpret_cast<const uint8_t*>(s.data()), n); };
  CHECK(call(*s, *t, Command::AUTH, 0, 0, token(wrong, wrong.size())).status == AISRV_STATUS_ERROR_DENIED);
  // Guessing is throttled: right after a failure even the right token is refused, without being looked at.
  CHECK(call(*s, *t, Command::AUTH, 0, 0, token(right, right.size())).status == AISRV_STATUS_ERROR_DENIED);
  CHECK(log_of(*s, *t, 0).find("failed AUTH attempt(s) from 192.0.2.7; the next is allowed in") != std::string::npos);
  CHECK_FALSE(t->authenticated());
  // A new session from the same address waits too (the port changes with every connection).
  Peer again = Peer::of(server::Trust::address, "tcp", "192.0.2.7:40001");
  again.loopback = false;
  CHECK(call(*s, *s->open_session(again), Command::AUTH, 0, 0, token(right, right.size())).status ==
        AISRV_STATUS_ERROR_DENIED);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // 0.1 s after one failure
  CHECK(call(*s, *t, Command::AUTH, 0, 0, token(right, 5)).status == AISRV_STATUS_ERROR_DENIED);
  CHECK(call(*s, *t, Command::AUTH, 0, 0, token(right, right.size())).status == AISRV_STATUS_ERROR_DENIED);
  std::this_thread::sleep_for(std::chrono::milliseconds(220));  // 0.2 s after the second
  CHECK_FALSE(t->authenticated());
  CHECK(call(*s, *t, Command::AUTH, 0, 0, token(right, right.size())).status == 0);
  CHECK(t->authenticated());
  CHECK(t->role() == Role::admin);
  CHECK(call(*s, *t, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({})).status == 0);
  // local sessions need no token
  CHECK(local(*s)->authenticated());
}

TEST_CASE("a flash transfer belongs to the session that began it; its disconnect aborts it") {
  test::MemoryFlash dev{flash::Geometry{1024 * 1024, 4096, 1}};
  auto store = test::format_store(dev, 2);
  server::ServerOptions o;
  o.store = store.get();
  auto s = make_server(2, std::move(o));
  auto a = local(*s, "a"), b = local(*s, "b");
  const auto model = make_test_model(TestModelSpec{{4}, {4}, 1, 0, 3000});
  std::vector<uint8_t> begin;
  encode(FlashBegin{model.size(), std::nullopt, 0, "m"}, begin);
  auto chunk = [&](size_t from, size_t n) {
    std::vector<uint8_t> p;
    encode_flash_chunk(from, std::span(model).subspan(from, n), p);
    return p;
  };
  REQUIRE(call(*s, *a, Command::SET_FLASH_BEGIN, 0, 0, begin).status == 0);
  REQUIRE(call(*s, *a, Command::SET_FLASH_CHUNK, 0, 0, chunk(0, 1000)).status == 0);
  CHECK(call(*s, *b, Command::SET_FLASH_CHUNK, 0, 0, chunk(1000, 1000)).status == AISRV_STATUS_ERROR_DENIED);
  CHECK(log_of(*s, *b, 0).find("flash transfer belongs to session") != std::string::npos);
  CHECK(call(*s, *b, Command::SET_FLASH_COMMIT).status == AISRV_STATUS_ERROR_DENIED);
  CHECK(call(*s, *b, Command::SET_FLASH_ABORT).status == AISRV_STATUS_ERROR_DENIED);
  CHECK(call(*s, *b, Command::SET_FLASH_ERASE).status == AISRV_STATUS_ERROR_DENIED);
  CHECK(call(*s, *b, Command::SET_FLASH_BEGIN, 0, 0, begin).status == AISRV_STATUS_ERROR_DENIED);
  CHECK(log_of(*s, *b, 0, 1).find("a second transfer is refused") != std::string::npos);
  // engine 1's slot is free for b meanwhile
  CHECK(call(*s, *b, Command::SET_FLASH_BEGIN, 1, 0, begin).status == 0);
  CHECK(call(*s, *b, Command::SET_FLASH_ABORT, 1).status == 0);
  // a goes on, b's attempts changed nothing
  REQUIRE(call(*s, *a, Command::SET_FLASH_CHUNK, 0, 0, chunk(1000, 1000)).status == 0);
  REQUIRE(store->update_progress(0).has_value());
  CHECK(store->update_progress(0)->written == 2000);
  // a disconnects: its transfer is aborted (in the engine's turn); the old stored model (none) stays
  s->close_session(*a);
  for (int i = 0; i < 200 && store->update_progress(0); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK_FALSE(store->update_progress(0).has_value());
  CHECK(log_of(*s, *b, 0).find("flash transfer aborted: session 1 (local a) closed") != std::string::npos);
  // now b may write engine 0's model, all of it, and commit
  REQUIRE(call(*s, *b, Command::SET_FLASH_BEGIN, 0, 0, begin).status == 0);
  REQUIRE(call(*s, *b, Command::SET_FLASH_CHUNK, 0, 0, chunk(0, model.size())).status == 0);
  REQUIRE(call(*s, *b, Command::SET_FLASH_COMMIT).status == 0);
  CHECK(store->entry(0)->active_slot()->model_size() == model.size());
}

TEST_CASE("limits: the session memory cap and the queue depth answer ERROR_LIMIT and change nothing") {
  server::ServerOptions o;
  o.session.memory = 6000;
  o.session.max_queued = 2;
  auto s = make_server(1, std::move(o));
  auto a = local(*s);
  REQUIRE(call(*s, *a, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4000}, {3000}, 3, 30000})).status == 0);
  REQUIRE(call(*s, *a, Command::SET_INPUT_TENSOR, 0, 0, bytes(4000, 1)).status == 0);
  CHECK(a->memory_used() == 4000);
  // 4000 held + 3000 of outputs > 6000: refused before the inference runs
  CHECK(call(*s, *a, Command::START_INFER).status == AISRV_STATUS_ERROR_LIMIT);
  CHECK(log_of(*s, *a, 0, 1).find("per-session cap is 6000 bytes") != std::string::npos);
  CHECK(call(*s, *a, Command::GET_OUTPUT_TENSOR).status == AISRV_STATUS_ERROR_INFER_ERR);
  CHECK(a->memory_used() == 4000);
  // a smaller model fits
  REQUIRE(call(*s, *a, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{2000}, {3000}, 3, 20000})).status == 0);
  REQUIRE(call(*s, *a, Command::SET_INPUT_TENSOR, 0, 0, bytes(2000, 1)).status == 0);
  CHECK(a->memory_used() == 2000);  // the old model's input was dropped on the rewrite
  // queue depth 2: a third queued request of the same session is refused at once
  auto p1 = submit(*s, *a, Command::START_INFER);
  auto p2 = submit(*s, *a, Command::START_INFER);
  auto p3 = submit(*s, *a, Command::START_INFER);
  p3->done.get_future().wait();
  CHECK(p3->response.status == AISRV_STATUS_ERROR_LIMIT);
  CHECK(log_of(*s, *a, 0, 1).find("--max-queued") != std::string::npos);
  p1->done.get_future().wait();
  p2->done.get_future().wait();
  CHECK(p1->response.status == 0);
  CHECK(p2->response.status == 0);
  CHECK(a->memory_used() == 5000);
  s->close_session(*a);
  CHECK(a->memory_used() == 0);
}

TEST_CASE("closing a session: its queued work is answered cancelled at once, its running inference stops") {
  auto s = make_server(1);
  auto admin = local(*s);
  REQUIRE(call(*s, *admin, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}, 20, 20000})).status == 0);
  auto a = local(*s, "leaver"), b = local(*s, "stayer");
  std::vector<std::shared_ptr<Pending>> mine;
  for (int i = 0; i < 8; ++i) mine.push_back(submit(*s, *a, Command::START_INFER));
  // a's first inference runs (400 ms): wait until it is the running one
  for (int i = 0; i < 200 && s->engine(0)->running_session() != a->id(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(s->engine(0)->running_session() == a->id());
  const auto t0 = std::chrono::steady_clock::now();
  s->close_session(*a, "test disconnect");
  for (auto& p : mine) p->done.get_future().wait();
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took < std::chrono::milliseconds(300));  // not 8 x 400 ms
  for (auto& p : mine) CHECK(p->response.status == AISRV_STATUS_ERROR_CANCELLED);
  CHECK(s->session_count() == 2);
  // the engine keeps serving the others
  REQUIRE(call(*s, *b, Command::SET_INPUT_TENSOR, 0, 0, bytes(4, 5)).status == 0);
  auto r = call(*s, *b, Command::START_INFER);
  CHECK(r.status == 0);
  // a closed session refuses further work and holds nothing
  CHECK(call(*s, *a, Command::START_INFER).status == AISRV_STATUS_ERROR_CANCELLED);
  CHECK(a->memory_used() == 0);
}

TEST_CASE("round robin: a session with a long queue does not hold back another's first request") {
  server::ServerOptions o;
  o.session.max_queued = 32;
  auto s = make_server(1, std::move(o));
  auto admin = local(*s);
  REQUIRE(call(*s, *admin, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}, 1, 20000})).status == 0);
  auto busy = local(*s, "busy"), polite = local(*s, "polite");
  std::mutex mu;
  std::vector<std::string> order;
  std::vector<std::shared_ptr<Pending>> all;
  auto queue = [&](Session& who, std::string tag) {
    auto p = std::make_shared<Pending>();
    p->request = Request{Header{static_cast<uint32_t>(Command::START_INFER), 0, 0}, {}};
    s->submit(who, p->request, p->response, [p, &mu, &order, tag] {
      {
        std::lock_guard lock(mu);
        order.push_back(tag);
      }
      p->done.set_value();
    });
    all.push_back(p);
  };
  for (int i = 0; i < 8; ++i) queue(*busy, "busy");
  queue(*polite, "polite");
  for (auto& p : all) p->done.get_future().wait();
  REQUIRE(order.size() == 9);
  // busy's first was already running; polite's one comes right after it, not after busy's other seven
  const auto at = std::find(order.begin(), order.end(), "polite") - order.begin();
  CHECK(at <= 2);
}

TEST_CASE("shutdown: queued work and new requests are answered cancelled, running work finishes") {
  auto s = make_server(1);
  auto a = local(*s);
  REQUIRE(call(*s, *a, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{4}, {4}, 5, 20000})).status == 0);
  std::vector<std::shared_ptr<Pending>> queued;
  for (int i = 0; i < 4; ++i) queued.push_back(submit(*s, *a, Command::START_INFER));
  for (int i = 0; i < 200 && s->engine(0)->running_session() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  s->begin_shutdown();
  for (auto& p : queued) p->done.get_future().wait();
  CHECK(queued[0]->response.status == 0);  // it was running: it finished
  for (size_t i = 1; i < queued.size(); ++i) CHECK(queued[i]->response.status == AISRV_STATUS_ERROR_CANCELLED);
  CHECK(log_of(*s, *a, 0, 1).find("cancelled before it ran: the server is shutting down") != std::string::npos);
  CHECK(call(*s, *a, Command::START_INFER).status == AISRV_STATUS_ERROR_CANCELLED);
  CHECK(call(*s, *a, Command::HELLO).status == 0);  // status and identity still answer
  CHECK(s->wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(5)));
}

TEST_CASE("sessions are freed when closed: nothing left behind") {
  auto s = make_server(2);
  std::weak_ptr<Session> gone;
  {
    auto a = local(*s);
    gone = a;
    REQUIRE(call(*s, *a, Command::SET_MODEL_SECONDARY, 0, 0, make_test_model({{1024}, {1024}})).status == 0);
    REQUIRE(call(*s, *a, Command::SET_INPUT_TENSOR, 0, 0, bytes(1024, 1)).status == 0);
    REQUIRE(call(*s, *a, Command::START_INFER).status == 0);
    CHECK(a->memory_used() == 2048);
    CHECK(s->session_count() == 1);
    s->close_session(*a);
    CHECK(s->session_count() == 0);
    CHECK(a->memory_used() == 0);
  }
  // The server keeps no reference to a closed session (a worker lets go of the last job's a moment after answering).
  for (int i = 0; i < 500 && !gone.expired(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(gone.expired());
}
