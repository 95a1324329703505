// aisrv interpreter — server construction, sessions, the engine queues, access checks and command dispatch.
#include "aisrv/server.hpp"

#include <unistd.h>

#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <set>

#include "aisrv/flash/store.hpp"
#include "auth_throttle.hpp"
#include "command_table.hpp"
#include "engine_queue.hpp"

namespace aisrv::server {

namespace {
uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}
}  // namespace

// The worker pool and one queue per engine plus one for server-scope work (the store's catalogue); one pool thread
// per queue, so engines run concurrently.
class Server::Workers {
 public:
  explicit Workers(size_t queues) : pool_(queues) {
    for (size_t i = 0; i < queues; ++i) queues_.push_back(std::make_unique<EngineQueue>(pool_));
  }
  ~Workers() { join(); }
  void join() { pool_.join(); }
  EngineQueue& queue(size_t i) { return *queues_[i]; }
  size_t size() const { return queues_.size(); }

 private:
  boost::asio::thread_pool pool_;  // declared first: the queues' strands and timers live on it
  std::vector<std::unique_ptr<EngineQueue>> queues_;
};

// The acquisition's view of this server: the session registry and the engines' queues.
class Server::AcquisitionLink final : public AcquisitionHost {
 public:
  explicit AcquisitionLink(Server& s) : s_(s) {}
  std::shared_ptr<Session> open_internal_session(std::string name) override {
    return s_.open_session(Peer::of(Trust::process, "internal", std::move(name)));
  }
  std::shared_ptr<Session> find_session(uint64_t id) override {
    std::lock_guard lock(s_.sessions_mu_);
    if (auto it = s_.sessions_.find(id); it != s_.sessions_.end()) return it->second.lock();
    return nullptr;
  }
  void close_session(Session& session, std::string_view why) override { s_.close_session(session, why); }
  void note_all_sessions(uint32_t engine, uint32_t bits, const std::string& line) override {
    s_.note_all_sessions(engine, bits, line);
  }
  void note_error(Session& session, uint32_t engine, std::string_view context, const Error& error) override {
    s_.note_error(session, engine, context, error);
  }
  EngineQueue& engine_queue(uint32_t engine) override { return s_.workers_->queue(engine); }

 private:
  Server& s_;
};

Result<std::unique_ptr<Server>> Server::create(ServerOptions options,
                                               std::vector<std::unique_ptr<engine::InferenceBackend>> backends) {
  if (backends.empty()) return make_error(Errc::invalid_argument, "a server needs at least one engine");
  if (backends.size() > AISRV_MAX_ENGINES)
    return make_error(Errc::invalid_argument, "{} engines configured; the limit is {}", backends.size(),
                      AISRV_MAX_ENGINES);
  if (options.max_payload == 0 || options.max_payload > AISRV_MAX_PAYLOAD)
    return make_error(Errc::invalid_argument, "max payload {} must be within 1..{}", options.max_payload,
                      AISRV_MAX_PAYLOAD);
  if (options.session.memory == 0) return make_error(Errc::invalid_argument, "the session memory cap must be positive");
  if (options.session.max_queued == 0)
    return make_error(Errc::invalid_argument, "the per-session queue depth must be at least 1");
  if (!options.access.token.empty() && options.access.token.size() > AISRV_MAX_TOKEN)
    return make_error(Errc::invalid_argument, "the token is {} bytes; the limit is {}", options.access.token.size(),
                      AISRV_MAX_TOKEN);
  for (size_t i = 0; i < backends.size(); ++i)
    if (!backends[i]) return make_error(Errc::invalid_argument, "engine {} has no backend", i);

  // Chains: both ends exist, one outgoing chain per engine, no cycles.
  std::vector<std::optional<uint32_t>> next(backends.size());
  for (auto [from, to] : options.chains) {
    if (from >= backends.size() || to >= backends.size())
      return make_error(Errc::invalid_argument, "chain {}:{} names an engine that does not exist (engines 0..{})",
                        from, to, backends.size() - 1);
    if (from == to) return make_error(Errc::invalid_argument, "chain {}:{} feeds an engine into itself", from, to);
    if (next[from]) return make_error(Errc::invalid_argument, "engine {} is chained twice", from);
    next[from] = to;
  }
  for (size_t start = 0; start < next.size(); ++start) {
    std::set<size_t> seen{start};
    for (auto at = next[start]; at; at = next[*at])
      if (!seen.insert(*at).second)
        return make_error(Errc::invalid_argument, "the chains form a cycle through engine {}", start);
  }

  for (const auto& [n, cfg] : options.sensors) {
    if (n >= backends.size())
      return make_error(Errc::invalid_argument, "sensor for engine {}, which does not exist (engines 0..{})", n,
                        backends.size() - 1);
    if (!cfg.source) return make_error(Errc::invalid_argument, "sensor for engine {} has no source", n);
    if (cfg.stream_interval.count() <= 0)
      return make_error(Errc::invalid_argument, "sensor for engine {}: the stream interval must be positive", n);
  }

  for (size_t i = 0; i < options.gpio.size(); ++i) {
    const auto& [n, lines] = options.gpio[i];
    if (n >= backends.size())
      return make_error(Errc::invalid_argument, "GPIO outputs for engine {}, which does not exist (engines 0..{})", n,
                        backends.size() - 1);
    if (!lines || lines->count() == 0)
      return make_error(Errc::invalid_argument, "GPIO outputs for engine {} have no lines", n);
    for (size_t j = 0; j < i; ++j)
      if (options.gpio[j].first == n)
        return make_error(Errc::invalid_argument, "GPIO outputs for engine {} are given twice", n);
  }

  const auto epoch = std::chrono::steady_clock::now();
  auto server = std::unique_ptr<Server>(new Server(std::move(options), epoch, {}));
  server->metrics_ = std::make_unique<ServerMetrics>(backends.size());
  for (size_t i = 0; i < backends.size(); ++i) {
    auto log = std::make_unique<DebugLog>(fmt::format("engine {}", i), server->options_.logger, *server->clock_,
                                          AISRV_DEBUG_LOG_LINES);
    server->engines_.push_back(std::make_unique<EngineSlot>(static_cast<uint32_t>(i), std::move(backends[i]),
                                                            server->options_.max_payload, std::move(log)));
    server->engines_.back()->set_chain_target(next[i]);
    server->engines_.back()->attach_metrics(&server->metrics_->engine(i));
  }
  const size_t n = server->engines_.size();
  server->workers_ = std::make_unique<Workers>(n + 1);
  server->flash_owner_.assign(n, 0);
  server->acquisition_link_ = std::make_unique<AcquisitionLink>(*server);
  server->acquisition_ = std::make_unique<Acquisition>(*server->acquisition_link_, server->engines_);
  for (auto& [e, cfg] : server->options_.sensors)
    server->acquisition_->attach_sensor(e, std::move(cfg.source), std::move(cfg.i2c), cfg.stream_interval);
  server->options_.sensors.clear();
  for (auto& [e, lines] : server->options_.gpio) server->engines_[e]->attach_gpio(std::move(lines));
  server->options_.gpio.clear();
  return server;
}

Server::Server(ServerOptions options, std::chrono::steady_clock::time_point epoch,
               std::vector<std::unique_ptr<EngineSlot>> engines)
    : options_(std::move(options)),
      epoch_(epoch),
      clock_(std::make_unique<LogClock>(epoch)),
      log_(std::make_unique<DebugLog>("server", options_.logger, *clock_, AISRV_DEBUG_LOG_LINES)),
      engines_(std::move(engines)),
      commands_(std::make_unique<CommandTable>()),
      auth_throttle_(std::make_unique<AuthThrottle>()) {
  add_info_commands(*commands_);
  add_model_commands(*commands_);
  add_tensor_commands(*commands_);
  add_acquire_commands(*commands_);
  add_gpio_commands(*commands_);
  add_flash_commands(*commands_);
}

Server::~Server() {
  begin_shutdown();
  // A job still running may queue follow-up work (a stream round): the queues refuse it now; let the pool run dry
  // while the queues still exist, then destroy them. The grabbers first: their frames are queued as jobs.
  acquisition_->join();
  workers_->join();
  workers_.reset();
}

EngineSlot* Server::engine(uint32_t number) {
  return number < engines_.size() ? engines_[number].get() : nullptr;
}

uint32_t Server::capabilities() const {
  uint32_t caps = AISRV_CAP_TIMING_RECORD | AISRV_CAP_CANCEL | AISRV_CAP_INFER | AISRV_CAP_SESSIONS | AISRV_CAP_STATS |
                  AISRV_CAP_MODEL_METADATA | options_.extra_capabilities;
  if (!options_.chains.empty()) caps |= AISRV_CAP_CHAIN;
  for (const auto& e : engines_) {
    if (acquisition_->has_sensor(e->number())) caps |= AISRV_CAP_SENSOR;
    if (acquisition_->has_i2c(e->number())) caps |= AISRV_CAP_I2C;
    if (e->has_gpio()) caps |= AISRV_CAP_GPIO;
  }
  if (options_.store) caps |= AISRV_CAP_FLASH;
  return caps;
}

// --- sessions --------------------------------------------------------------------------------------------------------

// Roles come from what the transport's medium proves about the peer (Peer::trust), never from its name.
protocol::Role Server::role_for(const Peer& p) const {
  const auto& a = options_.access;
  switch (p.trust) {
    case Trust::credentials:
      if (!a.admin_gid) return protocol::Role::admin;
      if (p.uid && (*p.uid == 0 || *p.uid == ::geteuid())) return protocol::Role::admin;
      if (p.gid && *p.gid == *a.admin_gid) return protocol::Role::admin;
      if (std::find(p.groups.begin(), p.groups.end(), *a.admin_gid) != p.groups.end()) return protocol::Role::admin;
      return protocol::Role::user;
    case Trust::address: return protocol::Role::user;   // admin only after AUTH with the token
    case Trust::detector: return protocol::Role::user;  // Frigate's detector: read-only (docs/frigate.md)
    case Trust::physical:                               // whoever holds the cable or the bus
    case Trust::process: return protocol::Role::admin;  // the process itself
  }
  return protocol::Role::user;
}

bool Server::must_auth(const Peer& p) const { return p.trust == Trust::address && has_token(); }

std::shared_ptr<Session> Server::open_session(Peer peer) {
  const bool needs_auth = must_auth(peer);
  const protocol::Role role = role_for(peer);
  TransportMetrics& tm = metrics_->transport(peer.transport);
  tm.sessions_opened.fetch_add(1, std::memory_order_relaxed);
  tm.sessions_open.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(sessions_mu_);
  auto s = std::make_shared<Session>(++next_session_, std::move(peer), role, needs_auth, options_.session,
                                     engine_count(), *clock_, options_.logger);
  sessions_.emplace(s->id(), s);
  if (options_.logger)
    options_.logger->debug("{} opened, role {}{}", s->name(), protocol::role_name(role),
                           needs_auth ? ", must AUTH" : "");
  return s;
}

protocol::ServerStats Server::stats() const {
  protocol::ServerStats s;
  s.uptime_ns = ns_since(epoch_);
  {
    std::lock_guard lock(sessions_mu_);
    s.sessions = static_cast<uint32_t>(sessions_.size());
    s.sessions_total = next_session_;
  }
  for (const auto& slot : engines_) {
    auto e = slot->stats(epoch_);
    e.queued = static_cast<uint32_t>(workers_->queue(slot->number()).depth());
    s.engines.push_back(std::move(e));
  }
  return s;
}

size_t Server::session_count() const {
  std::lock_guard lock(sessions_mu_);
  return sessions_.size();
}

void Server::close_session(Session& s, std::string_view why) {
  std::vector<uint32_t> transfers;
  {
    std::lock_guard lock(sessions_mu_);
    if (sessions_.erase(s.id()) == 0) return;
    for (uint32_t e = 0; e < flash_owner_.size(); ++e)
      if (flash_owner_[e] == s.id()) transfers.push_back(e);
  }
  metrics_->transport(s.peer().transport).sessions_open.fetch_sub(1, std::memory_order_relaxed);
  // State first: whatever still runs for the session finds it closed and keeps nothing.
  s.close();
  // Its queued work is answered (cancelled) without running; its running inference is asked to stop.
  for (size_t q = 0; q < workers_->size(); ++q)
    for (auto& job : workers_->queue(q).take(s.id())) job(true);
  for (auto& slot : engines_) slot->cancel(s.id());
  // Its unfinished flash transfers are dropped, in the engine's turn (never in the middle of a chunk).
  for (uint32_t e : transfers) {
    const uint64_t id = s.id();
    const std::string name = s.name(), reason(why);
    EngineQueue::Job abort = [this, e, id, name, reason](bool) {
      {
        std::lock_guard lock(sessions_mu_);
        if (flash_owner_[e] != id) return;
        flash_owner_[e] = 0;
      }
      if (options_.store && options_.store->update_progress(e)) {
        options_.store->abort_update(e);
        engines_[e]->log().add(fmt::format("flash transfer aborted: {} closed ({})", name, reason));
      }
    };
    if (!workers_->queue(e).push(0, std::move(abort))) abort(true);
  }
  if (options_.logger) options_.logger->debug("{} closed: {}", s.name(), why);
}

// --- dispatch --------------------------------------------------------------------------------------------------------

void Server::note_error(Session& session, uint32_t engine, std::string_view context, const Error& error) {
  if (engine < engines_.size())
    session.note(engine, to_status(error.code), fmt::format("{}: {}", context, error.message));
  else
    session.note(engine_count(), to_status(error.code), fmt::format("{} (engine {}): {}", context, engine,
                                                                    error.message));
}

void Server::note_line(Session& session, uint32_t scope, uint32_t bits, std::string_view line) {
  session.note(scope, bits, line);
}

std::string Server::last_line(const Session& session, uint32_t scope) const { return session.last_line(scope); }

void Server::note_shared(std::string_view line) { log_->add(std::string(line)); }

std::string Server::session_name(const Session& session) const { return session.name(); }

bool Server::authenticated(const Session& session) const { return session.authenticated(); }

std::shared_ptr<const LoadedModel> Server::model(uint32_t engine) const {
  return engine < engines_.size() ? engines_[engine]->model() : nullptr;
}

void Server::refuse(Session& session, const protocol::Request& request, protocol::Response& response,
                    const Error& e) {
  response.status = to_status(e.code);
  response.payload.clear();
  response.sent = false;
  const auto& hdr = request.header;
  // An unknown opcode for an existing engine is the engine's business; a bad engine number the server's.
  note_error(session, hdr.engine, protocol::command_name(hdr.cmd), e);
}

const Handler* Server::admit(Session& s, const protocol::Request& request, protocol::Response& response) {
  response.clear();
  const auto& hdr = request.header;
  const Handler* h = commands_->find(hdr.cmd);
  if (!h) {
    refuse(s, request, response,
           make_error(Errc::bad_command, "unknown opcode {:#04x} (engine {}, tensor {}, {} payload bytes)", hdr.cmd,
                      hdr.engine, hdr.tensor, request.payload.size()));
    return nullptr;
  }
  if (h->scope == Scope::engine && !engine(hdr.engine)) {
    refuse(s, request, response,
           make_error(Errc::bad_engine, "engine {} does not exist (the server has {} engine{})", hdr.engine,
                      engines_.size(), engines_.size() == 1 ? "" : "s"));
    return nullptr;
  }
  if (request.payload.size() > options_.max_payload) {
    refuse(s, request, response,
           make_error(Errc::bad_length, "payload of {} bytes exceeds the limit of {} bytes", request.payload.size(),
                      options_.max_payload));
    return nullptr;
  }
  if (h->payload == Payload::none && !request.payload.empty()) {
    refuse(s, request, response,
           make_error(Errc::bad_length, "takes no payload, {} bytes were sent", request.payload.size()));
    return nullptr;
  }
  if (!s.authenticated() && h->access != Access::open) {
    refuse(s, request, response,
           make_error(Errc::denied, "{} must first send AUTH with the server's token (this link needs one)",
                      s.name()));
    return nullptr;
  }
  if (h->access == Access::admin && !s.is_admin()) {
    refuse(s, request, response,
           make_error(Errc::denied,
                      "changes what every session shares and needs the admin role; {} has the role user (admins: "
                      "root, the daemon's user and the members of aisrvd --admin-group)",
                      s.name()));
    return nullptr;
  }
  return h;
}

void Server::run(Session& s, const Handler& h, const protocol::Request& request, protocol::Response& response,
                 uint64_t queue_ns) {
  CommandContext ctx{*this, s, h.scope == Scope::engine ? engine(request.header.engine) : nullptr, request, response,
                     queue_ns};
  Status st = h.fn(ctx);
  if (!st) refuse(s, request, response, st.error());
}

EngineQueue& Server::queue_for(const protocol::Request& request, const Handler& h) {
  return workers_->queue(h.scope == Scope::engine ? request.header.engine : engines_.size());
}

void Server::submit(Session& s, const protocol::Request& request, protocol::Response& response, Done done) {
  const auto received = std::chrono::steady_clock::now();
  TransportMetrics& tm = metrics_->transport(s.peer().transport);
  tm.request_bytes.fetch_add(request.payload.size(), std::memory_order_relaxed);
  // Counted before `done`: after it the transport may free the request and the response.
  auto answered = [this, &tm, &response] {
    metrics_->note_answer(response.status);
    tm.response_bytes.fetch_add(response.payload.size(), std::memory_order_relaxed);
  };
  const Handler* h = admit(s, request, response);
  if (!h) {
    answered();
    return done();
  }
  if (h->run == Run::immediate) {
    run(s, *h, request, response, 0);
    answered();
    return done();
  }
  if (shutting_down_.load() || s.closed()) {
    refuse(s, request, response,
           make_error(Errc::cancelled, "not run: {}",
                      s.closed() ? "the session is closed" : "the server is shutting down"));
    answered();
    return done();
  }
  if (!s.try_enqueue()) {
    refuse(s, request, response,
           make_error(Errc::limit, "{} request(s) of {} already wait for engines; the limit is {} (aisrvd "
                                   "--max-queued)",
                      s.queued(), s.name(), s.limits().max_queued));
    answered();
    return done();
  }
  auto self = s.shared_from_this();
  // START_ACQUIRE_SINGLE waits for its camera frame outside the engine's turn: the engine's grabber waits for it
  // while the request stays held in the queue (its session's later requests behind it, other sessions' work going
  // on); then it runs with the frame staged. Without a model, while streaming or with an injected frame nothing is
  // grabbed (the handler answers or takes the injected frame).
  std::shared_ptr<Acquisition::Grab> grab;
  if (EngineSlot* g = h->scope == Scope::engine ? engine(request.header.engine) : nullptr;
      g && request.header.cmd == static_cast<uint32_t>(protocol::Command::START_ACQUIRE_SINGLE))
    grab = acquisition_->grab_for(s, *g);
  // `done` moves into the job: nothing of the caller's may outlive the answer (a transport may be gone right after).
  EngineQueue::Job job = [this, self = std::move(self), h, &request, &response, received, answered, grab,
                          done = std::move(done)](bool dropped) {
    if (dropped) {
      refuse(*self, request, response,
             make_error(Errc::cancelled, "cancelled before it ran: {}",
                        self->closed() ? "its session closed" : "the server is shutting down"));
    } else {
      const uint64_t queue_ns = ns_since(received);
      EngineSlot* slot = h->scope == Scope::engine ? engine(request.header.engine) : nullptr;
      const uint64_t inferences = slot ? slot->request_inferences() : 0;
      if (grab && slot) acquisition_->stage(self->id(), slot->number(), grab);
      run(*self, *h, request, response, queue_ns);
      if (grab && slot) acquisition_->stage(self->id(), slot->number(), nullptr);
      if (slot) {
        // Only this job runs the slot's request inferences now (the engine's turn): a change is this request's.
        EngineMetrics& em = metrics_->engine(slot->number());
        em.queue_wait.observe_ns(queue_ns);
        if (slot->request_inferences() != inferences) {
          const uint64_t total = ns_since(received), compute = slot->last_request_compute_ns();
          em.transfer.observe_ns(total > queue_ns + compute ? total - queue_ns - compute : 0);
        }
      }
    }
    self->dequeued();
    answered();
    done();
  };
  if (!grab) {
    if (!queue_for(request, *h).push(s.id(), std::move(job))) job(true);
    return;
  }
  const uint32_t n = request.header.engine;
  const uint64_t owner = s.id(), ticket = next_grab_ticket_.fetch_add(1) + 1;
  if (!workers_->queue(n).push_held(owner, ticket, std::move(job))) return job(true);
  acquisition_->grab_async(n, grab, [this, n, owner, ticket] { workers_->queue(n).release(owner, ticket); });
}

void Server::call_inline(Session& s, const protocol::Request& request, protocol::Response& response) {
  const Handler* h = admit(s, request, response);
  if (!h) return;
  if (h->run == Run::queued && (shutting_down_.load(std::memory_order_relaxed) || s.closed()))
    return refuse(s, request, response,
                  make_error(Errc::cancelled, "not run: {}",
                             s.closed() ? "the session is closed" : "the server is shutting down"));
  run(s, *h, request, response, 0);
}

void Server::handle(Session& s, const protocol::Request& request, protocol::Response& response) {
  std::promise<void> answered;
  auto f = answered.get_future();
  submit(s, request, response, [&answered] { answered.set_value(); });
  f.wait();
}

// --- shutdown ----------------------------------------------------------------------------------------------------------

void Server::begin_shutdown() {
  if (shutting_down_.exchange(true)) return;
  acquisition_->stop_all();
  for (size_t q = 0; q < workers_->size(); ++q)
    for (auto& job : workers_->queue(q).close()) job(true);
}

void Server::cancel_running() {
  for (auto& slot : engines_) slot->cancel(0);
}

bool Server::wait_idle(std::chrono::steady_clock::time_point deadline) {
  bool idle = true;
  for (size_t q = 0; q < workers_->size(); ++q) idle = workers_->queue(q).wait_idle(deadline) && idle;
  return idle;
}

void Server::probe_workers(std::function<void(bool)> answered) {
  struct Round {
    std::atomic<size_t> left;
    std::atomic<bool> refused{false};
    std::function<void(bool)> answered;
  };
  auto round = std::make_shared<Round>();
  round->left = workers_->size();
  round->answered = std::move(answered);
  for (size_t q = 0; q < workers_->size(); ++q) {
    EngineQueue::Job job = [round](bool dropped) {
      if (dropped && !round->refused.exchange(true)) round->answered(false);
      if (round->left.fetch_sub(1) == 1 && !round->refused.load()) round->answered(true);
    };
    if (!workers_->queue(q).push(0, std::move(job))) {
      if (!round->refused.exchange(true)) round->answered(false);
      round->left.fetch_sub(1);
    }
  }
}

// --- every session at once -------------------------------------------------------------------------------------------

void Server::note_all_sessions(uint32_t engine, uint32_t bits, const std::string& line) {
  std::vector<std::shared_ptr<Session>> all;
  {
    std::lock_guard lock(sessions_mu_);
    for (auto& [id, weak] : sessions_)
      if (auto s = weak.lock()) all.push_back(std::move(s));
  }
  for (auto& s : all) s->note(engine, bits, line);
}

// --- flash transfers ---------------------------------------------------------------------------------------------------

Status Server::claim_flash_transfer(Session& s, uint32_t engine, bool begin) {
  std::lock_guard lock(sessions_mu_);
  uint64_t& owner = flash_owner_[engine];
  if (owner != 0 && owner != s.id()) {
    std::shared_ptr<Session> other;
    if (auto it = sessions_.find(owner); it != sessions_.end()) other = it->second.lock();
    const bool open = options_.store && options_.store->update_progress(engine).has_value();
    if (!other || !open) {
      owner = 0;  // that transfer ended (error, or its session is gone)
    } else if (begin) {
      return make_error(Errc::denied,
                        "engine {}'s flash transfer is in progress by {}; a second transfer is refused until that "
                        "session commits, aborts or disconnects",
                        engine, other->name());
    } else {
      return make_error(Errc::denied,
                        "engine {}'s flash transfer belongs to {}; another session may not add to it, commit or "
                        "abort it",
                        engine, other->name());
    }
  }
  if (begin) owner = s.id();
  return ok();
}

void Server::release_flash_transfer(Session& s, uint32_t engine) {
  std::lock_guard lock(sessions_mu_);
  if (flash_owner_[engine] == s.id()) flash_owner_[engine] = 0;
}

// --- helpers for handlers ------------------------------------------------------------------------------------------------

Result<std::shared_ptr<const LoadedModel>> model_of(CommandContext& c) {
  auto m = c.slot->model();
  if (!m) return make_error(Errc::no_model, "engine {} has no model loaded", c.slot->number());
  return m;
}

}  // namespace aisrv::server
