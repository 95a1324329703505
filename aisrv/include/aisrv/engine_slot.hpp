// aisrv interpreter — one engine addressed by its number: what all sessions share. The inference backend and its
// arena, the loaded model (published as an immutable LoadedModel snapshot with a generation number; a replacement is
// prepared in a sibling backend beside the loaded model and swapped in when ready), the engine's state bits
// (BUSY/SENSING), its shared debug log, its output GPIO lines and the chain target. Tensors, outputs, timings and
// error bits are not here: they belong to sessions (aisrv/session.hpp); the sensor belongs to the acquisition
// (aisrv/acquisition.hpp). An inference copies the session's inputs into the
// backend, runs, and copies the outputs back into the session, all under the engine's lock, so one engine does one
// thing at a time whichever session, transport or thread calls; the state bits, the snapshot and cancel are
// lock-free so they answer while an inference runs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aisrv/debug_log.hpp"
#include "aisrv/engine/backend.hpp"
#include "aisrv/loaded_model.hpp"
#include "aisrv/sensors/output_gpio.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/protocol.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::server {

class Session;
struct EngineMetrics;

class EngineSlot {
 public:
  EngineSlot(uint32_t number, std::unique_ptr<engine::InferenceBackend> backend, uint32_t max_payload,
             std::unique_ptr<DebugLog> log);
  ~EngineSlot();

  uint32_t number() const { return number_; }
  std::string_view kind() const { return kind_; }
  // The shared log: lines every session of this engine may read.
  DebugLog& log() { return *log_; }

  // The current model (null without one). Never blocks on a running inference.
  std::shared_ptr<const LoadedModel> model() const;
  bool has_model() const { return model() != nullptr; }

  // Model lifecycle. A load on an engine with a model replaces it atomically when the backend gives a sibling
  // (InferenceBackend::make_sibling): the new model is loaded and checked beside the old one, which keeps serving,
  // then backend and snapshot are swapped in the engine's turn and the old backend is freed — no request ever sees
  // the engine without a model. A failed replace (a bad model, or both models not fitting in memory) changes nothing:
  // the old model, its generation and the sessions' tensors stay valid, and the error says so. Without a sibling, or
  // without a loaded model, the old model is unloaded first and a failed load leaves the engine without a model
  // (never half-loaded). A load that succeeds, and any load that first unloaded, advance the generation, so tensors
  // of sessions written for the old model are recognised as stale.
  Status load_model(std::span<const uint8_t> model, engine::Placement placement, std::string_view source);
  Status unload_model();

  // One inference on `session`'s inputs; its outputs and timing go back to the session. `queue_ns` is how long the
  // request waited for the engine. `chain_out`, when given, receives copies of the outputs (engine chaining).
  Status infer(Session& session, uint64_t queue_ns, std::vector<std::vector<uint8_t>>* chain_out = nullptr);
  // Chain target: `inputs` (count and sizes must match the model's inputs) become the session's inputs of this engine,
  // then it runs; outputs go to `session` as above.
  Status infer_with(Session& session, const std::vector<std::vector<uint8_t>>& inputs,
                    std::vector<std::vector<uint8_t>>* chain_out = nullptr);
  // INFER: every input from the request, every output encoded into `answer` (protocol::encode_infer_answer); the
  // session's tensors are left as they were, its timing record is updated.
  Status infer_call(Session& session, std::span<const protocol::InferTensor> inputs, uint64_t queue_ns,
                    std::vector<uint8_t>& answer, std::vector<std::vector<uint8_t>>* chain_out = nullptr);

  protocol::EngineInfo info() const;
  // Counters for GET_SERVER_STATS; `epoch` is the server's start (last_end_ns is measured from it). The queue depth
  // is the server's to fill in.
  protocol::EngineStats stats(std::chrono::steady_clock::time_point epoch) const;

  // Monitoring (aisrv/server_metrics.hpp): completed inferences' compute times go to `metrics` (not owned; it outlives
  // the slot). Set once before the engine serves.
  void attach_metrics(EngineMetrics* metrics) { metrics_ = metrics; }
  // Inferences that infer() and infer_call() (a request's own inference, not a chain's) completed, and the compute
  // time of the last of them. Read in the engine's turn (the server's queue for this engine), they tell which request
  // ran an inference and how long it computed.
  uint64_t request_inferences() const { return request_inferences_.load(); }
  uint64_t last_request_compute_ns() const { return last_request_compute_ns_.load(); }
  // Why the engine is failing: the message of the last inference when it failed (ERROR_INFER_ERR: the device went
  // away, the runtime refused…); nothing when the last inference completed or was cancelled, or since a model load
  // or unload. Lock-free when the engine is not failing.
  std::optional<std::string> failure() const;

  // Lock-free: BUSY / SENSING.
  uint32_t state_bits() const { return state_bits_.load(); }
  // Lock-free: stops the running inference at the backend's next check if it belongs to session `owner` (0: whoever
  // runs). True when an inference was running and was asked to stop.
  bool cancel(uint64_t owner);
  // The session whose inference runs now (0: none).
  uint64_t running_session() const { return running_.load(); }

  void set_chain_target(std::optional<uint32_t> target) { chain_target_ = target; }
  std::optional<uint32_t> chain_target() const { return chain_target_; }

  // SENSING while the engine's sensor waits for a frame (the acquisition's grabber, aisrv/acquisition.hpp).
  void set_sensing(bool on) {
    if (on) state_bits_.fetch_or(AISRV_STATUS_SENSING);
    else state_bits_.fetch_and(~static_cast<uint32_t>(AISRV_STATUS_SENSING));
  }

  // Output GPIO: lines driven from output tensor 0 after every inference; held while a model is loaded.
  void attach_gpio(std::unique_ptr<sensors::GpioLines> lines);
  sensors::OutputGpio* gpio() { return gpio_.get(); }
  bool has_gpio() const { return gpio_ != nullptr; }

 private:
  engine::LogFn log_fn();
  Result<std::shared_ptr<const LoadedModel>> require_model() const;  // mu_ held
  void publish(std::shared_ptr<const LoadedModel> m);
  // Loads `bytes` into `backend` and applies the interpreter's limits (tensor count, payload size, buffer sizes);
  // on any refusal `backend` is left without a model. mu_ held.
  Result<engine::ModelInfo> prepare_locked(engine::InferenceBackend& backend, std::span<const uint8_t> bytes,
                                           engine::Placement placement);
  // Publishes the snapshot of a model `backend_` now holds, logs it (naming the model it replaced, if any), takes the
  // output GPIO lines. mu_ held.
  void publish_loaded_locked(engine::ModelInfo info, size_t bytes, std::string_view source,
                             const LoadedModel* replaced);
  // Runs the backend with BUSY set and cancel armed for `owner`; mu_ held.
  Result<std::vector<protocol::LayerTime>> invoke_locked(uint64_t owner, uint64_t& compute_ns);
  void copy_outputs_locked(const LoadedModel& m, std::vector<std::vector<uint8_t>>* out);
  void drive_gpio_locked(const LoadedModel& m);
  // The last completed inference's times, for stats(); mu_ held.
  void note_done_locked(const protocol::TimingRecord& timing);
  // A request's own inference completed with this compute time (request_inferences()).
  void note_request_inference(uint64_t compute_ns);
  void set_failure(std::optional<std::string> why);

  const uint32_t number_;
  std::unique_ptr<engine::InferenceBackend> backend_;  // mu_ (swapped by a model replace)
  const std::string kind_, options_;                   // the backend's (a sibling has the same): read lock-free
  const uint32_t max_payload_;
  const std::unique_ptr<DebugLog> log_;
  std::optional<uint32_t> chain_target_;

  std::atomic<uint32_t> state_bits_{0};
  std::atomic<bool> cancel_{false};
  std::atomic<uint64_t> running_{0};
  std::atomic<uint64_t> inferences_{0};
  std::atomic<uint64_t> failed_{0}, cancelled_{0}, compute_total_ns_{0}, queue_total_ns_{0}, total_total_ns_{0};
  std::atomic<uint64_t> last_compute_ns_{0}, last_queue_ns_{0}, last_total_ns_{0};
  std::atomic<std::chrono::steady_clock::rep> last_end_{0};  // steady_clock ticks; 0: none yet
  EngineMetrics* metrics_ = nullptr;
  std::atomic<uint64_t> request_inferences_{0}, last_request_compute_ns_{0};
  std::atomic<bool> failing_{false};
  mutable std::mutex failure_mu_;  // failure_
  std::string failure_;
  std::unique_ptr<sensors::OutputGpio> gpio_;
  bool gpio_failing_ = false;  // mu_

  mutable std::mutex model_mu_;  // guards model_ (the snapshot pointer only)
  std::shared_ptr<const LoadedModel> model_;

  mutable std::mutex mu_;  // the engine: every backend call and everything below
  uint64_t generation_ = 0;
  // The per-layer list a session's stored timing gave back, refilled by the next invoke (engine::InvokeContext).
  std::vector<protocol::LayerTime> recycled_layers_;
};

}  // namespace aisrv::server
