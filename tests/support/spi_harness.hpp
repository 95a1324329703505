// aisrv tests — an SPI test rig in one process: a Server with test-double engines behind the SPI transport on a
// simulated wire (phy/spi sim port), and the C99 MCU client on the wire's master end (optionally through a
// fault-injecting link). The engines stay reachable for checks (invocation counts).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aisrv/client/spi_master.hpp"
#include "aisrv/mcu/aisrv_mcu.h"
#include "aisrv/phy/spi_server.hpp"
#include "aisrv/server.hpp"
#include "process.hpp"
#include "spi_fault_link.hpp"
#include "test_backend.hpp"

namespace aisrv::test {

struct SpiRigOptions {
  unsigned engines = 2;
  uint16_t server_frame = AISRV_SPI_DEFAULT_FRAME;
  bool fixed = false;
  std::chrono::milliseconds transfer_timeout{5000};
  uint32_t max_payload = AISRV_MAX_PAYLOAD;
};

class SpiRig {
 public:
  explicit SpiRig(SpiRigOptions o = {}) : options_(o) {
    path = dir.file("spi.sock");
    std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
    for (unsigned i = 0; i < o.engines; ++i) {
      auto b = std::make_unique<TestBackend>();
      engines.push_back(b.get());
      backends.push_back(std::move(b));
    }
    server::ServerOptions so;
    so.max_payload = o.max_payload;
    auto s = server::Server::create(std::move(so), std::move(backends));
    if (!s) throw std::runtime_error(s.error().what());
    server = std::move(s).value();
    start_spi();
  }
  ~SpiRig() {
    if (spi) spi->stop();
  }

  void start_spi() {
    phy::spi::SpiPortOptions po;
    po.frame = options_.server_frame;
    po.fixed = options_.fixed;
    auto port = phy::spi::open_slave_port("sim:" + path, po);
    if (!port) throw std::runtime_error(port.error().what());
    phy::spi::SpiServerOptions so;
    so.link.max_frame = options_.server_frame;
    so.link.fixed = options_.fixed;
    so.link.transfer_timeout = options_.transfer_timeout;
    spi = std::make_unique<phy::spi::SpiServer>(*server, std::move(port).value(), so);
    spi->start();
  }

  // A master link to the rig (wrapped in a fault injector when `fault` is not none).
  std::unique_ptr<client::SpiMasterLink> link(SpiFault fault = SpiFault::none, unsigned every = 0, uint32_t seed = 1) {
    auto m = client::open_sim_master(path);
    if (!m) throw std::runtime_error(m.error().what());
    if (fault == SpiFault::none) return std::move(m).value();
    auto f = std::make_unique<FaultyLink>(std::move(m).value(), fault, every, seed);
    faulty = f.get();
    return f;
  }

  // Initialises `c` on `link` with the given frame size (and fixed-size transactions when asked).
  static void init_client(aisrv_mcu_t& c, client::SpiMasterLink& link, uint16_t frame = AISRV_SPI_DEFAULT_FRAME,
                          bool fixed = false) {
    aisrv_mcu_config_t cfg;
    aisrv_mcu_default_config(&cfg);
    cfg.max_frame = frame;
    cfg.fixed_frames = fixed ? 1 : 0;
    cfg.timeout_us = 20000000;
    const aisrv_mcu_hal_t hal = link.hal();
    if (aisrv_mcu_init(&c, &hal, &cfg) != AISRV_MCU_OK) throw std::runtime_error("aisrv_mcu_init failed");
  }

  // The server log as the master's session reads it (shared lines and its own, e.g. discarded transfers).
  std::string server_log() { return spi->session()->read_log(server->engine_count(), server->log(), 0, false); }

  TempDir dir;
  std::string path;
  std::unique_ptr<server::Server> server;
  std::unique_ptr<phy::spi::SpiServer> spi;
  std::vector<TestBackend*> engines;
  FaultyLink* faulty = nullptr;

 private:
  SpiRigOptions options_;
};

}  // namespace aisrv::test
