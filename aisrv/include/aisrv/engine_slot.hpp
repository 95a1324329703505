// aisrv interpreter — one engine addressed by its number: the inference backend, the model slot, tensor access,
// the timings of the last inference, the status word and the debug log. Every operation that touches the model
// or tensors takes the slot's lock, so one engine does one thing at a time whichever transport or thread calls;
// GET_STATUS and CANCEL_INFER are lock-free so they answer while an inference runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aisrv/debug_log.hpp"
#include "aisrv/engine/backend.hpp"
#include "aisrv/frame_source.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/protocol.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::server {

class EngineSlot {
 public:
  EngineSlot(uint32_t number, std::unique_ptr<engine::InferenceBackend> backend, uint32_t max_payload,
             std::unique_ptr<DebugLog> log);
  ~EngineSlot();

  uint32_t number() const { return number_; }
  std::string_view kind() const { return backend_->kind(); }
  DebugLog& log() { return *log_; }

  // Model lifecycle. A failed load leaves the engine without a model (never half-loaded).
  Status load_model(std::span<const uint8_t> model, engine::Placement placement, std::string_view source);
  Status unload_model();
  bool has_model() const;

  // Tensors. Indices and lengths are checked against the loaded model.
  // `donor`, when given, holds exactly `data` and may be swapped into the backend instead of copied.
  Status write_input(uint32_t index, std::span<const uint8_t> data, std::vector<uint8_t>* donor = nullptr);
  Status read_input(uint32_t index, std::vector<uint8_t>& out);
  Status read_output(uint32_t index, std::vector<uint8_t>& out);
  // The same without a copy when `sink` takes the tensor's bytes (offered while the engine is held): true; when it
  // declines, they are copied into `out`: false.
  Result<bool> read_output(uint32_t index, protocol::PayloadSink& sink, std::vector<uint8_t>& out);
  // Copies output `index` into `out`, which must have exactly the tensor's length (in-process channel).
  Status copy_output(uint32_t index, std::span<uint8_t> out);
  Result<uint32_t> input_length(uint32_t index);
  Result<uint32_t> output_length(uint32_t index);

  // Runs one inference on the current inputs. `queue_ns` is how long the request waited for the engine. When
  // `outputs` is given, the outputs are copied into it under the same lock (engine chaining).
  Status infer(uint64_t queue_ns, std::vector<std::vector<uint8_t>>* outputs = nullptr);
  // Chain target: writes `inputs` (count and sizes must match the model's inputs) and infers; `outputs` as above.
  Status infer_with(const std::vector<std::vector<uint8_t>>& inputs,
                    std::vector<std::vector<uint8_t>>* outputs = nullptr);

  // Introspection.
  Result<protocol::Spec> spec(uint32_t tensor);
  Result<protocol::ModelTensors> tensor_info();
  protocol::EngineInfo info();
  Status timings(std::vector<uint8_t>& out);
  Result<protocol::TimingRecord> timing_record();

  // Lock-free: the status word (BUSY/SENSING + error bits raised since the last call, which this clears).
  uint32_t take_status();
  // Lock-free: asks a running inference to stop (the backend checks between layers).
  void cancel();
  // A debug-log line "<context>: <message>" and the error's status bit into the status word.
  void note_error(std::string_view context, const Error& error);

  void set_chain_target(std::optional<uint32_t> target) { chain_target_ = target; }
  std::optional<uint32_t> chain_target() const { return chain_target_; }

  // Sensor acquisition (all need a frame source; frames are input tensor 0's size).
  enum class AcquireMode : uint32_t { idle = 0, single = 1, stream = 2 };
  void attach_sensor(std::unique_ptr<FrameSource> source);
  bool has_sensor() const { return sensor_ != nullptr; }
  // Captures one frame (or takes the injected one) into input tensor 0; the caller then runs the inference.
  Status acquire_frame();
  Status inject_frame(std::span<const uint8_t> frame);
  Status read_frame(std::vector<uint8_t>& out);
  Status write_sensor_register(uint8_t address, uint8_t reg, uint8_t value);
  AcquireMode acquire_mode() const { return mode_.load(); }
  void set_acquire_mode(AcquireMode m) { mode_.store(m); }

 private:
  engine::LogFn log_fn();
  Status require_model() const;
  Result<std::span<const uint8_t>> output_locked(uint32_t index) const;  // checks; mu_ held

  const uint32_t number_;
  const std::unique_ptr<engine::InferenceBackend> backend_;
  const uint32_t max_payload_;
  const std::unique_ptr<DebugLog> log_;
  std::optional<uint32_t> chain_target_;

  std::atomic<uint32_t> state_bits_{0};
  std::atomic<uint32_t> error_bits_{0};
  std::atomic<bool> cancel_{false};
  std::atomic<AcquireMode> mode_{AcquireMode::idle};
  std::unique_ptr<FrameSource> sensor_;

  mutable std::mutex mu_;  // guards everything below and every backend call
  std::optional<engine::ModelInfo> model_;
  uint32_t model_bytes_ = 0;
  std::string model_source_;
  bool outputs_valid_ = false;
  uint64_t inferences_ = 0;
  protocol::TimingRecord last_timing_;
  std::vector<uint8_t> last_frame_;
  std::optional<std::vector<uint8_t>> injected_frame_;
};

}  // namespace aisrv::server
