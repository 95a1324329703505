// aisrv phy/spi — the simulated SPI wire, slave end: a Unix stream socket (Boost.Asio) that carries whole
// full-duplex transactions from one master process. Like the wire: the master decides every transaction's length,
// MISO carries what the slave armed before the transaction and filler (0xFF) after it, MOSI bytes past the armed
// receive buffer are lost. A transaction is taken only while the slave is armed (in transfer()), so the master
// waits for it as for a ready line. The newest master connection wins (a wire has one master).
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <utility>  // before Asio: its awaitable.hpp uses std::exchange without including it

#include <boost/asio.hpp>

#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "aisrv/protocol/header.h"
#include "spi_ports.hpp"

namespace aisrv::phy::spi {

namespace asio = boost::asio;
using UnixProto = asio::local::stream_protocol;

namespace {

bool unix_socket_is_live(const std::string& path) {
  asio::io_context io;
  UnixProto::socket s(io);
  boost::system::error_code ec;
  s.connect(UnixProto::endpoint(path), ec);
  return !ec;
}

class SimSlavePort final : public SpiSlavePort {
 public:
  SimSlavePort(std::string path, SpiPortOptions options) : path_(std::move(path)), options_(options) {}

  ~SimSlavePort() override {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    drop_peer();
    std::error_code ec;
    if (bound_) std::filesystem::remove(path_, ec);
  }

  Status bind() {
    std::error_code fec;
    const auto st = std::filesystem::symlink_status(path_, fec);
    if (!fec && std::filesystem::exists(st)) {
      if (!std::filesystem::is_socket(st))
        return make_error(Errc::invalid_argument, "sim:{}: exists and is not a socket; refusing to replace it", path_);
      if (unix_socket_is_live(path_))
        return make_error(Errc::io_error, "sim:{}: in use by another simulated SPI slave", path_);
      std::filesystem::remove(path_, fec);
    }
    boost::system::error_code ec;
    acceptor_.open(UnixProto(), ec);
    if (!ec) acceptor_.bind(UnixProto::endpoint(path_), ec);
    if (ec) return make_error(Errc::io_error, "sim:{}: cannot bind: {}", path_, ec.message());
    bound_ = true;
    if (::chmod(path_.c_str(), 0660) != 0)
      return make_error(Errc::io_error, "sim:{}: cannot chmod: {}", path_, std::strerror(errno));
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return make_error(Errc::io_error, "sim:{}: cannot listen: {}", path_, ec.message());
    start_accept();
    return ok();
  }

  Result<size_t> transfer(std::span<const uint8_t> tx, std::span<uint8_t> rx,
                          std::chrono::milliseconds idle) override {
    const auto deadline = std::chrono::steady_clock::now() + idle;
    for (;;) {
      if (stopped_) return make_error(Errc::cancelled, "simulated SPI slave stopped");
      if (auto n = take_transaction(tx, rx)) return *n;
      if (in_.empty() && std::chrono::steady_clock::now() >= deadline)
        return make_error(Errc::timeout, "no transaction within {} ms", idle.count());
      start_read();
      io_.restart();
      if (in_.empty()) {
        io_.run_one_until(deadline);
      } else {
        io_.run_one();  // a transaction has begun: wait for the rest of it
      }
    }
  }

  void stop() override {
    stopped_ = true;
    io_.stop();
  }

  std::string describe() const override {
    return fmt::format("sim:{} ({}-byte frames{})", path_, options_.frame, options_.fixed ? ", fixed size" : "");
  }

 private:
  // A complete transaction in in_: shift it in, answer it; nullopt when none is there yet.
  std::optional<size_t> take_transaction(std::span<const uint8_t> tx, std::span<uint8_t> rx) {
    if (in_.size() < 4) return std::nullopt;
    const uint32_t n = aisrv_get_u32(in_.data());
    if (n > kSimMaxTransaction) {
      drop_peer();  // not a master speaking this framing
      return std::nullopt;
    }
    if (in_.size() < 4 + size_t{n}) return std::nullopt;
    const size_t kept = std::min<size_t>(n, rx.size());
    std::memcpy(rx.data(), in_.data() + 4, kept);
    in_.erase(in_.begin(), in_.begin() + 4 + n);
    out_.assign(n, static_cast<uint8_t>(AISRV_SPI_FILLER));
    std::memcpy(out_.data(), tx.data(), std::min<size_t>(n, tx.size()));
    write_reply();
    return n;
  }

  void write_reply() {
    if (!peer_) return;
    bool written = false;
    const uint64_t gen = peer_gen_;
    asio::async_write(*peer_, asio::buffer(out_), [this, gen, &written](boost::system::error_code ec, size_t) {
      written = true;
      if (ec && gen == peer_gen_) drop_peer();
    });
    // The master reads its reply at once; one that does not within 5 s is dropped like a vanished peer.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!written && !stopped_) {
      io_.restart();
      if (io_.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline) {
        drop_peer();
        io_.restart();
        io_.poll();  // runs the aborted write handler while `written` is still alive
        break;
      }
    }
    if (!written) {
      drop_peer();
      io_.restart();
      io_.poll();
    }
  }

  void start_accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, UnixProto::socket socket) {
      if (ec) {
        if (ec != asio::error::operation_aborted && !stopped_) start_accept();
        return;
      }
      drop_peer();  // the newest master wins
      peer_.emplace(std::move(socket));
      ++peer_gen_;
      start_accept();
    });
  }

  void start_read() {
    if (reading_ || !peer_) return;
    reading_ = true;
    const uint64_t gen = peer_gen_;
    peer_->async_read_some(asio::buffer(chunk_), [this, gen](boost::system::error_code ec, size_t n) {
      if (gen != peer_gen_) return;  // a dropped peer's read
      reading_ = false;
      if (ec) {
        drop_peer();
        return;
      }
      in_.insert(in_.end(), chunk_.begin(), chunk_.begin() + static_cast<std::ptrdiff_t>(n));
      if (in_.size() > 4 + size_t{kSimMaxTransaction}) drop_peer();
    });
  }

  void drop_peer() {
    if (peer_) {
      boost::system::error_code ignored;
      peer_->close(ignored);
      peer_.reset();
    }
    ++peer_gen_;
    reading_ = false;
    in_.clear();
  }

  std::string path_;
  SpiPortOptions options_;
  asio::io_context io_;
  UnixProto::acceptor acceptor_{io_};
  std::optional<UnixProto::socket> peer_;
  uint64_t peer_gen_ = 0;
  bool reading_ = false;
  bool bound_ = false;
  std::array<uint8_t, 65536> chunk_{};
  std::vector<uint8_t> in_;   // bytes from the master not yet taken as a transaction
  std::vector<uint8_t> out_;  // the MISO bytes of the transaction being answered
  std::atomic<bool> stopped_{false};
};

}  // namespace

Result<std::unique_ptr<SpiSlavePort>> open_sim_slave_port(const std::string& path, const SpiPortOptions& options) {
  if (path.empty()) return make_error(Errc::invalid_argument, "sim: needs a socket path (sim:PATH)");
  if (path.size() >= sizeof(sockaddr_un{}.sun_path))
    return make_error(Errc::invalid_argument, "sim:{}: path longer than {} bytes", path, sizeof(sockaddr_un{}.sun_path) - 1);
  auto port = std::make_unique<SimSlavePort>(path, options);
  AISRV_TRY(port->bind());
  return std::unique_ptr<SpiSlavePort>(std::move(port));
}

}  // namespace aisrv::phy::spi
