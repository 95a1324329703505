// aisrv integration tests — SPI with real processes: the test server (which serves exactly like aisrvd, here with
// --spi sim:PATH) killed and restarted in the middle of a model upload, and the `aisrv` CLI over spi-sim.
#include <doctest/doctest.h>

#include <signal.h>

#include <cstring>
#include <fstream>

#include "aisrv/client/client.hpp"
#include "aisrv/client/spi_master.hpp"
#include "process.hpp"
#include "test_backend.hpp"
#include "testdata.hpp"

using namespace aisrv;

namespace {

struct Rig {
  test::TempDir dir;
  std::string ctl = dir.file("ctl.sock");
  std::string spi = dir.file("spi.sock");
  std::unique_ptr<test::ServerProcess> server;

  void start() {
    server = std::make_unique<test::ServerProcess>(
        std::vector<std::string>{AISRV_TEST_SERVER, "--listen", "unix:" + ctl, "--spi", "sim:" + spi, "--engines",
                                 "1", "--spi-frame", "1024"},
        ctl);
  }
  void crash() {
    kill(server->pid(), SIGKILL);
    server.reset();
  }
};

#define REQUIRE_RC(expr)                                      \
  do {                                                        \
    const int rc_ = (expr);                                   \
    INFO(#expr " -> " << aisrv_mcu_strerror(rc_));            \
    REQUIRE(rc_ == AISRV_MCU_OK);                             \
  } while (0)

}  // namespace

TEST_CASE("the server crashes and restarts mid-upload: the client re-syncs and the new server gets all of it") {
  Rig rig;
  rig.start();
  auto link = client::open_sim_master(rig.spi);
  REQUIRE(link.ok());
  aisrv_mcu_config_t cfg;
  aisrv_mcu_default_config(&cfg);
  cfg.max_frame = 1024;  // chunk 988: the model below takes ~50 frames
  aisrv_mcu_t c;
  const auto hal = (*link)->hal();
  REQUIRE(aisrv_mcu_init(&c, &hal, &cfg) == AISRV_MCU_OK);
  REQUIRE_RC(aisrv_mcu_hello(&c));

  const auto model = test::make_test_model(test::TestModelSpec{{24}, {24}, 2, 0, 50000});
  struct Src {
    const std::vector<uint8_t>* model;
    Rig* rig;
    int crashes = 0;
    uint32_t offsets_after_crash = 0;
    uint32_t first_offset_after_crash = UINT32_MAX;
  } src{&model, &rig};
  auto read = [](void* ctx, uint32_t offset, uint8_t* dst, uint32_t n) -> int {
    auto* s = static_cast<Src*>(ctx);
    if (s->crashes == 0 && offset >= 25000) {
      s->rig->crash();  // SIGKILL: the half model dies with the process
      s->rig->start();  // a new server on the same path (it replaces the stale socket)
      s->crashes = 1;
    } else if (s->crashes == 1) {
      s->first_offset_after_crash = std::min(s->first_offset_after_crash, offset);
    }
    std::memcpy(dst, s->model->data() + offset, n);
    return 0;
  };
  REQUIRE_RC(aisrv_mcu_load_model_from(&c, 0, read, &src, static_cast<uint32_t>(model.size()), 1));
  CHECK(src.crashes == 1);
  CHECK(src.first_offset_after_crash == 0);  // the upload started over on the new server
  CHECK(c.stats.restarts == 1);
  // The new server has the complete model: checked over its other transport (Unix socket).
  auto ctl = client::Client::connect("unix:" + rig.ctl);
  REQUIRE(ctl.ok());
  auto info = ctl->engine_info(0);
  REQUIRE(info.ok());
  CHECK(info->model_loaded);
  CHECK(info->model_bytes == model.size());
  // and inference works through SPI
  std::vector<uint8_t> input(24, 3), out(24);
  REQUIRE_RC(aisrv_mcu_set_input(&c, 0, 0, input.data(), 24));
  REQUIRE_RC(aisrv_mcu_start_inference(&c, 0));
  uint32_t len = 0;
  REQUIRE_RC(aisrv_mcu_get_output(&c, 0, 0, out.data(), 24, &len));
  CHECK(out == test::expected_output(input, 24, 0));
  CHECK(rig.server->stop() == 0);
}

TEST_CASE("a server that is gone for good: the client gives up with a link error, not a hang") {
  Rig rig;
  rig.start();
  auto link = client::open_sim_master(rig.spi);
  REQUIRE(link.ok());
  aisrv_mcu_config_t cfg;
  aisrv_mcu_default_config(&cfg);
  cfg.max_retries = 8;
  aisrv_mcu_t c;
  const auto hal = (*link)->hal();
  REQUIRE(aisrv_mcu_init(&c, &hal, &cfg) == AISRV_MCU_OK);
  REQUIRE_RC(aisrv_mcu_hello(&c));
  rig.crash();
  const int rc = aisrv_mcu_hello(&c);
  CHECK((rc == AISRV_MCU_E_LINK || rc == AISRV_MCU_E_TIMEOUT));
}

TEST_CASE("the aisrv CLI over spi-sim: load, infer, read back, status, log") {
  Rig rig;
  rig.start();
  const std::string target = "spi-sim:" + rig.spi;
  const auto model = test::make_test_model(test::TestModelSpec{{6000}, {6000}, 2, 0});
  const std::string model_file = rig.dir.file("m.bin"), in_file = rig.dir.file("in.bin"),
                    out_file = rig.dir.file("out.bin");
  std::ofstream(model_file, std::ios::binary)
      .write(reinterpret_cast<const char*>(model.data()), static_cast<std::streamsize>(model.size()));
  std::vector<uint8_t> input(6000);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<uint8_t>(i);
  std::ofstream(in_file, std::ios::binary)
      .write(reinterpret_cast<const char*>(input.data()), static_cast<std::streamsize>(input.size()));
  auto cli = [&](std::vector<std::string> args) {
    std::vector<std::string> full{AISRV_CLI, "--connect", target};
    full.insert(full.end(), args.begin(), args.end());
    return test::run(full);
  };
  auto r = cli({"version"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  r = cli({"load", model_file});
  REQUIRE(r.exit_code == 0);
  r = cli({"infer", "-i", in_file, "-o", out_file});
  REQUIRE(r.exit_code == 0);
  const auto out = test::read_file(out_file);
  CHECK(out == test::expected_output(input, 6000, 0));
  r = cli({"--json", "status"});
  CHECK(r.exit_code == 0);
  r = cli({"log"});
  CHECK(r.exit_code == 0);
  // a server error through SPI: exit code 1 and the server's reason
  r = cli({"-e", "0", "infer", "-i", in_file, "-i", in_file});  // the model has one input
  CHECK(r.exit_code != 0);
  r = cli({"-e", "7", "spec"});  // the server's reason comes back over SPI
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("engine 7 does not exist") != std::string::npos);
  // nobody there: exit code 3
  r = test::run({AISRV_CLI, "--connect", "spi-sim:" + rig.dir.file("none.sock"), "hello"});
  CHECK(r.exit_code == 3);
  CHECK(rig.server->stop() == 0);
}

TEST_CASE("aisrvd-style start-up with an SPI port that is not an SPI device fails with the reason") {
  test::TempDir dir;
  auto r = test::run({AISRV_TEST_SERVER, "--listen", "unix:" + dir.file("s.sock"), "--spi", "/dev/null"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("--spi /dev/null: not an SPI device") != std::string::npos);
  r = test::run({AISRV_TEST_SERVER, "--listen", "unix:" + dir.file("s.sock"), "--spi", "uart:/dev/ttyS0"});
  CHECK(r.exit_code == 2);  // a target that cannot work: a configuration error
  CHECK(r.err.find("expected sim:PATH or /dev/spidevB.C") != std::string::npos);
  r = test::run({AISRV_CLI, "--connect", "spi:/dev/null", "hello"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("not an SPI device") != std::string::npos);
}
