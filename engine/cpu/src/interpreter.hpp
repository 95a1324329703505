// aisrv CPU engine — the interpreter of one loaded model: owns the engine's copy of the model, the graph, the
// prepared operators and the arena. Load = read the model, prepare every operator, ask the kernel backend(s) for
// scratch, plan all activations and scratch into one arena (memory_planner), check the budget, allocate, bind.
// Invoke = reset variable tensors, run the operators in order through a KernelBackend, time each one; in verify
// mode also run a second backend per operator into a shadow buffer and stop at the first difference. A primary
// backend that folds pads gets the graph rewritten at load (pad_folding.hpp): folded PADs stay in the operator list
// (their timings read 0) but do not run and their output is not allocated.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "aisrv/engine/backend.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "graph.hpp"
#include "memory_planner.hpp"
#include "pad_folding.hpp"
#include "ops/prepare.hpp"

namespace aisrv::engine::cpu {

// A zero-initialised byte buffer aligned to kArenaAlignment.
class AlignedBytes {
 public:
  AlignedBytes() = default;
  static Result<AlignedBytes> allocate(size_t bytes, std::string_view what);
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t[], Free> data_;
  size_t size_ = 0;
};

struct InterpreterConfig {
  uint64_t arena_budget = 0;                // bytes for activations (+ the model with Placement::arena)
  Placement placement = Placement::external;
  const KernelBackend* primary = nullptr;   // its scratch needs are planned
  const KernelBackend* checker = nullptr;   // verify mode: the second backend (scratch planned for both)
  LogFn log;
};

struct PreparedOp {
  std::string op_name;     // "CONV_2D"
  std::string layer_name;  // the (first) output tensor's name
  std::vector<int32_t> outputs;  // output tensors, in the operator's order
  OpParams params;
  std::vector<int32_t> variables;  // variable tensors this operator updates (saved/restored in verify mode)
  int32_t folded_into = -1;        // a PAD folded into this later operator: not run
};

class Interpreter {
 public:
  static Result<std::unique_ptr<Interpreter>> load(std::span<const uint8_t> model, const InterpreterConfig& config);

  const ModelInfo& info() const { return info_; }
  const MemoryPlan& plan() const { return plan_; }
  size_t model_bytes() const { return model_bytes_; }
  const std::vector<PreparedOp>& operators() const { return ops_; }
  const std::vector<PadFold>& folded_pads() const { return folds_; }

  std::span<uint8_t> input(size_t index);
  std::span<const uint8_t> output(size_t index) const;

  // Runs the model on the current inputs with `primary`; with `checker`, verify mode (requires a load with a
  // checker, so its scratch was planned).
  Result<std::vector<LayerTime>> invoke(KernelBackend& primary, KernelBackend* checker, const InvokeContext& ctx);

 private:
  Interpreter() = default;
  Result<void> build_memory(uint8_t* arena, const std::vector<size_t>& offsets, bool sizing);
  // Per operator: scratch bytes (the larger need of the two backends) and each backend's prepared-data bytes.
  struct KernelMemoryNeeds {
    std::vector<size_t> scratch, primary_prepared, checker_prepared;
  };
  // With `needs`: the sizing pass (arena not yet allocated). Without: binds scratch and runs the backends' prepare.
  Result<void> prepare_operators(const InterpreterConfig& config, KernelMemoryNeeds* needs);
  Result<void> compare_outputs(size_t op_index, size_t output, std::span<const uint8_t> got,
                               std::span<const uint8_t> want, std::string_view primary, std::string_view checker,
                               const InvokeContext& ctx) const;
  void reset_variables();

  AlignedBytes model_;  // the engine's copy of the model (Placement::external)
  AlignedBytes block_;  // [model | arena] (Placement::arena) or the arena alone
  uint8_t* arena_ = nullptr;
  size_t model_bytes_ = 0;
  std::vector<AlignedBytes> realigned_;  // constants the model stored misaligned
  Graph graph_;
  std::vector<PadFold> folds_;
  TensorMemory memory_;
  std::vector<int32_t> arena_tensors_;  // tensors placed in the arena, in request order
  std::vector<PreparedOp> ops_;
  std::vector<std::span<uint8_t>> scratch_;  // per operator
  std::vector<std::span<uint8_t>> primary_prepared_, checker_prepared_;  // per operator, in the arena
  std::vector<int32_t> variables_;
  MemoryPlan plan_;
  ModelInfo info_;
  AlignedBytes shadow_;            // verify mode: the checker's outputs, one after the other
  std::vector<uint8_t> snapshot_;  // verify mode: variable tensors before the operator
  bool verify_ready_ = false;
};

}  // namespace aisrv::engine::cpu
