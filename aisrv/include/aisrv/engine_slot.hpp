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
#include "aisrv/protocol/payloads.hpp"
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
  Status write_input(uint32_t index, std::span<const uint8_t> data);
  Status read_input(uint32_t index, std::vector<uint8_t>& out);
  Status read_output(uint32_t index, std::vector<uint8_t>& out);
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

  // Set while a sensor frame is being acquired (SENSING bit).
  void set_sensing(bool on);

 private:
  engine::LogFn log_fn();
  Status require_model() const;

  const uint32_t number_;
  const std::unique_ptr<engine::InferenceBackend> backend_;
  const uint32_t max_payload_;
  const std::unique_ptr<DebugLog> log_;
  std::optional<uint32_t> chain_target_;

  std::atomic<uint32_t> state_bits_{0};
  std::atomic<uint32_t> error_bits_{0};
  std::atomic<bool> cancel_{false};

  mutable std::mutex mu_;  // guards everything below and every backend call
  std::optional<engine::ModelInfo> model_;
  uint32_t model_bytes_ = 0;
  std::string model_source_;
  bool outputs_valid_ = false;
  uint64_t inferences_ = 0;
  protocol::TimingRecord last_timing_;
};

}  // namespace aisrv::server
