// aisrv phy frigate — the endpoint: a ZeroMQ ROUTER socket served on its own thread. Each Frigate connection
// (routing id) gets a server session on its first message; detection requests become INFER requests in that session
// (server.handle: the engine's queue, shared with every other client), their outputs go through the result decoder
// into Frigate's rows. Model requests and transfers go to the flash model store and load from it through an
// internal admin session of the endpoint (GET_FLASH_CATALOGUE, SET_FLASH_BEGIN/CHUNK/COMMIT,
// SET_MODEL_SECONDARY_FLASH): like every transport, the endpoint reaches the interpreter through the port only. A request that cannot be served is answered (zeros, or model_* false): a REQ client that
// gets no answer stalls until its timeout.
#include "aisrv/phy/frigate_endpoint.hpp"

#include <spdlog/spdlog.h>
#include <zmq.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <mutex>
#include <unordered_map>

#include "aisrv/image/tensor_image.hpp"
#include "aisrv/port.hpp"
#include "aisrv/protocol/flash_payloads.hpp"
#include "aisrv/protocol/protocol.hpp"
#include "aisrv/results/results.hpp"
#include "frigate_messages.hpp"
#include "frigate_rows.hpp"

namespace aisrv::phy::frigate {

namespace {

using Clock = std::chrono::steady_clock;

// Parts kept of one message: routing id, delimiter, header, data. Further parts are received and dropped.
constexpr size_t kMaxParts = 4;
// Messages one connection may have queued before the endpoint reads them (a REQ client has one at a time).
constexpr int kReceiveHighWater = 4;
constexpr auto kPollInterval = std::chrono::milliseconds(100);
// A problem a peer can cause repeatedly is logged at most once per this interval (with how many were not).
constexpr auto kLogInterval = std::chrono::seconds(10);

std::string zmq_reason() { return zmq_strerror(zmq_errno()); }

// One received multipart message (owns its parts).
class Received {
 public:
  Received() = default;
  Received(const Received&) = delete;
  Received& operator=(const Received&) = delete;
  ~Received() {
    for (auto& p : parts_) zmq_msg_close(&p);
  }
  // Receives a whole message; false when nothing could be read. Parts beyond kMaxParts are counted and freed.
  bool receive(void* socket) {
    for (;;) {
      zmq_msg_t part;
      zmq_msg_init(&part);
      if (zmq_msg_recv(&part, socket, parts_.empty() ? ZMQ_DONTWAIT : 0) < 0) {
        zmq_msg_close(&part);
        return !parts_.empty();
      }
      ++count_;
      const bool more = zmq_msg_more(&part);
      if (parts_.size() < kMaxParts) {
        parts_.push_back(part);
      } else {
        zmq_msg_close(&part);
      }
      if (!more) return true;
    }
  }
  size_t count() const { return count_; }
  std::span<const uint8_t> part(size_t i) {
    return {static_cast<const uint8_t*>(zmq_msg_data(&parts_[i])), zmq_msg_size(&parts_[i])};
  }
  size_t kept() const { return parts_.size(); }
  std::string peer_address() {
    const char* a = parts_.empty() ? nullptr : zmq_msg_gets(&parts_[0], "Peer-Address");
    return a ? a : "";
  }

 private:
  std::vector<zmq_msg_t> parts_;
  size_t count_ = 0;
};

// Rate-limited log lines, by key.
class Throttle {
 public:
  // Calls `log(suppressed)` when the key was not logged within kLogInterval.
  template <typename F>
  void operator()(const std::string& key, F&& log) {
    auto& e = entries_[key];
    const auto now = Clock::now();
    if (e.logged && now - e.last < kLogInterval) {
      ++e.suppressed;
      return;
    }
    log(e.suppressed);
    e = Entry{true, now, 0};
    if (entries_.size() > 256) entries_.clear();  // bounded whatever keys callers use
  }

 private:
  struct Entry {
    bool logged = false;
    Clock::time_point last;
    uint64_t suppressed = 0;
  };
  std::unordered_map<std::string, Entry> entries_;
};

// The name a model of Frigate's is stored under: the store keeps 32 bytes, Frigate's file names can be longer; those
// become their first 15 bytes, '~' and the 64-bit FNV-1a hash of the whole name in hex (docs/frigate.md).
std::string store_name(const std::string& name) {
  constexpr size_t kStoreName = 32;
  if (name.size() <= kStoreName) return name;
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{}~{:016x}", name.substr(0, 15), h);
}

std::string suffix(uint64_t suppressed) {
  return suppressed ? fmt::format(" ({} more like it not logged)", suppressed) : std::string();
}

}  // namespace

class FrigateEndpoint::Impl {
 public:
  Impl(server::Port& server, EndpointConfig config, std::shared_ptr<spdlog::logger> logger)
      : server_(server), config_(std::move(config)), logger_(logger ? std::move(logger) : spdlog::default_logger()) {}

  ~Impl() {
    stop();
    if (socket_) zmq_close(socket_);
    if (context_) zmq_ctx_term(context_);
  }

  Status bind() {
    context_ = zmq_ctx_new();
    if (!context_) return make_error(Errc::io_error, "--frigate {}: ZeroMQ: {}", config_.endpoint, zmq_reason());
    zmq_ctx_set(context_, ZMQ_IO_THREADS, 1);
    socket_ = zmq_socket(context_, ZMQ_ROUTER);
    if (!socket_) return make_error(Errc::io_error, "--frigate {}: ZeroMQ: {}", config_.endpoint, zmq_reason());
    const int64_t max_size = static_cast<int64_t>(config_.max_message);
    const int hwm = kReceiveHighWater, zero = 0, send_hwm = 16;
    if (zmq_setsockopt(socket_, ZMQ_MAXMSGSIZE, &max_size, sizeof max_size) != 0 ||
        zmq_setsockopt(socket_, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
        zmq_setsockopt(socket_, ZMQ_SNDHWM, &send_hwm, sizeof send_hwm) != 0 ||
        zmq_setsockopt(socket_, ZMQ_LINGER, &zero, sizeof zero) != 0)
      return make_error(Errc::io_error, "--frigate {}: ZeroMQ options: {}", config_.endpoint, zmq_reason());
    if (zmq_bind(socket_, config_.endpoint.c_str()) != 0)
      return make_error(Errc::io_error, "--frigate {}: cannot bind: {}", config_.endpoint, zmq_reason());
    admin_ = server_.open_session(server::Peer::of(server::Trust::process, "internal", "--frigate " + config_.endpoint));
    return {};
  }

  void start() {
    if (thread_.joinable()) return;
    thread_ = std::thread([this] { run(); });
  }

  void stop() {
    stopping_.store(true);
    if (thread_.joinable()) thread_.join();
    for (auto& [id, p] : peers_) server_.close_session(*p.session, "the Frigate endpoint stopped");
    peers_.clear();
    if (admin_) server_.close_session(*admin_, "the Frigate endpoint stopped");
    admin_.reset();
    std::lock_guard lock(stats_mu_);
    stats_.peers_open = 0;
  }

  EndpointStats stats() const {
    std::lock_guard lock(stats_mu_);
    return stats_;
  }
  const EndpointConfig& config() const { return config_; }
  std::string describe() const { return fmt::format("{} for engine {}", config_.endpoint, config_.engine); }

 private:
  struct PeerState {
    std::shared_ptr<server::Session> session;
    Clock::time_point last;
  };
  enum class Zeros { no_model, bad_message, mismatch, model_type, inference };

  template <typename F>
  void count(F&& change) {
    std::lock_guard lock(stats_mu_);
    change(stats_);
  }

  void run() {
    auto next_sweep = Clock::now() + std::chrono::seconds(1);
    while (!stopping_.load()) {
      zmq_pollitem_t item{socket_, 0, ZMQ_POLLIN, 0};
      const int ready = zmq_poll(&item, 1, static_cast<long>(kPollInterval.count()));
      if (Clock::now() >= next_sweep) {
        sweep_idle();
        next_sweep = Clock::now() + std::chrono::seconds(1);
      }
      if (ready <= 0 || !(item.revents & ZMQ_POLLIN)) continue;
      // A few messages per wake-up; the stop flag is checked between them.
      for (int i = 0; i < 16 && !stopping_.load(); ++i) {
        Received m;
        if (!m.receive(socket_)) break;
        serve(m);
      }
    }
  }

  void sweep_idle() {
    const auto now = Clock::now();
    for (auto it = peers_.begin(); it != peers_.end();) {
      if (now - it->second.last >= config_.idle) {
        drop(it->second, "idle");
        it = peers_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void drop(PeerState& p, const char* why) {
    logger_->debug("frigate {}: {} closed ({})", config_.endpoint, server_.session_name(*p.session), why);
    server_.close_session(*p.session, why);
    count([&](EndpointStats& s) {
      ++s.peers_dropped;
      --s.peers_open;
    });
  }

  server::Session& session_for(const std::string& id, Received& m) {
    auto it = peers_.find(id);
    if (it != peers_.end()) {
      it->second.last = Clock::now();
      return *it->second.session;
    }
    if (peers_.size() >= config_.max_peers) {  // the least recently used goes (REQ sockets Frigate closed never say)
      auto lru = std::min_element(peers_.begin(), peers_.end(),
                                  [](const auto& a, const auto& b) { return a.second.last < b.second.last; });
      drop(lru->second, "the Frigate endpoint's peer limit was reached and it was the least recently used");
      peers_.erase(lru);
    }
    const std::string from = m.peer_address();
    server::Peer peer =
        server::Peer::of(server::Trust::detector, "frigate", from.empty() ? config_.endpoint : config_.endpoint + " from " + from);
    auto session = server_.open_session(std::move(peer));
    auto& p = peers_[id];
    p.session = std::move(session);
    p.last = Clock::now();
    count([](EndpointStats& s) {
      ++s.peers_open;
      ++s.peers_opened;
    });
    return *p.session;
  }

  void serve(Received& m) {
    // ROUTER: [routing id, (empty delimiter from REQ), parts...]
    if (m.kept() < 2) return;  // nothing to answer to
    const auto id_part = m.part(0);
    const std::string id(reinterpret_cast<const char*>(id_part.data()), id_part.size());
    const bool delimited = m.part(1).empty();
    const size_t first = delimited ? 2 : 1;
    const size_t content = m.count() - first;
    server::Session& session = session_for(id, m);
    count([](EndpointStats& s) { ++s.requests; });
    std::vector<std::span<const uint8_t>> parts;
    for (size_t i = first; i < m.kept(); ++i) parts.push_back(m.part(i));
    Reply reply;
    if (content > 2) {
      throttle_("parts", [&](uint64_t n) {
        logger_->warn("frigate {}: a message of {} parts (1 or 2 expected): answered zeros{}", config_.endpoint,
                      content, suffix(n));
      });
      zeros(reply, Zeros::bad_message);
    } else {
      answer(session, parse_message(parts), reply);
    }
    send(id_part, delimited, reply);
  }

  // The reply: text (JSON) or rows.
  struct Reply {
    std::string json;
    Rows rows{};
    bool is_rows = true;
  };

  void zeros(Reply& reply, Zeros why) {
    reply.rows.fill(0.0f);
    reply.is_rows = true;
    count([&](EndpointStats& s) {
      switch (why) {
        case Zeros::no_model: ++s.zeros_no_model; break;
        case Zeros::bad_message: ++s.zeros_bad_message; break;
        case Zeros::mismatch: ++s.zeros_mismatch; break;
        case Zeros::model_type: ++s.zeros_model_type; break;
        case Zeros::inference: ++s.zeros_inference; break;
      }
    });
  }

  void answer(server::Session& session, frigate::Message parsed, Reply& reply) {
    if (auto* r = std::get_if<ModelRequest>(&parsed)) {
      model_request(*r, reply);
    } else if (auto* d = std::get_if<ModelData>(&parsed)) {
      model_data(*d, reply);
    } else if (auto* q = std::get_if<DetectRequest>(&parsed)) {
      count([](EndpointStats& s) { ++s.detect_requests; });
      detect(session, *q, reply);
    } else {
      const auto& bad = std::get<BadMessage>(parsed);
      if (bad.mismatch) count([](EndpointStats& s) { ++s.detect_requests; });
      throttle_(bad.mismatch ? "mismatch" : "bad", [&](uint64_t n) {
        logger_->warn("frigate {}: {}{}: answered zeros{}", config_.endpoint,
                      bad.mismatch ? "a detection request whose " : "a request that cannot be read: ", bad.why,
                      suffix(n));
      });
      zeros(reply, bad.mismatch ? Zeros::mismatch : Zeros::bad_message);
    }
  }

  void send(std::span<const uint8_t> id, bool delimited, const Reply& reply) {
    // Never blocks: a peer that went away (unknown routing id) or does not read (high-water mark) loses its reply.
    zmq_send(socket_, id.data(), id.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    if (delimited) zmq_send(socket_, nullptr, 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    if (reply.is_rows)
      zmq_send(socket_, reply.rows.data(), sizeof(float) * reply.rows.size(), ZMQ_DONTWAIT);
    else
      zmq_send(socket_, reply.json.data(), reply.json.size(), ZMQ_DONTWAIT);
  }

  // --- model management ------------------------------------------------------------------------------------------

  // The engine's model snapshot (the engine exists: bind checked it).
  std::shared_ptr<const server::LoadedModel> model() const { return server_.model(config_.engine); }

  // One request in the endpoint's admin session; an error carries the session's reason.
  Status admin_call(protocol::Command cmd, std::span<const uint8_t> payload, protocol::Response& resp) {
    protocol::Request req{protocol::Header{static_cast<uint32_t>(cmd), config_.engine, 0}, payload};
    server_.handle(*admin_, req, resp);
    if (resp.status == AISRV_STATUS_OKAY) return ok();
    const uint32_t engines = server_.limits().engines;
    return Error{from_status(resp.status), fmt::format("{}: {}", protocol::status_names(resp.status),
                                                       server_.last_line(*admin_, config_.engine < engines
                                                                                      ? config_.engine
                                                                                      : engines))};
  }

  // What the model store holds for the engine: nothing when aisrvd has no store (--flash PATH).
  struct Stored {
    bool store = false;
    std::optional<std::string> name;  // the active model's name
  };
  Stored stored() {
    protocol::Response resp;
    Status st = admin_call(protocol::Command::GET_FLASH_CATALOGUE, {}, resp);
    if (!st) {
      if (st.error().code != Errc::not_supported)
        logger_->warn("frigate {}: the model store's catalogue: {}", config_.endpoint, st.error().message);
      return {};
    }
    auto catalogue = protocol::decode_flash_catalogue(resp.payload);
    if (!catalogue) return {true, std::nullopt};
    for (const auto& e : catalogue->entries)
      if (e.client == config_.engine && e.active) return {true, e.active->name};
    return {true, std::nullopt};
  }

  // Writes a model file into the engine's store slot, as `aisrv flash write` does (a transfer of the admin session).
  Status write_to_store(const std::string& name, std::span<const uint8_t> file) {
    protocol::Response resp;
    std::vector<uint8_t> payload;
    protocol::FlashBegin begin;
    begin.size = file.size();
    begin.name = name;
    protocol::encode(begin, payload);
    AISRV_TRY(admin_call(protocol::Command::SET_FLASH_BEGIN, payload, resp));
    const uint32_t max_payload = server_.limits().max_payload;  // a chunk's payload: u64 offset, then the bytes
    if (max_payload <= 8) return make_error(Errc::limit, "the payload limit of {} bytes leaves no room for a chunk", max_payload);
    const size_t chunk = std::min<size_t>(max_payload - 8, size_t{1} << 20);
    for (size_t at = 0; at < file.size(); at += chunk) {
      payload.clear();
      protocol::encode_flash_chunk(at, file.subspan(at, std::min(chunk, file.size() - at)), payload);
      if (Status st = admin_call(protocol::Command::SET_FLASH_CHUNK, payload, resp); !st) {
        (void)admin_call(protocol::Command::SET_FLASH_ABORT, {}, resp);
        return st;
      }
    }
    return admin_call(protocol::Command::SET_FLASH_COMMIT, {}, resp);
  }

  // The engine's model is the one this endpoint loaded under `name`.
  bool ours(const std::shared_ptr<const server::LoadedModel>& m, const std::string& name) const {
    return m && m->generation == loaded_generation_ && loaded_name_ == name;
  }

  // Loads the engine's stored model as SET_MODEL_SECONDARY_FLASH does (the endpoint's admin session).
  bool load_from_store(const std::string& name) {
    protocol::Request req{
        protocol::Header{static_cast<uint32_t>(protocol::Command::SET_MODEL_SECONDARY_FLASH), config_.engine, 0}, {}};
    protocol::Response resp;
    server_.handle(*admin_, req, resp);
    if (resp.status != AISRV_STATUS_OKAY) {
      logger_->error("frigate {}: loading '{}' from the model store on engine {} failed ({}): {}", config_.endpoint,
                     name, config_.engine, protocol::status_names(resp.status),
                     server_.last_line(*admin_, config_.engine));
      return false;
    }
    auto m = model();
    loaded_generation_ = m ? m->generation : 0;
    loaded_name_ = name;
    count([](EndpointStats& s) { ++s.models_loaded; });
    logger_->info("frigate {}: engine {} loaded '{}' from the model store", config_.endpoint, config_.engine, name);
    return m != nullptr;
  }

  // Frigate asked for `name` but the engine serves a model someone else loaded: Frigate gets that one (logged once
  // per model and name).
  void note_foreign(const std::shared_ptr<const server::LoadedModel>& m, const std::string& name) {
    const std::string key = fmt::format("{}/{}", m->generation, name);
    if (key == foreign_noted_) return;
    foreign_noted_ = key;
    logger_->warn("frigate {}: Frigate asks for model '{}'; engine {} keeps serving the model loaded by an admin "
                  "({}, {} bytes, from {}), and Frigate's detections use it. Unload it (aisrv unload --engine {}) to "
                  "let the endpoint load '{}'",
                  config_.endpoint, name, config_.engine, m->info.format, m->bytes, m->source, config_.engine, name);
  }


  void model_request(const ModelRequest& r, Reply& reply) {
    count([](EndpointStats& s) { ++s.model_requests; });
    reply.is_rows = false;
    auto m = model();
    if (ours(m, r.name)) {
      reply.json = model_request_reply(true, true);
      return;
    }
    if (m && m->generation != loaded_generation_) {  // loaded by someone else: serve it
      note_foreign(m, r.name);
      reply.json = model_request_reply(true, true);
      return;
    }
    const Stored store = stored();
    if (!store.store) {
      throttle_("nostore", [&](uint64_t n) {
        logger_->warn("frigate {}: Frigate asks for model '{}' but aisrvd has no model store (--flash PATH), and "
                      "engine {} has no model: load one (aisrv load MODEL --engine {}) or start aisrvd with --flash{}",
                      config_.endpoint, r.name, config_.engine, config_.engine, suffix(n));
      });
      reply.json = model_request_reply(false, m != nullptr);
      return;
    }
    if (store.name == store_name(r.name)) {
      const bool loaded = load_from_store(r.name);
      reply.json = model_request_reply(true, loaded);
      return;
    }
    logger_->info("frigate {}: model '{}' is not in the model store for engine {}", config_.endpoint, r.name,
                  config_.engine);
    reply.json = model_request_reply(false, false);
  }

  void model_data(const ModelData& d, Reply& reply) {
    count([](EndpointStats& s) { ++s.model_data; });
    reply.is_rows = false;
    auto m = model();
    auto refuse = [&](const std::string& why) {
      throttle_("refused", [&](uint64_t n) {
        logger_->warn("frigate {}: refused the model file '{}' ({} bytes) from Frigate: {}{}", config_.endpoint, d.name,
                      d.file.size(), why, suffix(n));
      });
      reply.json = model_data_reply(false, ours(m, d.name) || (m && m->generation != loaded_generation_));
    };
    if (!config_.accept_models)
      return refuse(fmt::format("the endpoint does not accept models. Put it into the store (aisrv flash write "
                                "{} --name {} --engine {}) or let Frigate send it (--frigate {}={},accept-models)",
                                d.name, store_name(d.name), config_.engine, config_.endpoint, config_.engine));
    if (!stored().store) return refuse("aisrvd has no model store (--flash PATH)");
    if (m && m->generation != loaded_generation_)
      return refuse(fmt::format("engine {} serves a model an admin loaded ({}); it is not replaced", config_.engine,
                                m->source));
    if (Status written = write_to_store(store_name(d.name), d.file); !written)
      return refuse(fmt::format("the model store: {}", written.error().message));
    count([](EndpointStats& s) { ++s.models_saved; });
    logger_->info("frigate {}: model '{}' ({} bytes) written into the model store for engine {} as '{}'",
                  config_.endpoint, d.name, d.file.size(), config_.engine, store_name(d.name));
    reply.json = model_data_reply(true, load_from_store(d.name));
  }

  // --- detection ---------------------------------------------------------------------------------------------------

  struct Prepared {  // what one model needs, built once per model generation
    uint64_t generation = 0;
    results::ModelDescription description;
    image::InputGeometry geometry;
    std::vector<std::vector<uint8_t>> zero_inputs;  // inputs 1.. (zeros)
    bool hailo_nms = false;
    // real = (pixel - mean) / std: the endpoint's options, else what the model's metadata says its exporter fed
    // (Ultralytics: 0 and 255), else none (image_to_tensor's rules: uint8 as is, int8 pixel - 128, float pixel / 255).
    std::vector<float> mean, std;
    // For an NHWC input that is not fed raw (float, or mean/std): the input bytes of each pixel value 0..255 in each
    // channel, element after element (`element` bytes each), made by image_to_tensor itself (see value_table).
    std::vector<uint8_t> table;
    size_t element = 0;
  };

  // image_to_tensor's bytes for every pixel value, by channel: a picture at the input's size (no resampling) whose
  // pixel k holds value k % 256 in every channel, converted once per model. A detection's pixels are then looked up
  // (a 640x640 picture: a table lookup per byte instead of a float conversion).
  static Result<void> value_table(const protocol::TensorInfo& in0, const image::InputGeometry& g, Prepared& p) {
    const size_t plane = static_cast<size_t>(g.width) * g.height;
    if (g.layout != image::Layout::nhwc || g.channels != 3 || plane < 256) return {};
    image::Image ramp{g.width, g.height, 3, std::vector<uint8_t>(plane * 3)};
    for (size_t k = 0; k < plane; ++k)
      for (size_t c = 0; c < 3; ++c) ramp.pixels[k * 3 + c] = static_cast<uint8_t>(k % 256);
    image::Preprocess pre;
    pre.mean = p.mean;
    pre.std = p.std;
    auto bytes = image::image_to_tensor(ramp, in0, pre);
    if (!bytes) return bytes.error();
    p.element = protocol::dtype_size(in0.dtype);
    p.table.assign(bytes->begin(), bytes->begin() + static_cast<std::ptrdiff_t>(256 * 3 * p.element));
    return {};
  }

  // A number of the model's metadata (preprocess.mean / preprocess.std), if it has a usable one.
  static std::optional<float> metadata_number(const server::LoadedModel& m, std::string_view key) {
    for (const auto& [k, v] : m.info.metadata) {
      if (k != key) continue;
      char* end = nullptr;
      const float x = std::strtof(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !std::isfinite(x)) return std::nullopt;
      return x;
    }
    return std::nullopt;
  }

  Result<const Prepared*> prepare(const server::LoadedModel& m) {
    if (prepared_.generation == m.generation) return &prepared_;
    if (m.info.inputs.empty()) return make_error(Errc::model_error, "the model has no inputs");
    auto g = image::input_geometry(m.info.inputs[0]);
    if (!g) return make_error(Errc::model_error, "input 0 is not a picture: {}", g.error().message);
    Prepared p;
    p.generation = m.generation;
    p.description = results::ModelDescription{m.info.inputs, m.info.outputs, m.info.metadata};
    p.geometry = *g;
    for (size_t i = 1; i < m.info.inputs.size(); ++i) p.zero_inputs.emplace_back(m.info.inputs[i].bytes, 0);
    for (const auto& [k, v] : m.info.metadata) p.hailo_nms = p.hailo_nms || k == "hailo.nms.output";
    p.mean = config_.mean;
    p.std = config_.std;
    if (p.mean.empty() && p.std.empty()) {
      const auto mean = metadata_number(m, "preprocess.mean");
      const auto stdev = metadata_number(m, "preprocess.std");
      if (mean || (stdev && *stdev != 0)) {
        p.mean = {mean.value_or(0.0f)};
        p.std = {stdev && *stdev != 0 ? *stdev : 1.0f};
      }
    }
    const bool raw = p.mean.empty() && p.std.empty() && (m.info.inputs[0].dtype == protocol::DType::uint8 ||
                                                          m.info.inputs[0].dtype == protocol::DType::int8);
    if (!raw) AISRV_TRY(value_table(m.info.inputs[0], p.geometry, p));
    prepared_ = std::move(p);
    return &prepared_;
  }

  void detect(server::Session& session, const DetectRequest& q, Reply& reply) {
    auto m = model();
    if (!m) {
      throttle_("nomodel", [&](uint64_t n) {
        logger_->warn("frigate {}: engine {} has no model: answered zeros{}", config_.endpoint, config_.engine,
                      suffix(n));
      });
      return zeros(reply, Zeros::no_model);
    }
    auto prepared = prepare(*m);
    if (!prepared) {
      throttle_("model", [&](uint64_t n) {
        logger_->warn("frigate {}: engine {}'s model cannot serve Frigate: {}: answered zeros{}", config_.endpoint,
                      config_.engine, prepared.error().message, suffix(n));
      });
      return zeros(reply, Zeros::mismatch);
    }
    const Prepared& p = **prepared;
    const bool known_type = q.model_type.empty() || q.model_type == "ssd" || q.model_type == "yolo-generic";
    if (!known_type && !p.hailo_nms) {
      if (model_types_noted_.size() < 64 && model_types_noted_.insert(q.model_type).second)
        logger_->warn("frigate {}: model_type \"{}\" is not decoded (ssd and yolo-generic are, and Hailo-8 NMS output "
                      "whatever the type): answered zeros",
                      config_.endpoint, q.model_type);
      return zeros(reply, Zeros::model_type);
    }
    const auto& in0 = m->info.inputs[0];
    if (q.width != p.geometry.width || q.height != p.geometry.height || q.channels != 3 || p.geometry.channels != 3) {
      throttle_("input", [&](uint64_t n) {
        logger_->warn("frigate {}: a detection request of shape [1, {}, {}, {}] for engine {}'s model input of "
                      "{}x{}x{} (set Frigate's model width/height to it): answered zeros{}",
                      config_.endpoint, q.height, q.width, q.channels, config_.engine, p.geometry.height,
                      p.geometry.width, p.geometry.channels, suffix(n));
      });
      return zeros(reply, Zeros::mismatch);
    }
    // Pixels into input 0.
    std::span<const uint8_t> input = q.pixels;
    const bool plain = p.geometry.layout == image::Layout::nhwc && p.mean.empty() && p.std.empty();
    if (plain && in0.dtype == protocol::DType::uint8) {
      // as is
    } else if (plain && in0.dtype == protocol::DType::int8) {
      converted_.resize(q.pixels.size());
      for (size_t i = 0; i < q.pixels.size(); ++i) converted_[i] = q.pixels[i] ^ 0x80;  // pixel - 128
      input = converted_;
    } else if (!p.table.empty()) {
      const size_t e = p.element;
      converted_.resize(q.pixels.size() * e);
      for (size_t i = 0; i < q.pixels.size(); ++i)
        std::memcpy(converted_.data() + i * e, p.table.data() + ((size_t{q.pixels[i]} * 3 + i % 3) * e), e);
      input = converted_;
    } else {
      image::Image picture{q.width, q.height, 3, std::vector<uint8_t>(q.pixels.begin(), q.pixels.end())};
      image::Preprocess pre;
      pre.mean = p.mean;
      pre.std = p.std;
      auto t = image::image_to_tensor(picture, in0, pre);
      if (!t) {
        throttle_("convert", [&](uint64_t n) {
          logger_->warn("frigate {}: the pixels cannot feed engine {}'s input ({}): answered zeros{}", config_.endpoint,
                        config_.engine, t.error().message, suffix(n));
        });
        return zeros(reply, Zeros::mismatch);
      }
      converted_ = std::move(t).value();
      input = converted_;
    }
    std::vector<protocol::InferTensor> inputs{{0, input}};
    for (size_t i = 0; i < p.zero_inputs.size(); ++i)
      inputs.push_back({static_cast<uint32_t>(i + 1), p.zero_inputs[i]});
    payload_.clear();
    protocol::encode_infer_request(inputs, payload_);
    protocol::Request req{protocol::Header{static_cast<uint32_t>(protocol::Command::INFER), config_.engine, 0},
                          payload_};
    protocol::Response resp;
    server_.handle(session, req, resp);
    auto fail = [&](const std::string& why) {
      throttle_("infer", [&](uint64_t n) {
        logger_->warn("frigate {}: a detection on engine {} failed: {}: answered zeros{}", config_.endpoint,
                      config_.engine, why, suffix(n));
      });
      zeros(reply, Zeros::inference);
    };
    if (resp.status != AISRV_STATUS_OKAY)
      return fail(fmt::format("{} ({})", protocol::status_names(resp.status), server_.last_line(session, config_.engine)));
    auto outs = protocol::decode_infer_answer(resp.payload);
    if (!outs) return fail(outs.error().message);
    // The model may have changed between the snapshot above and the inference: decode only what fits it.
    if (outs->size() != m->info.outputs.size()) return fail("the model changed during the request");
    outputs_.resize(outs->size());
    for (size_t i = 0; i < outs->size(); ++i) outputs_[i].assign((*outs)[i].begin(), (*outs)[i].end());
    results::Options o;
    o.task = results::Task::detection;
    o.threshold = config_.threshold;
    auto decoded = results::decode(p.description, outputs_, o);
    if (!decoded) return fail(fmt::format("the outputs are not detections: {}", decoded.error().message));
    const size_t n = fill_rows(decoded->detections, p.geometry.width, p.geometry.height, config_.threshold, reply.rows);
    reply.is_rows = true;
    count([&](EndpointStats& s) { s.detections += n; });
  }

  server::Port& server_;
  const EndpointConfig config_;
  std::shared_ptr<spdlog::logger> logger_;
  void* context_ = nullptr;
  void* socket_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // The serving thread's own state.
  std::map<std::string, PeerState> peers_;
  std::shared_ptr<server::Session> admin_;
  uint64_t loaded_generation_ = 0;  // the model generation this endpoint loaded (0: none)
  std::string loaded_name_;
  std::string foreign_noted_;
  std::set<std::string> model_types_noted_;
  Throttle throttle_;
  Prepared prepared_;
  std::vector<uint8_t> converted_, payload_;
  std::vector<std::vector<uint8_t>> outputs_;

  mutable std::mutex stats_mu_;
  EndpointStats stats_;
};

Result<std::unique_ptr<FrigateEndpoint>> FrigateEndpoint::bind(server::Port& server, EndpointConfig config,
                                                               std::shared_ptr<spdlog::logger> logger) {
  if (config.engine >= server.limits().engines)
    return make_error(Errc::invalid_argument, "--frigate {}: engine {} does not exist", config.endpoint, config.engine);
  auto impl = std::make_unique<Impl>(server, std::move(config), std::move(logger));
  if (auto st = impl->bind(); !st) return st.error();
  return std::unique_ptr<FrigateEndpoint>(new FrigateEndpoint(std::move(impl)));
}

FrigateEndpoint::FrigateEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FrigateEndpoint::~FrigateEndpoint() = default;
void FrigateEndpoint::start() { impl_->start(); }
void FrigateEndpoint::stop() { impl_->stop(); }
EndpointStats FrigateEndpoint::stats() const { return impl_->stats(); }
const EndpointConfig& FrigateEndpoint::config() const { return impl_->config(); }
std::string FrigateEndpoint::describe() const { return impl_->describe(); }

}  // namespace aisrv::phy::frigate
