// aisrv phy/socket — acceptors (Unix, TCP), the event-loop threads, session tracking and orderly shutdown.
#include "aisrv/phy/socket_server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <filesystem>
#include <list>
#include <mutex>
#include <thread>
#include <variant>

#include "session.hpp"

namespace aisrv::phy {

namespace asio = boost::asio;
using UnixProto = asio::local::stream_protocol;
using TcpProto = asio::ip::tcp;

namespace {

constexpr int kSocketBuffer = 4 << 20;

// A Unix socket path is stale when it is a socket nobody accepts on.
bool unix_socket_is_live(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  const bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return live;
}

}  // namespace

class SocketServer::Impl {
 public:
  Impl(server::Server& server, SocketServerOptions options)
      : options_(std::move(options)), host_{server, options_.logger, {}, {}} {
    host_.on_request_done = [this] {
      std::lock_guard lock(mu_);
      idle_.notify_all();
    };
  }

  ~Impl() { stop(); }

  Result<protocol::SocketEndpoint> listen(const protocol::SocketEndpoint& ep) {
    boost::system::error_code ec;
    if (ep.kind == protocol::SocketEndpoint::Kind::unix_socket) {
      std::error_code fec;
      const auto st = std::filesystem::symlink_status(ep.path, fec);
      if (!fec && std::filesystem::exists(st)) {
        if (!std::filesystem::is_socket(st))
          return make_error(Errc::invalid_argument, "{} exists and is not a socket; refusing to replace it", ep.path);
        if (unix_socket_is_live(ep.path))
          return make_error(Errc::io_error, "{} is in use by a running server", ep.path);
        std::filesystem::remove(ep.path, fec);
      }
      auto acceptor = std::make_unique<UnixProto::acceptor>(io_);
      acceptor->open(UnixProto(), ec);
      if (!ec) acceptor->bind(UnixProto::endpoint(ep.path), ec);
      if (ec) return make_error(Errc::io_error, "cannot bind {}: {}", ep.to_string(), ec.message());
      // Permissions are set before listen(): nobody can connect before the mode is right.
      if (::chmod(ep.path.c_str(), 0660) != 0) {
        const int err = errno;
        std::filesystem::remove(ep.path, fec);
        return make_error(Errc::io_error, "cannot chmod {}: {}", ep.path, std::strerror(err));
      }
      acceptor->listen(asio::socket_base::max_listen_connections, ec);
      if (ec) return make_error(Errc::io_error, "cannot listen on {}: {}", ep.to_string(), ec.message());
      unix_paths_.push_back(ep.path);
      accept(*acceptor, ep.to_string());
      unix_acceptors_.push_back(std::move(acceptor));
      return ep;
    }
    asio::ip::tcp::resolver resolver(io_);
    auto results = resolver.resolve(ep.host, std::to_string(ep.port),
                                    asio::ip::tcp::resolver::passive | asio::ip::tcp::resolver::numeric_service, ec);
    if (ec || results.empty())
      return make_error(Errc::invalid_argument, "cannot resolve {}: {}", ep.host, ec ? ec.message() : "no address");
    const auto endpoint = results.begin()->endpoint();
    auto acceptor = std::make_unique<TcpProto::acceptor>(io_);
    acceptor->open(endpoint.protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(endpoint, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return make_error(Errc::io_error, "cannot listen on {}: {}", ep.to_string(), ec.message());
    protocol::SocketEndpoint bound = ep;
    bound.host = acceptor->local_endpoint().address().to_string();
    bound.port = acceptor->local_endpoint().port();
    accept(*acceptor, bound.to_string());
    tcp_acceptors_.push_back(std::move(acceptor));
    return bound;
  }

  void start() {
    const size_t n = options_.io_threads ? options_.io_threads : 1;
    for (size_t i = 0; i < n; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  void stop() {
    if (stopped_.exchange(true)) return;
    // 1. stop accepting
    asio::post(io_, [this] {
      boost::system::error_code ignored;
      for (auto& a : unix_acceptors_) a->close(ignored);
      for (auto& a : tcp_acceptors_) a->close(ignored);
    });
    // 2. close every connection (copied first: a session that ends unregisters itself under mu_)
    std::vector<std::function<void()>> closers;
    {
      std::lock_guard lock(mu_);
      closers.assign(closers_.begin(), closers_.end());
    }
    for (auto& close : closers) close();
    // 3. wait for requests still running in an engine: their completion posts into io_
    {
      std::unique_lock lock(mu_);
      idle_.wait(lock, [this] { return host_.in_flight.load() == 0; });
    }
    // 4. every socket is closed, so every pending operation completes (aborted) and the loop runs dry
    work_.reset();
    if (threads_.empty()) io_.run();  // never started: still release what is queued
    for (auto& t : threads_) t.join();
    threads_.clear();
    std::error_code ec;
    for (const auto& p : unix_paths_) std::filesystem::remove(p, ec);
  }

  size_t connections() const {
    std::lock_guard lock(mu_);
    return live_;
  }

 private:
  template <typename Acceptor>
  void accept(Acceptor& acceptor, std::string where) {
    acceptor.async_accept([this, &acceptor, where](boost::system::error_code ec, typename Acceptor::protocol_type::socket socket) {
      if (ec) {
        if (ec != asio::error::operation_aborted && host_.logger)
          host_.logger->warn("accept on {} failed: {}", where, ec.message());
        if (ec == asio::error::operation_aborted || stopped_) return;
        accept(acceptor, where);
        return;
      }
      on_accepted(std::move(socket), where);
      accept(acceptor, where);
    });
  }

  template <typename Socket>
  void on_accepted(Socket socket, const std::string& where) {
    std::string peer = where;
    {
      // Large socket buffers let a megabyte payload or response move in a few system calls instead of many
      // fill/drain cycles (the kernel caps them at net.core.[rw]mem_max).
      boost::system::error_code ignored;
      socket.set_option(asio::socket_base::send_buffer_size(kSocketBuffer), ignored);
      socket.set_option(asio::socket_base::receive_buffer_size(kSocketBuffer), ignored);
    }
    if constexpr (std::is_same_v<Socket, TcpProto::socket>) {
      boost::system::error_code ec;
      socket.set_option(TcpProto::no_delay(true), ec);
      auto remote = socket.remote_endpoint(ec);
      if (!ec) peer = fmt::format("tcp client {}:{}", remote.address().to_string(), remote.port());
    } else {
      peer = fmt::format("unix client #{}", ++unix_clients_);
    }
    std::unique_lock lock(mu_);
    if (stopped_) {  // checked under mu_: stop() copies the closers under the same lock
      boost::system::error_code ignored;
      socket.close(ignored);
      return;
    }
    if (live_ >= options_.max_connections) {
      lock.unlock();
      host_.server.log().add(
          fmt::format("{}: refused, {} connections already open (limit)", peer, options_.max_connections));
      boost::system::error_code ignored;
      socket.close(ignored);
      return;
    }
    auto session = std::make_shared<Session<Socket>>(std::move(socket), host_, peer);
    ++live_;
    auto slot = closers_.insert(closers_.end(), [weak = std::weak_ptr(session)] {
      if (auto s = weak.lock()) s->close();
    });
    lock.unlock();
    if (host_.logger) host_.logger->debug("{}: connected", peer);
    // Unregister when the session object is gone (all its handlers finished).
    struct Tracker {
      Tracker(Impl* i, std::list<std::function<void()>>::iterator s) : impl(i), slot(s) {}
      Tracker(const Tracker&) = delete;
      Tracker& operator=(const Tracker&) = delete;
      Impl* impl;
      std::list<std::function<void()>>::iterator slot;
      ~Tracker() {
        std::lock_guard lock(impl->mu_);
        impl->closers_.erase(slot);
        --impl->live_;
      }
    };
    session->attach(std::make_shared<Tracker>(this, slot));
    session->start();
  }

  // Declaration order matters: the bookkeeping outlives io_, whose destruction may release sessions.
  SocketServerOptions options_;
  SessionHost host_;
  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::list<std::function<void()>> closers_;
  size_t live_ = 0;
  size_t unix_clients_ = 0;
  std::atomic<bool> stopped_{false};
  std::vector<std::string> unix_paths_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{asio::make_work_guard(io_)};
  std::vector<std::unique_ptr<UnixProto::acceptor>> unix_acceptors_;
  std::vector<std::unique_ptr<TcpProto::acceptor>> tcp_acceptors_;
  std::vector<std::thread> threads_;
};

SocketServer::SocketServer(server::Server& server, SocketServerOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {}
SocketServer::~SocketServer() = default;
Result<protocol::SocketEndpoint> SocketServer::listen(const protocol::SocketEndpoint& e) { return impl_->listen(e); }
void SocketServer::start() { impl_->start(); }
void SocketServer::stop() { impl_->stop(); }
size_t SocketServer::connections() const { return impl_->connections(); }

}  // namespace aisrv::phy
