// aisrv interpreter — server construction, sessions, the engine queues, access checks and command dispatch.
#include "aisrv/server.hpp"

#include <unistd.h>

#include <boost/asio/post.hpp>
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
// Engines with a sensor also get a grabber: a thread of their own where camera frames are waited for, outside the
// engine's turn, so a stalled camera holds no engine (its grabs finish before the queues go).
class Server::Workers {
 public:
  explicit Workers(size_t queues) : pool_(queues) {
    for (size_t i = 0; i < queues; ++i) queues_.push_back(std::make_unique<EngineQueue>(pool_));
    grabbers_.resize(queues);
  }
  ~Workers() { join(); }
  void join() {
    for (auto& g : grabbers_)
      if (g) g->join();
    pool_.join();
  }
  EngineQueue& queue(size_t i) { return *queues_[i]; }
  size_t size() const { return queues_.size(); }
  void add_grabber(size_t engine) { grabbers_[engine] = std::make_unique<boost::asio::thread_pool>(1); }
  boost::asio::thread_pool* grabber(size_t engine) { return grabbers_[engine].get(); }

 private:
  boost::asio::thread_pool pool_;  // declared first: the queues' strands and timers live on it
  std::vector<std::unique_ptr<EngineQueue>> queues_;
  std::vector<std::unique_ptr<boost::asio::thread_pool>> grabbers_;  // per engine with a sensor; destroyed first
};

// A running START_ACQUIRE_STREAM: engine activity an admin started. It runs in a session of its own (frames and
// outputs land there; the output GPIO lines follow them), so it outlives the client that started it and any admin
// stops it.
struct Server::Stream {
  std::shared_ptr<Session> session;  // the stream's own session ("stream of <starter>")
  uint64_t starter_id = 0;
  std::string starter;
  std::chrono::milliseconds interval{100};
  std::atomic<bool> stopped{false};
  std::shared_ptr<std::function<void()>> round;  // acquire + infer, then schedule the next round
  // Frames inferred, and the camera's dropped count at the start and at the last report (engine's turn only).
  uint64_t frames = 0, dropped_start = 0, dropped_reported = 0;
  std::chrono::steady_clock::time_point last_report{};
  bool starter_over_limit = false;  // the starter was told its memory cap keeps the outputs out (engine's turn only)
  // The frame the grabber waited for, handed to the engine's turn with the round's second half (one round at a time).
  std::shared_ptr<EngineSlot::Grab> grabbed;
  // Bad frames skipped (and at the last report), for the log lines.
  uint64_t bad = 0, bad_reported = 0;
  std::chrono::steady_clock::time_point last_bad_report{};
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
  server->streams_.resize(n);
  server->stream_intervals_.assign(n, std::chrono::milliseconds(100));
  for (auto& [e, cfg] : server->options_.sensors) {
    server->stream_intervals_[e] = cfg.stream_interval;
    server->engines_[e]->attach_sensor(std::move(cfg.source), std::move(cfg.i2c));
    server->workers_->add_grabber(e);
  }
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
  // while the queues still exist, then destroy them.
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
    if (e->has_sensor()) caps |= AISRV_CAP_SENSOR;
    if (e->has_i2c()) caps |= AISRV_CAP_I2C;
    if (e->has_gpio()) caps |= AISRV_CAP_GPIO;
  }
  if (options_.store) caps |= AISRV_CAP_FLASH;
  return caps;
}

// --- sessions --------------------------------------------------------------------------------------------------------

protocol::Role Server::role_for(const Peer& p) const {
  const auto& a = options_.access;
  if (p.transport == "unix") {
    if (!a.admin_gid) return protocol::Role::admin;
    if (p.uid && (*p.uid == 0 || *p.uid == ::geteuid())) return protocol::Role::admin;
    if (p.gid && *p.gid == *a.admin_gid) return protocol::Role::admin;
    if (std::find(p.groups.begin(), p.groups.end(), *a.admin_gid) != p.groups.end()) return protocol::Role::admin;
    return protocol::Role::user;
  }
  if (p.transport == "tcp") return protocol::Role::user;  // admin only after AUTH with the token
  if (p.transport == "frigate") return protocol::Role::user;  // Frigate's detector: read-only (docs/frigate.md)
  return protocol::Role::admin;  // usb, spi, local, internal: whoever holds the cable or the process
}

std::shared_ptr<Session> Server::open_session(Peer peer) {
  const bool needs_auth = peer.transport == "tcp" && !options_.access.token.empty();
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
  std::shared_ptr<EngineSlot::Grab> grab;
  if (EngineSlot* g = h->scope == Scope::engine ? engine(request.header.engine) : nullptr;
      g && request.header.cmd == static_cast<uint32_t>(protocol::Command::START_ACQUIRE_SINGLE) && g->has_sensor() &&
      workers_->grabber(g->number()) && g->has_model() &&
      g->acquire_mode() != EngineSlot::AcquireMode::stream && !s.has_injected_frame(g->number()))
    grab = std::make_shared<EngineSlot::Grab>();
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
      if (grab && slot) slot->stage_grab(grab);
      run(*self, *h, request, response, queue_ns);
      if (grab && slot) slot->stage_grab(nullptr);
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
  boost::asio::post(*workers_->grabber(n), [this, n, owner, ticket, grab] {
    *grab = engines_[n]->grab_frame();
    workers_->queue(n).release(owner, ticket);
  });
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
  for (auto& slot : engines_) stop_stream(*slot);
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

// --- inference, chains, streams ---------------------------------------------------------------------------------------

Status Server::start_inference(Session& s, EngineSlot& slot, uint64_t queue_ns) {
  if (!slot.chain_target()) return slot.infer(s, queue_ns);
  std::vector<std::vector<uint8_t>> outputs;
  AISRV_TRY(slot.infer(s, queue_ns, &outputs));
  run_chain(s, slot.number(), std::move(outputs));
  return ok();
}

Status Server::infer_call(Session& s, EngineSlot& slot, std::span<const protocol::InferTensor> inputs,
                          uint64_t queue_ns, std::vector<uint8_t>& answer) {
  if (!slot.chain_target()) return slot.infer_call(s, inputs, queue_ns, answer);
  std::vector<std::vector<uint8_t>> outputs;
  AISRV_TRY(slot.infer_call(s, inputs, queue_ns, answer, &outputs));
  run_chain(s, slot.number(), std::move(outputs));
  return ok();
}

Status Server::acquire_single(Session& s, EngineSlot& slot, uint64_t queue_ns,
                              const std::optional<AcquireWindow>& window, bool infer) {
  if (slot.acquire_mode() == EngineSlot::AcquireMode::stream)
    return make_error(Errc::bad_command, "engine {} is streaming; stop the stream first", slot.number());
  slot.set_acquire_mode(EngineSlot::AcquireMode::single);
  Status st = slot.acquire_frame(s, window);
  slot.set_acquire_mode(EngineSlot::AcquireMode::idle);
  AISRV_TRY(std::move(st));
  if (!infer) return ok();
  return start_inference(s, slot, queue_ns);
}

// A stream round's outputs and timing, copied from the stream's own session to the session that started it (while
// that one is open), so the starter reads them with GET_OUTPUT_TENSOR / GET_TIMINGS as an XMOS host does. Engine's
// turn only. A starter whose memory cap the outputs would pass is told once (ERROR_LIMIT and a log line).
void Server::hand_stream_outputs(Stream& stream, EngineSlot& slot) {
  std::shared_ptr<Session> starter;
  {
    std::lock_guard lock(sessions_mu_);
    if (auto it = sessions_.find(stream.starter_id); it != sessions_.end()) starter = it->second.lock();
  }
  const auto m = slot.model();
  if (!starter || starter->closed() || !m) return;
  std::vector<std::vector<uint8_t>> outputs(m->info.outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!stream.session->read_output(*m, static_cast<uint32_t>(i), [&](std::span<const uint8_t> b) {
          outputs[i].assign(b.begin(), b.end());
        }))
      return;
  auto timing = stream.session->timing_record(*m);
  if (!timing) return;
  if (Status room = starter->reserve_outputs(*m); !room) {
    if (!stream.starter_over_limit)
      starter->note(slot.number(), AISRV_STATUS_ERROR_LIMIT,
                    fmt::format("the acquire stream's outputs are not kept for this session: {}", room.error().message));
    stream.starter_over_limit = true;
    return;
  }
  stream.starter_over_limit = false;
  starter->store_outputs(*m, [&](size_t i) { return std::span<const uint8_t>(outputs[i]); }, std::move(*timing));
}

Status Server::start_stream(Session& s, EngineSlot& slot, std::chrono::milliseconds interval) {
  if (!slot.has_sensor())
    return make_error(Errc::not_supported, "engine {} has no sensor configured (start aisrvd with --sensor {}=PATH)",
                      slot.number(), slot.number());
  if (!slot.has_model()) return make_error(Errc::no_model, "engine {} has no model loaded", slot.number());
  const uint32_t n = slot.number();
  {
    std::lock_guard lock(sessions_mu_);
    if (auto& running = streams_[n]; running && !running->stopped) {
      if (running->starter_id == s.id()) return ok();
      return make_error(Errc::denied, "engine {} is streaming for {}; stop that stream first", n, running->starter);
    }
  }
  auto stream = std::make_shared<Stream>();
  stream->session = open_session(Peer::of("internal", "stream of " + s.name()));
  stream->starter_id = s.id();
  stream->starter = s.name();
  stream->interval = interval;
  stream->dropped_start = stream->dropped_reported = slot.frames_dropped();
  stream->last_report = std::chrono::steady_clock::now();
  std::string raced;  // another admin's stream started meanwhile
  {
    std::lock_guard lock(sessions_mu_);
    if (auto& running = streams_[n]; running && !running->stopped) raced = running->starter;
    else streams_[n] = stream;
  }
  if (!raced.empty()) {
    close_session(*stream->session, "stream not started");
    return make_error(Errc::denied, "engine {} is streaming for {}; stop that stream first", n, raced);
  }
  slot.set_acquire_mode(EngineSlot::AcquireMode::stream);
  slot.log().add(fmt::format("acquire stream started by {}, one frame every {} ms", s.name(), interval.count()));
  // Each round acquires and infers in the engine's turn (queued as the stream session's work, so other sessions
  // interleave round robin), then schedules the next one. The camera is read for its newest frame: frames that came
  // while the engine was busy are dropped and counted, never queued. The stream owns its round; rounds and timers
  // only hold the stream weakly, so stopping it (streams_[n] reset) ends the chain of rounds.
  std::weak_ptr<Stream> weak = stream;
  auto next_round = [weak](bool dropped) {
    if (dropped) return;
    auto st = weak.lock();
    if (st && !st->stopped && st->round) (*st->round)();
  };
  stream->round = std::make_shared<std::function<void()>>([this, n, weak, next_round] {
    auto stream = weak.lock();
    if (!stream || stream->stopped) return;
    EngineSlot& slot = *engines_[n];
    Session& session = *stream->session;
    if (session.closed()) return stop_stream(slot);
    if (!stream->grabbed) {
      // First half: wait for the camera's next frame on the engine's grabber, outside the engine's turn (a stalled
      // camera holds no other session's work), then come back in the engine's turn with it.
      boost::asio::post(*workers_->grabber(n), [this, n, weak, next_round] {
        auto grab = std::make_shared<EngineSlot::Grab>(engines_[n]->grab_frame());
        auto stream = weak.lock();
        if (!stream || stream->stopped) return;
        stream->grabbed = std::move(grab);  // read in the engine's turn after the queue hands the job over
        EngineQueue::Job job = next_round;
        (void)workers_->queue(n).push(stream->session->id(), std::move(job));
      });
      return;
    }
    const auto grab = std::move(stream->grabbed);
    if (grab->bad) {
      // A frame the camera spoiled (driver error flag, short, corrupt JPEG) is skipped and counted; the stream goes
      // on. The first one and then at most one line a second say so.
      ++stream->bad;
      const auto now = std::chrono::steady_clock::now();
      if (stream->bad_reported == 0 || now - stream->last_bad_report >= std::chrono::seconds(1)) {
        slot.log().add(fmt::format("acquire stream: skipped {} bad frame(s) ({} in all), the last: {}",
                                   stream->bad - stream->bad_reported, stream->bad, grab->status.error().message));
        stream->bad_reported = stream->bad;
        stream->last_bad_report = now;
      }
      workers_->queue(n).push_after(session.id(), stream->interval, next_round);
      return;
    }
    slot.stage_grab(grab);
    Status st = slot.acquire_frame(session);
    if (st) st = start_inference(session, slot, 0);
    if (st) hand_stream_outputs(*stream, slot);
    if (!st) {
      // Everyone using the engine learns it once: ERROR_SENSOR in their next GET_STATUS, and a log line.
      const std::string line = fmt::format("acquire stream stopped after an error: {}", st.error().message);
      slot.log().add(line);
      if (st.error().code == Errc::sensor_error)
        note_all_sessions(n, AISRV_STATUS_ERROR_SENSOR, "ERROR_SENSOR: the acquire stream stopped (the line before says why)");
      return stop_stream(slot);
    }
    ++stream->frames;
    const uint64_t dropped = slot.frames_dropped();
    const auto now = std::chrono::steady_clock::now();
    if (dropped != stream->dropped_reported && now - stream->last_report >= std::chrono::seconds(1)) {
      slot.log().add(fmt::format("acquire stream: the camera delivered {} frame(s) the engine did not take in the "
                                 "last {} ms ({} in all)",
                                 dropped - stream->dropped_reported,
                                 std::chrono::duration_cast<std::chrono::milliseconds>(now - stream->last_report).count(),
                                 dropped - stream->dropped_start));
      stream->dropped_reported = dropped;
      stream->last_report = now;
    }
    workers_->queue(n).push_after(session.id(), stream->interval, next_round);
  });
  EngineQueue::Job first = next_round;
  (void)workers_->queue(n).push(stream->session->id(), std::move(first));
  return ok();
}

void Server::note_all_sessions(uint32_t engine, uint32_t bits, const std::string& line) {
  std::vector<std::shared_ptr<Session>> all;
  {
    std::lock_guard lock(sessions_mu_);
    for (auto& [id, weak] : sessions_)
      if (auto s = weak.lock()) all.push_back(std::move(s));
  }
  for (auto& s : all) s->note(engine, bits, line);
}

Status Server::stream_frame(uint32_t engine, std::vector<uint8_t>& out) {
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard lock(sessions_mu_);
    stream = streams_[engine];
  }
  if (!stream || stream->stopped)
    return make_error(Errc::bad_command, "no frame on engine {}: this session acquired none and no stream runs",
                      engine);
  return stream->session->read_frame(engine, out);
}

void Server::stop_stream(EngineSlot& slot) {
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard lock(sessions_mu_);
    stream = std::move(streams_[slot.number()]);
  }
  if (!stream || stream->stopped.exchange(true)) return;
  slot.set_acquire_mode(EngineSlot::AcquireMode::idle);
  workers_->queue(slot.number()).cancel_timer();
  slot.log().add(fmt::format("acquire stream of {} stopped: {} frame(s) inferred, {} dropped by the camera, {} bad "
                             "frame(s) skipped",
                             stream->starter, stream->frames, slot.frames_dropped() - stream->dropped_start,
                             stream->bad));
  close_session(*stream->session, "the stream stopped");
}

void Server::run_chain(Session& s, uint32_t from, std::vector<std::vector<uint8_t>> carry) {
  uint32_t at = from;
  while (auto to = engines_[at]->chain_target()) {
    EngineSlot& target = *engines_[*to];
    std::vector<std::vector<uint8_t>> next;
    const bool more = target.chain_target().has_value();
    Status st = target.infer_with(s, carry, more ? &next : nullptr);
    if (!st) {
      note_error(s, *to, fmt::format("chain from engine {}", at), st.error());
      s.note(at, 0, fmt::format("chain to engine {} failed: {}", *to, st.error().message));
      return;
    }
    if (!more) return;
    carry = std::move(next);
    at = *to;
  }
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
