// aisrv host — socket host transport: stream framing over Asio, one round trip per command, timeouts via run_for.
#include "aisrv/client/socket_transport.hpp"

#include <boost/asio.hpp>

#include <limits>
#include <optional>
#include <variant>

#include "aisrv/protocol/stream_framing.hpp"

namespace aisrv::client {

namespace asio = boost::asio;

namespace {
// "All of it, in as few system calls as the kernel allows": Asio's transfer_all caps each read/write at 64 KiB, which
// turns a 1 MiB tensor into 16+ system calls and event-loop rounds.
constexpr auto kWholeBuffers = [](const boost::system::error_code& ec, size_t) -> size_t {
  return ec ? 0 : std::numeric_limits<size_t>::max();
};
}  // namespace

class SocketTransport::Impl {
 public:
  Impl(protocol::SocketEndpoint ep, ConnectOptions options) : ep_(std::move(ep)), options_(options) {}

  Status ensure_connected() {
    if (connected()) return ok();
    boost::system::error_code ec;
    if (ep_.kind == protocol::SocketEndpoint::Kind::unix_socket) {
      auto& s = socket_.emplace<asio::local::stream_protocol::socket>(io_);
      s.connect(asio::local::stream_protocol::endpoint(ep_.path), ec);
    } else {
      asio::ip::tcp::resolver resolver(io_);
      auto results = resolver.resolve(ep_.host, std::to_string(ep_.port), ec);
      if (!ec) {
        auto& s = socket_.emplace<asio::ip::tcp::socket>(io_);
        asio::connect(s, results, ec);
        if (!ec) s.set_option(asio::ip::tcp::no_delay(true), ec);
      }
    }
    if (!ec) {
      // Large buffers: a megabyte payload leaves in a few system calls (capped by net.core.[rw]mem_max).
      std::visit(
          [](auto& s) {
            if constexpr (!std::is_same_v<std::decay_t<decltype(s)>, std::monostate>) {
              boost::system::error_code ignored;
              s.set_option(asio::socket_base::send_buffer_size(4 << 20), ignored);
              s.set_option(asio::socket_base::receive_buffer_size(4 << 20), ignored);
            }
          },
          socket_);
    }
    if (ec) {
      socket_.emplace<std::monostate>();
      const bool absent = ec == asio::error::not_found || ec == asio::error::connection_refused ||
                          ec == boost::system::errc::no_such_file_or_directory;
      return make_error(absent ? Errc::not_found : Errc::io_error, "cannot connect to {}: {}", ep_.to_string(),
                        ec.message());
    }
    return ok();
  }

  Status transact(const protocol::Header& header, std::span<const uint8_t> payload, protocol::Response& response) {
    AISRV_TRY(ensure_connected());
    return std::visit(
        [&](auto& s) -> Status {
          if constexpr (std::is_same_v<std::decay_t<decltype(s)>, std::monostate>) {
            return make_error(Errc::io_error, "not connected");
          } else {
            return round_trip(s, header, payload, response);
          }
        },
        socket_);
  }

  std::string describe() const { return ep_.to_string(); }
  void set_send_progress(SendProgress progress) { progress_ = std::move(progress); }

 private:
  bool connected() const { return !std::holds_alternative<std::monostate>(socket_); }

  template <typename Socket>
  Status round_trip(Socket& s, const protocol::Header& header, std::span<const uint8_t> payload,
                    protocol::Response& response) {
    const auto prefix = protocol::stream::encode_request_prefix(header, static_cast<uint32_t>(payload.size()));
    std::array<asio::const_buffer, 2> out{asio::buffer(prefix), asio::buffer(payload.data(), payload.size())};
    std::array<uint8_t, protocol::stream::kResponsePrefix> in_prefix{};
    boost::system::error_code write_ec, read_ec;
    bool wrote = false, read = false;
    std::optional<Error> framing_error;
    response.clear();

    // With a progress callback, a large payload leaves in 1 MiB steps, each reported.
    const size_t total = prefix.size() + payload.size();
    auto stepwise = [&](const boost::system::error_code& ec, size_t n) -> size_t {
      if (ec || n >= total) return 0;
      progress_(n > prefix.size() ? n - prefix.size() : 0, payload.size());
      return size_t{1} << 20;
    };
    auto written = [&](auto ec, size_t) {
      write_ec = ec;
      wrote = true;
      if (progress_ && !ec) progress_(payload.size(), payload.size());
    };
    if (progress_ && payload.size() >= (size_t{1} << 20))
      asio::async_write(s, out, stepwise, written);
    else
      asio::async_write(s, out, kWholeBuffers, written);
    asio::async_read(s, asio::buffer(in_prefix), [&](auto ec, size_t) {
      if (ec) {
        read_ec = ec;
        read = true;
        return;
      }
      auto p = protocol::stream::decode_response_prefix(in_prefix, AISRV_MAX_PAYLOAD);
      if (!p) {
        framing_error = std::move(p).error();
        read = true;
        return;
      }
      response.status = p->status;
      response.payload.resize(p->length);
      asio::async_read(s, asio::buffer(response.payload), kWholeBuffers, [&](auto ec2, size_t) {
        read_ec = ec2;
        read = true;
      });
    });
    io_.restart();
    io_.run_for(options_.timeout);
    if (!wrote || !read) {
      drop();
      return make_error(Errc::timeout, "no answer from {} within {} ms ({})", ep_.to_string(),
                        options_.timeout.count(), protocol::command_name(header.cmd));
    }
    if (framing_error) {
      drop();
      return *framing_error;
    }
    if (write_ec || read_ec) {
      const auto ec = write_ec ? write_ec : read_ec;
      drop();
      return make_error(Errc::io_error, "connection to {} lost during {}: {}", ep_.to_string(),
                        protocol::command_name(header.cmd), ec.message());
    }
    return ok();
  }

  // After any failure the stream is out of sync: close it; the next command reconnects.
  void drop() {
    std::visit(
        [](auto& s) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(s)>, std::monostate>) {
            boost::system::error_code ignored;
            s.close(ignored);
          }
        },
        socket_);
    socket_.emplace<std::monostate>();
    io_.restart();
    io_.poll();  // completes the aborted handlers
  }

  protocol::SocketEndpoint ep_;
  ConnectOptions options_;
  SendProgress progress_;
  asio::io_context io_;
  std::variant<std::monostate, asio::local::stream_protocol::socket, asio::ip::tcp::socket> socket_;
};

SocketTransport::SocketTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SocketTransport::~SocketTransport() = default;

Result<std::unique_ptr<SocketTransport>> SocketTransport::connect(const protocol::SocketEndpoint& endpoint,
                                                                  const ConnectOptions& options) {
  auto impl = std::make_unique<Impl>(endpoint, options);
  AISRV_TRY(impl->ensure_connected());
  return std::unique_ptr<SocketTransport>(new SocketTransport(std::move(impl)));
}

Status SocketTransport::transact(const protocol::Header& header, std::span<const uint8_t> payload,
                                 protocol::Response& response) {
  return impl_->transact(header, payload, response);
}

std::string SocketTransport::describe() const { return impl_->describe(); }

void SocketTransport::set_send_progress(SendProgress progress) { impl_->set_send_progress(std::move(progress)); }

}  // namespace aisrv::client
