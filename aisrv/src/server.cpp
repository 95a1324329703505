// aisrv interpreter — server construction, the per-engine strands, and command dispatch.
#include "aisrv/server.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>

#include <set>

#include "command_table.hpp"

namespace aisrv::server {

namespace {
uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}
}  // namespace

// One strand per engine on a pool with one thread per engine: an engine's requests run in turn, in the order they
// were submitted; engines run concurrently.
class Server::Workers {
 public:
  explicit Workers(size_t engines) : pool_(engines ? engines : 1), pending_(new std::atomic<uint32_t>[engines]) {
    strands_.reserve(engines);
    for (size_t i = 0; i < engines; ++i) {
      strands_.push_back(boost::asio::make_strand(pool_));
      timers_.push_back(std::make_unique<boost::asio::steady_timer>(strands_.back()));
      pending_[i].store(0);
    }
  }
  ~Workers() { pool_.join(); }
  // Waits until nothing is queued, running or waiting on a timer any more.
  void join() { pool_.join(); }

  // Queues `fn` in the engine's turn.
  template <typename Fn>
  void post(uint32_t engine, Fn&& fn) {
    pending_[engine].fetch_add(1);
    boost::asio::post(strands_[engine], [this, engine, fn = std::forward<Fn>(fn)]() mutable {
      fn();
      pending_[engine].fetch_sub(1);
    });
  }
  // True when nothing is queued or running in the engine's turn.
  bool idle(uint32_t engine) const { return pending_[engine].load() == 0; }

  // Runs `fn` in the engine's turn after `delay` (one pending timer per engine: a new call replaces it).
  template <typename Fn>
  void post_after(uint32_t engine, std::chrono::milliseconds delay, Fn&& fn) {
    boost::asio::post(strands_[engine], [this, engine, delay, fn = std::forward<Fn>(fn)]() mutable {
      timers_[engine]->expires_after(delay);
      timers_[engine]->async_wait([this, engine, fn = std::move(fn)](const boost::system::error_code& ec) mutable {
        if (!ec) post(engine, std::move(fn));
      });
    });
  }
  void cancel_timer(uint32_t engine) {
    boost::asio::post(strands_[engine], [this, engine] { timers_[engine]->cancel(); });
  }

 private:
  boost::asio::thread_pool pool_;
  std::vector<boost::asio::strand<boost::asio::thread_pool::executor_type>> strands_;
  std::vector<std::unique_ptr<boost::asio::steady_timer>> timers_;
  std::unique_ptr<std::atomic<uint32_t>[]> pending_;
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

  const auto epoch = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<EngineSlot>> slots;
  for (size_t i = 0; i < backends.size(); ++i) {
    auto log = std::make_unique<DebugLog>(fmt::format("engine {}", i), options.logger, epoch, AISRV_DEBUG_LOG_LINES);
    slots.push_back(std::make_unique<EngineSlot>(static_cast<uint32_t>(i), std::move(backends[i]),
                                                 options.max_payload, std::move(log)));
    slots.back()->set_chain_target(next[i]);
  }
  return std::unique_ptr<Server>(new Server(std::move(options), epoch, std::move(slots)));
}

Server::Server(ServerOptions options, std::chrono::steady_clock::time_point epoch,
               std::vector<std::unique_ptr<EngineSlot>> engines)
    : options_(std::move(options)),
      epoch_(epoch),
      log_(std::make_unique<DebugLog>("server", options_.logger, epoch_, AISRV_DEBUG_LOG_LINES)),
      engines_(std::move(engines)),
      commands_(std::make_unique<CommandTable>()),
      workers_(std::make_unique<Workers>(engines_.size())),
      streams_(engines_.size()),
      stream_intervals_(engines_.size(), std::chrono::milliseconds(100)) {
  for (auto& [n, cfg] : options_.sensors) {
    stream_intervals_[n] = cfg.stream_interval;
    engines_[n]->attach_sensor(std::move(cfg.source));
  }
  options_.sensors.clear();
  add_info_commands(*commands_);
  add_model_commands(*commands_);
  add_tensor_commands(*commands_);
  add_acquire_commands(*commands_);
  add_gpio_commands(*commands_);
  add_flash_commands(*commands_);
}

Server::~Server() {
  for (auto& e : engines_) stop_stream(*e);
  // A stream round still running may schedule its next round through workers_: let everything finish (stopped
  // rounds end at once) while workers_ is still there, then destroy it.
  workers_->join();
  workers_.reset();
}

EngineSlot* Server::engine(uint32_t number) {
  return number < engines_.size() ? engines_[number].get() : nullptr;
}

uint32_t Server::capabilities() const {
  uint32_t caps = AISRV_CAP_TIMING_RECORD | AISRV_CAP_CANCEL | options_.extra_capabilities;
  if (!options_.chains.empty()) caps |= AISRV_CAP_CHAIN;
  for (const auto& e : engines_)
    if (e->has_sensor()) caps |= AISRV_CAP_SENSOR;
  if (options_.store) caps |= AISRV_CAP_FLASH;
  return caps;
}

void Server::handle(const protocol::Request& request, protocol::Response& response) {
  dispatch(request, response, 0);
}

void Server::submit(const protocol::Request& request, protocol::Response& response, Done done) {
  const auto received = std::chrono::steady_clock::now();
  const Handler* h = commands_->find(request.header.cmd);
  const uint32_t engine = request.header.engine;
  bool queued = h && h->scope == Scope::engine && h->run != Run::immediate && engine < engines_.size();
  // A quick command (no backend load/invoke) skips the queue hop when its engine has nothing queued: it cannot
  // overtake anything, and the engine's lock still serialises it with every other caller.
  if (queued && h->run == Run::quick && workers_->idle(engine)) queued = false;
  if (!queued) {
    dispatch(request, response, 0);
    done();
    return;
  }
  workers_->post(engine, [this, &request, &response, received, done = std::move(done)] {
    dispatch(request, response, ns_since(received));
    done();
  });
}

void Server::dispatch(const protocol::Request& request, protocol::Response& response, uint64_t queue_ns) {
  response.clear();
  const auto& hdr = request.header;
  EngineSlot* slot = engine(hdr.engine);
  const std::string_view name = protocol::command_name(hdr.cmd);

  auto fail = [&](const Error& e) {
    response.status = to_status(e.code);
    response.payload.clear();
    if (slot) {
      slot->note_error(name, e);
    } else {
      log_->add(fmt::format("{} (engine {}): {}", name, hdr.engine, e.message));
    }
  };

  const Handler* h = commands_->find(hdr.cmd);
  if (!h) {
    fail(make_error(Errc::bad_command, "unknown opcode {:#04x} (engine {}, tensor {}, {} payload bytes)", hdr.cmd,
                    hdr.engine, hdr.tensor, request.payload.size()));
    return;
  }
  if (h->scope == Scope::engine && !slot) {
    fail(make_error(Errc::bad_engine, "engine {} does not exist (the server has {} engine{})", hdr.engine,
                    engines_.size(), engines_.size() == 1 ? "" : "s"));
    return;
  }
  if (request.payload.size() > options_.max_payload) {
    fail(make_error(Errc::bad_length, "payload of {} bytes exceeds the limit of {} bytes", request.payload.size(),
                    options_.max_payload));
    return;
  }
  if (h->payload == Payload::none && !request.payload.empty()) {
    fail(make_error(Errc::bad_length, "takes no payload, {} bytes were sent", request.payload.size()));
    return;
  }
  CommandContext ctx{*this, h->scope == Scope::engine ? slot : nullptr, request, response, queue_ns};
  Status st = h->fn(ctx);
  if (!st) fail(st.error());
}

Status Server::start_inference(EngineSlot& slot, uint64_t queue_ns) {
  if (!slot.chain_target()) return slot.infer(queue_ns);
  std::vector<std::vector<uint8_t>> outputs;
  AISRV_TRY(slot.infer(queue_ns, &outputs));
  run_chain(slot.number(), std::move(outputs));
  return ok();
}

Status Server::acquire_single(EngineSlot& slot, uint64_t queue_ns) {
  if (slot.acquire_mode() == EngineSlot::AcquireMode::stream)
    return make_error(Errc::bad_command, "engine {} is streaming; stop the stream first", slot.number());
  slot.set_acquire_mode(EngineSlot::AcquireMode::single);
  Status st = slot.acquire_frame();
  slot.set_acquire_mode(EngineSlot::AcquireMode::idle);
  AISRV_TRY(std::move(st));
  return start_inference(slot, queue_ns);
}

Status Server::start_stream(EngineSlot& slot, std::chrono::milliseconds interval) {
  if (!slot.has_sensor())
    return make_error(Errc::not_supported, "engine {} has no sensor configured (start aisrvd with --sensor {}=PATH)",
                      slot.number(), slot.number());
  if (!slot.has_model()) return make_error(Errc::no_model, "engine {} has no model loaded", slot.number());
  if (slot.acquire_mode() == EngineSlot::AcquireMode::stream) return ok();
  slot.set_acquire_mode(EngineSlot::AcquireMode::stream);
  slot.log().add(fmt::format("acquire stream started, one frame every {} ms", interval.count()));
  const uint32_t n = slot.number();
  // Each round acquires and infers in the engine's turn, then schedules the next: client requests interleave.
  auto round = std::make_shared<std::function<void()>>();
  *round = [this, n, interval, weak = std::weak_ptr<std::function<void()>>(round)] {
    EngineSlot& s = *engines_[n];
    auto self = weak.lock();
    // A round of a stream that was stopped (and maybe restarted since) ends here.
    if (!self || streams_[n] != self || s.acquire_mode() != EngineSlot::AcquireMode::stream) return;
    Status st = s.acquire_frame();
    if (st) st = start_inference(s, 0);
    if (!st) {
      s.note_error("acquire stream", st.error());
      s.set_acquire_mode(EngineSlot::AcquireMode::idle);
      s.log().add("acquire stream stopped after an error");
      return;
    }
    workers_->post_after(n, interval, [self] { (*self)(); });
  };
  streams_[n] = round;  // keeps the round alive while streaming
  workers_->post(n, [round] { (*round)(); });
  return ok();
}

void Server::stop_stream(EngineSlot& slot) {
  if (slot.acquire_mode() != EngineSlot::AcquireMode::stream) return;
  slot.set_acquire_mode(EngineSlot::AcquireMode::idle);
  workers_->cancel_timer(slot.number());
  slot.log().add("acquire stream stopped");
}

void Server::run_chain(uint32_t from, std::vector<std::vector<uint8_t>> carry) {
  uint32_t at = from;
  while (auto to = engines_[at]->chain_target()) {
    EngineSlot& target = *engines_[*to];
    std::vector<std::vector<uint8_t>> next;
    const bool more = target.chain_target().has_value();
    Status st = target.infer_with(carry, more ? &next : nullptr);
    if (!st) {
      target.note_error(fmt::format("chain from engine {}", at), st.error());
      engines_[at]->log().add(fmt::format("chain to engine {} failed: {}", *to, st.error().message));
      return;
    }
    if (!more) return;
    carry = std::move(next);
    at = *to;
  }
}

}  // namespace aisrv::server
