// aisrv tests — link faults injected on the simulated SPI wire (tests/support/spi_fault_link.hpp): each fault is
// caught (by the CRC, the length check or the transfer's offsets), the chunk is retried, and the result is still
// byte-exact with every command executed exactly once. Plus what a half-received request leaves behind: nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "spi_harness.hpp"

using namespace aisrv;
using namespace aisrv::test;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 11);
  return v;
}

#define REQUIRE_RC(expr)                                      \
  do {                                                        \
    const int rc_ = (expr);                                   \
    INFO(#expr " -> " << std::string(aisrv_mcu_strerror(rc_))); \
    REQUIRE(rc_ == AISRV_MCU_OK);                             \
  } while (0)

// A session that moves data both ways in many chunks: model upload, a multi-chunk input, inference, a multi-chunk
// output, and small commands in between. Frame 256: chunk 220.
void run_session(aisrv_mcu_t& c, SpiRig& rig, int rounds) {
  const uint32_t n = 2000;
  const auto model = make_test_model(TestModelSpec{{n}, {n}, 2, 0, 1500});
  REQUIRE_RC(aisrv_mcu_load_model(&c, 0, model.data(), static_cast<uint32_t>(model.size()), 0));
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    const auto input = pattern(n, static_cast<uint8_t>(round * 17));
    REQUIRE_RC(aisrv_mcu_set_input(&c, 0, 0, input.data(), n));
    const int before = rig.engines[0]->invocations;
    REQUIRE_RC(aisrv_mcu_start_inference(&c, 0));
    CHECK(rig.engines[0]->invocations == before + 1);  // exactly once, retries or not
    std::vector<uint8_t> out(n);
    uint32_t len = 0;
    REQUIRE_RC(aisrv_mcu_get_output(&c, 0, 0, out.data(), n, &len));
    CHECK(len == n);
    CHECK(out == expected_output(input, n, 0));
    uint32_t id = 0;
    REQUIRE_RC(aisrv_mcu_get_id(&c, &id));
    CHECK(id == AISRV_SERVER_ID);
  }
}

}  // namespace

TEST_CASE("every kind of link fault is caught and retried; results stay exact, commands run once") {
  for (auto fault : {SpiFault::flip_mosi, SpiFault::flip_miso, SpiFault::drop_mosi, SpiFault::dup_mosi,
                     SpiFault::drop_miso, SpiFault::dup_miso, SpiFault::cs_glitch, SpiFault::lost}) {
    const std::string fault_text = fault_name(fault);
    CAPTURE(fault_text);
    SpiRig rig;
    // AISRV_SPI_FAULT_SEEDS=N runs N seeds per fault (soak runs); 2 by default
    const char* env = std::getenv("AISRV_SPI_FAULT_SEEDS");
    const uint32_t seeds = env ? static_cast<uint32_t>(std::max(1, std::atoi(env))) : 2;
    for (uint32_t seed = 1; seed <= seeds; ++seed) {
      CAPTURE(seed);
      const char* every_env = std::getenv("AISRV_SPI_FAULT_EVERY");  // soak runs: damage more often
      auto link = rig.link(fault, every_env ? static_cast<unsigned>(std::atoi(every_env)) : 3, seed);  // default: 1 in 3
      aisrv_mcu_t c;
      SpiRig::init_client(c, *link, 256);
      run_session(c, rig, 3);
      CHECK(rig.faulty->injected() > 5);
      // the damage was seen (and repaired): by the client on MISO, by the server on MOSI
      CHECK(c.stats.bad_replies + c.stats.rejected > 0);
    }
    const auto stats = rig.spi->stats();
    if (fault == SpiFault::flip_mosi || fault == SpiFault::drop_mosi || fault == SpiFault::dup_mosi ||
        fault == SpiFault::cs_glitch)
      CHECK(stats.rejected > 0);
    if (fault == SpiFault::flip_mosi) CHECK(stats.crc_errors > 0);
  }
}

TEST_CASE("a burst of faults on every transaction for a while, then a clean link: the command completes") {
  SpiRig rig;
  auto link = rig.link(SpiFault::flip_miso, 1);
  aisrv_mcu_t c;
  SpiRig::init_client(c, *link, 512);
  // sync once on a clean link, then damage every transaction for the first 10 of the next command
  rig.faulty->set_fault(SpiFault::none, 0);
  REQUIRE_RC(aisrv_mcu_hello(&c));
  const unsigned start = rig.faulty->transactions();
  rig.faulty->before_transaction = [&](unsigned n) {
    rig.faulty->set_fault(n - start <= 10 ? SpiFault::flip_mosi : SpiFault::none, 1);
  };
  const auto model = make_test_model(TestModelSpec{{4000}, {4000}, 1, 0});
  REQUIRE_RC(aisrv_mcu_load_model(&c, 0, model.data(), static_cast<uint32_t>(model.size()), 0));
  const auto input = pattern(4000, 1);
  REQUIRE_RC(aisrv_mcu_set_input(&c, 0, 0, input.data(), 4000));
  CHECK(c.stats.rejected > 0);
  rig.faulty->before_transaction = nullptr;
  // a link that never recovers ends in a link error, not a hang
  rig.faulty->set_fault(SpiFault::flip_mosi, 1);
  c.cfg.max_retries = 5;
  CHECK(aisrv_mcu_start_inference(&c, 0) == AISRV_MCU_E_LINK);
}

TEST_CASE("a half-received upload is never applied: the old model stays; a new transfer discards the part") {
  SpiRig rig;
  auto link = rig.link();
  aisrv_mcu_t c;
  SpiRig::init_client(c, *link, 256);
  const auto a = make_test_model(TestModelSpec{{16}, {16}, 1, 0});
  REQUIRE_RC(aisrv_mcu_load_model(&c, 0, a.data(), static_cast<uint32_t>(a.size()), 0));
  // model B is streamed but the source fails half-way: the upload stops mid-transfer
  const auto b = make_test_model(TestModelSpec{{999}, {999}, 1, 0, 5000});
  struct Half {
    const std::vector<uint8_t>* model;
  } half{&b};
  auto read = [](void* ctx, uint32_t offset, uint8_t* dst, uint32_t n) -> int {
    auto* h = static_cast<Half*>(ctx);
    if (offset >= h->model->size() / 2) return -1;
    std::memcpy(dst, h->model->data() + offset, n);
    return 0;
  };
  CHECK(aisrv_mcu_load_model_from(&c, 0, read, &half, static_cast<uint32_t>(b.size()), 0) == AISRV_MCU_E_SOURCE);
  // model A is still the engine's model, unchanged and working
  aisrv_mcu_spec_t spec{};
  REQUIRE_RC(aisrv_mcu_get_spec(&c, 0, 0, &spec));
  CHECK(spec.input_length == 16);
  const auto input = pattern(16, 4);
  REQUIRE_RC(aisrv_mcu_set_input(&c, 0, 0, input.data(), 16));
  REQUIRE_RC(aisrv_mcu_start_inference(&c, 0));
  // the new transfer (GET_SPEC) discarded the half model, and said so in the server log
  const auto log = rig.server_log();
  CHECK(log.find("SET_MODEL_PRIMARY, engine 0) discarded after") != std::string::npos);
  CHECK(log.find("a new transfer began") != std::string::npos);
  CHECK(rig.spi->stats().discarded == 1);
}

TEST_CASE("a half-received upload is discarded after the link timeout") {
  SpiRigOptions o;
  o.transfer_timeout = std::chrono::milliseconds(100);
  SpiRig rig(o);
  auto link = rig.link();
  aisrv_mcu_t c;
  SpiRig::init_client(c, *link, 256);
  const auto b = make_test_model(TestModelSpec{{8}, {8}, 1, 0, 3000});
  struct Half {
    const std::vector<uint8_t>* model;
  } half{&b};
  auto read = [](void* ctx, uint32_t offset, uint8_t* dst, uint32_t n) -> int {
    auto* h = static_cast<Half*>(ctx);
    if (offset >= 1000) return -1;
    std::memcpy(dst, h->model->data() + offset, n);
    return 0;
  };
  CHECK(aisrv_mcu_load_model_from(&c, 1, read, &half, static_cast<uint32_t>(b.size()), 0) == AISRV_MCU_E_SOURCE);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (rig.spi->stats().discarded == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(rig.spi->stats().discarded == 1);
  CHECK(rig.server_log().find("no frame for 100 ms") != std::string::npos);
  aisrv_mcu_spec_t spec{};
  CHECK(aisrv_mcu_get_spec(&c, 1, 0, &spec) == static_cast<int>(AISRV_STATUS_ERROR_NO_MODEL));
}

TEST_CASE("the server's SPI side restarts mid-upload: the client notices, re-syncs and uploads again") {
  SpiRig rig;
  auto link = rig.link();
  aisrv_mcu_t c;
  SpiRig::init_client(c, *link, 256);
  const auto model = make_test_model(TestModelSpec{{32}, {32}, 1, 0, 8000});
  struct Src {
    const std::vector<uint8_t>* model;
    SpiRig* rig;
    bool restarted = false;
    uint32_t max_offset_after = 0;
  } src{&model, &rig};
  auto read = [](void* ctx, uint32_t offset, uint8_t* dst, uint32_t n) -> int {
    auto* s = static_cast<Src*>(ctx);
    if (!s->restarted && offset >= 4000) {
      // the SPI transport goes away and comes back (new link state, new boot id), like a restarted server
      s->rig->spi->stop();
      s->rig->spi.reset();
      s->rig->start_spi();
      s->restarted = true;
    }
    std::memcpy(dst, s->model->data() + offset, n);
    return 0;
  };
  REQUIRE_RC(aisrv_mcu_load_model_from(&c, 0, read, &src, static_cast<uint32_t>(model.size()), 0));
  CHECK(src.restarted);
  CHECK(c.stats.restarts == 1);
  CHECK(c.stats.syncs == 2);
  aisrv_mcu_spec_t spec{};
  REQUIRE_RC(aisrv_mcu_get_spec(&c, 0, 0, &spec));
  CHECK(spec.input_length == 32);
}
