// aisrv host — the simulated wire's master end (Boost.Asio, Unix stream socket): a CS window is sent as one
// transaction {u32 n, n MOSI bytes}; the slave answers n MISO bytes. When no slave is there (not started,
// restarted, gone) the MISO bytes read as filler, exactly as on an empty bus, and the next window reconnects.
#include <utility>  // before Asio: its awaitable.hpp uses std::exchange without including it

#include <boost/asio.hpp>

#include <array>
#include <thread>
#include <vector>

#include "aisrv/client/spi_master.hpp"
#include "aisrv/protocol/header.h"

namespace aisrv::client {

namespace asio = boost::asio;
using UnixProto = asio::local::stream_protocol;

namespace {

class SimMaster final : public SpiMasterLink {
 public:
  SimMaster(std::string path, std::chrono::milliseconds reply_timeout)
      : path_(std::move(path)), reply_timeout_(reply_timeout) {}

  bool try_connect() {
    if (sock_) return true;
    UnixProto::socket s(io_);
    boost::system::error_code ec;
    s.connect(UnixProto::endpoint(path_), ec);
    if (ec) return false;
    sock_.emplace(std::move(s));
    return true;
  }

  uint16_t max_frame() const override { return AISRV_SPI_MAX_FRAME; }
  std::string describe() const override { return "spi-sim:" + path_; }

 private:
  int transact(std::span<const uint8_t> mosi, std::vector<uint8_t>& miso) override {
    if (!mosi.empty() && try_connect() && !exchange(mosi, miso)) drop();
    return 0;
  }

  // One transaction; false when the slave vanished or did not take it in time (the MISO bytes stay filler).
  bool exchange(std::span<const uint8_t> mosi, std::vector<uint8_t>& miso) {
    bool wrote = false, read = false;
    boost::system::error_code wec, rec;
    std::array<uint8_t, 4> prefix{};
    aisrv_put_u32(prefix.data(), static_cast<uint32_t>(mosi.size()));
    const std::array<asio::const_buffer, 2> request{asio::buffer(prefix), asio::buffer(mosi.data(), mosi.size())};
    std::vector<uint8_t> reply(mosi.size());
    asio::async_write(*sock_, request, [&](auto ec, size_t) {
      wec = ec;
      wrote = true;
    });
    asio::async_read(*sock_, asio::buffer(reply), [&](auto ec, size_t) {
      rec = ec;
      read = true;
    });
    io_.restart();
    io_.run_for(reply_timeout_);
    if (!wrote || !read || wec || rec) {
      drop();
      io_.restart();
      io_.poll();  // the aborted handlers run while their captures are alive
      return false;
    }
    miso = std::move(reply);
    return true;
  }

  void drop() {
    if (!sock_) return;
    boost::system::error_code ignored;
    sock_->close(ignored);
    sock_.reset();
  }

  std::string path_;
  std::chrono::milliseconds reply_timeout_;
  asio::io_context io_;
  std::optional<UnixProto::socket> sock_;
};

}  // namespace

Result<std::unique_ptr<SpiMasterLink>> open_sim_master(const std::string& path, bool must_exist,
                                                       std::chrono::milliseconds reply_timeout) {
  if (path.empty()) return make_error(Errc::invalid_argument, "spi-sim: needs a socket path (spi-sim:PATH)");
  auto m = std::make_unique<SimMaster>(path, reply_timeout);
  if (must_exist && !m->try_connect())
    return make_error(Errc::not_found, "no simulated SPI slave at {} (start aisrvd --spi sim:{})", path, path);
  return std::unique_ptr<SpiMasterLink>(std::move(m));
}

}  // namespace aisrv::client
