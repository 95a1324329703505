// Integration test: inference end to end over SPI with the CPU engine. aisrvd (--engine 0=cpu, --spi sim:PATH)
// serves the simulated wire; the C99 MCU client streams each real TFLite model of the shared test data from a read
// callback in 4056-byte chunks, writes the input, starts the inference (polling while the engine is busy) and
// reads the output, which must equal TFLite Micro's reference output byte for byte.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <map>

#include "aisrv/client/spi_master.hpp"
#include "expected_cases.hpp"
#include "process.hpp"
#include "testdata.hpp"

using namespace aisrv;

namespace {

int read_model(void* ctx, uint32_t offset, uint8_t* dst, uint32_t len) {
  const auto* m = static_cast<const std::vector<uint8_t>*>(ctx);
  if (uint64_t{offset} + len > m->size()) return -1;
  std::memcpy(dst, m->data() + offset, len);
  return 0;
}

#define REQUIRE_RC(expr)                                          \
  do {                                                            \
    const int rc_ = (expr);                                       \
    INFO(#expr " -> " << std::string(aisrv_mcu_strerror(rc_)));   \
    REQUIRE(rc_ == AISRV_MCU_OK);                                 \
  } while (0)

}  // namespace

TEST_CASE("every expected case over SPI with the CPU engine: the MCU client gets TFLite Micro's bytes") {
  test::TempDir dir;
  const std::string sock = dir.file("ctl.sock"), spi = dir.file("spi.sock");
  test::ServerProcess server{{AISRVD, "--listen", "unix:" + sock, "--spi", "sim:" + spi, "--engine", "0=cpu"}, sock};
  auto link = client::open_sim_master(spi);
  REQUIRE(link.ok());
  const auto hal = (*link)->hal();
  aisrv_mcu_config_t cfg;
  aisrv_mcu_default_config(&cfg);
  cfg.timeout_us = 120000000;  // a MobileNet under the sanitizers takes a while
  aisrv_mcu_t c;
  REQUIRE(aisrv_mcu_init(&c, &hal, &cfg) == AISRV_MCU_OK);

  std::map<std::string, std::vector<uint8_t>> models;
  std::string loaded;
  for (const test::ExpectedCase& k : test::expected_cases()) {
    CAPTURE(k.model);
    CAPTURE(k.input);
    auto& model = models[k.model];
    if (model.empty()) model = test::read_file(test::testdata_path(k.model));
    const auto input = test::read_file(test::testdata_path(k.input));
    const auto want = test::read_file(test::testdata_path(k.output));
    if (loaded != k.model) {
      REQUIRE_RC(aisrv_mcu_load_model_from(&c, 0, read_model, &model, static_cast<uint32_t>(model.size()), 1));
      loaded = k.model;
      aisrv_mcu_spec_t spec{};
      REQUIRE_RC(aisrv_mcu_get_spec(&c, 0, 0, &spec));
      CHECK(spec.input_length == input.size());
      CHECK(spec.output_length == want.size());
    }
    REQUIRE_RC(aisrv_mcu_set_input(&c, 0, 0, input.data(), static_cast<uint32_t>(input.size())));
    REQUIRE_RC(aisrv_mcu_start_inference(&c, 0));
    std::vector<uint8_t> out(want.size() + 16);
    uint32_t len = 0;
    REQUIRE_RC(aisrv_mcu_get_output(&c, 0, 0, out.data(), static_cast<uint32_t>(out.size()), &len));
    out.resize(len);
    CHECK(out == want);
    uint32_t ns[512], count = 0;
    const int rc = aisrv_mcu_get_timings(&c, 0, ns, 512, &count);
    CHECK((rc == AISRV_MCU_OK || rc == AISRV_MCU_E_TOO_SMALL));
    CHECK(count > 0);
  }
  CHECK(c.stats.bad_replies == 0);
  CHECK(c.stats.rejected == 0);
  CHECK(server.stop() == 0);
}
