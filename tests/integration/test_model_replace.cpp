// Integration test: a model replace is atomic (issue 26). On an in-process server with the real CPU engine and the
// project's own demo model (a TFLite INT8 digit classifier), an admin session replaces the model over and over while
// other sessions write inputs, infer, read outputs, status and lengths: none of them ever sees ERROR_NO_MODEL, and
// every output they read classifies their digit. A replace that fails (a truncated model) answers ERROR_MODEL_ERR
// saying the old model keeps serving, and the old model still infers with the same output bytes, its generation —
// and so the sessions' inputs and outputs — untouched. A second model that does not fit in memory beside the first
// (a backend double with a shared memory pool) is refused the same way and loads after UNLOAD_MODEL; an engine
// whose backend cannot hold two models (no sibling) keeps the unload-first order and says so in its log.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/status.h"
#include "aisrv/server.hpp"
#include "demo_model.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using namespace aisrv::protocol;
using aisrv::server::Peer;
using aisrv::server::Server;
using aisrv::server::Session;

namespace {

std::unique_ptr<Server> cpu_server() {
  engine::cpu::CpuOptions options;  // kernels=opt, threads=1, the default 64 MiB arena
  auto backend = engine::cpu::CpuBackend::create(options);
  REQUIRE(backend.ok());
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  backends.push_back(std::move(backend).value());
  auto s = Server::create({}, std::move(backends));
  REQUIRE(s.ok());
  return std::move(s).value();
}

Response call(Server& s, Session& who, Command cmd, uint32_t tensor = 0, std::span<const uint8_t> payload = {}) {
  Response r;
  s.handle(who, Request{Header{static_cast<uint32_t>(cmd), 0, tensor}, payload}, r);
  return r;
}

std::string own_log(Server& s, Session& who) {
  auto r = call(s, who, Command::GET_DEBUG_LOG, AISRV_DEBUG_LOG_OWN);
  return std::string(r.payload.begin(), r.payload.end());
}

std::string shared_log(Server& s, Session& who) {
  auto r = call(s, who, Command::GET_DEBUG_LOG);
  return std::string(r.payload.begin(), r.payload.end());
}

std::vector<uint8_t> digit_input(int digit) {
  const auto image = demo::render_digit(digit);
  return std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(image.data()),
                              reinterpret_cast<const uint8_t*>(image.data()) + image.size());
}

int classified(const std::vector<uint8_t>& out) {
  return demo::argmax(std::vector<int8_t>(reinterpret_cast<const int8_t*>(out.data()),
                                          reinterpret_cast<const int8_t*>(out.data()) + out.size()));
}

// One session's inference on `digit`: its output bytes (empty when a step failed).
std::vector<uint8_t> infer(Server& s, Session& who, int digit) {
  const auto in = digit_input(digit);
  if (call(s, who, Command::SET_INPUT_TENSOR, 0, in).status != AISRV_STATUS_OKAY) return {};
  if (call(s, who, Command::START_INFER).status != AISRV_STATUS_OKAY) return {};
  auto out = call(s, who, Command::GET_OUTPUT_TENSOR);
  if (out.status != AISRV_STATUS_OKAY) return {};
  return out.payload;
}

struct Counts {
  std::atomic<int> calls{0}, no_model{0}, sticky_no_model{0}, model_changed{0}, other_errors{0}, outputs{0}, wrong{0};
  void note(const Response& r) {
    ++calls;
    if (r.status & AISRV_STATUS_ERROR_NO_MODEL) ++no_model;
    else if (r.status == AISRV_STATUS_ERROR_MODEL_CHANGED) ++model_changed;
    else if (r.status != AISRV_STATUS_OKAY) ++other_errors;
  }
};

// A backend double whose models take memory from a pool shared with its siblings: a model of N bytes holds N bytes
// of the pool while loaded; a load that would pass the capacity fails as an allocation would ("cannot allocate").
struct Pool {
  std::atomic<size_t> used{0};
  size_t capacity = 0;
};

class PooledBackend final : public engine::InferenceBackend {
 public:
  explicit PooledBackend(std::shared_ptr<Pool> pool) : pool_(std::move(pool)) {}
  ~PooledBackend() override { unload(); }
  std::string_view kind() const override { return "pooled"; }
  std::string options() const override { return "pool"; }
  Result<engine::ModelInfo> load(std::span<const uint8_t> model, const engine::LoadOptions& options) override {
    unload();
    if (pool_->used.load() + model.size() > pool_->capacity)
      return make_error(Errc::model_error, "cannot allocate {} bytes for the model ({} of {} in use)", model.size(),
                        pool_->used.load(), pool_->capacity);
    auto info = inner_.load(model, options);
    if (!info) return info;
    pool_->used.fetch_add(model.size());
    held_ = model.size();
    return info;
  }
  void unload() override {
    inner_.unload();
    pool_->used.fetch_sub(held_);
    held_ = 0;
  }
  std::unique_ptr<engine::InferenceBackend> make_sibling() const override {
    return std::make_unique<PooledBackend>(pool_);
  }
  std::span<uint8_t> input(size_t i) override { return inner_.input(i); }
  std::span<const uint8_t> output(size_t i) const override { return inner_.output(i); }
  Result<std::vector<engine::LayerTime>> invoke(const engine::InvokeContext& ctx) override {
    return inner_.invoke(ctx);
  }

 private:
  std::shared_ptr<Pool> pool_;
  test::TestBackend inner_;
  size_t held_ = 0;
};

}  // namespace

TEST_CASE("while an admin replaces the model, other sessions never see ERROR_NO_MODEL") {
  auto server = cpu_server();
  auto admin = server->open_session(Peer::of(server::Trust::process, "local", "admin"));
  const auto model = demo::build_digit_model();
  REQUIRE(call(*server, *admin, Command::SET_MODEL_SECONDARY, 0, model).status == AISRV_STATUS_OKAY);

  constexpr int kReaders = 3;
  constexpr int kReplaces = 60;
  std::atomic<bool> done{false};
  std::atomic<int> started{0};
  Counts counts;
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&, t] {
      auto me = server->open_session(Peer::of(server::Trust::process, "local", "reader" + std::to_string(t)));
      const int digit = 3 + t;
      const auto in = digit_input(digit);
      ++started;
      while (!done.load()) {
        counts.note(call(*server, *me, Command::GET_INPUT_TENSOR_LENGTH));
        counts.note(call(*server, *me, Command::GET_OUTPUT_TENSOR_LENGTH));
        counts.note(call(*server, *me, Command::GET_SPEC));
        const auto set = call(*server, *me, Command::SET_INPUT_TENSOR, 0, in);
        counts.note(set);
        const auto start = call(*server, *me, Command::START_INFER);
        counts.note(start);
        auto out = call(*server, *me, Command::GET_OUTPUT_TENSOR);
        // A replace between SET_INPUT and START_INFER drops the inputs (MODEL_CHANGED); a session that never
        // completed an inference on the new model then has no output yet (INFER_ERR): both are documented.
        if (start.status != AISRV_STATUS_OKAY && out.status == AISRV_STATUS_ERROR_INFER_ERR)
          out.status = AISRV_STATUS_ERROR_MODEL_CHANGED;
        counts.note(out);
        if (out.status == AISRV_STATUS_OKAY) {
          ++counts.outputs;
          if (set.status == AISRV_STATUS_OKAY && start.status == AISRV_STATUS_OKAY && classified(out.payload) != digit)
            ++counts.wrong;
        }
        auto st = call(*server, *me, Command::GET_STATUS);
        counts.note(st);
        // The status word carries the session's sticky error bits: a NO_MODEL any call above saw shows here too.
        if (st.status == AISRV_STATUS_OKAY && (*decode_u32(st.payload) & AISRV_STATUS_ERROR_NO_MODEL))
          ++counts.sticky_no_model;
      }
    });
  }
  while (started.load() < kReaders) std::this_thread::yield();
  int replaced = 0;
  for (int i = 0; i < kReplaces; ++i) {
    // Paced by the readers (at most 1 s per replace): their calls interleave with every replace.
    const int seen = counts.calls.load();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (counts.calls.load() < seen + 4 * kReaders && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
    const Command cmd = i % 2 ? Command::SET_MODEL_PRIMARY : Command::SET_MODEL_SECONDARY;
    if (call(*server, *admin, cmd, 0, model).status == AISRV_STATUS_OKAY) ++replaced;
  }
  done.store(true);
  for (auto& r : readers) r.join();

  MESSAGE(counts.calls.load() << " calls by " << kReaders << " readers during " << replaced << " replaces: "
                              << counts.no_model.load() << " ERROR_NO_MODEL (" << counts.sticky_no_model.load()
                              << " status words with the bit), " << counts.model_changed.load()
                              << " ERROR_MODEL_CHANGED, " << counts.other_errors.load() << " other errors, "
                              << counts.outputs.load() << " outputs read");
  CHECK(replaced == kReplaces);
  CHECK(counts.calls.load() > 0);
  CHECK(counts.no_model.load() == 0);
  CHECK(counts.sticky_no_model.load() == 0);
  CHECK(counts.other_errors.load() == 0);
  CHECK(counts.wrong.load() == 0);
  CHECK(counts.outputs.load() > 0);
  // The shared log names each replace.
  CHECK(shared_log(*server, *admin).find("model replaced: generation") != std::string::npos);
}

TEST_CASE("a failed replace answers MODEL_ERR and the old model keeps serving, same bytes, same generation") {
  auto server = cpu_server();
  auto admin = server->open_session(Peer::of(server::Trust::process, "local", "admin"));
  auto user = server->open_session(Peer::of(server::Trust::process, "local", "user"));
  const auto model = demo::build_digit_model();
  REQUIRE(call(*server, *admin, Command::SET_MODEL_SECONDARY, 0, model).status == AISRV_STATUS_OKAY);
  const auto before = infer(*server, *user, 7);
  REQUIRE_FALSE(before.empty());
  CHECK(classified(before) == 7);

  const std::vector<uint8_t> truncated(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(model.size() / 2));
  for (Command cmd : {Command::SET_MODEL_SECONDARY, Command::SET_MODEL_PRIMARY}) {
    CAPTURE(static_cast<uint32_t>(cmd));
    CHECK(call(*server, *admin, cmd, 0, truncated).status == AISRV_STATUS_ERROR_MODEL_ERR);
    const auto why = own_log(*server, *admin);
    CHECK_MESSAGE(why.find("; the old model keeps serving (generation 1)") != std::string::npos, why);
    CHECK_MESSAGE(why.find("UNLOAD_MODEL first to load a model that fits only alone") != std::string::npos, why);
  }
  CHECK(call(*server, *admin, Command::SET_MODEL_SECONDARY).status == AISRV_STATUS_ERROR_MODEL_ERR);  // empty

  // The user's outputs and inputs are still those of the serving model: readable, and it infers them again.
  auto out = call(*server, *user, Command::GET_OUTPUT_TENSOR);
  CHECK(out.status == AISRV_STATUS_OKAY);
  CHECK(out.payload == before);
  CHECK(call(*server, *user, Command::START_INFER).status == AISRV_STATUS_OKAY);
  CHECK(call(*server, *user, Command::GET_OUTPUT_TENSOR).payload == before);
  CHECK(infer(*server, *admin, 7) == before);
  CHECK(*decode_u32(call(*server, *user, Command::GET_STATUS).payload) == 0);  // no error bit for the user
  const auto serving = server->engine(0)->model();
  REQUIRE(serving != nullptr);
  CHECK(serving->generation == 1);

  // A good replace after the failures: a new generation, the user's outputs are of the old model now.
  REQUIRE(call(*server, *admin, Command::SET_MODEL_PRIMARY, 0, model).status == AISRV_STATUS_OKAY);
  REQUIRE(server->engine(0)->model() != nullptr);
  CHECK(server->engine(0)->model()->generation == 2);
  CHECK(call(*server, *user, Command::GET_OUTPUT_TENSOR).status == AISRV_STATUS_ERROR_MODEL_CHANGED);
  CHECK(infer(*server, *user, 7) == before);
}

TEST_CASE("a model that does not fit beside the loaded one is refused; the old one serves; it loads after UNLOAD") {
  auto pool = std::make_shared<Pool>();
  const auto big = test::make_test_model({.inputs = {4}, .outputs = {4}, .layers = 1, .padding = 3000});
  pool->capacity = big.size() + big.size() / 2;  // one model fits, two do not
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  backends.push_back(std::make_unique<PooledBackend>(pool));
  auto made = Server::create({}, std::move(backends));
  REQUIRE(made.ok());
  auto server = std::move(made).value();
  auto admin = server->open_session(Peer::of(server::Trust::process, "local", "admin"));

  const auto small = test::make_test_model({.inputs = {4}, .outputs = {4}, .layers = 1});
  REQUIRE(call(*server, *admin, Command::SET_MODEL_SECONDARY, 0, small).status == AISRV_STATUS_OKAY);
  REQUIRE(call(*server, *admin, Command::SET_MODEL_SECONDARY, 0, big).status == AISRV_STATUS_OKAY);  // small + big fit
  CHECK(pool->used.load() == big.size());  // the replaced model's memory was freed
  const std::vector<uint8_t> in{10, 20, 30, 40};
  REQUIRE(call(*server, *admin, Command::SET_INPUT_TENSOR, 0, in).status == AISRV_STATUS_OKAY);

  const auto big2 = test::make_test_model({.inputs = {8}, .outputs = {8}, .layers = 1, .padding = 3000});
  CHECK(call(*server, *admin, Command::SET_MODEL_SECONDARY, 0, big2).status == AISRV_STATUS_ERROR_MODEL_ERR);
  const auto why = own_log(*server, *admin);
  CHECK_MESSAGE(why.find("cannot allocate") != std::string::npos, why);
  CHECK_MESSAGE(why.find("; the old model keeps serving (generation 2)") != std::string::npos, why);
  CHECK_MESSAGE(why.find("UNLOAD_MODEL first to load a model that fits only alone") != std::string::npos, why);
  CHECK(pool->used.load() == big.size());
  CHECK(call(*server, *admin, Command::START_INFER).status == AISRV_STATUS_OKAY);
  auto out = call(*server, *admin, Command::GET_OUTPUT_TENSOR);
  CHECK(out.payload == test::expected_output(in, 4, 0));

  REQUIRE(call(*server, *admin, Command::UNLOAD_MODEL).status == AISRV_STATUS_OKAY);
  CHECK(pool->used.load() == 0);
  CHECK(call(*server, *admin, Command::SET_MODEL_SECONDARY, 0, big2).status == AISRV_STATUS_OKAY);
  CHECK(*decode_u32(call(*server, *admin, Command::GET_INPUT_TENSOR_LENGTH).payload) == 8);
}

TEST_CASE("each session's timing record keeps its own layers while the engine refills the list it gave back") {
  // The engine reuses the per-layer list a session's replaced timing record gives back (no allocation per layer):
  // a session's stored record must not change when other sessions infer, and every record names the model's
  // operators as a fresh inference does.
  auto server = cpu_server();
  auto a = server->open_session(Peer::of(server::Trust::process, "local", "a"));
  auto b = server->open_session(Peer::of(server::Trust::process, "local", "b"));
  const auto model = demo::build_digit_model();
  REQUIRE(call(*server, *a, Command::SET_MODEL_SECONDARY, 0, model).status == AISRV_STATUS_OKAY);
  engine::cpu::CpuOptions options;
  auto fresh = engine::cpu::CpuBackend::create(options);
  REQUIRE(fresh.ok());
  REQUIRE((*fresh)->load(model, {}).ok());
  const auto want = (*fresh)->invoke({});
  REQUIRE(want.ok());
  REQUIRE(want->size() > 2);
  auto record_of = [&](Session& who) {
    auto r = decode_timing_record(call(*server, who, Command::GET_TIMING_RECORD).payload);
    REQUIRE(r.ok());
    return *r;
  };
  auto same_layers = [&](const TimingRecord& r) {
    REQUIRE(r.layers.size() == want->size());
    for (size_t i = 0; i < r.layers.size(); ++i) {
      CHECK(r.layers[i].name == (*want)[i].name);
      CHECK(r.layers[i].op == (*want)[i].op);
    }
  };
  REQUIRE(infer(*server, *a, 2).size() == 10);
  const TimingRecord first = record_of(*a);
  same_layers(first);
  for (int round = 0; round < 4; ++round) {
    REQUIRE(infer(*server, *b, 5).size() == 10);
    same_layers(record_of(*b));
    const TimingRecord again = record_of(*a);  // untouched by b's inferences, nanoseconds included
    REQUIRE(again.layers.size() == first.layers.size());
    for (size_t i = 0; i < first.layers.size(); ++i) CHECK(again.layers[i].ns == first.layers[i].ns);
    CHECK(again.compute_ns == first.compute_ns);
  }
  REQUIRE(infer(*server, *a, 2).size() == 10);
  same_layers(record_of(*a));
}

TEST_CASE("a CPU sibling has the same options and its own model and arena") {
  engine::cpu::CpuOptions options;
  options.threads = 2;
  options.verify = true;
  options.arena_budget = 1u << 20;
  auto made = engine::cpu::CpuBackend::create(options);
  REQUIRE(made.ok());
  auto& b = **made;
  const auto model = demo::build_digit_model();
  REQUIRE(b.load(model, {}).ok());
  auto sibling = b.make_sibling();
  REQUIRE(sibling != nullptr);
  CHECK(sibling->options() == b.options());
  REQUIRE(sibling->load(model, {}).ok());
  const auto seven = digit_input(7), one = digit_input(1);
  std::memcpy(b.input(0).data(), seven.data(), seven.size());
  std::memcpy(sibling->input(0).data(), one.data(), one.size());
  REQUIRE(b.invoke({}).ok());
  REQUIRE(sibling->invoke({}).ok());
  CHECK(b.input(0).data() != sibling->input(0).data());
  CHECK(classified(std::vector<uint8_t>(b.output(0).begin(), b.output(0).end())) == 7);
  CHECK(classified(std::vector<uint8_t>(sibling->output(0).begin(), sibling->output(0).end())) == 1);
}

TEST_CASE("an engine that cannot hold two models unloads first, as before, and says so") {
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  backends.push_back(std::make_unique<test::TestBackend>());  // no make_sibling
  auto made = Server::create({}, std::move(backends));
  REQUIRE(made.ok());
  auto server = std::move(made).value();
  auto admin = server->open_session(Peer::of(server::Trust::process, "local", "admin"));
  REQUIRE(call(*server, *admin, Command::SET_MODEL_SECONDARY, 0, test::make_test_model({})).status ==
          AISRV_STATUS_OKAY);
  const std::vector<uint8_t> junk(32, 0x5A);
  CHECK(call(*server, *admin, Command::SET_MODEL_SECONDARY, 0, junk).status == AISRV_STATUS_ERROR_MODEL_ERR);
  CHECK(call(*server, *admin, Command::START_INFER).status == AISRV_STATUS_ERROR_NO_MODEL);
  CHECK(shared_log(*server, *admin).find("unloaded first: this engine cannot prepare a model beside it") !=
        std::string::npos);
}
