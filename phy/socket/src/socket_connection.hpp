// aisrv phy/socket (private) — one client connection, which is one interpreter session. The connection keeps
// reading request frames while a request runs: read requests wait in its pipeline and are submitted to the
// interpreter one at a time, in order, and their answers are written in order. So
//   - a client that leaves (EOF) is seen at once, and its session's queued and running work is cancelled;
//   - CANCEL_INFER acts when it arrives, overtaking the requests before it (its answer keeps its place);
//   - requests pipelined beyond --max-queued are answered ERROR_LIMIT (in their place) without running.
// Runs on its own strand. It publishes its deadlines (atomics) so the server's sweeper closes it when a frame does
// not arrive within its deadline (frame timeout + length at the minimum rate), an answer is not read in time, it
// stays idle, or it does not AUTH in time on a link that needs a token.
#pragma once

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "aisrv/phy/socket_server.hpp"
#include "aisrv/protocol/stream_framing.hpp"
#include "aisrv/port.hpp"
#include "log_throttle.hpp"
#include "receive_budget.hpp"

namespace aisrv::phy {

// What the connections share with the socket server that owns them.
struct ConnectionHost {
  ConnectionHost(server::Port& s, const SocketServerOptions& o)
      : server(s), options(o), budget(o.max_receive_bytes, o.max_receive_bytes_per_peer),
        throttle(o.log_burst, o.log_interval) {}

  // A connection event for the daemon's log — and, when `shared`, the server's debug log every session reads (which
  // writes the daemon's log too) — at most `log_burst` lines per peer and interval, then one summary line.
  void log(const std::string& peer, const std::string& line, bool shared = false) {
    throttle.line(peer, line, [this, shared](const std::string& l) {
      if (shared) server.note_shared(l);
      else if (options.logger) options.logger->info("{}", l);
    });
  }

  server::Port& server;  // the interpreter, through its port
  const SocketServerOptions& options;
  ReceiveBudget budget;
  LogThrottle throttle;
  std::atomic<size_t> in_flight{0};       // requests submitted to the interpreter and not yet answered
  std::function<void()> on_request_done;  // notifies stop() waiting for in_flight == 0
  std::atomic<bool> draining{false};      // shutdown: answer what was read, read nothing new
};

// Payload bytes read per read operation: memory is touched as bytes actually arrive, not as a client announces them.
inline constexpr size_t kPayloadChunk = 256 << 10;
// Receive and answer buffers above this are released after their request.
inline constexpr size_t kKeepBuffer = 4 << 20;

inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The time a frame of `bytes` may take: the frame timeout plus its length at the minimum rate.
inline int64_t frame_allowance_ns(const SocketServerOptions& o, uint64_t bytes) {
  int64_t ns = std::chrono::nanoseconds(o.frame_timeout).count();
  if (o.min_transfer_rate > 0) ns += static_cast<int64_t>(static_cast<double>(bytes) * 1e9 / o.min_transfer_rate);
  return ns;
}

// Completion condition "all of it, in as few system calls as the kernel allows" (Asio's transfer_all caps each
// read/write at 64 KiB, which turns a 1 MiB tensor into 16+ system calls and handler rounds).
struct TransferAll {
  size_t operator()(const boost::system::error_code& ec, size_t) const {
    return ec ? 0 : std::numeric_limits<size_t>::max();
  }
};

// What the socket server needs of a connection, whatever its socket type.
class Connection {
 public:
  virtual ~Connection() = default;
  virtual void close(std::string why) = 0;
  virtual void drain() = 0;
  virtual void check(int64_t now) = 0;
  // Whose share of the limits it takes ("uid 1000", "tcp peers").
  virtual const std::string& peer_key() const = 0;
  virtual int64_t connected_at() const = 0;
  // A link that must AUTH and has not yet may be evicted when its pool is full, so a peer that holds the token can
  // still get in; true once for the connection chosen (it is then closing).
  virtual bool claim_eviction() = 0;
};

template <typename Socket>
class SocketConnection final : public Connection, public std::enable_shared_from_this<SocketConnection<Socket>> {
 public:
  // `peer_key`: whose share of the receive budget this connection's requests take ("uid 1000", "tcp").
  SocketConnection(Socket socket, ConnectionHost& host, std::shared_ptr<server::Session> session, std::string peer_key)
      : socket_(std::move(socket)), strand_(boost::asio::make_strand(socket_.get_executor())), host_(host),
        session_(std::move(session)), key_(std::move(peer_key)), connected_(steady_ns()) {
    last_.store(connected_);
  }
  ~SocketConnection() {
    release_budgets();
    host_.server.close_session(*session_, "the connection closed");
  }

  void start() {
    boost::asio::dispatch(strand_, [self = this->shared_from_this()] { self->read_prefix(); });
  }

  // Closes the socket from any thread; pending operations end with operation_aborted.
  void close(std::string why) override {
    boost::asio::post(strand_, [self = this->shared_from_this(), why = std::move(why)] { self->finish(why); });
  }

  // Shutdown: read nothing more (a half-sent request is dropped: its bytes may never come), answer what was read,
  // then close.
  void drain() override {
    boost::asio::post(strand_, [self = this->shared_from_this()] {
      self->draining_ = true;
      self->stop_reading();
      if (self->pipeline_.empty()) self->finish("the server is shutting down");
    });
  }

  // The sweeper (any thread): closes a connection past one of its deadlines.
  void check(int64_t now) override {
    if (!expired(now)) return;
    boost::asio::post(strand_, [self = this->shared_from_this(), now] {
      if (auto why = self->expired(now)) {
        self->host_.log(self->key_ + " closed", fmt::format("{}: {}; closing the connection", self->name(), *why));
        self->finish(*why);
      }
    });
  }

  std::string name() const { return host_.server.session_name(*session_); }
  const std::string& peer_key() const override { return key_; }
  int64_t connected_at() const override { return connected_; }
  bool claim_eviction() override {
    if (closed() || host_.server.authenticated(*session_)) return false;
    return !evicted_.exchange(true);
  }
  // Keeps `companion` alive exactly as long as this connection (used for connection bookkeeping).
  void attach(std::shared_ptr<void> companion) { companion_ = std::move(companion); }

 private:
  struct Pending {
    enum class State : uint8_t { waiting, running, answered };
    State state = State::waiting;
    bool close_after = false;  // a framing refusal: the stream cannot be resynchronised
    uint64_t budget = 0;       // this request's share of the receive budget
    std::vector<uint8_t> payload;
    protocol::Request request;
    protocol::Response response;
  };

  bool closed() const { return closed_.load(); }
  void activity() { last_.store(steady_ns(), std::memory_order_relaxed); }

  std::optional<std::string> expired(int64_t now) const {
    if (closed()) return std::nullopt;
    const auto& o = host_.options;
    const int64_t rx = rx_deadline_.load(), tx = tx_deadline_.load();
    if (rx && now > rx)
      return fmt::format("a request did not arrive within its deadline ({} s + its length at {} bytes/s: aisrvd "
                         "--frame-timeout, --min-transfer-rate); it was dropped",
                         o.frame_timeout.count() / 1000.0, o.min_transfer_rate);
    if (tx && now > tx)
      return fmt::format("the client did not read its answer within its deadline ({} s + its length at {} bytes/s)",
                         o.frame_timeout.count() / 1000.0, o.min_transfer_rate);
    const int64_t auth_ns = std::chrono::nanoseconds(o.auth_timeout).count();
    if (auth_ns > 0 && !host_.server.authenticated(*session_) && now - connected_ > auth_ns)
      return fmt::format("no AUTH within {} s of connecting (aisrvd --auth-timeout)", o.auth_timeout.count() / 1000.0);
    const int64_t idle_ns = std::chrono::nanoseconds(o.idle_timeout).count();
    if (idle_ns > 0 && !busy_.load() && !rx && now - last_.load() > idle_ns)
      return fmt::format("no request for {} s (idle timeout)", o.idle_timeout.count() / 1000.0);
    return std::nullopt;
  }

  // --- reading --------------------------------------------------------------------------------------------------

  void read_prefix() {
    if (closed() || reading_stopped_) return;
    prefix_got_ = 0;
    read_prefix_some();
  }

  void read_prefix_some() {
    socket_.async_read_some(
        boost::asio::buffer(prefix_.data() + prefix_got_, prefix_.size() - prefix_got_),
        boost::asio::bind_executor(strand_, [self = this->shared_from_this()](auto ec, size_t n) {
          if (ec) return self->on_read_error(ec);
          if (self->prefix_got_ == 0) {
            self->frame_start_ = steady_ns();
            self->rx_deadline_.store(self->frame_start_ + frame_allowance_ns(self->host_.options, 0));
          }
          self->prefix_got_ += n;
          self->activity();
          if (self->prefix_got_ < self->prefix_.size()) return self->read_prefix_some();
          self->on_prefix();
        }));
  }

  void on_prefix() {
    auto prefix = protocol::stream::decode_request_prefix(prefix_, host_.server.limits().max_payload);
    if (!prefix) return refuse_stream(prefix.error());
    receiving_ = fresh_pending();
    receiving_->request.header = prefix->header;
    expected_ = prefix->length;
    received_ = 0;
    if (expected_ > 0) {
      if (auto st = host_.budget.take(key_, expected_); !st) {
        receiving_.reset();
        return refuse_stream(st.error());
      }
      receiving_->budget = expected_;
    }
    rx_deadline_.store(frame_start_ + frame_allowance_ns(host_.options, expected_));
    // Address space for the whole payload at once (no reallocation copies as it grows); its pages are only touched
    // as bytes arrive. A buffer of the right size (the usual case for one model's tensors) is reused.
    auto& payload = receiving_->payload;
    if (payload.capacity() < expected_) {
      std::vector<uint8_t> bigger;
      bigger.reserve(expected_);
      payload.swap(bigger);
    }
    if (payload.size() > expected_) payload.resize(expected_);
    read_payload();
  }

  void read_payload() {
    auto& payload = receiving_->payload;
    if (received_ == expected_) return on_frame();
    const size_t chunk = std::min<size_t>(expected_ - received_, kPayloadChunk);
    if (payload.size() < received_ + chunk) payload.resize(received_ + chunk);
    boost::asio::async_read(socket_, boost::asio::buffer(payload.data() + received_, chunk), TransferAll{},
                            boost::asio::bind_executor(strand_, [self = this->shared_from_this()](auto ec, size_t n) {
                              if (ec) return self->on_read_error(ec);
                              self->activity();
                              self->received_ += n;
                              self->read_payload();
                            }));
  }

  // A whole request arrived: into the pipeline (or answered at once), then read the next one.
  void on_frame() {
    rx_deadline_.store(0);
    std::unique_ptr<Pending> p = std::move(receiving_);
    p->request.payload = std::span<const uint8_t>(p->payload.data(), p->payload.size());
    p->request.donor = &p->payload;  // the interpreter may keep this buffer (zero-copy input) and give back another
    const uint32_t cmd = p->request.header.cmd;
    if (cmd == static_cast<uint32_t>(protocol::Command::CANCEL_INFER) && !pipeline_.empty()) {
      // Acts now, ahead of the requests before it; the answer keeps its place.
      Pending& cancel = *p;
      pipeline_.push_back(std::move(p));
      submit(cancel);
    } else if (waiting_ >= host_.server.limits().max_queued) {
      const Error e = make_error(Errc::limit,
                                 "{} already has {} request(s) waiting behind the one that runs; the limit is {} "
                                 "(aisrvd --max-queued); this one was not run",
                                 name(), waiting_, host_.server.limits().max_queued);
      host_.server.note_error(*session_, p->request.header.engine, protocol::command_name(cmd), e);
      p->response.clear();
      p->response.status = to_status(e.code);
      p->state = Pending::State::answered;
      give_back(*p);
      pipeline_.push_back(std::move(p));
    } else {
      ++waiting_;
      pipeline_.push_back(std::move(p));
    }
    busy_.store(true);
    pump();
    if (pipeline_full()) {
      paused_ = true;  // a client that sends without reading its answers: read again when they are written
      return;
    }
    read_prefix();
  }

  // Answers the client has not read yet are bounded too: past this, the connection stops reading.
  bool pipeline_full() const { return pipeline_.size() >= 2 * size_t{host_.server.limits().max_queued} + 8; }

  // The stream cannot go on (a length above the limit, a request over the receive budget): answer in order, read
  // nothing more, close after the answer. The payload cannot be skipped without reading it.
  void refuse_stream(const Error& e) {
    rx_deadline_.store(0);
    host_.log(key_ + " closed", fmt::format("{}: {}; closing the connection", name(), e.message));
    host_.server.note_error(*session_, protocol::kEngineServer, "socket framing",
                            Error{e.code, e.message + "; closing the connection"});
    auto p = fresh_pending();
    p->response.status = to_status(e.code);
    p->state = Pending::State::answered;
    p->close_after = true;
    pipeline_.push_back(std::move(p));
    busy_.store(true);
    reading_stopped_ = true;
    pump();
  }

  void on_read_error(const boost::system::error_code& ec) {
    rx_deadline_.store(0);
    if (receiving_) {
      give_back(*receiving_);
      receiving_.reset();
    }
    // Draining: we shut the receive side ourselves; the answers still go out.
    if (reading_stopped_ && !closed()) {
      if (pipeline_.empty()) finish("the server is shutting down");
      return;
    }
    finish(ec);  // the client left: its session's work is cancelled
  }

  void stop_reading() {
    if (reading_stopped_ || closed()) return;
    reading_stopped_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_receive, ignored);  // the pending read ends (EOF) and frees its buffer
  }

  // --- running and answering --------------------------------------------------------------------------------------

  // Moves the pipeline on: submits the front request when it waits, writes its answer when it has one.
  void pump() {
    if (pumping_) return;  // an answer that arrived inline: the loop below sees it
    pumping_ = true;
    while (!pipeline_.empty() && !closed()) {
      Pending& front = *pipeline_.front();
      if (front.state == Pending::State::waiting) {
        --waiting_;
        submit(front);
        continue;
      }
      if (front.state == Pending::State::answered && !writing_) write_front();
      break;
    }
    pumping_ = false;
  }

  void submit(Pending& p) {
    p.state = Pending::State::running;
    host_.in_flight.fetch_add(1);
    host_.server.submit(*session_, p.request, p.response, [self = this->shared_from_this(), &p]() mutable {
      // Inline answers arrive on this connection's strand already: dispatch goes on at once; from an engine thread
      // it queues on the strand.
      ConnectionHost& host = self->host_;
      boost::asio::dispatch(self->strand_, [self, &p] {
        p.state = Pending::State::answered;
        self->pump();
      });
      // Drop this reference before announcing "done": once in_flight reaches 0 the socket server may be destroyed,
      // and an engine thread must not then hold (and destroy) the last reference to a connection.
      self.reset();
      if (host.in_flight.fetch_sub(1) == 1 && host.on_request_done) host.on_request_done();
    });
  }

  void write_front() {
    Pending& p = *pipeline_.front();
    writing_ = true;
    give_back(p);
    tx_deadline_.store(steady_ns() + frame_allowance_ns(host_.options, p.response.payload.size()));
    out_prefix_ = protocol::stream::encode_response_prefix(p.response.status,
                                                            static_cast<uint32_t>(p.response.payload.size()));
    std::array<boost::asio::const_buffer, 2> buffers{boost::asio::buffer(out_prefix_),
                                                     boost::asio::buffer(p.response.payload)};
    boost::asio::async_write(socket_, buffers, TransferAll{},
                             boost::asio::bind_executor(strand_, [self = this->shared_from_this()](auto ec, size_t) {
                               self->on_written(ec);
                             }));
  }

  void on_written(const boost::system::error_code& ec) {
    writing_ = false;
    tx_deadline_.store(0);
    if (ec) return finish(ec);
    activity();
    std::unique_ptr<Pending> done = std::move(pipeline_.front());
    pipeline_.pop_front();
    const bool close_after = done->close_after;
    recycle(std::move(done));
    if (close_after) return finish("framing error");
    if (pipeline_.empty()) {
      busy_.store(false);
      if (draining_) return finish("the server is shutting down");
    }
    pump();
    if (paused_ && !pipeline_full() && !closed()) {
      paused_ = false;
      read_prefix();
    }
  }

  // --- buffers and budget -----------------------------------------------------------------------------------------

  std::unique_ptr<Pending> fresh_pending() {
    if (spare_.empty()) return std::make_unique<Pending>();
    auto p = std::move(spare_.back());
    spare_.pop_back();
    return p;
  }

  // Keeps one request's buffers for the next (a client sending the same tensors again touches no new memory).
  void recycle(std::unique_ptr<Pending> p) {
    if (spare_.size() >= 1) return;
    if (p->payload.capacity() > kKeepBuffer) std::vector<uint8_t>().swap(p->payload);
    if (p->response.payload.capacity() > kKeepBuffer) std::vector<uint8_t>().swap(p->response.payload);
    p->payload.clear();
    p->response.clear();
    p->request = protocol::Request{};
    p->state = Pending::State::waiting;
    p->close_after = false;
    p->budget = 0;
    spare_.push_back(std::move(p));
  }

  void give_back(Pending& p) {
    host_.budget.give_back(key_, p.budget);
    p.budget = 0;
  }

  void release_budgets() {
    if (receiving_) give_back(*receiving_);
    for (auto& p : pipeline_) give_back(*p);
  }

  void finish(const boost::system::error_code& ec) {
    if (ec && ec != boost::asio::error::eof && ec != boost::asio::error::operation_aborted &&
        ec != boost::asio::error::connection_reset)
      host_.log(key_ + " closed", fmt::format("{}: connection ended: {}", name(), ec.message()));
    finish(ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset || !ec
               ? "the client closed the connection"
               : ec.message());
  }

  void finish(std::string_view why) {
    if (closed_.exchange(true)) return;
    rx_deadline_.store(0);
    tx_deadline_.store(0);
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
    // The accounting is released now; buffers an engine still uses are freed with the connection.
    release_budgets();
    // Its queued work is answered (cancelled) and its running inference cancelled now, not when the last handler
    // lets go.
    host_.server.close_session(*session_, why);
  }

  Socket socket_;
  boost::asio::strand<typename Socket::executor_type> strand_;
  ConnectionHost& host_;
  std::shared_ptr<server::Session> session_;
  const std::string key_;
  const int64_t connected_;
  std::atomic<bool> evicted_{false};

  // Read by the sweeper.
  std::atomic<bool> closed_{false};
  std::atomic<bool> busy_{false};           // requests in the pipeline
  std::atomic<int64_t> last_{0};            // last byte read or written
  std::atomic<int64_t> rx_deadline_{0};     // a frame is arriving and must be complete by then (0: none)
  std::atomic<int64_t> tx_deadline_{0};     // an answer is being written and must be read by then (0: none)

  // Strand only.
  std::array<uint8_t, protocol::stream::kRequestPrefix> prefix_{};
  size_t prefix_got_ = 0;
  int64_t frame_start_ = 0;
  uint32_t expected_ = 0;
  size_t received_ = 0;
  std::unique_ptr<Pending> receiving_;        // the request whose payload is arriving
  std::deque<std::unique_ptr<Pending>> pipeline_;  // read requests in order: the front runs or is answered
  std::vector<std::unique_ptr<Pending>> spare_;
  uint32_t waiting_ = 0;   // requests in the pipeline not yet submitted
  bool reading_stopped_ = false;
  bool paused_ = false;  // pipeline_full(): not reading until answers are written
  bool draining_ = false;
  bool writing_ = false;
  bool pumping_ = false;
  std::array<uint8_t, protocol::stream::kResponsePrefix> out_prefix_{};
  std::shared_ptr<void> companion_;
};

}  // namespace aisrv::phy
