// aisrvd — the metrics and health-probe HTTP listener (Boost.Beast).
#include "probe_http_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

namespace aisrv::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

bool is_loopback(const asio::ip::address& a) {
  if (a.is_loopback()) return true;
  return a.is_v6() && a.to_v6().is_v4_mapped() &&
         asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback();
}

// One warning per kind per interval, with how many were held back: a peer can trigger these at will.
class RateLimitedWarning {
 public:
  void warn(const std::shared_ptr<spdlog::logger>& logger, const std::string& line) {
    if (!logger) return;
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    if (last_ != std::chrono::steady_clock::time_point{} && now - last_ < std::chrono::seconds(10)) {
      ++held_;
      return;
    }
    logger->warn("metrics listener: {}{}", line,
                 held_ ? fmt::format(" ({} more like this in the last 10 s)", held_) : std::string());
    held_ = 0;
    last_ = now;
  }

 private:
  std::mutex mu_;
  std::chrono::steady_clock::time_point last_{};
  uint64_t held_ = 0;
};

}  // namespace

class ProbeHttpServer::Impl {
 public:
  Impl(ProbeHttpOptions options, std::vector<HttpRoute> routes)
      : options_(std::move(options)), routes_(std::move(routes)) {}

  Status listen(const protocol::SocketEndpoint& ep);
  void run() {
    thread_ = std::thread([this] { io_.run(); });
  }
  void stop() {
    std::call_once(stopped_, [this] {
      asio::post(io_, [this] {
        boost::system::error_code ec;
        acceptor_.close(ec);
      });
      io_.stop();
      if (thread_.joinable()) thread_.join();
    });
  }
  const protocol::SocketEndpoint& endpoint() const { return bound_; }

  // Answers a parsed request.
  http::response<http::string_body> answer(const http::request<http::string_body>& req) const;

  const ProbeHttpOptions& options() const { return options_; }
  RateLimitedWarning& refusals() { return refusals_; }
  RateLimitedWarning& bad_requests() { return bad_requests_; }
  void closed() { active_.fetch_sub(1); }

 private:
  void accept();

  // Declared before io_: connections still queued on it when it is destroyed find these alive.
  ProbeHttpOptions options_;
  std::vector<HttpRoute> routes_;
  std::atomic<size_t> active_{0};
  RateLimitedWarning refusals_, bad_requests_;
  protocol::SocketEndpoint bound_;
  std::once_flag stopped_;
  asio::io_context io_{1};
  tcp::acceptor acceptor_{io_};
  std::thread thread_;
};

namespace {

// One HTTP connection: read a request (bounded in size and time), answer it, keep the connection for the next one
// when the client asked for keep-alive, until the idle timeout.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, ProbeHttpServer::Impl& server)
      : stream_(std::move(socket)), server_(server), buffer_(server.options().max_request_bytes + 1024) {}
  ~Connection() { server_.closed(); }

  void start() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.options().max_request_bytes));
    parser_->body_limit(server_.options().max_request_bytes);
    // One deadline for the whole request: a peer that trickles bytes (slowloris) is cut off all the same.
    stream_.expires_after(server_.options().timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof)
      return close();
    if (ec) {
      // The peer sent what is not HTTP, or too much of it: say so once and close.
      const bool too_big = ec == http::error::header_limit || ec == http::error::body_limit ||
                           ec == http::error::buffer_overflow;
      server_.bad_requests().warn(server_.options().logger,
                                  fmt::format("bad request from {}: {}", peer(), ec.message()));
      http::response<http::string_body> res{too_big ? http::status::request_header_fields_too_large
                                                    : http::status::bad_request,
                                            11};
      res.set(http::field::content_type, "text/plain; charset=utf-8");
      res.body() = too_big ? "request too large\n" : "bad request\n";
      res.keep_alive(false);
      res.prepare_payload();
      return write(std::move(res));
    }
    write(server_.answer(parser_->get()));
  }

  void write(http::response<http::string_body> res) {
    response_ = std::move(res);
    stream_.expires_after(server_.options().timeout);
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || !self->response_.keep_alive()) return self->close();
      self->read();
    });
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  std::string peer() {
    beast::error_code ec;
    const auto ep = stream_.socket().remote_endpoint(ec);
    return ec ? std::string("a peer") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  beast::tcp_stream stream_;
  ProbeHttpServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
};

}  // namespace

http::response<http::string_body> ProbeHttpServer::Impl::answer(const http::request<http::string_body>& req) const {
  http::response<http::string_body> res{http::status::ok, req.version()};
  res.set(http::field::server, "aisrvd");
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(req.keep_alive());
  auto plain = [&res](http::status status, std::string body) {
    res.result(status);
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = std::move(body);
  };
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const HttpRoute* route = nullptr;
  for (const auto& r : routes_)
    if (r.path == path) route = &r;
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    plain(http::status::method_not_allowed, "only GET and HEAD\n");
    res.set(http::field::allow, "GET, HEAD");
  } else if (!route) {
    std::string known;
    for (const auto& r : routes_) known += " " + r.path;
    plain(http::status::not_found, "not found; this listener serves" + known + "\n");
  } else {
    HttpAnswer a = route->answer();
    res.result(static_cast<http::status>(a.status));
    res.set(http::field::content_type, a.content_type);
    res.body() = std::move(a.body);
  }
  res.prepare_payload();
  if (req.method() == http::verb::head) {
    const auto length = res.body().size();
    res.body().clear();
    res.content_length(length);  // HEAD: the headers GET would send, no body
  }
  return res;
}

Status ProbeHttpServer::Impl::listen(const protocol::SocketEndpoint& ep) {
  if (ep.kind != protocol::SocketEndpoint::Kind::tcp)
    return make_error(Errc::invalid_argument, "--metrics {}: the metrics listener takes tcp:HOST:PORT or tcp:PORT",
                      ep.to_string());
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(ep.host, std::to_string(ep.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty())
    return make_error(Errc::invalid_argument, "--metrics: cannot resolve {}: {}", ep.host,
                      ec ? ec.message() : "no address");
  const tcp::endpoint endpoint = results.begin()->endpoint();
  const bool remote = !is_loopback(endpoint.address());
  if (remote && !options_.allow_remote)
    return make_error(Errc::invalid_argument,
                      "--metrics {} would answer other machines; the metrics listener binds to loopback only unless "
                      "aisrvd is started with --allow-remote",
                      ep.to_string());
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return make_error(Errc::io_error, "--metrics: cannot listen on {}: {}", ep.to_string(), ec.message());
  bound_ = ep;
  bound_.host = acceptor_.local_endpoint().address().to_string();
  bound_.port = acceptor_.local_endpoint().port();
  if (remote && options_.logger)
    options_.logger->warn("metrics listener {} answers remote peers without authentication", bound_.to_string());
  accept();
  return ok();
}

void ProbeHttpServer::Impl::accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      if (active_.load() >= options_.max_connections) {
        refusals_.warn(options_.logger, fmt::format("{} connections open (the limit, --metrics-max-connections); "
                                                    "closing a new one",
                                                    options_.max_connections));
        beast::error_code ignored;
        socket.close(ignored);
      } else {
        active_.fetch_add(1);
        std::make_shared<Connection>(std::move(socket), *this)->start();
      }
    } else {
      refusals_.warn(options_.logger, "accept failed: " + ec.message());
    }
    accept();
  });
}

ProbeHttpServer::ProbeHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ProbeHttpServer::~ProbeHttpServer() { stop(); }

Result<std::unique_ptr<ProbeHttpServer>> ProbeHttpServer::start(const protocol::SocketEndpoint& endpoint,
                                                                ProbeHttpOptions options,
                                                                std::vector<HttpRoute> routes) {
  if (options.max_connections == 0 || options.timeout.count() <= 0 || options.max_request_bytes < 256)
    return make_error(Errc::invalid_argument, "metrics listener: limits must be positive (request size at least 256)");
  auto impl = std::make_unique<Impl>(std::move(options), std::move(routes));
  AISRV_TRY(impl->listen(endpoint));
  impl->run();
  return std::unique_ptr<ProbeHttpServer>(new ProbeHttpServer(std::move(impl)));
}

const protocol::SocketEndpoint& ProbeHttpServer::endpoint() const { return impl_->endpoint(); }

void ProbeHttpServer::stop() { impl_->stop(); }

}  // namespace aisrv::daemon
