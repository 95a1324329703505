// aisrv phy/socket (private) — one client connection, which is one interpreter session: read a request frame,
// submit it to the interpreter, write the response frame, repeat. Runs on its own strand; at most one request per
// connection is in flight. The connection records what it is doing and when it last made progress (atomics), so
// the server's sweeper can close it after the idle or frame timeout without a timer per request.
#pragma once

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <memory>

#include "aisrv/phy/socket_server.hpp"
#include "aisrv/protocol/stream_framing.hpp"
#include "aisrv/server.hpp"

namespace aisrv::phy {

// Bookkeeping the connections share with the socket server that owns them.
struct SessionHost {
  server::Server& server;
  const SocketServerOptions& options;
  std::shared_ptr<spdlog::logger> logger;
  std::atomic<size_t> in_flight{0};       // requests submitted to the interpreter and not yet answered
  std::function<void()> on_request_done;  // notifies stop() waiting for in_flight == 0
  std::atomic<bool> draining{false};      // shutdown: answer what is in flight, take nothing new
  std::atomic<uint64_t> receive_bytes{0}; // payload bytes of requests being received or run (options.max_receive_bytes)
};

// Payload bytes read per read operation: memory is touched as bytes actually arrive, not as a client announces them.
inline constexpr size_t kPayloadChunk = 256 << 10;
// Receive buffers above this are released after their request.
inline constexpr size_t kKeepBuffer = 4 << 20;

enum class ConnState : uint8_t { idle, receiving, executing, writing, closed };

inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Completion condition "all of it, in as few system calls as the kernel allows" (Asio's transfer_all caps each
// read/write at 64 KiB, which turns a 1 MiB tensor into 16+ system calls and handler rounds), noting progress after
// every system call for the sweeper.
struct TransferAllNoting {
  std::atomic<int64_t>* last;
  size_t operator()(const boost::system::error_code& ec, size_t) const {
    if (ec) return 0;
    last->store(steady_ns(), std::memory_order_relaxed);
    return std::numeric_limits<size_t>::max();
  }
};

// What the socket server needs of a connection, whatever its socket type.
class Connection {
 public:
  virtual ~Connection() = default;
  virtual void close(std::string why) = 0;
  virtual void drain() = 0;
  virtual void check(int64_t now) = 0;
};

template <typename Socket>
class Session final : public Connection, public std::enable_shared_from_this<Session<Socket>> {
 public:
  Session(Socket socket, SessionHost& host, std::shared_ptr<server::Session> session)
      : socket_(std::move(socket)), strand_(boost::asio::make_strand(socket_.get_executor())), host_(host),
        session_(std::move(session)) {
    touch(ConnState::idle);
  }
  ~Session() {
    release_budget();
    host_.server.close_session(*session_, "the connection closed");
  }

  void start() {
    boost::asio::dispatch(strand_, [self = this->shared_from_this()] { self->read_prefix(); });
  }

  // Closes the socket from any thread; pending operations end with operation_aborted.
  void close(std::string why) override {
    boost::asio::post(strand_, [self = this->shared_from_this(), why = std::move(why)] { self->finish(why); });
  }

  // Shutdown: a connection waiting for a request closes now; one inside a request closes after its answer.
  void drain() override {
    boost::asio::post(strand_, [self = this->shared_from_this()] {
      if (self->state_.load() == ConnState::idle && self->prefix_got_ == 0) self->finish("the server is shutting down");
    });
  }

  // The sweeper (any thread): closes a connection that has been idle or stuck in a frame longer than its timeout.
  void check(int64_t now) override {
    const auto why = expired(now);
    if (!why) return;
    boost::asio::post(strand_, [self = this->shared_from_this(), now] {
      if (auto why = self->expired(now)) {
        if (self->host_.logger) self->host_.logger->info("{}: {}; closing the connection", self->name(), *why);
        self->finish(*why);
      }
    });
  }

  const std::string& name() const { return session_->name(); }
  // Keeps `companion` alive exactly as long as this connection (used for connection bookkeeping).
  void attach(std::shared_ptr<void> companion) { companion_ = std::move(companion); }

 private:
  void touch(ConnState s) {
    state_.store(s, std::memory_order_relaxed);
    last_.store(steady_ns(), std::memory_order_relaxed);
  }

  std::optional<std::string> expired(int64_t now) const {
    const auto state = state_.load();
    const int64_t quiet = now - last_.load();
    const auto& o = host_.options;
    const int64_t idle_ns = std::chrono::nanoseconds(o.idle_timeout).count();
    const int64_t frame_ns = std::chrono::nanoseconds(o.frame_timeout).count();
    if (state == ConnState::idle && idle_ns > 0 && quiet > idle_ns)
      return fmt::format("no request for {} s (idle timeout)", o.idle_timeout.count() / 1000.0);
    if (state == ConnState::receiving && frame_ns > 0 && quiet > frame_ns)
      return fmt::format("a half-sent request made no progress for {} s (frame timeout); it was dropped",
                         o.frame_timeout.count() / 1000.0);
    if (state == ConnState::writing && frame_ns > 0 && quiet > frame_ns)
      return fmt::format("the client read none of its answer for {} s (frame timeout)",
                         o.frame_timeout.count() / 1000.0);
    return std::nullopt;
  }

  void read_prefix() {
    prefix_got_ = 0;
    touch(ConnState::idle);
    if (host_.draining.load()) return finish("the server is shutting down");
    read_prefix_some();
  }

  void read_prefix_some() {
    socket_.async_read_some(
        boost::asio::buffer(prefix_.data() + prefix_got_, prefix_.size() - prefix_got_),
        boost::asio::bind_executor(strand_, [self = this->shared_from_this()](auto ec, size_t n) {
          if (ec) return self->finish(ec);
          self->prefix_got_ += n;
          self->touch(ConnState::receiving);
          if (self->prefix_got_ < self->prefix_.size()) return self->read_prefix_some();
          self->on_prefix();
        }));
  }

  void on_prefix() {
    auto prefix = protocol::stream::decode_request_prefix(prefix_, host_.server.max_payload());
    if (!prefix) return refuse_frame(prefix.error());
    header_ = prefix->header;
    expected_ = prefix->length;
    received_ = 0;
    if (expected_ > 0) {
      const uint64_t held = host_.receive_bytes.fetch_add(expected_) + expected_;
      budget_ = expected_;
      if (held > host_.options.max_receive_bytes) {
        release_budget();
        return refuse_frame(make_error(
            Errc::limit, "a request of {} payload bytes would take the bytes being received on all connections to "
                         "{}; the limit is {} (aisrvd --max-receive-memory)",
            expected_, held, host_.options.max_receive_bytes));
      }
    }
    // Address space for the whole payload at once (no reallocation copies on the event loop as it grows); its pages
    // are only touched as bytes arrive. A buffer of the right size (the usual case for one model's tensors) is kept.
    if (payload_.capacity() < expected_) {
      std::vector<uint8_t> fresh;
      fresh.reserve(expected_);
      payload_.swap(fresh);
    }
    if (payload_.size() > expected_) payload_.resize(expected_);
    read_payload();
  }

  // Cannot skip a payload we refuse to read: answer, note the reason in the session, and close the connection.
  void refuse_frame(const Error& e) {
    if (host_.logger) host_.logger->info("{}: {}; closing the connection", name(), e.message);
    host_.server.note_error(*session_, protocol::kEngineServer, "socket framing",
                            Error{e.code, e.message + "; closing the connection"});
    response_.clear();
    response_.status = to_status(e.code);
    write_response(/*then_close=*/true);
  }

  void read_payload() {
    if (received_ == expected_) return submit();
    const size_t chunk = std::min<size_t>(expected_ - received_, kPayloadChunk);
    if (payload_.size() < received_ + chunk) payload_.resize(received_ + chunk);
    boost::asio::async_read(socket_, boost::asio::buffer(payload_.data() + received_, chunk),
                            TransferAllNoting{&last_},
                            boost::asio::bind_executor(strand_, [self = this->shared_from_this()](auto ec, size_t n) {
                              if (ec) return self->finish(ec);
                              self->received_ += n;
                              self->read_payload();
                            }));
  }

  void submit() {
    touch(ConnState::executing);
    request_.header = header_;
    request_.payload = std::span<const uint8_t>(payload_.data(), payload_.size());
    request_.donor = &payload_;  // the interpreter may keep this buffer (zero-copy input) and give back another
    host_.in_flight.fetch_add(1);
    host_.server.submit(*session_, request_, response_, [self = this->shared_from_this()]() mutable {
      // Inline answers arrive on this connection's strand already: dispatch writes at once; from an engine thread
      // it queues the write on the strand.
      SessionHost& host = self->host_;
      boost::asio::dispatch(self->strand_, [self] { self->write_response(false); });
      // Drop this reference before announcing "done": once in_flight reaches 0 the socket server may be destroyed,
      // and an engine thread must not then hold (and destroy) the last reference to a connection.
      self.reset();
      if (host.in_flight.fetch_sub(1) == 1 && host.on_request_done) host.on_request_done();
    });
  }

  void write_response(bool then_close) {
    if (state_.load() == ConnState::closed) return;
    touch(ConnState::writing);
    release_budget();
    if (payload_.capacity() > kKeepBuffer) std::vector<uint8_t>().swap(payload_);
    out_prefix_ = protocol::stream::encode_response_prefix(response_.status,
                                                            static_cast<uint32_t>(response_.payload.size()));
    std::array<boost::asio::const_buffer, 2> buffers{boost::asio::buffer(out_prefix_),
                                                     boost::asio::buffer(response_.payload)};
    boost::asio::async_write(socket_, buffers, TransferAllNoting{&last_},
                             boost::asio::bind_executor(strand_, [self = this->shared_from_this(), then_close](
                                                                     auto ec, size_t) {
                               if (ec) return self->finish(ec);
                               if (self->response_.payload.capacity() > kKeepBuffer)
                                 std::vector<uint8_t>().swap(self->response_.payload);
                               if (then_close) return self->finish("framing error");
                               self->read_prefix();
                             }));
  }

  void finish(const boost::system::error_code& ec) {
    if (ec && ec != boost::asio::error::eof && ec != boost::asio::error::operation_aborted && host_.logger)
      host_.logger->debug("{}: connection ended: {}", name(), ec.message());
    finish(ec == boost::asio::error::eof || !ec ? "the client closed the connection" : ec.message());
  }

  void finish(std::string_view why) {
    if (state_.exchange(ConnState::closed) == ConnState::closed) return;
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
    release_budget();
    // Its queued work is answered (cancelled) and its state freed now, not when the last handler lets go.
    host_.server.close_session(*session_, why);
  }

  void release_budget() {
    if (budget_) host_.receive_bytes.fetch_sub(budget_);
    budget_ = 0;
  }

  Socket socket_;
  boost::asio::strand<typename Socket::executor_type> strand_;
  SessionHost& host_;
  std::shared_ptr<server::Session> session_;
  std::atomic<ConnState> state_{ConnState::idle};
  std::atomic<int64_t> last_{0};

  std::array<uint8_t, protocol::stream::kRequestPrefix> prefix_{};
  size_t prefix_got_ = 0;
  std::array<uint8_t, protocol::stream::kResponsePrefix> out_prefix_{};
  protocol::Header header_;
  uint32_t expected_ = 0;
  size_t received_ = 0;
  uint64_t budget_ = 0;  // this connection's share of host_.receive_bytes
  std::vector<uint8_t> payload_;
  protocol::Request request_;
  protocol::Response response_;
  std::shared_ptr<void> companion_;
};

}  // namespace aisrv::phy
