// aisrv interpreter — the AI-engine command interpreter: engines by number, the command table, and dispatch.
// Transports hand it decoded Requests and frame its Responses; it never knows which transport a request came from,
// nor which backend runs a model.
//
// Two ways in:
//   handle(req, resp)          synchronous, thread-safe; the caller's thread does the work.
//   submit(req, resp, done)    asynchronous: commands for one engine run strictly in turn, in arrival order, on that
//                              engine's strand of a worker pool; different engines run concurrently. Status polls
//                              (GET_STATUS, HELLO, GET_ID, GET_VERSION, GET_DEBUG_LOG, CANCEL_INFER) answer at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aisrv/debug_log.hpp"
#include "aisrv/engine/backend.hpp"
#include "aisrv/engine_slot.hpp"
#include "aisrv/frame_source.hpp"
#include "aisrv/protocol/protocol.hpp"

namespace spdlog {
class logger;
}
namespace aisrv::flash {
class ModelStore;
}

namespace aisrv::server {

class CommandTable;

struct SensorConfig {
  std::unique_ptr<FrameSource> source;
  std::chrono::milliseconds stream_interval{100};  // START_ACQUIRE_STREAM pace
};

struct ServerOptions {
  uint32_t max_payload = AISRV_MAX_PAYLOAD;    // largest request/response payload accepted
  std::vector<std::pair<uint32_t, uint32_t>> chains;  // {from, to}: outputs of `from` feed `to` after each inference
  std::shared_ptr<spdlog::logger> logger;      // the daemon's log (may be null)
  uint32_t extra_capabilities = 0;             // capability bits transports add (e.g. AISRV_CAP_CRC32)
  std::vector<std::pair<uint32_t, SensorConfig>> sensors;  // frame sources by engine number
  flash::ModelStore* store = nullptr;          // the model store behind the flash commands (may be null; not owned)
};

class Server {
 public:
  // Errc::invalid_argument for bad options: too many engines, chain to a missing engine, a chain cycle.
  static Result<std::unique_ptr<Server>> create(ServerOptions options,
                                                std::vector<std::unique_ptr<engine::InferenceBackend>> engines);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void handle(const protocol::Request& request, protocol::Response& response);

  using Done = std::function<void()>;
  // `request.payload` and `response` must stay valid until `done` runs; `done` runs on a worker or the caller.
  void submit(const protocol::Request& request, protocol::Response& response, Done done);

  uint32_t engine_count() const { return static_cast<uint32_t>(engines_.size()); }
  // nullptr when out of range.
  EngineSlot* engine(uint32_t number);
  DebugLog& log() { return *log_; }
  uint32_t max_payload() const { return options_.max_payload; }
  // The model store (null when none is configured).
  flash::ModelStore* store() const { return options_.store; }
  uint32_t capabilities() const;
  void add_capabilities(uint32_t bits) { options_.extra_capabilities |= bits; }

  // One inference on `slot`, then its chain (if any). A failure further down a chain is reported on the engine
  // that failed (status word + debug log) and does not fail this call.
  Status start_inference(EngineSlot& slot, uint64_t queue_ns);
  // Acquire one sensor frame into input 0, then start_inference.
  Status acquire_single(EngineSlot& slot, uint64_t queue_ns);
  // Continuous acquire + infer every `interval` in the engine's turn, until stop_stream (or an error).
  Status start_stream(EngineSlot& slot, std::chrono::milliseconds interval);
  void stop_stream(EngineSlot& slot);
  std::chrono::milliseconds stream_interval(uint32_t engine) const { return stream_intervals_[engine]; }

 private:
  Server(ServerOptions options, std::chrono::steady_clock::time_point epoch,
         std::vector<std::unique_ptr<EngineSlot>> engines);
  void dispatch(const protocol::Request& request, protocol::Response& response, uint64_t queue_ns);
  void run_chain(uint32_t from, std::vector<std::vector<uint8_t>> outputs);
  class Workers;

  ServerOptions options_;
  std::chrono::steady_clock::time_point epoch_;
  std::unique_ptr<DebugLog> log_;
  std::vector<std::unique_ptr<EngineSlot>> engines_;
  std::unique_ptr<CommandTable> commands_;
  std::unique_ptr<Workers> workers_;
  // The running stream round per engine; only touched in that engine's turn.
  std::vector<std::shared_ptr<std::function<void()>>> streams_;
  std::vector<std::chrono::milliseconds> stream_intervals_;
};

}  // namespace aisrv::server
