// aisrv phy/socket (private) — one client connection: read a request frame, submit it to the interpreter, write the
// response frame, repeat. Runs on its own strand; at most one request per connection is in flight.
#pragma once

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <functional>
#include <limits>
#include <memory>

#include "aisrv/protocol/stream_framing.hpp"
#include "aisrv/server.hpp"

namespace aisrv::phy {

// Bookkeeping the sessions share with the server that owns them.
struct SessionHost {
  server::Server& server;
  std::shared_ptr<spdlog::logger> logger;
  std::atomic<size_t> in_flight{0};  // requests submitted to the interpreter and not yet answered
  std::function<void()> on_request_done;  // notifies stop() waiting for in_flight == 0
};

// Payload bytes read per read operation: memory grows with the bytes that actually arrive, not with the length a
// client announces, so a client that announces a large payload and stalls holds little.
inline constexpr size_t kPayloadChunk = 1 << 20;
// Receive buffers above this are released after their request.
inline constexpr size_t kKeepBuffer = 4 << 20;

// Completion condition "all of it, in as few system calls as the kernel allows": Asio's transfer_all caps each
// read/write at 64 KiB, which turns a 1 MiB tensor into 16+ system calls and handler rounds.
struct TransferAllUnbounded {
  size_t operator()(const boost::system::error_code& ec, size_t) const {
    return ec ? 0 : std::numeric_limits<size_t>::max();
  }
};

template <typename Socket>
class Session : public std::enable_shared_from_this<Session<Socket>> {
 public:
  Session(Socket socket, SessionHost& host, std::string peer)
      : socket_(std::move(socket)), strand_(boost::asio::make_strand(socket_.get_executor())), host_(host),
        peer_(std::move(peer)) {}

  void start() {
    boost::asio::dispatch(strand_, [self = this->shared_from_this()] { self->read_prefix(); });
  }

  // Closes the socket from any thread; pending operations end with operation_aborted.
  void close() {
    boost::asio::post(strand_, [self = this->shared_from_this()] {
      boost::system::error_code ignored;
      self->socket_.shutdown(Socket::shutdown_both, ignored);
      self->socket_.close(ignored);
    });
  }

  const std::string& peer() const { return peer_; }
  // Keeps `companion` alive exactly as long as this session (used for connection bookkeeping).
  void attach(std::shared_ptr<void> companion) { companion_ = std::move(companion); }

 private:
  void read_prefix() {
    boost::asio::async_read(socket_, boost::asio::buffer(prefix_),
                            boost::asio::bind_executor(strand_, [self = this->shared_from_this()](auto ec, size_t) {
                              self->on_prefix(ec);
                            }));
  }

  void on_prefix(const boost::system::error_code& ec) {
    if (ec) return finish(ec);
    auto prefix = protocol::stream::decode_request_prefix(prefix_, host_.server.max_payload());
    if (!prefix) {
      // Cannot skip a payload we refuse to read: answer, log, and close the connection.
      host_.server.log().add(fmt::format("{}: {}; closing the connection", peer_, prefix.error().message));
      response_.clear();
      response_.status = to_status(prefix.error().code);
      write_response(/*then_close=*/true);
      return;
    }
    header_ = prefix->header;
    expected_ = prefix->length;
    received_ = 0;
    // Shrinking never touches the bytes; growing (below) happens as data arrives. A buffer that already has the
    // size (the usual case for tensors of one model) costs nothing.
    if (payload_.size() > expected_) payload_.resize(expected_);
    read_payload();
  }

  void read_payload() {
    if (received_ == expected_) return submit();
    const size_t chunk = std::min<size_t>(expected_ - received_, kPayloadChunk);
    if (payload_.size() < received_ + chunk) payload_.resize(received_ + chunk);
    boost::asio::async_read(socket_, boost::asio::buffer(payload_.data() + received_, chunk), TransferAllUnbounded{},
                            boost::asio::bind_executor(strand_, [self = this->shared_from_this()](auto ec, size_t n) {
                              if (ec) return self->finish(ec);
                              self->received_ += n;
                              self->read_payload();
                            }));
  }

  void submit() {
    request_.header = header_;
    request_.payload = std::span<const uint8_t>(payload_.data(), payload_.size());
    request_.donor = &payload_;  // the interpreter may keep this buffer (zero-copy input) and give back another
    host_.in_flight.fetch_add(1);
    host_.server.submit(request_, response_, [self = this->shared_from_this()]() mutable {
      // Inline answers arrive on this session's strand already: dispatch writes at once; from an engine thread it
      // queues the write on the strand.
      SessionHost& host = self->host_;
      boost::asio::dispatch(self->strand_, [self] { self->write_response(false); });
      // Drop this reference before announcing "done": once in_flight reaches 0 the socket server may be destroyed,
      // and an engine thread must not then hold (and destroy) the last reference to a session.
      self.reset();
      if (host.in_flight.fetch_sub(1) == 1 && host.on_request_done) host.on_request_done();
    });
  }

  void write_response(bool then_close) {
    if (payload_.capacity() > kKeepBuffer) std::vector<uint8_t>().swap(payload_);
    out_prefix_ = protocol::stream::encode_response_prefix(response_.status,
                                                            static_cast<uint32_t>(response_.payload.size()));
    std::array<boost::asio::const_buffer, 2> buffers{boost::asio::buffer(out_prefix_),
                                                     boost::asio::buffer(response_.payload)};
    boost::asio::async_write(socket_, buffers, TransferAllUnbounded{},
                             boost::asio::bind_executor(strand_, [self = this->shared_from_this(), then_close](
                                                                     auto ec, size_t) {
                               if (ec) return self->finish(ec);
                               if (self->response_.payload.capacity() > kKeepBuffer)
                                 std::vector<uint8_t>().swap(self->response_.payload);
                               if (then_close) return self->finish({});
                               self->read_prefix();
                             }));
  }

  void finish(const boost::system::error_code& ec) {
    if (ec && ec != boost::asio::error::eof && ec != boost::asio::error::operation_aborted && host_.logger)
      host_.logger->debug("{}: connection ended: {}", peer_, ec.message());
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

  Socket socket_;
  boost::asio::strand<typename Socket::executor_type> strand_;
  SessionHost& host_;
  std::string peer_;

  std::array<uint8_t, protocol::stream::kRequestPrefix> prefix_{};
  std::array<uint8_t, protocol::stream::kResponsePrefix> out_prefix_{};
  protocol::Header header_;
  uint32_t expected_ = 0;
  size_t received_ = 0;
  std::vector<uint8_t> payload_;
  protocol::Request request_;
  protocol::Response response_;
  std::shared_ptr<void> companion_;
};

}  // namespace aisrv::phy
