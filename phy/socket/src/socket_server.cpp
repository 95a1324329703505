// aisrv phy/socket — acceptors (Unix, TCP), peer identities, connection limits, the timeout sweeper, the event-loop
// threads and orderly shutdown.
#include "aisrv/phy/socket_server.hpp"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <filesystem>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "refused_connection.hpp"
#include "socket_connection.hpp"

namespace aisrv::phy {

namespace asio = boost::asio;
using UnixProto = asio::local::stream_protocol;
using TcpProto = asio::ip::tcp;

namespace {

constexpr int kSocketBuffer = 4 << 20;
// How often the sweeper looks for connections past their timeouts.
constexpr auto kSweep = std::chrono::milliseconds(250);
// Refused connections waiting to be told why (ERROR_LIMIT to their first request), and for how long at most.
constexpr size_t kMaxRefusedWaiting = 32;
constexpr auto kRefusedPatience = std::chrono::milliseconds(2000);

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

// Directory bits that let the classes with access to the socket reach it: owner rwx, r-x for group / others when
// the socket mode gives them anything.
mode_t directory_mode(uint32_t socket_mode) {
  mode_t m = 0700;
  if (socket_mode & 0060) m |= 0050;
  if (socket_mode & 0006) m |= 0005;
  return m;
}

// The directory of a Unix socket: created when missing; otherwise it must not let another user replace the socket
// (owned by root or us, not writable by group or others unless sticky). Warnings go to `warn`.
Status prepare_socket_directory(const std::string& path, const SocketServerOptions& o,
                                const std::function<void(std::string)>& warn) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path().empty()
                                        ? std::filesystem::path(".")
                                        : std::filesystem::path(path).parent_path();
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return make_error(Errc::io_error, "cannot inspect {}: {}", dir.string(), std::strerror(errno));
    const mode_t mode = directory_mode(o.socket_mode);
    if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST)
      return make_error(Errc::io_error, "cannot create the socket directory {}: {}", dir.string(),
                        std::strerror(errno));
    if (::chmod(dir.c_str(), mode) != 0)
      return make_error(Errc::io_error, "cannot set the mode of {}: {}", dir.string(), std::strerror(errno));
    if (o.socket_group && ::chown(dir.c_str(), static_cast<uid_t>(-1), *o.socket_group) != 0)
      return make_error(Errc::io_error, "cannot give {} to group {}: {}", dir.string(), *o.socket_group,
                        std::strerror(errno));
    return ok();
  }
  if (!S_ISDIR(st.st_mode))
    return make_error(Errc::invalid_argument, "{} is not a directory (socket path {})", dir.string(), path);
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return make_error(Errc::invalid_argument,
                      "the socket directory {} belongs to uid {}, not to this daemon's user ({}): that user could "
                      "replace the socket; use a directory you own (the default is a private one)",
                      dir.string(), st.st_uid, me);
  const bool shared_write = (st.st_mode & 0022) != 0;
  if (shared_write && !(st.st_mode & S_ISVTX))
    return make_error(Errc::invalid_argument,
                      "the socket directory {} is writable by group or others (mode {:o}): they could replace the "
                      "socket; use a private directory",
                      dir.string(), st.st_mode & 07777);
  if (shared_write)
    warn(fmt::format("the socket directory {} is shared (mode {:o}): another user could create {} first; a private "
                     "directory such as the default ({}) avoids that",
                     dir.string(), st.st_mode & 07777, std::filesystem::path(path).filename().string(),
                     protocol::default_socket_target()));
  return ok();
}

// SO_PEERCRED and the peer's supplementary groups.
server::Peer unix_peer(int fd) {
  server::Peer p = server::Peer::of(server::Trust::credentials, "unix");
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    p.uid = cred.uid;
    p.gid = cred.gid;
    p.pid = static_cast<uint32_t>(cred.pid);
  }
#ifdef SO_PEERGROUPS
  std::vector<gid_t> groups(64);
  socklen_t glen = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) != 0 && errno == ERANGE) {
    groups.resize(glen / sizeof(gid_t) + 1);
    glen = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) != 0) glen = 0;
  }
  groups.resize(glen / sizeof(gid_t));
  p.groups.assign(groups.begin(), groups.end());
#endif
  return p;
}

bool is_loopback(const asio::ip::address& a) {
  if (a.is_loopback()) return true;
  return a.is_v6() && a.to_v6().is_v4_mapped() &&
         asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback();
}

}  // namespace

class SocketServer::Impl {
 public:
  Impl(server::Port& server, SocketServerOptions options)
      : options_(std::move(options)), host_(server, options_), sweeper_(io_) {
    host_.on_request_done = [this] {
      std::lock_guard lock(mu_);
      changed_.notify_all();
    };
  }

  ~Impl() { stop(); }

  Result<protocol::SocketEndpoint> listen(const protocol::SocketEndpoint& ep) {
    if (ep.kind == protocol::SocketEndpoint::Kind::unix_socket) return listen_unix(ep);
    return listen_tcp(ep);
  }

  Result<protocol::SocketEndpoint> adopt(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
      return make_error(Errc::io_error, "passed socket {}: {}", fd, std::strerror(errno));
    boost::system::error_code ec;
    protocol::SocketEndpoint ep;
    if (ss.ss_family == AF_UNIX) {
      const auto* un = reinterpret_cast<const sockaddr_un*>(&ss);
      ep.kind = protocol::SocketEndpoint::Kind::unix_socket;
      ep.path = un->sun_path;
      auto acceptor = std::make_unique<UnixProto::acceptor>(io_);
      acceptor->assign(UnixProto(), fd, ec);
      if (ec) return make_error(Errc::io_error, "cannot take over passed socket {}: {}", ep.to_string(), ec.message());
      accept(*acceptor, ep.to_string());
      unix_acceptors_.push_back(std::move(acceptor));
      return ep;
    }
    if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
      return make_error(Errc::invalid_argument, "passed socket {} is neither a Unix nor a TCP socket", fd);
    auto acceptor = std::make_unique<TcpProto::acceptor>(io_);
    acceptor->assign(ss.ss_family == AF_INET ? TcpProto::v4() : TcpProto::v6(), fd, ec);
    if (ec) return make_error(Errc::io_error, "cannot take over passed socket {}: {}", fd, ec.message());
    const auto local = acceptor->local_endpoint(ec);
    ep.kind = protocol::SocketEndpoint::Kind::tcp;
    ep.host = local.address().to_string();
    ep.port = local.port();
    const bool remote = !is_loopback(local.address());
    if (remote && !options_.allow_remote)
      return make_error(Errc::invalid_argument,
                        "the socket passed for {} accepts connections from other machines; that needs aisrvd "
                        "--allow-remote (and --token-file)",
                        ep.to_string());
    if (remote && !host_.server.has_token())
      return make_error(Errc::invalid_argument, "{} accepts remote peers, which must authenticate: give aisrvd "
                                                "--token-file",
                        ep.to_string());
    if (remote)
      warn(fmt::format("{} accepts remote peers: each must AUTH with the token first; the link is NOT encrypted",
                       ep.to_string()));
    tell_tcp_roles(ep.to_string());
    accept(*acceptor, ep.to_string());
    tcp_acceptors_.push_back(std::move(acceptor));
    return ep;
  }

  void start() {
    sweep();
    const size_t n = options_.io_threads ? options_.io_threads : 1;
    for (size_t i = 0; i < n; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  void stop_accepting() {
    if (accepting_closed_.exchange(true)) return;
    asio::post(io_, [this] {
      boost::system::error_code ignored;
      for (auto& a : unix_acceptors_) a->close(ignored);
      for (auto& a : tcp_acceptors_) a->close(ignored);
    });
  }

  bool drain(std::chrono::steady_clock::time_point deadline) {
    stop_accepting();
    host_.draining.store(true);
    for (auto& c : live_connections()) c->drain();
    std::unique_lock lock(mu_);
    return changed_.wait_until(lock, deadline, [this] { return conns_.empty(); });
  }

  void stop() {
    if (stopped_.exchange(true)) return;
    stop_accepting();
    host_.draining.store(true);
    asio::post(io_, [this] { sweeper_.cancel(); });
    for (auto& c : live_connections()) c->close("the server is shutting down");
    {  // refused connections waiting to be told why: not worth waiting for at shutdown
      std::lock_guard lock(mu_);
      for (auto& w : refused_)
        if (auto r = w.lock()) r->abandon();
    }
    // Requests still running in an engine: their completion posts into io_.
    {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [this] { return host_.in_flight.load() == 0; });
    }
    // Every socket is closed, so every pending operation completes (aborted) and the loop runs dry.
    work_.reset();
    if (threads_.empty()) io_.run();  // never started: still release what is queued
    for (auto& t : threads_) t.join();
    threads_.clear();
    std::error_code ec;
    for (const auto& p : unix_paths_) std::filesystem::remove(p, ec);
  }

  size_t connections() const {
    std::lock_guard lock(mu_);
    return conns_.size();
  }

 private:
  using Conns = std::list<std::weak_ptr<Connection>>;

  std::vector<std::shared_ptr<Connection>> live_connections() {
    std::vector<std::shared_ptr<Connection>> out;
    std::lock_guard lock(mu_);
    for (auto& w : conns_)
      if (auto c = w.lock()) out.push_back(std::move(c));
    return out;
  }

  void warn(const std::string& line) {
    if (options_.logger) options_.logger->warn("{}", line);
  }

  // A TCP peer's uid is unknown, so --socket-mode / --socket-group / --admin-group cannot apply to it.
  void tell_tcp_roles(const std::string& where) {
    if (!options_.logger) return;
    if (!host_.server.has_token())
      options_.logger->info("{}: TCP peers are users (a TCP peer's uid is unknown; --socket-mode, --socket-group and "
                            "--admin-group do not apply); with --token-file a peer that sends AUTH with the token is "
                            "admin",
                            where);
    else
      options_.logger->info("{}: TCP peers must AUTH with the token (--token-file) within {} s, and are admin after",
                            where, options_.auth_timeout.count() / 1000.0);
  }

  Result<protocol::SocketEndpoint> listen_unix(const protocol::SocketEndpoint& ep) {
    AISRV_TRY(prepare_socket_directory(ep.path, options_, [this](const std::string& l) { warn(l); }));
    std::error_code fec;
    const auto st = std::filesystem::symlink_status(ep.path, fec);
    if (!fec && std::filesystem::exists(st)) {
      if (!std::filesystem::is_socket(st))
        return make_error(Errc::invalid_argument, "{} exists and is not a socket; refusing to replace it", ep.path);
      if (unix_socket_is_live(ep.path)) {
        struct stat s {};
        const std::string owner = ::lstat(ep.path.c_str(), &s) == 0 ? fmt::format(" (owned by uid {})", s.st_uid) : "";
        return make_error(Errc::io_error, "{} is in use by a running server{}", ep.path, owner);
      }
      std::filesystem::remove(ep.path, fec);
    }
    boost::system::error_code ec;
    auto acceptor = std::make_unique<UnixProto::acceptor>(io_);
    acceptor->open(UnixProto(), ec);
    if (!ec) acceptor->bind(UnixProto::endpoint(ep.path), ec);
    if (ec) return make_error(Errc::io_error, "cannot bind {}: {}", ep.to_string(), ec.message());
    // Mode and group are set before listen(): nobody can connect before they are right.
    auto undo = [&](Error e) -> Error {
      std::filesystem::remove(ep.path, fec);
      return e;
    };
    if (::chmod(ep.path.c_str(), options_.socket_mode) != 0)
      return undo(make_error(Errc::io_error, "cannot chmod {}: {}", ep.path, std::strerror(errno)));
    if (options_.socket_group && ::chown(ep.path.c_str(), static_cast<uid_t>(-1), *options_.socket_group) != 0)
      return undo(make_error(Errc::io_error, "cannot give {} to group {}: {}", ep.path, *options_.socket_group,
                             std::strerror(errno)));
    acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return undo(make_error(Errc::io_error, "cannot listen on {}: {}", ep.to_string(), ec.message()));
    unix_paths_.push_back(ep.path);
    accept(*acceptor, ep.to_string());
    unix_acceptors_.push_back(std::move(acceptor));
    return ep;
  }

  Result<protocol::SocketEndpoint> listen_tcp(const protocol::SocketEndpoint& ep) {
    boost::system::error_code ec;
    asio::ip::tcp::resolver resolver(io_);
    auto results = resolver.resolve(ep.host, std::to_string(ep.port),
                                    asio::ip::tcp::resolver::passive | asio::ip::tcp::resolver::numeric_service, ec);
    if (ec || results.empty())
      return make_error(Errc::invalid_argument, "cannot resolve {}: {}", ep.host, ec ? ec.message() : "no address");
    const auto endpoint = results.begin()->endpoint();
    const bool remote = !is_loopback(endpoint.address());
    if (remote && !options_.allow_remote)
      return make_error(Errc::invalid_argument,
                        "{} would accept connections from other machines; TCP listens on loopback only unless "
                        "aisrvd is started with --allow-remote (and --token-file)",
                        ep.to_string());
    if (remote && !host_.server.has_token())
      return make_error(Errc::invalid_argument,
                        "{} accepts remote peers, which must authenticate: give aisrvd --token-file", ep.to_string());
    auto acceptor = std::make_unique<TcpProto::acceptor>(io_);
    acceptor->open(endpoint.protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(endpoint, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return make_error(Errc::io_error, "cannot listen on {}: {}", ep.to_string(), ec.message());
    protocol::SocketEndpoint bound = ep;
    bound.host = acceptor->local_endpoint().address().to_string();
    bound.port = acceptor->local_endpoint().port();
    if (remote)
      warn(fmt::format("{} accepts remote peers: each must AUTH with the token before anything else; the link is "
                       "NOT encrypted (tokens, models and tensors cross the network in clear; use an SSH tunnel, "
                       "WireGuard or a trusted network)",
                       bound.to_string()));
    tell_tcp_roles(bound.to_string());
    accept(*acceptor, bound.to_string());
    tcp_acceptors_.push_back(std::move(acceptor));
    return bound;
  }

  template <typename Acceptor>
  void accept(Acceptor& acceptor, std::string where) {
    acceptor.async_accept(
        [this, &acceptor, where](boost::system::error_code ec, typename Acceptor::protocol_type::socket socket) {
          if (ec) {
            if (ec != asio::error::operation_aborted && options_.logger)
              options_.logger->warn("accept on {} failed: {}", where, ec.message());
            if (ec == asio::error::operation_aborted || stopped_ || accepting_closed_) return;
            accept(acceptor, where);
            return;
          }
          on_accepted(std::move(socket), where);
          accept(acceptor, where);
        });
  }

  template <typename Socket>
  void on_accepted(Socket socket, const std::string& where) {
    {
      // Large socket buffers let a megabyte payload or response move in a few system calls instead of many
      // fill/drain cycles (the kernel caps them at net.core.[rw]mem_max).
      boost::system::error_code ignored;
      socket.set_option(asio::socket_base::send_buffer_size(kSocketBuffer), ignored);
      socket.set_option(asio::socket_base::receive_buffer_size(kSocketBuffer), ignored);
    }
    server::Peer peer;
    std::string key;  // whose share of the connection and receive limits this connection takes
    if constexpr (std::is_same_v<Socket, TcpProto::socket>) {
      boost::system::error_code ec;
      socket.set_option(TcpProto::no_delay(true), ec);
      auto remote = socket.remote_endpoint(ec);
      peer = server::Peer::of(server::Trust::address, "tcp",
                              ec ? "?" : fmt::format("{}:{}", remote.address().to_string(), remote.port()));
      peer.loopback = !ec && is_loopback(remote.address());
      // A TCP peer proves no identity (an address is one bind() away on loopback): all of them share one pool.
      key = "tcp peers";
      if (!peer.loopback && !options_.allow_remote) {
        refuse(std::move(socket), key, fmt::format("{} on {}: remote peer refused (no --allow-remote)",
                                                   peer.describe(), where));
        return;
      }
    } else {
      peer = unix_peer(socket.native_handle());
      key = peer.uid ? fmt::format("uid {}", *peer.uid) : "unix ?";
    }
    const bool admin = host_.server.role_for(peer) == protocol::Role::admin;
    // Connections looked at while evicting: released after mu_ (the last reference's destructor takes mu_).
    std::vector<std::shared_ptr<Connection>> looked_at;
    std::unique_lock lock(mu_);
    if (stopped_ || accepting_closed_) {  // checked under mu_: stop() copies the connections under the same lock
      boost::system::error_code ignored;
      socket.close(ignored);
      return;
    }
    const size_t reserved = std::min(options_.reserved_connections, options_.max_connections);
    const size_t ceiling = admin ? options_.max_connections : options_.max_connections - reserved;
    // A full pool first loses its oldest link that still has to AUTH (a peer without the token cannot hold slots
    // against one that has it); only when there is none is the newcomer refused.
    if (conns_.size() >= ceiling && !evict_unauthenticated("", peer.describe(), looked_at)) {
      lock.unlock();
      refuse(std::move(socket), key,
             fmt::format("{} on {}: refused, {} connections open (aisrvd --max-connections {}{})", peer.describe(),
                         where, ceiling, options_.max_connections,
                         admin ? "" : fmt::format(", of which the last {} are kept for admins: "
                                                  "--reserved-connections",
                                                  reserved)));
      return;
    }
    if (per_peer_[key] >= options_.max_connections_per_peer &&
        !evict_unauthenticated(key, peer.describe(), looked_at)) {
      lock.unlock();
      refuse(std::move(socket), key,
             fmt::format("{} on {}: refused, {} already has {} connections open (aisrvd --max-connections-per-peer)",
                         peer.describe(), where, key, options_.max_connections_per_peer));
      return;
    }
    ++per_peer_[key];
    auto session = host_.server.open_session(std::move(peer));
    auto conn = std::make_shared<SocketConnection<Socket>>(std::move(socket), host_, session, key);
    auto slot = conns_.insert(conns_.end(), conn);
    lock.unlock();
    host_.log(key + " connected",
              fmt::format("{} connected on {}, role {}", host_.server.session_name(*session), where,
                          protocol::role_name(admin ? protocol::Role::admin : protocol::Role::user)));
    // Unregister when the connection object is gone (all its handlers finished).
    struct Tracker {
      Tracker(Impl* i, Conns::iterator s, std::string k) : impl(i), slot(s), key(std::move(k)) {}
      Tracker(const Tracker&) = delete;
      Tracker& operator=(const Tracker&) = delete;
      Impl* impl;
      Conns::iterator slot;
      std::string key;
      ~Tracker() {
        std::lock_guard lock(impl->mu_);
        impl->conns_.erase(slot);
        if (--impl->per_peer_[key] == 0) impl->per_peer_.erase(key);
        impl->changed_.notify_all();
      }
    };
    conn->attach(std::make_shared<Tracker>(this, slot, key));
    conn->start();
  }

  // Called with mu_ held: closes the oldest connection (of pool `key`, or of any pool when empty) that must AUTH and
  // has not, to make room for `newcomer`. False when there is none. Every connection it looks at is kept in
  // `looked_at`, which the caller releases after mu_: dropping the last reference here would re-enter mu_.
  bool evict_unauthenticated(const std::string& key, const std::string& newcomer,
                             std::vector<std::shared_ptr<Connection>>& looked_at) {
    for (auto& w : conns_) {  // in connection order: the oldest first
      auto c = looked_at.emplace_back(w.lock());
      if (!c || (!key.empty() && c->peer_key() != key) || !c->claim_eviction()) continue;
      const std::string why = fmt::format("evicted: it had not sent AUTH and its pool is full ({} is waiting)",
                                          newcomer);
      host_.log(c->peer_key() + " evicted", why, /*shared=*/true);
      c->close(why);
      return true;
    }
    return false;
  }

  // A connection over a limit: logged (rate-limited per peer) and told ERROR_LIMIT when it sends its first request.
  template <typename Socket>
  void refuse(Socket socket, const std::string& key, const std::string& line) {
    host_.log(key + " refused", line, /*shared=*/true);  // its own budget: connect lines do not hide refusals
    if (refused_waiting_.fetch_add(1) >= kMaxRefusedWaiting) {
      refused_waiting_.fetch_sub(1);
      boost::system::error_code ignored;
      socket.close(ignored);
      return;
    }
    auto refused = std::make_shared<RefusedConnection<Socket>>(std::move(socket), refused_waiting_, kRefusedPatience);
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;  // stop() has abandoned the others; this one closes as it goes out of scope
      std::erase_if(refused_, [](const std::weak_ptr<RefusedLink>& w) { return w.expired(); });
      refused_.push_back(refused);
    }
    refused->start();
  }

  // Every kSweep: connections past their idle or frame timeout are closed (each decides on its own strand).
  void sweep() {
    sweeper_.expires_after(kSweep);
    sweeper_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopped_) return;
      const int64_t now = steady_ns();
      for (auto& c : live_connections()) c->check(now);
      host_.throttle.flush([this](const std::string& l) {
        if (options_.logger) options_.logger->info("{}", l);
      });
      sweep();
    });
  }

  // Declaration order matters: the bookkeeping outlives io_, whose destruction may release connections.
  SocketServerOptions options_;
  ConnectionHost host_;
  std::atomic<size_t> refused_waiting_{0};
  mutable std::mutex mu_;
  std::condition_variable changed_;  // a request finished or a connection ended
  Conns conns_;
  std::map<std::string, size_t> per_peer_;
  std::vector<std::weak_ptr<RefusedLink>> refused_;  // refused connections that may still wait for a request
  std::atomic<bool> stopped_{false};
  std::atomic<bool> accepting_closed_{false};
  std::vector<std::string> unix_paths_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{asio::make_work_guard(io_)};
  asio::steady_timer sweeper_;
  std::vector<std::unique_ptr<UnixProto::acceptor>> unix_acceptors_;
  std::vector<std::unique_ptr<TcpProto::acceptor>> tcp_acceptors_;
  std::vector<std::thread> threads_;
};

SocketServer::SocketServer(server::Port& server, SocketServerOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {}
SocketServer::~SocketServer() = default;
Result<protocol::SocketEndpoint> SocketServer::listen(const protocol::SocketEndpoint& e) { return impl_->listen(e); }
Result<protocol::SocketEndpoint> SocketServer::adopt(int fd) { return impl_->adopt(fd); }
void SocketServer::start() { impl_->start(); }
void SocketServer::stop_accepting() { impl_->stop_accepting(); }
bool SocketServer::drain(std::chrono::steady_clock::time_point deadline) { return impl_->drain(deadline); }
void SocketServer::stop() { impl_->stop(); }
size_t SocketServer::connections() const { return impl_->connections(); }

}  // namespace aisrv::phy
