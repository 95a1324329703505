// aisrv port — what the port (aisrv/port.hpp) defines itself: a peer's description and the names of the trust levels.
// Built as the library aisrv_port, which transports (phy/) link instead of the whole interpreter.
#include "aisrv/port.hpp"

#include <fmt/format.h>

#include <iterator>

namespace aisrv::server {

std::string Peer::describe() const {
  std::string s = transport;
  if (!address.empty()) s += " " + address;
  if (uid) s += fmt::format(" uid {}", *uid);
  if (gid) s += fmt::format(" gid {}", *gid);
  if (pid) s += fmt::format(" pid {}", *pid);
  return s;
}

Peer Peer::of(Trust trust, std::string transport, std::string address) {
  Peer p;
  p.transport = std::move(transport);
  p.trust = trust;
  p.address = std::move(address);
  return p;
}

std::string_view trust_name(Trust t) {
  static constexpr std::string_view names[] = {"process", "physical access", "kernel credentials", "address only",
                                               "detector endpoint"};  // in Trust's order
  const auto i = static_cast<size_t>(t);
  return i < std::size(names) ? names[i] : "?";
}

}  // namespace aisrv::server
