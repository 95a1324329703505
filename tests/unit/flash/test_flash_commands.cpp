// aisrv tests — the interpreter's model-store commands in process (test-double backend, RAM flash): chunked write
// and commit, catalogue, chunked read-back, erase, SET_MODEL_*_FLASH with its hash check, and every error answered
// with its status bit and a debug-log line, leaving the stored model as it was.
#include <doctest/doctest.h>

#include "aisrv/flash/format.hpp"
#include "aisrv/flash/store.hpp"
#include "aisrv/protocol/flash_payloads.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/server.hpp"
#include "flash_test_util.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using namespace aisrv::protocol;
using aisrv::server::Server;

namespace {

struct Rig {
  test::MemoryFlash dev{flash::Geometry{1024 * 1024, 4096, 1}};
  std::unique_ptr<flash::ModelStore> store;
  std::unique_ptr<Server> server;

  explicit Rig(uint32_t max_payload = AISRV_MAX_PAYLOAD, bool with_store = true) {
    store = test::format_store(dev, 4);
    std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
    for (int i = 0; i < 2; ++i) backends.push_back(std::make_unique<test::TestBackend>());
    server::ServerOptions o;
    o.max_payload = max_payload;
    if (with_store) o.store = store.get();
    auto s = Server::create(std::move(o), std::move(backends));
    REQUIRE(s.ok());
    server = std::move(s).value();
    session = server->open_session(server::Peer::of(server::Trust::process, "local", "test"));
  }
  std::shared_ptr<server::Session> session;

  Response call(Command cmd, uint32_t engine = 0, uint32_t tensor = 0, std::span<const uint8_t> payload = {}) {
    Response r;
    server->handle(*session, Request{Header{static_cast<uint32_t>(cmd), engine, tensor}, payload}, r);
    return r;
  }
  std::string last_log(uint32_t engine) {
    auto r = call(Command::GET_DEBUG_LOG, engine, 1);
    return std::string(r.payload.begin(), r.payload.end());
  }
  uint32_t begin(uint32_t engine, const FlashBegin& b) {
    std::vector<uint8_t> p;
    encode(b, p);
    return call(Command::SET_FLASH_BEGIN, engine, 0, p).status;
  }
  uint32_t chunk(uint32_t engine, uint64_t offset, std::span<const uint8_t> bytes) {
    std::vector<uint8_t> p;
    encode_flash_chunk(offset, bytes, p);
    return call(Command::SET_FLASH_CHUNK, engine, 0, p).status;
  }
  void write(uint32_t engine, const std::vector<uint8_t>& model, const std::string& name, size_t step = 5) {
    REQUIRE(begin(engine, FlashBegin{model.size(), flash::format::xxh64(model), kFlashFormatAny, name}) == 0);
    for (size_t off = 0; off < model.size(); off += step)
      REQUIRE(chunk(engine, off, std::span(model).subspan(off, std::min(step, model.size() - off))) == 0);
    REQUIRE(call(Command::SET_FLASH_COMMIT, engine).status == 0);
  }
  FlashCatalogue catalogue() {
    auto r = call(Command::GET_FLASH_CATALOGUE, 0xFFFFFFFFu);
    REQUIRE(r.status == 0);
    auto c = decode_flash_catalogue(r.payload);
    REQUIRE(c.ok());
    return *c;
  }
  std::vector<uint8_t> infer(uint32_t engine, const std::vector<uint8_t>& input) {
    REQUIRE(call(Command::SET_INPUT_TENSOR, engine, 0, input).status == 0);
    REQUIRE(call(Command::START_INFER, engine).status == 0);
    auto r = call(Command::GET_OUTPUT_TENSOR, engine, 0);
    REQUIRE(r.status == 0);
    return r.payload;
  }
};

const auto kModel = test::make_test_model(test::TestModelSpec{{8}, {8}, 2, 0});
const std::vector<uint8_t> kInput{1, 2, 3, 4, 5, 6, 7, 8};

}  // namespace

TEST_CASE("flash commands: write in chunks, list, read back by chunk, load, infer like a wire-loaded model") {
  Rig rig;
  rig.write(0, kModel, "test-model");
  CHECK(rig.last_log(0).find("committed to slot A") != std::string::npos);
  const auto cat = rig.catalogue();
  CHECK(cat.entries.size() == 4);
  REQUIRE(cat.entries[0].active);
  CHECK(cat.entries[0].active->name == "test-model");
  CHECK(cat.entries[0].active->size == kModel.size());
  CHECK(cat.entries[0].active->xxh64 == flash::format::xxh64(kModel));
  CHECK_FALSE(cat.entries[1].active);
  CHECK(cat.read_chunk == 1024 * 1024);

  auto r = rig.call(Command::GET_FLASH_MODEL, 0, 0);
  REQUIRE(r.status == 0);
  CHECK(r.payload == kModel);
  CHECK(rig.call(Command::GET_FLASH_MODEL, 0, 1).status == AISRV_STATUS_ERROR_BAD_TENSOR);

  REQUIRE(rig.call(Command::SET_MODEL_SECONDARY_FLASH, 0).status == 0);
  const auto from_flash = rig.infer(0, kInput);
  REQUIRE(rig.call(Command::SET_MODEL_SECONDARY, 1, 0, kModel).status == 0);
  const auto from_wire = rig.infer(1, kInput);
  CHECK(from_flash == from_wire);
  auto info = decode_engine_info(rig.call(Command::GET_ENGINE_INFO, 0).payload);
  REQUIRE(info.ok());
  CHECK(info->model_source == "flash");
  CHECK(rig.call(Command::SET_MODEL_PRIMARY_FLASH, 0).status == 0);

  auto version = decode_version(rig.call(Command::GET_VERSION).payload);
  REQUIRE(version.ok());
  CHECK((version->capabilities & AISRV_CAP_FLASH) != 0);
}

TEST_CASE("flash commands: read-back in several chunks when the payload limit is small") {
  Rig rig(4096);
  std::vector<uint8_t> big(10000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  rig.write(1, big, "big", 3000);
  CHECK(rig.catalogue().read_chunk == 4096);
  std::vector<uint8_t> back;
  for (uint32_t i = 0; i < 3; ++i) {
    auto r = rig.call(Command::GET_FLASH_MODEL, 1, i);
    REQUIRE(r.status == 0);
    back.insert(back.end(), r.payload.begin(), r.payload.end());
  }
  CHECK(back == big);
  CHECK(rig.call(Command::GET_FLASH_MODEL, 1, 3).status == AISRV_STATUS_ERROR_BAD_TENSOR);
}

TEST_CASE("flash commands: errors answer with their status and a log line, and the stored model stays") {
  Rig rig;
  rig.write(0, kModel, "keep");
  const auto other = test::make_test_model(test::TestModelSpec{{4}, {4}, 1, 0});

  SUBCASE("no stored model") {
    CHECK(rig.call(Command::SET_MODEL_SECONDARY_FLASH, 1).status == AISRV_STATUS_ERROR_NO_MODEL);
    CHECK(rig.last_log(1).find("no model in the store") != std::string::npos);
    CHECK(rig.call(Command::GET_FLASH_MODEL, 1, 0).status == AISRV_STATUS_ERROR_NO_MODEL);
  }
  SUBCASE("chunk without begin, commit without begin") {
    CHECK(rig.chunk(1, 0, other) == AISRV_STATUS_ERROR_BAD_CMD);
    CHECK(rig.call(Command::SET_FLASH_COMMIT, 1).status == AISRV_STATUS_ERROR_BAD_CMD);
  }
  SUBCASE("chunk out of order names the expected offset") {
    REQUIRE(rig.begin(0, FlashBegin{other.size(), std::nullopt, 0, "x"}) == 0);
    REQUIRE(rig.chunk(0, 0, std::span(other).subspan(0, 4)) == 0);
    CHECK(rig.chunk(0, 8, std::span(other).subspan(8, 4)) == AISRV_STATUS_ERROR_BAD_LENGTH);
    CHECK(rig.last_log(0).find("expected the model segment at offset 4") != std::string::npos);
    auto st = decode_flash_write_state(rig.call(Command::GET_FLASH_WRITE_STATE, 0).payload);
    REQUIRE(st.ok());
    CHECK(st->in_progress);
    CHECK(st->next_offset == 4);
    CHECK(st->expected == other.size());
    CHECK(rig.catalogue().entries[0].writing);
    CHECK(rig.call(Command::SET_FLASH_COMMIT, 0).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  }
  SUBCASE("announced hash differs: ERROR_CRC at commit") {
    REQUIRE(rig.begin(0, FlashBegin{other.size(), 0x1234, 0, "x"}) == 0);
    REQUIRE(rig.chunk(0, 0, other) == 0);
    CHECK(rig.call(Command::SET_FLASH_COMMIT, 0).status == AISRV_STATUS_ERROR_CRC);
    CHECK(rig.last_log(0).find("the old model stays active") != std::string::npos);
  }
  SUBCASE("announced format differs, unknown format code, long name") {
    REQUIRE(rig.begin(0, FlashBegin{other.size(), std::nullopt, kFlashFormatHef, "x"}) == 0);
    REQUIRE(rig.chunk(0, 0, other) == 0);
    CHECK(rig.call(Command::SET_FLASH_COMMIT, 0).status == AISRV_STATUS_ERROR_MODEL_ERR);
    CHECK(rig.begin(0, FlashBegin{other.size(), std::nullopt, 9, "x"}) == AISRV_STATUS_ERROR_MODEL_ERR);
    CHECK(rig.begin(0, FlashBegin{other.size(), std::nullopt, 0, std::string(40, 'n')}) ==
          AISRV_STATUS_ERROR_MODEL_ERR);
  }
  SUBCASE("malformed payloads") {
    const std::vector<uint8_t> shorty{1, 2, 3};
    CHECK(rig.call(Command::SET_FLASH_BEGIN, 0, 0, shorty).status == AISRV_STATUS_ERROR_BAD_LENGTH);
    CHECK(rig.call(Command::SET_FLASH_CHUNK, 0, 0, shorty).status == AISRV_STATUS_ERROR_BAD_LENGTH);
    CHECK(rig.call(Command::SET_FLASH_COMMIT, 0, 0, shorty).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  }
  SUBCASE("too large for the store") {
    CHECK(rig.begin(0, FlashBegin{100u << 20, std::nullopt, 0, "x"}) == AISRV_STATUS_ERROR_FLASH);
  }
  SUBCASE("engine outside the server") {
    CHECK(rig.call(Command::SET_FLASH_ERASE, 7).status == AISRV_STATUS_ERROR_BAD_ENGINE);
  }
  SUBCASE("abort drops the transfer") {
    REQUIRE(rig.begin(0, FlashBegin{other.size(), std::nullopt, 0, "x"}) == 0);
    REQUIRE(rig.call(Command::SET_FLASH_ABORT, 0).status == 0);
    CHECK(rig.chunk(0, 0, other) == AISRV_STATUS_ERROR_BAD_CMD);
  }
  SUBCASE("corrupt stored model: ERROR_MODEL_ERR with a debug-log line, GET_FLASH_MODEL ERROR_FLASH") {
    const auto e = *rig.store->entry(0);
    const auto& s = *e.active_slot();
    rig.dev.flip_bit((s.extent_offset + s.segment(flash::SegmentKind::model).offset + 4 + 3) * 8);
    CHECK(rig.call(Command::SET_MODEL_SECONDARY_FLASH, 0).status == AISRV_STATUS_ERROR_MODEL_ERR);
    const auto log = rig.last_log(0);
    CHECK(log.find("integrity check failed") != std::string::npos);
    CHECK(log.find("xxh64 mismatch") != std::string::npos);
    CHECK(rig.call(Command::GET_FLASH_MODEL, 0, 0).status == AISRV_STATUS_ERROR_FLASH);
    CHECK(rig.call(Command::GET_STATUS, 0).status == 0);
    return;
  }
  // Whatever failed, engine 0's stored model is still the one written first.
  auto r = rig.call(Command::GET_FLASH_MODEL, 0, 0);
  REQUIRE(r.status == 0);
  CHECK(r.payload == kModel);
}

TEST_CASE("flash commands: erase, and a server without a store answers NOT_SUPPORTED") {
  Rig rig;
  rig.write(0, kModel, "gone");
  REQUIRE(rig.call(Command::SET_FLASH_ERASE, 0).status == 0);
  CHECK_FALSE(rig.catalogue().entries[0].active);
  CHECK(rig.call(Command::SET_MODEL_PRIMARY_FLASH, 0).status == AISRV_STATUS_ERROR_NO_MODEL);

  Rig bare(AISRV_MAX_PAYLOAD, false);
  for (auto cmd : {Command::SET_MODEL_PRIMARY_FLASH, Command::GET_FLASH_CATALOGUE, Command::SET_FLASH_ERASE,
                   Command::GET_FLASH_MODEL}) {
    CHECK(bare.call(cmd, 0).status == AISRV_STATUS_ERROR_NOT_SUPPORTED);
  }
  CHECK(bare.last_log(0).find("--flash") != std::string::npos);
}
