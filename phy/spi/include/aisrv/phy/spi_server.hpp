// aisrv phy/spi — the SPI transport: one thread per slave port runs the link protocol (LinkSlave) and hands each
// complete request to the interpreter through the port (Port::submit, aisrv/port.hpp), so the host can poll while an engine is busy. It only
// frames bytes; it never interprets a command. The master on a port is one interpreter session for the port's life.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "aisrv/phy/spi_link_slave.hpp"
#include "aisrv/phy/spi_slave_port.hpp"

namespace spdlog {
class logger;
}
namespace aisrv::server {
class Port;
class Session;
}

namespace aisrv::phy::spi {

struct SpiServerOptions {
  LinkSlaveOptions link;                   // frame, fixed, timeout (max_payload is taken from the port's limits)
  std::shared_ptr<spdlog::logger> logger;  // link events (may be null)
};

class SpiServer {
 public:
  // The master is a session of Trust::physical (whoever is wired to the bus).
  SpiServer(server::Port& server, std::unique_ptr<SpiSlavePort> port, SpiServerOptions options);
  ~SpiServer();
  SpiServer(const SpiServer&) = delete;
  SpiServer& operator=(const SpiServer&) = delete;

  // Starts the serving thread.
  void start();
  // Stops the thread (interrupting a blocked transfer where the port can) and waits for commands still running in
  // an engine. Idempotent.
  void stop();
  std::string describe() const;
  // A snapshot of the link counters.
  LinkStats stats() const;
  // The master's interpreter session (its tensors, error bits and log lines, e.g. discarded transfers).
  std::shared_ptr<server::Session> session() const;

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;  // shared with the thread, which may outlive stop() when the driver will not let go
  std::thread thread_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace aisrv::phy::spi
