// aisrv protocol — socket endpoint parsing.
#include "aisrv/protocol/endpoint.hpp"

#include <charconv>

namespace aisrv::protocol {

std::string SocketEndpoint::to_string() const {
  if (kind == Kind::unix_socket) return "unix:" + path;
  const bool v6 = host.find(':') != std::string::npos;
  return "tcp:" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

static Result<uint16_t> parse_port(std::string_view text, std::string_view whole) {
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value > 65535 || text.empty())
    return make_error(Errc::invalid_argument, "'{}': '{}' is not a TCP port (0..65535)", whole, text);
  return static_cast<uint16_t>(value);
}

Result<SocketEndpoint> parse_socket_endpoint(std::string_view text) {
  SocketEndpoint ep;
  if (text.rfind("unix:", 0) == 0) {
    ep.kind = SocketEndpoint::Kind::unix_socket;
    ep.path = std::string(text.substr(5));
    if (ep.path.empty()) return make_error(Errc::invalid_argument, "'{}': the Unix socket path is empty", text);
    if (ep.path.size() > 107)
      return make_error(Errc::invalid_argument, "'{}': Unix socket paths are limited to 107 bytes", text);
    return ep;
  }
  if (text.rfind("tcp:", 0) == 0) {
    ep.kind = SocketEndpoint::Kind::tcp;
    std::string_view rest = text.substr(4);
    std::string_view host, port;
    if (!rest.empty() && rest.front() == '[') {
      const size_t close = rest.find(']');
      if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
        return make_error(Errc::invalid_argument, "'{}': expected tcp:[IPv6]:PORT", text);
      host = rest.substr(1, close - 1);
      port = rest.substr(close + 2);
    } else {
      const size_t colon = rest.rfind(':');
      if (colon == std::string_view::npos) {
        host = "127.0.0.1";
        port = rest;
      } else {
        host = rest.substr(0, colon);
        port = rest.substr(colon + 1);
      }
    }
    if (host.empty()) return make_error(Errc::invalid_argument, "'{}': the TCP host is empty", text);
    ep.host = std::string(host);
    ep.port = AISRV_TRY(parse_port(port, text));
    return ep;
  }
  return make_error(Errc::invalid_argument, "'{}': expected unix:PATH, tcp:HOST:PORT or tcp:PORT", text);
}

}  // namespace aisrv::protocol

#include <unistd.h>

#include <cstdlib>

namespace aisrv::protocol {

std::string default_socket_target() {
  if (::geteuid() == 0) return "unix:/run/aisrv/aisrv.sock";
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime && *runtime) return std::string("unix:") + runtime + "/aisrv/aisrv.sock";
  return "unix:/tmp/aisrv-" + std::to_string(::geteuid()) + "/aisrv.sock";
}

}  // namespace aisrv::protocol
