// aisrv tests — docs/transport-spi.md matches the code: the worked hex trace in it is regenerated here (the C99
// client wired straight to the slave state machine in front of a real interpreter, byte-exact wire semantics: the
// slave's reply is armed before each transaction) and must appear verbatim; every link error and constant is named.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "aisrv/mcu/aisrv_mcu.h"
#include "aisrv/phy/spi_link_slave.hpp"
#include "aisrv/server.hpp"
#include "test_backend.hpp"

using namespace aisrv;

namespace {

std::string read_doc() {
  std::ifstream f(std::string(AISRV_DOCS_DIR) + "/transport-spi.md");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The wire without a wire: each CS window goes to the LinkSlave; MISO is what it had armed before the window.
class DirectWire {
 public:
  explicit DirectWire(phy::spi::LinkSlave& slave) : slave_(slave) {}
  aisrv_mcu_hal_t hal() {
    aisrv_mcu_hal_t h{};
    h.ctx = this;
    h.transfer = [](void* ctx, const uint8_t* tx, uint8_t* rx, size_t len) {
      auto* w = static_cast<DirectWire*>(ctx);
      const size_t at = w->mosi_.size();
      w->mosi_.resize(at + len, AISRV_SPI_FILLER);
      if (tx) std::copy(tx, tx + len, w->mosi_.begin() + static_cast<std::ptrdiff_t>(at));
      w->rx_.push_back({rx, len});
      return 0;
    };
    h.select = [](void* ctx, int active) {
      auto* w = static_cast<DirectWire*>(ctx);
      if (active) {
        w->mosi_.clear();
        w->rx_.clear();
        return 0;
      }
      std::vector<uint8_t> miso(w->mosi_.size(), AISRV_SPI_FILLER);
      const auto armed = w->slave_.reply();
      std::copy_n(armed.begin(), std::min(armed.size(), miso.size()), miso.begin());
      w->slave_.on_transaction(w->mosi_, w->mosi_.size());
      w->log(miso);
      size_t at = 0;
      for (auto [rx, len] : w->rx_) {
        if (rx) std::copy_n(miso.begin() + static_cast<std::ptrdiff_t>(at), len, rx);
        at += len;
      }
      return 0;
    };
    h.delay_us = [](void*, uint32_t) {};
    return h;
  }
  std::string trace;
  bool recording = false;

 private:
  static std::string hex_rows(const char* label, const std::vector<uint8_t>& bytes) {
    std::string s;
    for (size_t i = 0; i < bytes.size(); i += 16) {
      s += fmt::format("   {} ", i == 0 ? label : "    ");
      for (size_t j = i; j < std::min(bytes.size(), i + 16); ++j) s += fmt::format(" {:02x}", bytes[j]);
      s += "\n";
    }
    return s;
  }
  void log(const std::vector<uint8_t>& miso) {
    if (!recording) return;
    ++n_;
    trace += fmt::format("T{} ({} bytes)\n", n_, mosi_.size());
    trace += hex_rows("MOSI", mosi_);
    trace += hex_rows("MISO", miso);
  }
  phy::spi::LinkSlave& slave_;
  std::vector<uint8_t> mosi_;
  std::vector<std::pair<uint8_t*, size_t>> rx_;
  int n_ = 0;
};

}  // namespace

TEST_CASE("the worked hex trace in docs/transport-spi.md is what the code puts on the wire") {
  std::vector<std::unique_ptr<engine::InferenceBackend>> b;
  b.push_back(std::make_unique<test::TestBackend>());
  auto server = std::move(server::Server::create({}, std::move(b))).value();
  phy::spi::LinkSlaveOptions o;
  o.boot = 0x0B00710D;  // fixed so the trace is reproducible (normally random per start)
  auto session = server->open_session(server::Peer::of(server::Trust::physical, "spi", "docs trace"));
  phy::spi::LinkSlave slave(
      o,
      [&](const protocol::Request& req, protocol::Response& resp, std::function<void()> done) {
        server->submit(*session, req, resp, std::move(done));
      },
      [&](const std::string& line) { session->note(server->engine_count(), 0, line); });
  // engine 0 has a model with a 4-byte input (loaded behind the link's back: the trace starts with a fresh link)
  const auto model = test::make_test_model(test::TestModelSpec{{4}, {4}, 1, 0});
  protocol::Response loaded;
  server->handle(*session, {{AISRV_CMD_SET_MODEL_PRIMARY, 0, 0}, model}, loaded);
  REQUIRE(loaded.status == AISRV_STATUS_OKAY);
  DirectWire wire(slave);
  const auto hal = wire.hal();
  aisrv_mcu_t c;
  REQUIRE(aisrv_mcu_init(&c, &hal, nullptr) == AISRV_MCU_OK);

  wire.recording = true;
  REQUIRE(aisrv_mcu_sync(&c) == AISRV_MCU_OK);
  uint32_t id = 0;
  REQUIRE(aisrv_mcu_get_id(&c, &id) == AISRV_MCU_OK);
  CHECK(id == AISRV_SERVER_ID);
  const uint8_t input[4] = {0x01, 0x02, 0x03, 0x04};
  REQUIRE(aisrv_mcu_set_input(&c, 0, 0, input, 4) == AISRV_MCU_OK);
  const std::string doc = read_doc();
  INFO("expected trace (paste into docs/transport-spi.md):\n" << wire.trace);
  CHECK(doc.find(wire.trace) != std::string::npos);
}

TEST_CASE("docs/transport-spi.md names every link error, state bit, frame type and limit") {
  const std::string doc = read_doc();
#define AISRV_X_DOC(name, value, text) CHECK_MESSAGE(doc.find("`" #name "`") != std::string::npos, #name);
  AISRV_SPI_ERROR_TABLE(AISRV_X_DOC)
#undef AISRV_X_DOC
  for (const char* word : {"`BEGIN`", "`DATA`", "`POLL`", "`SYNC`", "`BUSY`", "`READY`", "`RECEIVING`",
                           "`REJECTED`", "`FIXED`", "4092", "65535", "0xA5", "0x5A", "0xFF"})
    CHECK_MESSAGE(doc.find(word) != std::string::npos, word);
}
