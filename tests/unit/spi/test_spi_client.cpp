// aisrv tests — the C99 MCU client against the server over the simulated SPI wire (one process): every API
// function, models streamed from a callback in many chunks, every length around chunk boundaries, answers larger
// than the buffer, fixed-size frames, busy polling, and the C++ host transport built on the same client.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <random>
#include <thread>

#include "aisrv/client/client.hpp"
#include "aisrv/client/spi_transport.hpp"
#include "spi_harness.hpp"

using namespace aisrv;
using namespace aisrv::test;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

#define REQUIRE_RC(expr)                                      \
  do {                                                        \
    const int rc_ = (expr);                                   \
    INFO(#expr " -> " << aisrv_mcu_strerror(rc_));            \
    REQUIRE(rc_ == AISRV_MCU_OK);                             \
  } while (0)

}  // namespace

TEST_CASE("every MCU client function against the server") {
  SpiRig rig;
  auto link = rig.link();
  aisrv_mcu_t c;
  SpiRig::init_client(c, *link);

  REQUIRE_RC(aisrv_mcu_hello(&c));
  CHECK(aisrv_mcu_frame(&c) == AISRV_SPI_DEFAULT_FRAME);
  uint32_t id = 0;
  REQUIRE_RC(aisrv_mcu_get_id(&c, &id));
  CHECK(id == AISRV_SERVER_ID);
  aisrv_mcu_version_t v{};
  REQUIRE_RC(aisrv_mcu_get_version(&c, &v));
  CHECK(v.major == AISRV_PROTOCOL_MAJOR);
  CHECK(v.engines == 2);
  CHECK(v.max_payload == AISRV_MAX_PAYLOAD);

  // without a model: the server's error comes back as its status bit, with a name
  aisrv_mcu_spec_t spec{};
  int rc = aisrv_mcu_get_spec(&c, 0, 0, &spec);
  CHECK(rc == static_cast<int>(AISRV_STATUS_ERROR_NO_MODEL));
  CHECK(std::string(aisrv_mcu_strerror(rc)) == "ERROR_NO_MODEL");
  CHECK(aisrv_mcu_start_inference(&c, 0) == static_cast<int>(AISRV_STATUS_ERROR_NO_MODEL));
  CHECK(aisrv_mcu_get_spec(&c, 7, 0, &spec) == static_cast<int>(AISRV_STATUS_ERROR_BAD_ENGINE));

  const auto model = make_test_model(TestModelSpec{{100}, {100, 30}, 4, 0});
  REQUIRE_RC(aisrv_mcu_load_model(&c, 0, model.data(), static_cast<uint32_t>(model.size()), 0));
  REQUIRE_RC(aisrv_mcu_get_spec(&c, 0, 0, &spec));
  CHECK(spec.input_length == 100);
  CHECK(spec.output_length == 100);
  CHECK(spec.timings_length == 16);
  uint32_t len = 0;
  REQUIRE_RC(aisrv_mcu_input_length(&c, 0, 0, &len));
  CHECK(len == 100);
  REQUIRE_RC(aisrv_mcu_output_length(&c, 0, 1, &len));
  CHECK(len == 30);

  const auto input = pattern(100, 5);
  REQUIRE_RC(aisrv_mcu_set_input(&c, 0, 0, input.data(), 100));
  CHECK(aisrv_mcu_set_input(&c, 0, 0, input.data(), 99) == static_cast<int>(AISRV_STATUS_ERROR_BAD_LENGTH));
  REQUIRE_RC(aisrv_mcu_start_inference(&c, 0));
  std::vector<uint8_t> out(100);
  REQUIRE_RC(aisrv_mcu_get_output(&c, 0, 0, out.data(), 100, &len));
  CHECK(len == 100);
  CHECK(out == expected_output(input, 100, 0));
  REQUIRE_RC(aisrv_mcu_get_output(&c, 0, 1, out.data(), 100, &len));
  CHECK(len == 30);
  out.resize(30);
  CHECK(out == expected_output(input, 30, 1));
  CHECK(rig.engines[0]->invocations == 1);

  uint32_t ns[8] = {}, count = 0;
  REQUIRE_RC(aisrv_mcu_get_timings(&c, 0, ns, 8, &count));
  CHECK(count == 4);
  uint32_t word = 0;
  REQUIRE_RC(aisrv_mcu_get_status(&c, 0, &word));
  CHECK((word & AISRV_STATUS_ERROR_BAD_LENGTH) != 0);  // the refused SET_INPUT above, reported once
  REQUIRE_RC(aisrv_mcu_get_status(&c, 0, &word));
  CHECK(word == 0);

  char log[2048];
  REQUIRE_RC(aisrv_mcu_get_debug_log(&c, 0, 0, log, sizeof log, &len));
  CHECK(std::strlen(log) == len);
  CHECK(std::string(log).find("SET_INPUT_TENSOR") != std::string::npos);
  CHECK(aisrv_mcu_get_debug_log(&c, 0, 0, log, 4, &len) == AISRV_MCU_E_TOO_SMALL);
  CHECK(log[0] == '\0');

  CHECK(aisrv_mcu_cancel(&c, 0) == AISRV_MCU_OK);
  CHECK(aisrv_mcu_load_model_from_flash(&c, 0, 0) == static_cast<int>(AISRV_STATUS_ERROR_NOT_SUPPORTED));
  REQUIRE_RC(aisrv_mcu_unload_model(&c, 0));
  CHECK(aisrv_mcu_unload_model(&c, 0) == static_cast<int>(AISRV_STATUS_ERROR_NO_MODEL));
  // nothing went wrong on the wire
  CHECK(c.stats.bad_replies == 0);
  CHECK(c.stats.rejected == 0);
  CHECK(c.stats.syncs == 1);
}

TEST_CASE("a model streamed from a read callback in many chunks; it is applied only when complete") {
  SpiRig rig;
  auto link = rig.link();
  aisrv_mcu_t c;
  SpiRig::init_client(c, *link, 200);  // chunk 164: a 20 KB model takes 125 frames
  const auto model = make_test_model(TestModelSpec{{10}, {10}, 2, 0, 20000});
  struct Source {
    const std::vector<uint8_t>* model;
    uint32_t calls = 0;
    uint32_t max_len = 0;
  } src{&model};
  auto read = [](void* ctx, uint32_t offset, uint8_t* dst, uint32_t n) -> int {
    auto* s = static_cast<Source*>(ctx);
    if (offset + n > s->model->size()) return -1;
    std::memcpy(dst, s->model->data() + offset, n);
    ++s->calls;
    s->max_len = std::max(s->max_len, n);
    return 0;
  };
  REQUIRE_RC(aisrv_mcu_load_model_from(&c, 1, read, &src, static_cast<uint32_t>(model.size()), 1));
  CHECK(src.calls >= model.size() / AISRV_MCU_STAGE_SIZE);
  CHECK(src.max_len <= AISRV_MCU_STAGE_SIZE);  // the client never stages more than its small buffer
  aisrv_mcu_spec_t spec{};
  REQUIRE_RC(aisrv_mcu_get_spec(&c, 1, 0, &spec));
  CHECK(spec.input_length == 10);
  // the server saw the whole model, once
  auto info = rig.server->engine(1);
  REQUIRE(info != nullptr);
  CHECK(rig.spi->stats().commands >= 2);
  CHECK(c.stats.resent == 0);
}

TEST_CASE("every length around chunk boundaries round-trips (request chunks and answer chunks)") {
  SpiRig rig;
  auto link = rig.link();
  aisrv_mcu_t c;
  SpiRig::init_client(c, *link, 128);  // chunk 92
  const uint32_t chunk = 92;
  for (uint32_t k : {0u, 1u, 2u, 3u}) {
    for (int d : {-1, 0, 1}) {
      const int64_t n_signed = int64_t{k} * chunk + d;
      if (n_signed <= 0) continue;
      const auto n = static_cast<uint32_t>(n_signed);
      CAPTURE(n);
      const auto model = make_test_model(TestModelSpec{{n}, {n}, 1, 0});
      REQUIRE_RC(aisrv_mcu_load_model(&c, 0, model.data(), static_cast<uint32_t>(model.size()), 0));
      const auto input = pattern(n, static_cast<uint8_t>(n));
      REQUIRE_RC(aisrv_mcu_set_input(&c, 0, 0, input.data(), n));
      REQUIRE_RC(aisrv_mcu_start_inference(&c, 0));
      std::vector<uint8_t> out(n + 3, 0xEE);
      uint32_t len = 0;
      REQUIRE_RC(aisrv_mcu_get_output(&c, 0, 0, out.data(), n + 3, &len));
      CHECK(len == n);
      out.resize(n);
      CHECK(out == expected_output(input, n, 0));
    }
  }
  CHECK(c.stats.bad_replies == 0);
  CHECK(c.stats.rejected == 0);
}

TEST_CASE("an answer larger than the buffer: its length is reported and it can be read again") {
  SpiRig rig;
  auto link = rig.link();
  aisrv_mcu_t c;
  SpiRig::init_client(c, *link, 256);
  const auto model = make_test_model(TestModelSpec{{1000}, {1000}, 1, 0});
  REQUIRE_RC(aisrv_mcu_load_model(&c, 0, model.data(), static_cast<uint32_t>(model.size()), 0));
  const auto input = pattern(1000, 1);
  REQUIRE_RC(aisrv_mcu_set_input(&c, 0, 0, input.data(), 1000));
  REQUIRE_RC(aisrv_mcu_start_inference(&c, 0));
  std::vector<uint8_t> small(300, 0);
  uint32_t len = 0;
  CHECK(aisrv_mcu_get_output(&c, 0, 0, small.data(), 300, &len) == AISRV_MCU_E_TOO_SMALL);
  CHECK(len == 1000);
  std::vector<uint8_t> out(1000);
  REQUIRE_RC(aisrv_mcu_read_answer(&c, out.data(), 1000, &len));
  CHECK(out == expected_output(input, 1000, 0));
  // again, and then a new command makes the old answer unavailable
  REQUIRE_RC(aisrv_mcu_read_answer(&c, out.data(), 1000, &len));
  REQUIRE_RC(aisrv_mcu_hello(&c));
  CHECK(aisrv_mcu_read_answer(&c, out.data(), 1000, &len) == AISRV_MCU_OK);  // HELLO's (empty) answer
  CHECK(len == 0);
}

TEST_CASE("fixed-size frames: every transaction is exactly one frame; a mismatched master is refused") {
  SpiRigOptions o;
  o.server_frame = 256;
  o.fixed = true;
  SpiRig rig(o);
  {
    auto link = rig.link();
    aisrv_mcu_t c;
    SpiRig::init_client(c, *link, 256, /*fixed=*/true);
    const auto model = make_test_model(TestModelSpec{{700}, {700}, 1, 0});
    REQUIRE_RC(aisrv_mcu_load_model(&c, 0, model.data(), static_cast<uint32_t>(model.size()), 0));
    const auto input = pattern(700, 3);
    REQUIRE_RC(aisrv_mcu_set_input(&c, 0, 0, input.data(), 700));
    REQUIRE_RC(aisrv_mcu_start_inference(&c, 0));
    std::vector<uint8_t> out(700);
    uint32_t len = 0;
    REQUIRE_RC(aisrv_mcu_get_output(&c, 0, 0, out.data(), 700, &len));
    CHECK(out == expected_output(input, 700, 0));
    CHECK(c.stats.clocked == uint64_t{c.stats.transactions} * 256);
    CHECK(rig.spi->stats().by_error[AISRV_SPI_E_WRONG_SIZE] == 0);
  }
  {
    // a master that does not pad cannot talk to this slave, and is told so
    auto link = rig.link();
    aisrv_mcu_t c;
    SpiRig::init_client(c, *link, 256, /*fixed=*/false);
    CHECK(aisrv_mcu_hello(&c) == AISRV_MCU_E_INCOMPATIBLE);
  }
}

TEST_CASE("the host polls while the server is busy; the answer arrives when the inference is done") {
  SpiRig rig;
  auto link = rig.link();
  aisrv_mcu_t c;
  SpiRig::init_client(c, *link);
  const auto model = make_test_model(TestModelSpec{{64}, {64}, 5, 20000});  // 5 layers x 20 ms
  REQUIRE_RC(aisrv_mcu_load_model(&c, 0, model.data(), static_cast<uint32_t>(model.size()), 0));
  const auto input = pattern(64, 9);
  REQUIRE_RC(aisrv_mcu_set_input(&c, 0, 0, input.data(), 64));
  const auto polls_before = c.stats.busy_polls;
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE_RC(aisrv_mcu_start_inference(&c, 0));
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(100));
  CHECK(c.stats.busy_polls > polls_before);
  std::vector<uint8_t> out(64);
  uint32_t len = 0;
  REQUIRE_RC(aisrv_mcu_get_output(&c, 0, 0, out.data(), 64, &len));
  CHECK(out == expected_output(input, 64, 0));
  CHECK(rig.engines[0]->invocations == 1);
  // a timeout shorter than the inference is reported as such
  c.cfg.timeout_us = 30000;
  CHECK(aisrv_mcu_start_inference(&c, 0) == AISRV_MCU_E_TIMEOUT);
}

TEST_CASE("aisrv_mcu_strerror names every code") {
  for (int e = AISRV_MCU_E_NO_ANSWER; e < 0; ++e) {
    CAPTURE(e);
    CHECK(std::string(aisrv_mcu_strerror(e)).rfind("AISRV_MCU_E_", 0) == 0);
  }
  CHECK(std::string(aisrv_mcu_strerror(0)) == "OKAY");
  CHECK(std::string(aisrv_mcu_strerror(static_cast<int>(AISRV_STATUS_ERROR_CRC))) == "ERROR_CRC");
  CHECK(std::string(aisrv_mcu_strerror(-99)) == "UNKNOWN");
  aisrv_mcu_t c;
  aisrv_mcu_hal_t none{};
  CHECK(aisrv_mcu_init(&c, &none, nullptr) == AISRV_MCU_E_ARG);
}

TEST_CASE("the C++ client library over the SPI host transport (the same C client underneath)") {
  SpiRig rig;
  auto c = client::Client::connect("spi-sim:" + rig.path);
  REQUIRE_MESSAGE(c.ok(), (c ? "" : c.error().what()));
  CHECK(c->transport().describe() == "spi-sim:" + rig.path);
  CHECK(*c->id() == AISRV_SERVER_ID);
  const auto model = make_test_model(TestModelSpec{{5000}, {5000}, 3, 0});
  REQUIRE(c->load_model(0, model).ok());
  const auto input = pattern(5000, 2);
  REQUIRE(c->set_input(0, 0, input).ok());
  REQUIRE(c->start_inference(0).ok());
  auto out = c->get_output(0, 0);  // first time: the answer is larger than the guess, read again
  REQUIRE(out.ok());
  CHECK(*out == expected_output(input, 5000, 0));
  out = c->get_output(0, 0);  // second time: the guess is right
  CHECK(*out == expected_output(input, 5000, 0));
  // a server error carries the server's reason from the debug log
  auto r = c->set_input(0, 0, std::vector<uint8_t>(10));
  REQUIRE(!r);
  CHECK(r.error().code == Errc::bad_length);
  CHECK(r.error().message.find("5000") != std::string::npos);
  // nothing listens: a clear error at once
  auto none = client::Client::connect("spi-sim:" + rig.dir.file("nobody.sock"));
  REQUIRE(!none);
  CHECK(none.error().code == Errc::not_found);
  auto bad = client::Client::connect("spi:/dev/spidev0.0:fast");
  REQUIRE(!bad);
  CHECK(bad.error().code == Errc::invalid_argument);
}

TEST_CASE("a hostile slave (CRC-valid replies with random fields) never makes the client loop, hang or overrun") {
  struct Hostile {
    std::mt19937 rng{4242};
    std::vector<uint8_t> mosi;
    std::vector<std::pair<uint8_t*, size_t>> rx;
    uint32_t pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng); }
  } hostile;
  aisrv_mcu_hal_t hal{};
  hal.ctx = &hostile;
  hal.transfer = [](void* ctx, const uint8_t* tx, uint8_t* rx, size_t len) {
    auto* h = static_cast<Hostile*>(ctx);
    h->mosi.insert(h->mosi.end(), len, 0);
    (void)tx;
    h->rx.push_back({rx, len});
    return 0;
  };
  hal.select = [](void* ctx, int active) {
    auto* h = static_cast<Hostile*>(ctx);
    if (active) {
      h->mosi.clear();
      h->rx.clear();
      return 0;
    }
    const size_t n = h->mosi.size();
    std::vector<uint8_t> miso(n, AISRV_SPI_FILLER);
    aisrv_spi_reply_t r{};
    r.state = static_cast<uint8_t>(h->pick(32));
    r.seq = static_cast<uint8_t>(h->pick(256));
    r.error = static_cast<uint8_t>(h->pick(14));
    r.xfer = static_cast<uint16_t>(h->pick(4));
    r.status = h->pick(2) ? 0 : 1u << h->pick(14);
    r.frame = static_cast<uint16_t>(h->pick(2) ? 4092 : h->pick(70000));
    r.total = h->pick(2) ? h->pick(300) : h->pick(0xFFFFFFFFu);
    r.offset = h->pick(2) ? h->pick(300) : h->pick(0xFFFFFFFFu);
    r.boot = h->pick(50) ? 7 : h->pick(4);
    const size_t room = n > AISRV_SPI_OVERHEAD ? n - AISRV_SPI_OVERHEAD : 0;
    r.length = static_cast<uint16_t>(room ? h->pick(static_cast<uint32_t>(room) + 1) : 0);
    std::vector<uint8_t> answer(r.length, 0xAB);
    if (n >= AISRV_SPI_OVERHEAD + r.length) aisrv_spi_build_reply(&r, answer.data(), miso.data());
    size_t at = 0;
    for (auto [rx, len] : h->rx) {
      if (rx) std::memcpy(rx, miso.data() + at, len);
      at += len;
    }
    return 0;
  };
  hal.delay_us = [](void*, uint32_t us) { std::this_thread::sleep_for(std::chrono::microseconds(std::min(us, 50u))); };
  hal.now_us = [](void*) {
    return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  };
  aisrv_mcu_config_t cfg;
  aisrv_mcu_default_config(&cfg);
  cfg.timeout_us = 50000;
  cfg.poll_max_us = 100;
  aisrv_mcu_t c;
  REQUIRE(aisrv_mcu_init(&c, &hal, &cfg) == AISRV_MCU_OK);
  std::vector<uint8_t> out(64), in(300, 1);
  const auto t0 = std::chrono::steady_clock::now();
  int ok = 0;
  for (int i = 0; i < 300; ++i) {
    uint32_t len = 0;
    int rc = aisrv_mcu_get_output(&c, 0, 0, out.data(), static_cast<uint32_t>(out.size()), &len);
    if (rc == AISRV_MCU_OK) {
      ++ok;
      CHECK(len <= out.size());
    }
    rc = aisrv_mcu_set_input(&c, 0, 0, in.data(), static_cast<uint32_t>(in.size()));
    CHECK(rc != 1);  // a status bit is never BUSY
  }
  // 600 commands, each bounded by its 50 ms timeout
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60));
  MESSAGE("hostile slave: " << ok << " of 300 reads completed, " << c.stats.bad_replies << " bad replies");
}

TEST_CASE("spidev ports refuse what is not an SPI device, with the reason (no SPI hardware needed)") {
  using phy::spi::open_slave_port;
  phy::spi::SpiPortOptions po;
  auto missing = open_slave_port("/dev/spidev-does-not-exist.0", po);
  REQUIRE(!missing);
  CHECK(missing.error().code == Errc::not_found);
  auto not_spi = open_slave_port("/dev/null", po);
  REQUIRE(!not_spi);
  CHECK(not_spi.error().code == Errc::io_error);
  CHECK(not_spi.error().message.find("not an SPI device") != std::string::npos);
  auto bogus = open_slave_port("uart:/dev/ttyS0", po);
  REQUIRE(!bogus);
  CHECK(bogus.error().code == Errc::invalid_argument);
  po.frame = 32;
  CHECK(open_slave_port("sim:/tmp/x.sock", po).error().code == Errc::invalid_argument);
  po.frame = 4092;
  po.mode = 4;
  CHECK(open_slave_port("/dev/null", po).error().code == Errc::invalid_argument);

  auto master = client::open_spidev_master("/dev/null", 1000000);
  REQUIRE(!master);
  CHECK(master.error().message.find("not an SPI device") != std::string::npos);
  CHECK(client::open_spidev_master("/dev/spidev-does-not-exist.0", 1000000).error().code == Errc::not_found);
  CHECK(client::open_spidev_master("/dev/null", 0).error().code == Errc::invalid_argument);
  // the same through the transport targets
  auto t = client::Client::connect("spi:/dev/null:8000000");
  REQUIRE(!t);
  CHECK(t.error().code == Errc::io_error);
}
