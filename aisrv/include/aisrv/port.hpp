// aisrv interpreter — the port: the one face the interpreter shows to transports (phy/). A transport opens a session
// for each peer with what its medium proves about that peer (Peer, Trust), hands it decoded requests and frames the
// answers, applies the limits the port gives (PortLimits), writes its own framing problems to the session's debug log
// through the port, and closes the session when the peer leaves. It never decides what a peer may do: the server
// decides the role and whether AUTH is needed from the Trust, never from the transport's name (a label for logs and
// metrics only). The server (aisrv/server.hpp) implements the port; a transport holds a `Port&`, never a Server.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aisrv/loaded_model.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/protocol.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::server {

class Session;  // one client's state; opaque to transports (aisrv/session.hpp is the interpreter's)

// What a transport's medium proves about the peer on the other end.
enum class Trust : uint8_t {
  process,      // the peer is this process: the in-process channel, the server's and the daemon's own sessions
  physical,     // physical access to the cable or bus: the USB device port, the SPI slave port
  credentials,  // the kernel names the peer's uid, gid and groups (Unix socket, SO_PEERCRED)
  address,      // an address only, nothing about who (TCP: an address is one bind() away on loopback)
  detector,     // an endpoint the operator opened for detection requests only (Frigate's detector protocol)
};
std::string_view trust_name(Trust t);

// Who is on the other end, as the transport learned it from its medium. Transports only report; the server decides
// what a peer may do from `trust` and the facts (ServerOptions::access).
struct Peer {
  std::string transport;  // a label for logs and metrics: "unix", "tcp", "usb", "spi", "local", "frigate", "internal"
  Trust trust = Trust::address;  // the least a medium can prove
  std::string address;    // TCP "192.168.1.7:40112"; empty where the medium has none
  std::optional<uint32_t> uid, gid, pid;  // Trust::credentials: SO_PEERCRED
  std::vector<uint32_t> groups;           // Trust::credentials: supplementary groups (SO_PEERGROUPS)
  bool loopback = true;                   // Trust::address: the peer is this machine

  // "unix uid 1000 gid 1000 pid 4242", "tcp 192.168.1.7:40112", "usb host"
  std::string describe() const;
  static Peer of(Trust trust, std::string transport, std::string address = {});
};

// What a transport must apply before it hands a request over.
struct PortLimits {
  uint32_t max_payload = 0;  // the largest request payload: refuse bigger ones while framing (ERROR_BAD_LENGTH)
  uint32_t max_queued = 0;   // requests one session may have waiting for engines (a transport's pipeline depth)
  uint32_t engines = 0;      // engine numbers 0..engines-1; scope `engines` is the server's own (log lines, bits)
};

class Port {
 public:
  using Done = std::function<void()>;

  virtual ~Port() = default;

  // --- sessions ----------------------------------------------------------------------------------------------------
  virtual std::shared_ptr<Session> open_session(Peer peer) = 0;
  // Idempotent. `why` ends up in the log lines of what was cancelled ("disconnected", "link reset").
  virtual void close_session(Session& session, std::string_view why = "the client disconnected") = 0;
  // The role a session of `peer` starts with; a transport uses it to keep connection slots for admins.
  virtual protocol::Role role_for(const Peer& peer) const = 0;
  // True when the server has a token: peers of Trust::address must AUTH before anything else, and a listener that
  // accepts remote peers may only be opened with one.
  virtual bool has_token() const = 0;

  // --- requests ----------------------------------------------------------------------------------------------------
  // Asynchronous: `request.payload` and `response` must stay valid until `done` runs; `done` runs on a worker or on
  // the caller, also for a request that was cancelled before it ran. Commands that need the engine wait in its queue.
  virtual void submit(Session& session, const protocol::Request& request, protocol::Response& response,
                      Done done) = 0;
  // submit plus a wait on the caller's thread.
  virtual void handle(Session& session, const protocol::Request& request, protocol::Response& response) = 0;
  // The in-process channel's way in: the same checks and handlers, every command run on the caller's thread (an
  // engine command under the engine's lock, without a queue hop). Refused with ERROR_CANCELLED once the server shuts
  // down or the session is closed.
  virtual void call_inline(Session& session, const protocol::Request& request, protocol::Response& response) = 0;

  // --- what a transport applies and where it writes ------------------------------------------------------------------
  virtual PortLimits limits() const = 0;
  // The debug-log sink: a line "<context>: <message>" and the error's status bit in `session`'s lines of `engine`
  // (the server's own scope when `engine` is not an engine number). For a transport's framing problems.
  virtual void note_error(Session& session, uint32_t engine, std::string_view context, const Error& error) = 0;
  // A line (and `bits`, 0 for none) in `session`'s own lines of `scope` (an engine, or limits().engines).
  virtual void note_line(Session& session, uint32_t scope, uint32_t bits, std::string_view line) = 0;
  // The session's newest own line of `scope` (USB stalls report it in the control reply).
  virtual std::string last_line(const Session& session, uint32_t scope) const = 0;
  // A line in the server's shared debug log, which every session reads (connection events every client should see).
  virtual void note_shared(std::string_view line) = 0;

  // The engine's model snapshot (null when none is loaded or `engine` does not exist), for a transport that shapes
  // its requests to the model (Frigate's endpoint: the picture's geometry, the result decoder's description).
  virtual std::shared_ptr<const LoadedModel> model(uint32_t engine) const = 0;

  // --- what a transport may know of a session -------------------------------------------------------------------------
  // "session 7 (unix uid 1000 gid 1000 pid 4242)", for the transport's log lines.
  virtual std::string session_name(const Session& session) const = 0;
  // False while a session that must AUTH has not (a transport may evict or time out such a link).
  virtual bool authenticated(const Session& session) const = 0;
};

}  // namespace aisrv::server
