// aisrv protocol — socket endpoint addresses shared by the server (--listen) and clients (--connect):
//   unix:PATH             a Unix domain stream socket
//   tcp:HOST:PORT         TCP on HOST (a name or address; IPv6 in brackets: tcp:[::1]:7000)
//   tcp:PORT              TCP on the loopback address 127.0.0.1
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "aisrv/protocol/result.hpp"

namespace aisrv::protocol {

struct SocketEndpoint {
  enum class Kind { unix_socket, tcp };
  Kind kind = Kind::unix_socket;
  std::string path;  // unix
  std::string host;  // tcp
  uint16_t port = 0; // tcp

  std::string to_string() const;
};

Result<SocketEndpoint> parse_socket_endpoint(std::string_view text);

}  // namespace aisrv::protocol

namespace aisrv::protocol {
// Where aisrvd listens and the CLI connects when nothing is configured, always inside a directory only the daemon's
// user can write (the daemon creates it; docs/security.md): unix:/run/aisrv/aisrv.sock for root, otherwise
// unix:$XDG_RUNTIME_DIR/aisrv/aisrv.sock, or unix:/tmp/aisrv-UID/aisrv.sock without XDG_RUNTIME_DIR.
std::string default_socket_target();
}  // namespace aisrv::protocol
