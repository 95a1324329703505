// aisrv engine — the inference-backend interface: the boundary between the command interpreter and an engine.
//
// Lifecycle (seed: ENN open/prepare/execute/close; XMOS load_model/unload/invoke/profiler summary):
//   load(model bytes) -> ModelInfo (tensor descriptions) or an error naming the reason
//   input(i) / output(i) -> the engine's own tensor buffers, sized from the loaded model
//   invoke() -> per-layer timings, or an error
//   unload()
//   make_sibling() -> a fresh backend with the same options, so a replacement model is prepared beside the loaded one
// A backend never sees wire formats: it gets spans, returns Results, and writes human-readable lines to the log
// callback (they end up in the engine's debug log). The interpreter serialises all calls to one backend object
// (one call at a time), so a backend needs no locking of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aisrv/protocol/limits.h"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine {

using protocol::DType;
using protocol::LayerTime;
using TensorDesc = protocol::TensorInfo;  // name, element type, shape, byte size, quantization

// Sink for debug-log lines (one line per call, no trailing newline).
using LogFn = std::function<void(std::string_view)>;

// Where the model lives (XMOS SET_MODEL_PRIMARY = inside the engine's arena budget, SECONDARY = external memory).
enum class Placement { arena, external };

struct LoadOptions {
  Placement placement = Placement::external;
  LogFn log;  // may be empty
  // The largest tensor the interpreter can carry (its payload limit). A backend refuses a model with a larger tensor
  // (Errc::model_error) before allocating anything for it: sizes written in a model file are hostile input.
  uint64_t max_tensor_bytes = AISRV_MAX_PAYLOAD;
};

struct ModelInfo {
  std::string format;                // "tflite", "hef", ...
  std::vector<TensorDesc> inputs;    // byte sizes are what SET_INPUT_TENSOR must send
  std::vector<TensorDesc> outputs;
  size_t arena_bytes = 0;            // activation memory planned (0 if not applicable)
  uint32_t layer_count = 0;          // entries GET_TIMINGS will return
  // What the engine learned from the model about reading its outputs and feeding its inputs (GET_MODEL_METADATA;
  // keys in docs/protocol.md 3.11, e.g. "task", "labels", "hailo.nms.classes").
  std::vector<std::pair<std::string, std::string>> metadata;
};

struct InvokeContext {
  const std::atomic<bool>* cancel = nullptr;  // becomes true when CANCEL_INFER arrives; check between layers
  LogFn log;                                  // may be empty
  // A previous invoke's result the backend may take and refill (may be null): its entries' strings keep their
  // storage, so the same model's layer names cost no allocation per inference (the CPU engine's per-layer timing
  // copied two strings per operator: a third of a 3-operator model's time).
  std::vector<LayerTime>* recycle = nullptr;

  bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
};

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;

  // Short kind name as used on the aisrvd command line ("cpu", "hailo8").
  virtual std::string_view kind() const = 0;
  // The options this backend runs with, normalised (e.g. "kernels=opt,arena=4194304").
  virtual std::string options() const = 0;

  // Validate and load a model; replaces any loaded model (the old one is unloaded first, even when loading fails).
  // Errc::model_error with a reason for anything the backend refuses. The bytes are not retained: copy them.
  virtual Result<ModelInfo> load(std::span<const uint8_t> model, const LoadOptions& options) = 0;
  virtual void unload() = 0;

  // A new backend of the same kind with the same options and no model, or nullptr when this engine cannot hold a
  // second model beside the loaded one (the default). The interpreter replaces a model atomically with it: it loads
  // the new model into the sibling while this backend keeps serving, swaps the sibling in once the model is ready,
  // then destroys this backend (freeing the old model) before the sibling's first invoke. A sibling's load that fails
  // — a bad model, or memory that does not hold both models — leaves this backend untouched. Without a sibling the
  // interpreter unloads the old model first, as load() does. Called, like every method, one call at a time; the
  // interpreter never calls the sibling and this backend concurrently either.
  virtual std::unique_ptr<InferenceBackend> make_sibling() const { return nullptr; }

  // Tensor buffers of the loaded model (empty span for a bad index or no model). The interpreter writes a session's
  // inputs into them before each invoke and copies the outputs out after it (sessions own their tensors; the
  // backend's are working buffers). Outputs stay valid until the next invoke or unload.
  virtual std::span<uint8_t> input(size_t index) = 0;
  virtual std::span<const uint8_t> output(size_t index) const = 0;

  // Run one inference on the current inputs. Returns one entry per layer/operator (name, op type, nanoseconds).
  // Errc::infer_error with a reason on failure, Errc::cancelled when ctx.cancelled() was seen.
  virtual Result<std::vector<LayerTime>> invoke(const InvokeContext& ctx) = 0;
};

}  // namespace aisrv::engine
