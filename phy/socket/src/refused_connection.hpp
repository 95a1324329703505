// aisrv phy/socket (private) — a connection over a limit, told why instead of being reset: it is given a short while
// to send its first request prefix, which is answered ERROR_LIMIT (payload length 0), and then closed. A client
// library reports "limit" where it would otherwise see "Connection reset by peer". The socket server bounds how many
// of these wait at once; beyond that a refused connection is closed at once.
#pragma once

#include <boost/asio.hpp>

#include <atomic>
#include <chrono>
#include <memory>

#include "aisrv/protocol/stream_framing.hpp"

namespace aisrv::phy {

// What the socket server keeps of a refused connection: a way to close it at shutdown.
class RefusedLink {
 public:
  virtual ~RefusedLink() = default;
  virtual void abandon() = 0;  // from any thread
};

template <typename Socket>
class RefusedConnection final : public RefusedLink, public std::enable_shared_from_this<RefusedConnection<Socket>> {
 public:
  // `waiting` counts the refused connections still open; it is decremented when this one is gone.
  RefusedConnection(Socket socket, std::atomic<size_t>& waiting, std::chrono::milliseconds patience)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), waiting_(waiting), patience_(patience) {}
  ~RefusedConnection() { waiting_.fetch_sub(1); }

  void abandon() override {
    boost::asio::post(socket_.get_executor(), [self = this->shared_from_this()] { self->close(); });
  }

  void start() {
    auto self = this->shared_from_this();
    timer_.expires_after(patience_);
    timer_.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->close();
    });
    boost::asio::async_read(socket_, boost::asio::buffer(prefix_), [self](const boost::system::error_code& ec, size_t) {
      if (ec) return self->close();
      self->answer_ = protocol::stream::encode_response_prefix(to_status(Errc::limit), 0);
      boost::asio::async_write(self->socket_, boost::asio::buffer(self->answer_),
                               [self](const boost::system::error_code&, size_t) { self->close(); });
    });
  }

 private:
  void close() {
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  Socket socket_;
  boost::asio::steady_timer timer_;
  std::atomic<size_t>& waiting_;
  const std::chrono::milliseconds patience_;
  std::array<uint8_t, protocol::stream::kRequestPrefix> prefix_{};
  std::array<uint8_t, protocol::stream::kResponsePrefix> answer_{};
};

}  // namespace aisrv::phy
