// aisrv interpreter — the AI-engine command interpreter: engines by number, sessions, the command table, access
// rules and dispatch. It implements the port (aisrv/port.hpp), through which transports hand it decoded Requests of
// a Session and frame its Responses; it never knows which transport a request came from (the peer's Trust decides
// its role), nor which backend runs a model. Transports include port.hpp only; the daemon and tests use this header.
//
// Sessions: a transport opens one per client (open_session, with the Peer it learned from its medium) and closes it
// when the client leaves (close_session: the session's queued work is answered ERROR_CANCELLED without running, its
// running inference is cancelled, its flash transfer aborted, its state freed). What a session creates — tensors,
// outputs, timings, error bits, its own log lines — only it sees; models and engines are shared.
//
// Two ways in:
//   handle(session, req, resp)        synchronous; the caller's thread waits for the answer.
//   submit(session, req, resp, done)  asynchronous. Commands that need the engine (model loads, inference, acquire,
//                                     flash I/O) wait in that engine's queue, taken round robin across sessions and
//                                     run one at a time on the engine's strand; engines run concurrently. Everything
//                                     else (status, identity, the session's own tensors, introspection) is answered
//                                     at once on the caller's thread without the engine's lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aisrv/acquisition.hpp"
#include "aisrv/debug_log.hpp"
#include "aisrv/engine/backend.hpp"
#include "aisrv/engine_slot.hpp"
#include "aisrv/port.hpp"
#include "aisrv/sensors/frame_source.hpp"
#include "aisrv/sensors/gpio_lines.hpp"
#include "aisrv/sensors/i2c_bus.hpp"
#include "aisrv/protocol/protocol.hpp"
#include "aisrv/server_metrics.hpp"
#include "aisrv/session.hpp"

namespace spdlog {
class logger;
}
namespace aisrv::flash {
class ModelStore;
}

namespace aisrv::server {

// The version of this server library (libaisrv-server), e.g. "0.1.0".
std::string_view library_version();

class AuthThrottle;
class CommandTable;
class EngineQueue;
struct Handler;

struct SensorConfig {
  std::unique_ptr<sensors::FrameSource> source;
  std::chrono::milliseconds stream_interval{100};  // START_ACQUIRE_STREAM pace
  std::unique_ptr<sensors::I2cBus> i2c;            // the sensor's I2C bus for START_ACQUIRE_SET_I2C (may be null)
};

// Who may do what (docs/security.md). Commands that change what every session shares (SET_MODEL*, UNLOAD_MODEL,
// flash writes and erase, acquire streams, sensor registers, engine-wide cancel) need the admin role.
struct AccessOptions {
  // By the peer's Trust (aisrv/port.hpp). Trust::credentials (Unix sockets): without a group every peer that can
  // open the socket is admin; with one, admins are root, the daemon's own user and members of this group, the rest
  // are users. Trust::address (TCP) peers are users (their uid is unknown: a loopback listener must not make every
  // local user admin); with a token, such a session that sent it with AUTH is admin. Trust::physical (USB, SPI) and
  // Trust::process (in-process, the server's own sessions) peers are admin; Trust::detector peers (Frigate's
  // detector connections) are users.
  std::optional<uint32_t> admin_gid;
  // When set, a Trust::address session may only HELLO / GET_VERSION / GET_ID / AUTH until it sent this token; it is
  // then admin.
  std::string token;
};

struct ServerOptions {
  uint32_t max_payload = AISRV_MAX_PAYLOAD;    // largest request/response payload accepted
  std::vector<std::pair<uint32_t, uint32_t>> chains;  // {from, to}: outputs of `from` feed `to` after each inference
  std::shared_ptr<spdlog::logger> logger;      // the daemon's log (may be null)
  uint32_t extra_capabilities = 0;             // capability bits transports add (e.g. AISRV_CAP_CRC32)
  std::vector<std::pair<uint32_t, SensorConfig>> sensors;  // frame sources by engine number
  std::vector<std::pair<uint32_t, std::unique_ptr<sensors::GpioLines>>> gpio;  // output GPIO lines by engine number
  flash::ModelStore* store = nullptr;          // the model store behind the flash commands (may be null; not owned)
  AccessOptions access;
  SessionLimits session;                       // per-session memory cap and queue depth
};

class Server final : public Port {
 public:
  // Errc::invalid_argument for bad options: too many engines, chain to a missing engine, a chain cycle.
  static Result<std::unique_ptr<Server>> create(ServerOptions options,
                                                std::vector<std::unique_ptr<engine::InferenceBackend>> engines);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // --- sessions ----------------------------------------------------------------------------------------------------
  std::shared_ptr<Session> open_session(Peer peer) override;
  // The role a session of `peer` starts with, from its Trust (AccessOptions); transports use it to keep connection
  // slots for admins.
  protocol::Role role_for(const Peer& peer) const override;
  // Whether a session of `peer` must AUTH before anything but the open commands: Trust::address with a token set.
  bool must_auth(const Peer& peer) const;
  bool has_token() const override { return !options_.access.token.empty(); }
  // Idempotent. `why` ends up in the log lines of what was cancelled ("disconnected", "link reset").
  void close_session(Session& session, std::string_view why = "the client disconnected") override;
  size_t session_count() const;
  // GET_SERVER_STATS: uptime, sessions, every engine's counters and queue depth.
  protocol::ServerStats stats() const;
  // Monitoring instruments (latency histograms, answers by status, sessions and bytes by transport); the daemon's
  // metrics page renders them with stats().
  ServerMetrics& metrics() { return *metrics_; }
  const ServerMetrics& metrics() const { return *metrics_; }

  // --- requests ----------------------------------------------------------------------------------------------------
  void handle(Session& session, const protocol::Request& request, protocol::Response& response) override;
  // `request.payload` and `response` must stay valid until `done` runs; `done` runs on a worker or the caller, also
  // for a request that was cancelled before it ran.
  void submit(Session& session, const protocol::Request& request, protocol::Response& response, Done done) override;
  // admit() and the handler on the caller's thread, for every command (Port::call_inline).
  void call_inline(Session& session, const protocol::Request& request, protocol::Response& response) override;

  // A debug-log line "<context>: <message>" and the error's status bit for `session` (engine scope, or the server's
  // when `engine` is not an engine number).
  void note_error(Session& session, uint32_t engine, std::string_view context, const Error& error) override;
  void note_line(Session& session, uint32_t scope, uint32_t bits, std::string_view line) override;
  std::string last_line(const Session& session, uint32_t scope) const override;
  void note_shared(std::string_view line) override;
  std::string session_name(const Session& session) const override;
  bool authenticated(const Session& session) const override;
  std::shared_ptr<const LoadedModel> model(uint32_t engine) const override;
  PortLimits limits() const override {
    return {options_.max_payload, options_.session.max_queued, engine_count()};
  }

  // --- shutdown ----------------------------------------------------------------------------------------------------
  // From now on new requests and every queued one are answered ERROR_CANCELLED without running; running ones go on.
  void begin_shutdown();
  bool shutting_down() const { return shutting_down_.load(); }
  // Asks every running inference to stop at its next check.
  void cancel_running();
  // Waits until no engine runs or queues anything; true when that happened before the deadline.
  bool wait_idle(std::chrono::steady_clock::time_point deadline);
  // Liveness: queues a no-op job on every engine's queue and the server's own; `answered(true)` runs (on a worker)
  // once each of them had its turn, `answered(false)` as soon as one was refused (shutting down). A backend stuck
  // in an inference keeps its engine's probe from running, so `answered` does not run at all then.
  void probe_workers(std::function<void(bool)> answered);

  // --- engines and server facts --------------------------------------------------------------------------------------
  uint32_t engine_count() const { return static_cast<uint32_t>(engines_.size()); }
  // nullptr when out of range.
  EngineSlot* engine(uint32_t number);
  // The shared server log (the engine-number problems of everyone, start-up facts).
  DebugLog& log() { return *log_; }
  uint32_t max_payload() const { return options_.max_payload; }
  // The model store (null when none is configured).
  flash::ModelStore* store() const { return options_.store; }
  uint32_t capabilities() const;
  void add_capabilities(uint32_t bits) { options_.extra_capabilities |= bits; }
  const AccessOptions& access() const { return options_.access; }
  // Failed-AUTH backoff (AUTH's handler).
  AuthThrottle& auth_throttle() { return *auth_throttle_; }
  const SessionLimits& session_limits() const { return options_.session; }

  // Sensor frames, acquire streams and the engine chain after each inference a command starts: the handlers' way
  // to those (aisrv/acquisition.hpp).
  Acquisition& acquisition() { return *acquisition_; }
  // Raises `bits` with a log line in every open session's `engine` scope (e.g. a stream that stopped on a sensor
  // failure: everyone using the engine learns it once).
  void note_all_sessions(uint32_t engine, uint32_t bits, const std::string& line);

  // Flash transfers belong to the session that began them (docs/protocol.md 3.7). `begin` claims engine's transfer
  // for `session`; otherwise checks that the transfer (if any) is the session's. Errc::denied naming the owner.
  Status claim_flash_transfer(Session& session, uint32_t engine, bool begin);
  void release_flash_transfer(Session& session, uint32_t engine);

 private:
  Server(ServerOptions options, std::chrono::steady_clock::time_point epoch,
         std::vector<std::unique_ptr<EngineSlot>> engines);
  // The checks every command shares; nullptr when the request was answered (refused).
  const Handler* admit(Session& session, const protocol::Request& request, protocol::Response& response);
  void run(Session& session, const Handler& h, const protocol::Request& request, protocol::Response& response,
           uint64_t queue_ns);
  void refuse(Session& session, const protocol::Request& request, protocol::Response& response, const Error& e);
  EngineQueue& queue_for(const protocol::Request& request, const Handler& h);
  class Workers;
  class AcquisitionLink;  // the acquisition's view of this server (AcquisitionHost)

  ServerOptions options_;
  std::chrono::steady_clock::time_point epoch_;
  std::unique_ptr<LogClock> clock_;
  std::unique_ptr<DebugLog> log_;
  std::unique_ptr<ServerMetrics> metrics_;  // before engines_: the slots record into it
  std::vector<std::unique_ptr<EngineSlot>> engines_;
  std::unique_ptr<CommandTable> commands_;
  std::unique_ptr<AuthThrottle> auth_throttle_;
  std::unique_ptr<Workers> workers_;
  std::unique_ptr<AcquisitionLink> acquisition_link_;
  std::unique_ptr<Acquisition> acquisition_;  // its grabbers are joined before the queues they push to go
  std::atomic<bool> shutting_down_{false};
  std::atomic<uint64_t> next_grab_ticket_{0};  // tickets of requests held in a queue while their frame is grabbed

  mutable std::mutex sessions_mu_;  // sessions_, next_session_, flash_owner_
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions_;
  uint64_t next_session_ = 0;  // also the number of sessions opened since start
  std::vector<uint64_t> flash_owner_;  // per engine: the session whose flash transfer is open (0: none)
};

}  // namespace aisrv::server
