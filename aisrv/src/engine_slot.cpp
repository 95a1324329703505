// aisrv interpreter — one engine: model slot, tensors, inference, timings, status word.
#include "aisrv/engine_slot.hpp"

#include <chrono>
#include <cstring>

#include "aisrv/protocol/limits.h"
#include "aisrv/protocol/status.h"

namespace aisrv::server {

namespace {
uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

// Clears a state bit on scope exit.
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
    : number_(number), backend_(std::move(backend)), max_payload_(max_payload), log_(std::move(log)) {}

EngineSlot::~EngineSlot() {
  std::lock_guard lock(mu_);
  if (model_) backend_->unload();
}

engine::LogFn EngineSlot::log_fn() {
  return [this](std::string_view line) { log_->add(line); };
}

Status EngineSlot::require_model() const {
  if (!model_) return make_error(Errc::no_model, "engine {} has no model loaded", number_);
  return ok();
}

bool EngineSlot::has_model() const {
  std::lock_guard lock(mu_);
  return model_.has_value();
}

Status EngineSlot::load_model(std::span<const uint8_t> model, engine::Placement placement, std::string_view source) {
  std::lock_guard lock(mu_);
  StateBit busy(state_bits_, AISRV_STATUS_BUSY);
  if (model_) {
    backend_->unload();
    model_.reset();
  }
  outputs_valid_ = false;
  last_timing_ = {};
  if (model.empty()) return make_error(Errc::model_error, "empty model (0 bytes)");

  engine::LoadOptions options;
  options.placement = placement;
  options.log = log_fn();
  auto info = backend_->load(model, options);
  if (!info) {
    Error e = std::move(info).error();
    if (e.code != Errc::model_error && e.code != Errc::not_supported) e.code = Errc::model_error;
    return e;
  }
  // The interpreter's own limits: every tensor must be addressable and transferable in one payload.
  auto refuse = [&](Error e) -> Status {
    backend_->unload();
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
      const size_t have = is_input ? backend_->input(i).size() : backend_->output(i).size();
      if (have != t.bytes)
        return refuse(make_error(Errc::internal, "backend buffer for {} tensor {} is {} bytes, described as {}",
                                 is_input ? "input" : "output", i, have, t.bytes));
    }
  }
  model_ = std::move(*info);
  model_bytes_ = static_cast<uint32_t>(model.size());
  model_source_ = std::string(source);
  log_->add(fmt::format("model loaded from {}: {} bytes, format {}, {} input(s), {} output(s), arena {} bytes",
                        source, model.size(), model_->format, model_->inputs.size(), model_->outputs.size(),
                        model_->arena_bytes));
  return ok();
}

Status EngineSlot::unload_model() {
  std::lock_guard lock(mu_);
  if (!model_) return make_error(Errc::no_model, "engine {} has no model to unload", number_);
  backend_->unload();
  model_.reset();
  outputs_valid_ = false;
  last_timing_ = {};
  log_->add("model unloaded");
  return ok();
}

Status EngineSlot::write_input(uint32_t index, std::span<const uint8_t> data, std::vector<uint8_t>* donor) {
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  if (index >= model_->inputs.size())
    return make_error(Errc::bad_tensor, "input tensor {} does not exist (the model has {})", index,
                      model_->inputs.size());
  const auto& desc = model_->inputs[index];
  if (data.size() != desc.bytes)
    return make_error(Errc::bad_length, "input tensor {} '{}' takes {} bytes, {} were sent", index, desc.name,
                      desc.bytes, data.size());
  if (donor && donor->size() == data.size() && donor->data() == data.data() && backend_->swap_input(index, *donor))
    return ok();
  auto dst = backend_->input(index);
  std::memcpy(dst.data(), data.data(), data.size());
  return ok();
}

Status EngineSlot::read_input(uint32_t index, std::vector<uint8_t>& out) {
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  if (index >= model_->inputs.size())
    return make_error(Errc::bad_tensor, "input tensor {} does not exist (the model has {})", index,
                      model_->inputs.size());
  auto src = backend_->input(index);
  out.assign(src.begin(), src.end());
  return ok();
}

Result<std::span<const uint8_t>> EngineSlot::output_locked(uint32_t index) const {
  AISRV_TRY(require_model());
  if (index >= model_->outputs.size())
    return make_error(Errc::bad_tensor, "output tensor {} does not exist (the model has {})", index,
                      model_->outputs.size());
  if (!outputs_valid_)
    return make_error(Errc::infer_error, "no output yet: no inference has succeeded since the model was loaded");
  return backend_->output(index);
}

Status EngineSlot::read_output(uint32_t index, std::vector<uint8_t>& out) {
  std::lock_guard lock(mu_);
  const auto src = AISRV_TRY(output_locked(index));
  out.assign(src.begin(), src.end());
  return ok();
}

Result<bool> EngineSlot::read_output(uint32_t index, protocol::PayloadSink& sink, std::vector<uint8_t>& out) {
  std::lock_guard lock(mu_);
  const auto src = AISRV_TRY(output_locked(index));
  if (sink.write(src)) return true;
  out.assign(src.begin(), src.end());
  return false;
}

Status EngineSlot::copy_output(uint32_t index, std::span<uint8_t> out) {
  std::lock_guard lock(mu_);
  const auto src = AISRV_TRY(output_locked(index));
  if (out.size() != src.size())
    return make_error(Errc::bad_length, "output tensor {} is {} bytes, the buffer holds {}", index, src.size(),
                      out.size());
  std::memcpy(out.data(), src.data(), src.size());
  return ok();
}

Result<uint32_t> EngineSlot::input_length(uint32_t index) {
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  if (index >= model_->inputs.size())
    return make_error(Errc::bad_tensor, "input tensor {} does not exist (the model has {})", index,
                      model_->inputs.size());
  return model_->inputs[index].bytes;
}

Result<uint32_t> EngineSlot::output_length(uint32_t index) {
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  if (index >= model_->outputs.size())
    return make_error(Errc::bad_tensor, "output tensor {} does not exist (the model has {})", index,
                      model_->outputs.size());
  return model_->outputs[index].bytes;
}

Status EngineSlot::infer(uint64_t queue_ns, std::vector<std::vector<uint8_t>>* outputs) {
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  StateBit busy(state_bits_, AISRV_STATUS_BUSY);
  cancel_.store(false);
  engine::InvokeContext ctx;
  ctx.cancel = &cancel_;
  ctx.log = log_fn();
  const auto t0 = std::chrono::steady_clock::now();
  auto layers = backend_->invoke(ctx);
  const uint64_t compute_ns = ns_since(t0);
  if (!layers) {
    outputs_valid_ = false;
    Error e = std::move(layers).error();
    if (e.code != Errc::cancelled && e.code != Errc::infer_error) e.code = Errc::infer_error;
    return e;
  }
  outputs_valid_ = true;
  ++inferences_;
  last_timing_.queue_ns = queue_ns;
  last_timing_.compute_ns = compute_ns;
  last_timing_.layers = std::move(layers).value();
  if (outputs) {
    outputs->resize(model_->outputs.size());
    for (size_t i = 0; i < model_->outputs.size(); ++i) {
      auto src = backend_->output(i);
      (*outputs)[i].assign(src.begin(), src.end());
    }
  }
  last_timing_.total_ns = queue_ns + ns_since(t0);
  return ok();
}

Status EngineSlot::infer_with(const std::vector<std::vector<uint8_t>>& inputs,
                              std::vector<std::vector<uint8_t>>* outputs) {
  {
    std::lock_guard lock(mu_);
    AISRV_TRY(require_model());
    if (inputs.size() != model_->inputs.size())
      return make_error(Errc::bad_tensor, "chain delivers {} tensor(s), the model takes {} input(s)", inputs.size(),
                        model_->inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].size() != model_->inputs[i].bytes)
        return make_error(Errc::bad_length, "chain delivers {} bytes for input {}, which takes {}", inputs[i].size(),
                          i, model_->inputs[i].bytes);
    for (size_t i = 0; i < inputs.size(); ++i)
      std::memcpy(backend_->input(i).data(), inputs[i].data(), inputs[i].size());
  }
  return infer(0, outputs);
}

Result<protocol::Spec> EngineSlot::spec(uint32_t tensor) {
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  if (tensor >= model_->inputs.size() && tensor >= model_->outputs.size())
    return make_error(Errc::bad_tensor, "tensor {} does not exist (the model has {} inputs, {} outputs)", tensor,
                      model_->inputs.size(), model_->outputs.size());
  protocol::Spec s;
  s.input_length = tensor < model_->inputs.size() ? model_->inputs[tensor].bytes : 0;
  s.output_length = tensor < model_->outputs.size() ? model_->outputs[tensor].bytes : 0;
  s.timings_length = model_->layer_count * 4;
  return s;
}

Result<protocol::ModelTensors> EngineSlot::tensor_info() {
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  protocol::ModelTensors m;
  m.format = model_->format;
  m.model_bytes = model_bytes_;
  m.arena_bytes = static_cast<uint32_t>(model_->arena_bytes);
  m.inputs = model_->inputs;
  m.outputs = model_->outputs;
  return m;
}

protocol::EngineInfo EngineSlot::info() {
  std::lock_guard lock(mu_);
  protocol::EngineInfo e;
  e.kind = std::string(backend_->kind());
  e.options = backend_->options();
  e.model_loaded = model_.has_value();
  if (model_) {
    e.model_format = model_->format;
    e.model_bytes = model_bytes_;
    e.model_source = model_source_;
  }
  e.inferences = inferences_;
  if (chain_target_) e.chained_to = std::to_string(*chain_target_);
  return e;
}

Status EngineSlot::timings(std::vector<uint8_t>& out) {
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  protocol::encode_timings(last_timing_.layers, out);
  return ok();
}

Result<protocol::TimingRecord> EngineSlot::timing_record() {
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  return last_timing_;
}

uint32_t EngineSlot::take_status() { return state_bits_.load() | error_bits_.exchange(0); }

void EngineSlot::cancel() { cancel_.store(true); }

void EngineSlot::note_error(std::string_view context, const Error& error) {
  error_bits_.fetch_or(to_status(error.code));
  log_->add(fmt::format("{}: {}", context, error.message));
}

void EngineSlot::attach_sensor(std::unique_ptr<FrameSource> source) { sensor_ = std::move(source); }

static Error no_sensor(uint32_t number) {
  return make_error(Errc::not_supported, "engine {} has no sensor configured (start aisrvd with --sensor {}=PATH)",
                    number, number);
}

Status EngineSlot::acquire_frame() {
  if (!sensor_) return no_sensor(number_);
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  if (model_->inputs.empty()) return make_error(Errc::bad_tensor, "the model has no input for a sensor frame");
  auto dst = backend_->input(0);
  if (injected_frame_) {
    std::memcpy(dst.data(), injected_frame_->data(), dst.size());
    last_frame_ = std::move(*injected_frame_);
    injected_frame_.reset();
    return ok();
  }
  StateBit sensing(state_bits_, AISRV_STATUS_SENSING);
  last_frame_.resize(dst.size());
  AISRV_TRY(sensor_->capture(last_frame_));
  std::memcpy(dst.data(), last_frame_.data(), dst.size());
  return ok();
}

Status EngineSlot::inject_frame(std::span<const uint8_t> frame) {
  if (!sensor_) return no_sensor(number_);
  std::lock_guard lock(mu_);
  AISRV_TRY(require_model());
  if (model_->inputs.empty()) return make_error(Errc::bad_tensor, "the model has no input for a sensor frame");
  if (frame.size() != model_->inputs[0].bytes)
    return make_error(Errc::bad_length, "a sensor frame is input 0's {} bytes, {} were sent", model_->inputs[0].bytes,
                      frame.size());
  injected_frame_.emplace(frame.begin(), frame.end());
  return ok();
}

Status EngineSlot::read_frame(std::vector<uint8_t>& out) {
  if (!sensor_) return no_sensor(number_);
  std::lock_guard lock(mu_);
  if (last_frame_.empty()) return make_error(Errc::bad_command, "no frame has been acquired yet");
  out = last_frame_;
  return ok();
}

Status EngineSlot::write_sensor_register(uint8_t address, uint8_t reg, uint8_t value) {
  if (!sensor_) return no_sensor(number_);
  std::lock_guard lock(mu_);
  return sensor_->write_register(address, reg, value);
}

}  // namespace aisrv::server
