// aisrv interpreter — one engine: the model slot, inference on a session's tensors, the state bits.
#include "aisrv/engine_slot.hpp"

#include <chrono>
#include <cstring>
#include <utility>

#include "aisrv/protocol/limits.h"
#include "aisrv/protocol/status.h"
#include "aisrv/server_metrics.hpp"
#include "aisrv/session.hpp"

namespace aisrv::server {

namespace {
uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

// Sets a state bit for the life of the scope.
class StateBit {
 public:
  StateBit(std::atomic<uint32_t>& bits, uint32_t bit) : bits_(bits), bit_(bit) { bits_.fetch_or(bit_); }
  ~StateBit() { bits_.fetch_and(~bit_); }
  StateBit(const StateBit&) = delete;
  StateBit& operator=(const StateBit&) = delete;

 private:
  std::atomic<uint32_t>& bits_;
  uint32_t bit_;
};
}  // namespace

EngineSlot::EngineSlot(uint32_t number, std::unique_ptr<engine::InferenceBackend> backend, uint32_t max_payload,
                       std::unique_ptr<DebugLog> log)
    : number_(number),
      backend_(std::move(backend)),
      kind_(backend_->kind()),
      options_(backend_->options()),
      max_payload_(max_payload),
      log_(std::move(log)) {}

EngineSlot::~EngineSlot() {
  std::lock_guard lock(mu_);
  if (model()) backend_->unload();
}

engine::LogFn EngineSlot::log_fn() {
  return [this](std::string_view line) { log_->add(line); };
}

std::shared_ptr<const LoadedModel> EngineSlot::model() const {
  std::lock_guard lock(model_mu_);
  return model_;
}

void EngineSlot::publish(std::shared_ptr<const LoadedModel> m) {
  std::lock_guard lock(model_mu_);
  model_ = std::move(m);
}

Result<std::shared_ptr<const LoadedModel>> EngineSlot::require_model() const {
  auto m = model();
  if (!m) return make_error(Errc::no_model, "engine {} has no model loaded", number_);
  return m;
}

Result<engine::ModelInfo> EngineSlot::prepare_locked(engine::InferenceBackend& backend, std::span<const uint8_t> bytes,
                                                     engine::Placement placement) {
  if (bytes.empty()) return make_error(Errc::model_error, "empty model (0 bytes)");
  engine::LoadOptions options;
  options.placement = placement;
  options.log = log_fn();
  options.max_tensor_bytes = max_payload_;
  auto info = backend.load(bytes, options);
  if (!info) {
    Error e = std::move(info).error();
    if (e.code != Errc::model_error && e.code != Errc::not_supported) e.code = Errc::model_error;
    return e;
  }
  // The interpreter's own limits: every tensor must be addressable and transferable in one payload.
  auto refuse = [&](Error e) -> Result<engine::ModelInfo> {
    backend.unload();
    return e;
  };
  if (info->inputs.size() > AISRV_MAX_TENSORS || info->outputs.size() > AISRV_MAX_TENSORS)
    return refuse(make_error(Errc::model_error, "model has {} inputs and {} outputs; the limit is {} each",
                             info->inputs.size(), info->outputs.size(), AISRV_MAX_TENSORS));
  for (const auto* list : {&info->inputs, &info->outputs}) {
    for (size_t i = 0; i < list->size(); ++i) {
      const auto& t = (*list)[i];
      const bool is_input = list == &info->inputs;
      if (t.bytes > max_payload_)
        return refuse(make_error(Errc::model_error, "{} tensor {} '{}' is {} bytes; the payload limit is {} bytes",
                                 is_input ? "input" : "output", i, t.name, t.bytes, max_payload_));
      const size_t have = is_input ? backend.input(i).size() : backend.output(i).size();
      if (have != t.bytes)
        return refuse(make_error(Errc::internal, "backend buffer for {} tensor {} is {} bytes, described as {}",
                                 is_input ? "input" : "output", i, have, t.bytes));
    }
  }
  return info;
}

void EngineSlot::publish_loaded_locked(engine::ModelInfo info, size_t bytes, std::string_view source,
                                       const LoadedModel* replaced) {
  auto m = std::make_shared<LoadedModel>();
  m->engine = number_;
  m->generation = generation_;
  m->info = std::move(info);
  m->bytes = static_cast<uint32_t>(bytes);
  m->source = std::string(source);
  log_->add(fmt::format("model loaded from {}: {} bytes, format {}, {} input(s), {} output(s), arena {} bytes "
                        "(model generation {}{})",
                        source, bytes, m->info.format, m->info.inputs.size(), m->info.outputs.size(),
                        m->info.arena_bytes, m->generation,
                        replaced ? fmt::format("; model replaced: generation {} from {} served until the swap",
                                               replaced->generation, replaced->source)
                                 : std::string()));
  publish(std::move(m));
  if (gpio_) {
    if (auto st = gpio_->request(); !st) log_->add(fmt::format("output GPIO not driven: {}", st.error().message));
  }
}

Status EngineSlot::load_model(std::span<const uint8_t> bytes, engine::Placement placement, std::string_view source) {
  std::lock_guard lock(mu_);
  StateBit busy(state_bits_, AISRV_STATUS_BUSY);
  const auto old = model();
  if (old) {
    if (auto sibling = backend_->make_sibling()) {
      // Atomic replace: the new model is prepared beside the old one, which every session keeps using (its snapshot
      // is still published; inferences wait for mu_), and only a ready model is swapped in.
      auto info = prepare_locked(*sibling, bytes, placement);
      if (!info) {
        Error e = std::move(info).error();
        // Short: the client reads it as a log line (AISRV_DEBUG_LOG_LINE_MAX) after the backend's reason.
        e.message = fmt::format("{}; the old model keeps serving (generation {}); UNLOAD_MODEL first to load a "
                                "model that fits only alone",
                                e.message, old->generation);
        return e;
      }
      ++generation_;
      set_failure(std::nullopt);  // a new model starts afresh (a Hailo session is configured on its first invoke)
      std::unique_ptr<engine::InferenceBackend> retired = std::exchange(backend_, std::move(sibling));
      publish_loaded_locked(std::move(*info), bytes.size(), source, old.get());
      // The old model's memory (and a Hailo-8's configured network group) goes before the new model first runs.
      retired.reset();
      return ok();
    }
  }
  // No sibling (the engine holds one model at a time) or nothing loaded: the old model goes first.
  ++generation_;
  set_failure(std::nullopt);
  if (old) {
    publish(nullptr);
    backend_->unload();
    log_->add(fmt::format("model from {} (generation {}) unloaded first: this engine cannot prepare a model beside it",
                          old->source, old->generation));
  }
  auto info = prepare_locked(*backend_, bytes, placement);
  if (!info) return std::move(info).error();
  publish_loaded_locked(std::move(*info), bytes.size(), source, nullptr);
  return ok();
}

Status EngineSlot::unload_model() {
  std::lock_guard lock(mu_);
  if (!model()) return make_error(Errc::no_model, "engine {} has no model to unload", number_);
  ++generation_;
  set_failure(std::nullopt);
  publish(nullptr);
  backend_->unload();
  if (gpio_) gpio_->release();
  log_->add("model unloaded");
  return ok();
}

Result<std::vector<protocol::LayerTime>> EngineSlot::invoke_locked(uint64_t owner, uint64_t& compute_ns) {
  StateBit busy(state_bits_, AISRV_STATUS_BUSY);
  cancel_.store(false);
  running_.store(owner);
  engine::InvokeContext ctx;
  ctx.cancel = &cancel_;
  ctx.log = log_fn();
  ctx.recycle = &recycled_layers_;
  const auto t0 = std::chrono::steady_clock::now();
  auto layers = backend_->invoke(ctx);
  compute_ns = ns_since(t0);
  running_.store(0);
  if (!layers) {
    Error e = std::move(layers).error();
    if (e.code != Errc::cancelled && e.code != Errc::infer_error) e.code = Errc::infer_error;
    (e.code == Errc::cancelled ? cancelled_ : failed_).fetch_add(1);
    if (e.code == Errc::infer_error) set_failure(e.message);
    return e;
  }
  inferences_.fetch_add(1);
  compute_total_ns_.fetch_add(compute_ns);
  if (metrics_) metrics_->compute.observe_ns(compute_ns);
  set_failure(std::nullopt);
  return layers;
}

void EngineSlot::copy_outputs_locked(const LoadedModel& m, std::vector<std::vector<uint8_t>>* out) {
  if (!out) return;
  out->resize(m.info.outputs.size());
  for (size_t i = 0; i < m.info.outputs.size(); ++i) {
    auto src = backend_->output(i);
    (*out)[i].assign(src.begin(), src.end());
  }
}

Status EngineSlot::infer(Session& session, uint64_t queue_ns, std::vector<std::vector<uint8_t>>* chain_out) {
  std::lock_guard lock(mu_);
  const auto m = AISRV_TRY(require_model());
  AISRV_TRY(session.reserve_outputs(*m));
  AISRV_TRY(session.load_inputs(*m, [this](size_t i) { return backend_->input(i); }));
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t compute_ns = 0;
  auto layers = AISRV_TRY(invoke_locked(session.id(), compute_ns));
  note_request_inference(compute_ns);
  protocol::TimingRecord timing;
  timing.queue_ns = queue_ns;
  timing.compute_ns = compute_ns;
  timing.layers = std::move(layers);
  copy_outputs_locked(*m, chain_out);
  timing.total_ns = queue_ns + ns_since(t0);
  note_done_locked(timing);
  drive_gpio_locked(*m);
  recycled_layers_ = session.store_outputs(*m, [this](size_t i) { return backend_->output(i); }, std::move(timing));
  return ok();
}

Status EngineSlot::infer_with(Session& session, const std::vector<std::vector<uint8_t>>& inputs,
                              std::vector<std::vector<uint8_t>>* chain_out) {
  std::lock_guard lock(mu_);
  const auto m = AISRV_TRY(require_model());
  if (inputs.size() != m->info.inputs.size())
    return make_error(Errc::bad_tensor, "chain delivers {} tensor(s), the model takes {} input(s)", inputs.size(),
                      m->info.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].size() != m->info.inputs[i].bytes)
      return make_error(Errc::bad_length, "chain delivers {} bytes for input {}, which takes {}", inputs[i].size(),
                        i, m->info.inputs[i].bytes);
  AISRV_TRY(session.reserve_outputs(*m));
  // The chain writes the target's inputs as SET_INPUT_TENSOR would: the session sees them (GET_INPUT_TENSOR).
  for (size_t i = 0; i < inputs.size(); ++i) AISRV_TRY(session.write_input(*m, static_cast<uint32_t>(i), inputs[i]));
  AISRV_TRY(session.load_inputs(*m, [this](size_t i) { return backend_->input(i); }));
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t compute_ns = 0;
  auto layers = AISRV_TRY(invoke_locked(session.id(), compute_ns));
  protocol::TimingRecord timing;
  timing.compute_ns = compute_ns;
  timing.layers = std::move(layers);
  copy_outputs_locked(*m, chain_out);
  timing.total_ns = ns_since(t0);
  note_done_locked(timing);
  drive_gpio_locked(*m);
  recycled_layers_ = session.store_outputs(*m, [this](size_t i) { return backend_->output(i); }, std::move(timing));
  return ok();
}

Status EngineSlot::infer_call(Session& session, std::span<const protocol::InferTensor> inputs, uint64_t queue_ns,
                              std::vector<uint8_t>& answer, std::vector<std::vector<uint8_t>>* chain_out) {
  std::lock_guard lock(mu_);
  const auto m = AISRV_TRY(require_model());
  const auto& model_inputs = m->info.inputs;
  if (inputs.size() != model_inputs.size())
    return make_error(Errc::bad_tensor, "INFER gives {} input(s), the model takes {}: INFER carries every input",
                      inputs.size(), model_inputs.size());
  for (const auto& t : inputs) {
    if (t.index >= model_inputs.size())
      return make_error(Errc::bad_tensor, "input tensor {} does not exist (the model has {})", t.index,
                        model_inputs.size());
    if (t.bytes.size() != model_inputs[t.index].bytes)
      return make_error(Errc::bad_length, "input tensor {} '{}' takes {} bytes, {} were sent", t.index,
                        model_inputs[t.index].name, model_inputs[t.index].bytes, t.bytes.size());
  }
  for (const auto& t : inputs)
    if (!t.bytes.empty()) std::memcpy(backend_->input(t.index).data(), t.bytes.data(), t.bytes.size());
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t compute_ns = 0;
  auto layers = AISRV_TRY(invoke_locked(session.id(), compute_ns));
  note_request_inference(compute_ns);
  std::vector<std::span<const uint8_t>> outputs;
  outputs.reserve(m->info.outputs.size());
  for (size_t i = 0; i < m->info.outputs.size(); ++i) outputs.push_back(backend_->output(i));
  protocol::encode_infer_answer(outputs, answer);
  copy_outputs_locked(*m, chain_out);
  protocol::TimingRecord timing;
  timing.queue_ns = queue_ns;
  timing.compute_ns = compute_ns;
  timing.layers = std::move(layers);
  timing.total_ns = queue_ns + ns_since(t0);
  note_done_locked(timing);
  drive_gpio_locked(*m);
  recycled_layers_ = session.store_timing(*m, std::move(timing));
  return ok();
}

protocol::EngineInfo EngineSlot::info() const {
  protocol::EngineInfo e;
  e.kind = kind_;
  e.options = options_;
  if (auto m = model()) {
    e.model_loaded = true;
    e.model_format = m->info.format;
    e.model_bytes = m->bytes;
    e.model_source = m->source;
  }
  e.inferences = inferences_.load();
  if (chain_target_) e.chained_to = std::to_string(*chain_target_);
  return e;
}

void EngineSlot::note_done_locked(const protocol::TimingRecord& timing) {
  last_compute_ns_.store(timing.compute_ns);
  last_queue_ns_.store(timing.queue_ns);
  last_total_ns_.store(timing.total_ns);
  last_end_.store(std::chrono::steady_clock::now().time_since_epoch().count());
  queue_total_ns_.fetch_add(timing.queue_ns);
  total_total_ns_.fetch_add(timing.total_ns);
}

void EngineSlot::note_request_inference(uint64_t compute_ns) {
  last_request_compute_ns_.store(compute_ns);
  request_inferences_.fetch_add(1);
}

void EngineSlot::set_failure(std::optional<std::string> why) {
  if (!why && !failing_.load()) return;  // the common case: nothing to clear, no lock
  std::lock_guard lock(failure_mu_);
  failing_.store(why.has_value());
  failure_ = why ? std::move(*why) : std::string();
}

std::optional<std::string> EngineSlot::failure() const {
  if (!failing_.load()) return std::nullopt;
  std::lock_guard lock(failure_mu_);
  if (!failing_.load()) return std::nullopt;
  return failure_;
}

protocol::EngineStats EngineSlot::stats(std::chrono::steady_clock::time_point epoch) const {
  protocol::EngineStats e;
  e.engine = number_;
  e.kind = kind_;
  e.state = state_bits_.load();
  if (auto m = model()) {
    e.model_loaded = true;
    e.model_format = m->info.format;
    e.model_source = m->source;
    e.model_bytes = m->bytes;
  }
  e.inferences = inferences_.load();
  e.failed = failed_.load();
  e.cancelled = cancelled_.load();
  e.compute_ns = compute_total_ns_.load();
  e.queue_ns = queue_total_ns_.load();
  e.total_ns = total_total_ns_.load();
  e.last_compute_ns = last_compute_ns_.load();
  e.last_queue_ns = last_queue_ns_.load();
  e.last_total_ns = last_total_ns_.load();
  if (const auto end = last_end_.load(); end != 0) {
    const auto at = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(end));
    e.last_end_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(at - epoch).count());
  }
  e.running_session = running_.load();
  return e;
}

bool EngineSlot::cancel(uint64_t owner) {
  const uint64_t running = running_.load();
  if (running == 0 || (owner != 0 && running != owner)) return false;
  cancel_.store(true);
  return true;
}

void EngineSlot::attach_gpio(std::unique_ptr<sensors::GpioLines> lines) {
  gpio_ = std::make_unique<sensors::OutputGpio>(std::move(lines));
}

void EngineSlot::drive_gpio_locked(const LoadedModel& m) {
  if (!gpio_ || m.info.outputs.empty()) return;
  // A failing chip (unplugged) is logged once when it starts failing and once when it works again, not per frame.
  auto st = gpio_->drive(m.info.outputs[0], backend_->output(0));
  if (!st && !gpio_failing_) log_->add(fmt::format("output GPIO: {} (retried after every inference)", st.error().message));
  if (st && gpio_failing_) log_->add("output GPIO: the lines are driven again");
  gpio_failing_ = !st;
}

}  // namespace aisrv::server
