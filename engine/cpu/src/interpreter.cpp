// aisrv CPU engine — model load and invoke (see interpreter.hpp).
#include "interpreter.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <new>

#include "model_metadata.hpp"
#include "model_reader.hpp"
#include "op_names.hpp"

namespace aisrv::engine::cpu {

namespace {

constexpr size_t kMaxOperators = 16384;
constexpr size_t kMaxTensors = 65536;

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

void log_line(const LogFn& log, const std::string& line) {
  if (log) log(line);
}

std::string mib(size_t bytes) { return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0)); }

TensorDesc describe(const TensorSpec& t) {
  TensorDesc d;
  d.name = t.name;
  d.dtype = t.type;
  d.shape.assign(t.shape.dims.begin(), t.shape.dims.begin() + t.shape.rank);
  d.bytes = static_cast<uint32_t>(t.bytes);
  if (t.quant.present()) {
    d.quant_axis = t.quant.per_channel() ? t.quant.axis : -1;
    d.scale = t.quant.scale;
    for (int64_t zp : t.quant.zero_point)
      d.zero_point.push_back(static_cast<int32_t>(std::clamp<int64_t>(zp, std::numeric_limits<int32_t>::min(),
                                                                       std::numeric_limits<int32_t>::max())));
  }
  return d;
}

size_t element_alignment(DType t) { return std::max<size_t>(1, std::min<size_t>(protocol::dtype_size(t), 8)); }

// Value of element i of a buffer of type t, for messages.
std::string element_text(const uint8_t* p, DType t, size_t i) {
  switch (t) {
    case DType::int8: return fmt::format("{}", static_cast<int8_t>(p[i]));
    case DType::uint8: return fmt::format("{}", p[i]);
    case DType::int16: {
      int16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return fmt::format("{}", v);
    }
    case DType::int32: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return fmt::format("{}", v);
    }
    case DType::float32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return fmt::format("{}", v);
    }
    default: return fmt::format("0x{:02x}", p[i]);
  }
}

}  // namespace

void AlignedBytes::Free::operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{kArenaAlignment}); }

Result<AlignedBytes> AlignedBytes::allocate(size_t bytes, std::string_view what) {
  AlignedBytes b;
  const size_t n = std::max<size_t>(bytes, 1);
  auto* p = static_cast<uint8_t*>(::operator new[](n, std::align_val_t{kArenaAlignment}, std::nothrow));
  if (!p) return make_error(Errc::model_error, "cannot allocate {} bytes for the {}", bytes, what);
  std::memset(p, 0, n);
  b.data_.reset(p);
  b.size_ = bytes;
  return b;
}

Result<void> Interpreter::build_memory(uint8_t* arena, const std::vector<size_t>& offsets, bool sizing) {
  const size_t n = graph_.tensors.size();
  memory_.constant.assign(n, nullptr);
  memory_.arena.assign(n, nullptr);
  realigned_.clear();
  for (size_t t = 0; t < n; ++t) {
    const TensorSpec& spec = graph_.tensors[t];
    if (!spec.is_constant()) continue;
    if (reinterpret_cast<uintptr_t>(spec.data) % element_alignment(spec.type) == 0) {
      memory_.constant[t] = spec.data;
    } else {  // the model stored it misaligned for its element type: keep an aligned copy
      AlignedBytes copy = AISRV_TRY(AlignedBytes::allocate(spec.bytes, "constant tensor copy"));
      std::memcpy(copy.data(), spec.data, spec.bytes);
      memory_.constant[t] = copy.data();
      realigned_.push_back(std::move(copy));
    }
  }
  if (!sizing)
    for (size_t i = 0; i < arena_tensors_.size(); ++i)
      memory_.arena[static_cast<size_t>(arena_tensors_[i])] = arena + offsets[i];
  return {};
}

Result<void> Interpreter::prepare_operators(const InterpreterConfig& config, KernelMemoryNeeds* needs) {
  ops_.clear();
  ops_.reserve(graph_.operators.size());
  for (size_t i = 0; i < graph_.operators.size(); ++i) {
    const OperatorSpec& spec = graph_.operators[i];
    const PrepareFn prepare = find_prepare(spec);
    if (!prepare) {
      if (spec.code == static_cast<int32_t>(BuiltinOp::custom))
        return make_error(Errc::model_error,
                          "unsupported operator: operator {} is CUSTOM '{}', which the cpu engine does not implement",
                          i, spec.custom_code);
      return make_error(Errc::model_error,
                        "unsupported operator: operator {} is {}, which the cpu engine does not implement", i,
                        builtin_op_name(spec.code));
    }
    if (spec.outputs.empty())
      return make_error(Errc::model_error, "operator {} ({}) has no outputs", i, builtin_op_name(spec.code));
    PreparedOp op;
    op.op_name = builtin_op_name(spec.code);
    op.outputs = spec.outputs;
    op.layer_name = graph_.tensors[static_cast<size_t>(spec.outputs[0])].name;
    op.params = AISRV_TRY(prepare(PrepareContext(graph_, i, memory_)));
    for (int32_t t : spec.inputs)
      if (t != kNoTensor && graph_.tensors[static_cast<size_t>(t)].is_variable) op.variables.push_back(t);
    for (const PadFold& f : folds_)
      if (static_cast<size_t>(f.pad_op) == i) op.folded_into = f.into_op;
    if (op.folded_into >= 0) {  // prepared (so validated) but never run: no scratch, no prepared data
      if (needs) {
        needs->scratch.push_back(0);
        needs->primary_prepared.push_back(0);
        needs->checker_prepared.push_back(0);
      }
    } else if (needs) {
      size_t s = config.primary ? config.primary->scratch_bytes(op.params) : 0;
      if (config.checker) s = std::max(s, config.checker->scratch_bytes(op.params));
      needs->scratch.push_back(s);
      needs->primary_prepared.push_back(config.primary ? config.primary->prepared_bytes(op.params) : 0);
      needs->checker_prepared.push_back(config.checker ? config.checker->prepared_bytes(op.params) : 0);
    } else {
      std::visit([&](auto& p) { p.scratch = scratch_[i]; }, op.params);
      // Each backend prepares its own data from the bound constants; the primary's travels in the parameters,
      // the checker's is swapped in when it runs (invoke).
      if (config.checker && !checker_prepared_[i].empty()) config.checker->prepare(op.params, checker_prepared_[i]);
      if (config.primary && !primary_prepared_[i].empty()) {
        config.primary->prepare(op.params, primary_prepared_[i]);
        set_prepared(op.params, primary_prepared_[i]);
      }
    }
    ops_.push_back(std::move(op));
  }
  return {};
}

Result<std::unique_ptr<Interpreter>> Interpreter::load(std::span<const uint8_t> model,
                                                       const InterpreterConfig& config) {
  std::unique_ptr<Interpreter> it(new Interpreter());
  it->model_bytes_ = model.size();

  // 1. Our own aligned copy of the model, read and prepared once to learn the memory needs.
  AlignedBytes copy = AISRV_TRY(AlignedBytes::allocate(model.size(), "model copy"));
  if (!model.empty()) std::memcpy(copy.data(), model.data(), model.size());
  it->graph_ = AISRV_TRY(read_tflite_model(std::span<const uint8_t>(copy.data(), copy.size())));
  const bool fold = config.primary && config.primary->folds_pads();
  if (fold) it->folds_ = fold_pads(it->graph_);
  Graph& g = it->graph_;
  if (g.operators.size() > kMaxOperators)
    return make_error(Errc::model_error, "model has {} operators; the cpu engine accepts at most {}",
                      g.operators.size(), kMaxOperators);
  if (g.tensors.size() > kMaxTensors)
    return make_error(Errc::model_error, "model has {} tensors; the cpu engine accepts at most {}", g.tensors.size(),
                      kMaxTensors);

  KernelMemoryNeeds needs;
  AISRV_TRY(it->build_memory(nullptr, {}, true));
  AISRV_TRY(it->prepare_operators(config, &needs));

  // 2. Lifetimes: inputs and variables live for the whole invoke (inputs are read back after it), outputs from
  // their producer to the end, everything else from producer to last reader; scratch for its operator only;
  // the backends' prepared data for the lifetime of the model.
  const auto op_count = static_cast<int32_t>(g.operators.size());
  const int32_t end = std::max(op_count - 1, 0);
  std::vector<int32_t> first(g.tensors.size(), std::numeric_limits<int32_t>::max());
  std::vector<int32_t> last(g.tensors.size(), -1);
  auto use = [&](int32_t t, int32_t from, int32_t to) {
    const auto i = static_cast<size_t>(t);
    if (g.tensors[i].is_constant()) return;
    first[i] = std::min(first[i], from);
    last[i] = std::max(last[i], to);
  };
  for (int32_t t : g.inputs) use(t, 0, end);
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].is_variable) use(static_cast<int32_t>(t), 0, end);
  for (int32_t i = 0; i < op_count; ++i) {
    const OperatorSpec& op = g.operators[static_cast<size_t>(i)];
    if (it->ops_[static_cast<size_t>(i)].folded_into >= 0) continue;  // reads and writes nothing
    for (int32_t t : op.inputs)
      if (t != kNoTensor) use(t, i, i);
    for (int32_t t : op.outputs) use(t, i, i);
  }
  for (int32_t t : g.outputs) {
    const int32_t producer = first[static_cast<size_t>(t)];
    use(t, producer == std::numeric_limits<int32_t>::max() ? 0 : producer, end);
  }

  std::vector<BufferRequest> requests;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (last[t] < 0) continue;
    it->arena_tensors_.push_back(static_cast<int32_t>(t));
    requests.push_back(BufferRequest{g.tensors[t].bytes, first[t], last[t]});
  }
  const size_t tensor_requests = requests.size();
  for (int32_t i = 0; i < op_count; ++i) requests.push_back(BufferRequest{needs.scratch[static_cast<size_t>(i)], i, i});
  size_t prepared_total = 0;
  for (int32_t i = 0; i < op_count; ++i) {
    const auto k = static_cast<size_t>(i);
    requests.push_back(BufferRequest{needs.primary_prepared[k], 0, end});
    requests.push_back(BufferRequest{needs.checker_prepared[k], 0, end});
    prepared_total += needs.primary_prepared[k] + needs.checker_prepared[k];
  }
  it->plan_ = plan_memory(requests);

  // 3. Budget: activations (+ the model itself when it is placed in the arena).
  const size_t model_in_arena = config.placement == Placement::arena ? align_up(model.size(), kArenaAlignment) : 0;
  const uint64_t needed = uint64_t{it->plan_.arena_bytes} + model_in_arena;
  if (needed > config.arena_budget) {
    if (config.placement == Placement::arena)
      return make_error(Errc::model_error,
                        "model does not fit: it needs {} bytes ({} of activations + {} of model placed in the arena) "
                        "but the arena budget is {} bytes",
                        needed, it->plan_.arena_bytes, model.size(), config.arena_budget);
    return make_error(Errc::model_error,
                      "model does not fit: it needs {} bytes of activations but the arena budget is {} bytes", needed,
                      config.arena_budget);
  }

  // 4. Allocate; with Placement::arena the model moves into the arena block and is read again from there.
  it->block_ = AISRV_TRY(AlignedBytes::allocate(static_cast<size_t>(needed), "arena"));
  if (config.placement == Placement::arena) {
    if (!model.empty()) std::memcpy(it->block_.data(), copy.data(), model.size());
    copy = AlignedBytes();
    it->graph_ = AISRV_TRY(read_tflite_model(std::span<const uint8_t>(it->block_.data(), model.size())));
    if (fold) it->folds_ = fold_pads(it->graph_);  // the same rewrite of the same model
    it->arena_ = it->block_.data() + model_in_arena;
  } else {
    it->model_ = std::move(copy);
    it->arena_ = it->block_.data();
  }

  // 5. Bind: tensors and scratch to their arena offsets, then prepare again with real pointers.
  std::vector<size_t> tensor_offsets(it->plan_.offsets.begin(),
                                     it->plan_.offsets.begin() + static_cast<std::ptrdiff_t>(tensor_requests));
  AISRV_TRY(it->build_memory(it->arena_, tensor_offsets, false));
  auto arena_span = [&](size_t r) { return std::span<uint8_t>(it->arena_ + it->plan_.offsets[r], requests[r].bytes); };
  for (int32_t i = 0; i < op_count; ++i) {
    const auto k = static_cast<size_t>(i);
    it->scratch_.push_back(arena_span(tensor_requests + k));
    it->primary_prepared_.push_back(arena_span(tensor_requests + static_cast<size_t>(op_count) + 2 * k));
    it->checker_prepared_.push_back(arena_span(tensor_requests + static_cast<size_t>(op_count) + 2 * k + 1));
  }
  AISRV_TRY(it->prepare_operators(config, nullptr));
  for (size_t t = 0; t < it->graph_.tensors.size(); ++t)
    if (it->graph_.tensors[t].is_variable && last[t] >= 0) it->variables_.push_back(static_cast<int32_t>(t));

  // 6. Verify-mode buffers (outside the arena budget: they exist only to check a backend).
  if (config.checker) {
    size_t out_max = 0, var_total = 0;
    for (const PreparedOp& op : it->ops_) {
      if (op.folded_into >= 0) continue;
      size_t out = 0;
      for (int32_t t : op.outputs) out += align_up(it->graph_.tensors[static_cast<size_t>(t)].bytes, kArenaAlignment);
      out_max = std::max(out_max, out);
      size_t v = 0;
      for (int32_t t : op.variables) v += it->graph_.tensors[static_cast<size_t>(t)].bytes;
      var_total = std::max(var_total, v);
    }
    it->shadow_ = AISRV_TRY(AlignedBytes::allocate(out_max, "verify-mode output buffer"));
    it->snapshot_.assign(var_total, 0);
    it->verify_ready_ = true;
  }

  // 7. Describe.
  ModelInfo& info = it->info_;
  info.format = "tflite";
  for (int32_t t : it->graph_.inputs) info.inputs.push_back(describe(it->graph_.tensors[static_cast<size_t>(t)]));
  for (int32_t t : it->graph_.outputs) info.outputs.push_back(describe(it->graph_.tensors[static_cast<size_t>(t)]));
  info.arena_bytes = it->plan_.arena_bytes;
  info.layer_count = static_cast<uint32_t>(it->ops_.size());
  info.metadata = read_model_metadata(model);
  const size_t buffers = static_cast<size_t>(
      std::count_if(requests.begin(), requests.end(), [](const BufferRequest& r) { return r.bytes > 0; }));
  log_line(config.log,
           fmt::format("cpu: model {} bytes ({}), {} operators, {} tensors; arena {} bytes ({}) for {} buffers "
                       "including {} bytes of prepared kernel data, peak live {} bytes, one-buffer-per-tensor {} "
                       "bytes, planner efficiency {:.1f}%",
                       model.size(), config.placement == Placement::arena ? "placed in the arena" : "external",
                       it->ops_.size(), it->graph_.tensors.size(), it->plan_.arena_bytes, mib(it->plan_.arena_bytes),
                       buffers, prepared_total, it->plan_.peak_live_bytes, it->plan_.naive_bytes,
                       100.0 * it->plan_.efficiency()));
  if (!it->folds_.empty()) {
    std::string list;
    for (const PadFold& f : it->folds_)
      list += fmt::format("{}{} into {} (padding top {} left {} bottom {} right {})", list.empty() ? "" : ", ",
                          f.pad_op, f.into_op, f.padding.top, f.padding.left, f.padding.bottom, f.padding.right);
    log_line(config.log, fmt::format("cpu: {} PAD operator(s) folded into the convolution reading them: {}",
                                     it->folds_.size(), list));
  }
  if (!it->realigned_.empty())
    log_line(config.log, fmt::format("cpu: {} constant tensors were misaligned in the model and copied",
                                     it->realigned_.size()));
  return it;
}

std::span<uint8_t> Interpreter::input(size_t index) {
  if (index >= graph_.inputs.size()) return {};
  const int32_t t = graph_.inputs[index];
  return {memory_.arena[static_cast<size_t>(t)], graph_.tensors[static_cast<size_t>(t)].bytes};
}

std::span<const uint8_t> Interpreter::output(size_t index) const {
  if (index >= graph_.outputs.size()) return {};
  const int32_t t = graph_.outputs[index];
  return {static_cast<const uint8_t*>(memory_.read(t)), graph_.tensors[static_cast<size_t>(t)].bytes};
}

void Interpreter::reset_variables() {
  // As TFLite Micro resets them: int8 state to its zero point, everything else to 0. Every inference starts from
  // this state (sequence state does not carry over between inferences).
  for (int32_t t : variables_) {
    const TensorSpec& spec = graph_.tensors[static_cast<size_t>(t)];
    int value = 0;
    if (spec.type == DType::int8 && spec.quant.present()) value = static_cast<int>(spec.quant.zero_point[0]);
    std::memset(memory_.arena[static_cast<size_t>(t)], value, spec.bytes);
  }
}

Result<void> Interpreter::compare_outputs(size_t op_index, size_t output, std::span<const uint8_t> got,
                                          std::span<const uint8_t> want, std::string_view primary,
                                          std::string_view checker, const InvokeContext& ctx) const {
  if (std::memcmp(got.data(), want.data(), got.size()) == 0) return {};
  const PreparedOp& op = ops_[op_index];
  const TensorSpec& out = graph_.tensors[static_cast<size_t>(op.outputs[output])];
  const size_t es = std::max<size_t>(protocol::dtype_size(out.type), 1);
  size_t i = 0;
  while (i * es < got.size() && std::memcmp(got.data() + i * es, want.data() + i * es, es) == 0) ++i;
  const std::string got_text = element_text(got.data(), out.type, i);
  const std::string want_text = element_text(want.data(), out.type, i);
  log_line(ctx.log, fmt::format("verify: operator {} ({}, output '{}') differs from the {} kernels: element {} of {} "
                                "is {} with kernels={}, {} with kernels={}",
                                op_index, op.op_name, op.layer_name, checker, i, got.size() / es, got_text, primary,
                                want_text, checker));
  const std::string what = fmt::format("verify: operator {} ({}) differs from kernels={} at element {} ({} vs {})",
                                       op_index, op.op_name, checker, i, got_text, want_text);
  return make_error(Errc::infer_error, "{}", what);
}

Result<std::vector<LayerTime>> Interpreter::invoke(KernelBackend& primary, KernelBackend* checker,
                                                   const InvokeContext& ctx) {
  if (checker && !verify_ready_)
    return make_error(Errc::internal, "verify mode needs a model loaded with the checking backend");
  reset_variables();
  // The backend's per-model choices (e.g. whether its threads pay for this model) see every inference as a whole.
  struct InvokeScope {
    KernelBackend& backend;
    bool completed = false;
    ~InvokeScope() { backend.end_invoke(completed); }
  } scope{primary};
  primary.begin_invoke(this);
  // One entry per operator, refilled in place where the caller hands back an earlier result (ctx.recycle).
  std::vector<LayerTime> layers;
  if (ctx.recycle) layers.swap(*ctx.recycle);
  layers.resize(ops_.size());
  // One clock read per operator: an operator's time runs from the previous one's end (or from the verify checker's
  // end) to its own, so the loop's few instructions between are counted too (two reads per operator were about a
  // tenth of hello_world's 3 small FULLY_CONNECTEDs).
  auto mark = std::chrono::steady_clock::now();
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (ctx.cancelled())
      return make_error(Errc::cancelled, "inference cancelled before operator {} of {}", i, ops_.size());
    const PreparedOp& op = ops_[i];
    LayerTime& layer = layers[i];
    layer.name.assign(op.layer_name);
    layer.op.assign(op.op_name);
    layer.ns = 0;
    if (op.folded_into >= 0) continue;  // its reader pads as it reads
    // Verify mode: the checker's outputs go to consecutive (aligned) places of the shadow buffer.
    std::vector<void*> shadow_outputs;
    if (checker) {
      size_t at = 0;
      for (int32_t t : op.outputs) {
        shadow_outputs.push_back(shadow_.data() + at);
        at += align_up(graph_.tensors[static_cast<size_t>(t)].bytes, kArenaAlignment);
      }
      // The checker runs first, into the shadow buffer, from the same inputs and variable state.
      size_t pos = 0;
      for (int32_t t : op.variables) {
        const size_t n = graph_.tensors[static_cast<size_t>(t)].bytes;
        std::memcpy(snapshot_.data() + pos, memory_.arena[static_cast<size_t>(t)], n);
        pos += n;
      }
      OpParams checked = with_outputs(op.params, shadow_outputs);
      set_prepared(checked, checker_prepared_[i]);
      const Result<void> checked_run = run_kernel(*checker, checked);
      pos = 0;
      for (int32_t t : op.variables) {
        const size_t n = graph_.tensors[static_cast<size_t>(t)].bytes;
        std::memcpy(memory_.arena[static_cast<size_t>(t)], snapshot_.data() + pos, n);
        pos += n;
      }
      if (!checked_run)
        return make_error(checked_run.error().code, "operator {} ({}), kernels={}: {}", i, op.op_name,
                          checker->name(), checked_run.error().message);
      mark = std::chrono::steady_clock::now();
    }
    primary.begin_operator(i);
    const Result<void> run = run_kernel(primary, op.params);
    const auto end = std::chrono::steady_clock::now();
    if (!run) {
      log_line(ctx.log, fmt::format("cpu: operator {} ({}, output '{}') failed: {}", i, op.op_name, op.layer_name,
                                    run.error().message));
      return make_error(run.error().code, "operator {} ({}): {}", i, op.op_name, run.error().message);
    }
    if (checker) {
      const std::vector<void*> produced = outputs_of(op.params);
      for (size_t k = 0; k < op.outputs.size(); ++k) {
        const size_t n = graph_.tensors[static_cast<size_t>(op.outputs[k])].bytes;
        AISRV_TRY(compare_outputs(i, k, std::span<const uint8_t>(static_cast<const uint8_t*>(produced[k]), n),
                                  std::span<const uint8_t>(static_cast<const uint8_t*>(shadow_outputs[k]), n),
                                  primary.name(), checker->name(), ctx));
      }
    }
    layer.ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - mark).count());
    mark = end;
  }
  scope.completed = true;
  return layers;
}

}  // namespace aisrv::engine::cpu
