// aisrv phy/spi — the serving loop: arm the reply, wait for a transaction, run it through the link state machine;
// complete requests go to the interpreter's asynchronous entry so status polls keep being answered.
#include "aisrv/phy/spi_server.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "aisrv/port.hpp"

namespace aisrv::phy::spi {

class SpiServer::Impl {
 public:
  // The master on this port is one interpreter session for the port's lifetime (a SYNC resynchronises the link,
  // it does not start a new client).
  Impl(server::Port& server, std::unique_ptr<SpiSlavePort> port, SpiServerOptions options)
      : server_(server), port_(std::move(port)), logger_(options.logger),
        session_(server.open_session(server::Peer::of(server::Trust::physical, "spi", port_->describe()))),
        link_(with_limit(options.link, server.limits().max_payload),
              [this](const protocol::Request& req, protocol::Response& resp, std::function<void()> done) {
                server_.submit(*session_, req, resp, std::move(done));
              },
              [this](const std::string& line) { server_.note_line(*session_, server_.limits().engines, 0, line); }),
        rx_(link_.receive_capacity()) {}

  ~Impl() { server_.close_session(*session_, "the SPI port closed"); }

  void run() {
    // Wake up at least this often to expire an incomplete transfer (ports that can).
    const auto idle = std::min<std::chrono::milliseconds>(link_.options().transfer_timeout, std::chrono::seconds(1));
    while (!stopping_) {
      auto n = port_->transfer(link_.reply(), rx_, idle);
      if (stopping_) break;
      if (!n) {
        if (n.error().code == Errc::timeout) {
          std::lock_guard lock(mu_);
          link_.on_idle();
          continue;
        }
        if (n.error().code == Errc::cancelled) break;
        if (logger_ && n.error().message != last_error_)  // once per distinct failure, not every retry
          logger_->error("SPI {}: {}", port_->describe(), n.error().message);
        last_error_ = n.error().message;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      last_error_.clear();
      std::lock_guard lock(mu_);
      link_.on_transaction(std::span<const uint8_t>(rx_).first(std::min(*n, rx_.size())), *n);
      if (logger_ && link_.stats().rejected != last_rejected_) {
        last_rejected_ = link_.stats().rejected;
        logger_->debug("SPI {}: frame rejected ({} so far)", port_->describe(), last_rejected_);
      }
    }
    finished_ = true;
  }

  void stop_and_wait(std::thread& thread) {
    stopping_ = true;
    // The port may not be able to interrupt at once (a spidev transfer blocks until the master clocks): ask again
    // for a while, then leave the thread behind (it touches nothing but this Impl, which it keeps alive).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!finished_ && std::chrono::steady_clock::now() < deadline) {
      port_->stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (finished_) {
      thread.join();
    } else {
      if (logger_) logger_->warn("SPI {}: transfer still blocked in the driver; leaving it", port_->describe());
      thread.detach();
    }
    // Commands already handed to an engine finish before the server goes away.
    const auto done_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (link_.in_flight() == 0) break;
      }
      if (std::chrono::steady_clock::now() > done_by) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  std::string describe() const { return port_->describe(); }
  std::shared_ptr<server::Session> session() const { return session_; }
  LinkStats stats() const {
    std::lock_guard lock(mu_);
    return link_.stats();
  }

 private:
  static LinkSlaveOptions with_limit(LinkSlaveOptions o, uint32_t max_payload) {
    o.max_payload = max_payload;
    return o;
  }

  server::Port& server_;
  std::unique_ptr<SpiSlavePort> port_;
  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<server::Session> session_;
  mutable std::mutex mu_;  // the link state (stats are read from other threads)
  LinkSlave link_;
  std::vector<uint8_t> rx_;
  uint64_t last_rejected_ = 0;
  std::string last_error_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> finished_{false};
};

SpiServer::SpiServer(server::Port& server, std::unique_ptr<SpiSlavePort> port, SpiServerOptions options)
    : impl_(std::make_shared<Impl>(server, std::move(port), std::move(options))) {}

SpiServer::~SpiServer() { stop(); }

void SpiServer::start() {
  if (thread_.joinable() || started_) return;
  started_ = true;
  thread_ = std::thread([impl = impl_] { impl->run(); });
}

void SpiServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (started_) impl_->stop_and_wait(thread_);
}

std::string SpiServer::describe() const { return impl_->describe(); }
LinkStats SpiServer::stats() const { return impl_->stats(); }
std::shared_ptr<server::Session> SpiServer::session() const { return impl_->session(); }

}  // namespace aisrv::phy::spi
