// aisrv interpreter — a session's tensors, status bits and log lines.
#include "aisrv/session.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstring>

namespace aisrv::server {

Session::Session(uint64_t id, Peer peer, protocol::Role role, bool needs_auth, SessionLimits limits,
                 uint32_t engines, LogClock& clock, std::shared_ptr<spdlog::logger> sink)
    : id_(id),
      peer_(std::move(peer)),
      name_(fmt::format("session {} ({})", id, peer_.describe())),
      role_(role),
      authenticated_(!needs_auth),
      limits_(limits),
      engines_(engines),
      clock_(clock),
      sink_(std::move(sink)),
      state_(engines),
      logs_(engines + 1) {}

void Session::authenticate(protocol::Role role) {
  role_.store(role);
  authenticated_.store(true);
}

uint64_t Session::memory_used() const { return memory_.load(); }

Status Session::usable() const {
  if (closed_.load()) return make_error(Errc::cancelled, "{} is closed", name_);
  return ok();
}

uint64_t Session::outputs_bytes(const EngineState& e) const {
  uint64_t n = 0;
  for (const auto& o : e.outputs) n += o.size();
  return n;
}

namespace {
Error no_input(const LoadedModel& m, uint32_t index) {
  return make_error(Errc::bad_tensor, "input tensor {} does not exist (the model has {})", index,
                    m.info.inputs.size());
}
Error limit_error(const std::string& who, uint64_t held, uint64_t more, uint64_t cap) {
  return make_error(Errc::limit, "{} would hold {} bytes of tensors ({} + {}); the per-session cap is {} bytes "
                                 "(aisrvd --session-memory)",
                    who, held + more, held, more, cap);
}
// Inputs beyond a model's count belong to a model that is gone (nothing can use them): dropped, their bytes leaving
// `held`; missing ones are added empty. Returns what the session then holds.
template <typename Inputs>
uint64_t fit_input_count(Inputs& inputs, size_t count, uint64_t held) {
  for (size_t i = count; i < inputs.size(); ++i) held -= inputs[i].bytes.size();
  inputs.resize(count);
  return held;
}
}  // namespace

Status Session::write_input(const LoadedModel& m, uint32_t index, std::span<const uint8_t> data,
                            std::vector<uint8_t>* donor) {
  if (index >= m.info.inputs.size()) return no_input(m, index);
  const auto& desc = m.info.inputs[index];
  if (data.size() != desc.bytes)
    return make_error(Errc::bad_length, "input tensor {} '{}' takes {} bytes, {} were sent", index, desc.name,
                      desc.bytes, data.size());
  std::lock_guard lock(mu_);
  AISRV_TRY(usable());
  EngineState& e = state_[m.engine];
  uint64_t held = fit_input_count(e.inputs, m.info.inputs.size(), memory_.load());
  Tensor& t = e.inputs[index];
  if (index == 0 && e.input0_is_frame) {
    // Input 0 held the last acquired frame: keep it for GET_SENSOR_TENSOR (moved; its bytes stay counted).
    e.last_frame = std::move(t.bytes);
    t.bytes = {};
    e.input0_is_frame = false;
  }
  const uint64_t old = t.bytes.size();
  if (held - old + data.size() > limits_.memory) {
    set_memory(held);
    return limit_error(name_, held - old, data.size(), limits_.memory);
  }
  if (donor && donor->size() == data.size() && donor->data() == data.data()) {
    t.bytes.swap(*donor);
  } else {
    t.bytes.resize(data.size());
    if (!data.empty()) std::memcpy(t.bytes.data(), data.data(), data.size());
  }
  t.generation = m.generation;
  set_memory(held - old + data.size());
  return ok();
}

Status Session::read_input(const LoadedModel& m, uint32_t index, std::vector<uint8_t>& out) {
  if (index >= m.info.inputs.size()) return no_input(m, index);
  std::lock_guard lock(mu_);
  AISRV_TRY(usable());
  const EngineState& e = state_[m.engine];
  const size_t bytes = m.info.inputs[index].bytes;
  if (index < e.inputs.size() && e.inputs[index].generation != 0) {
    const Tensor& t = e.inputs[index];
    if (t.generation != m.generation)
      return make_error(Errc::model_changed,
                        "input tensor {} was written for the engine's previous model; the model changed since "
                        "(now {} bytes from {})",
                        index, m.bytes, m.source);
    out.assign(t.bytes.begin(), t.bytes.end());
    return ok();
  }
  out.assign(bytes, 0);  // never written: zeros, as the inference would see it
  return ok();
}

Status Session::read_output(const LoadedModel& m, uint32_t index,
                            const std::function<void(std::span<const uint8_t>)>& use) {
  if (index >= m.info.outputs.size())
    return make_error(Errc::bad_tensor, "output tensor {} does not exist (the model has {})", index,
                      m.info.outputs.size());
  std::lock_guard lock(mu_);
  AISRV_TRY(usable());
  EngineState& e = state_[m.engine];
  if (e.output_generation == 0)
    return make_error(Errc::infer_error, "no output yet: this session has run no inference on this model");
  if (e.output_generation != m.generation) {
    const uint64_t held = memory_.load() - outputs_bytes(e);
    e.outputs.clear();
    e.output_generation = 0;
    set_memory(held);
    return make_error(Errc::model_changed,
                      "this session's outputs were computed by the engine's previous model, which was replaced (now "
                      "{} bytes from {}); they were discarded: run the inference again",
                      m.bytes, m.source);
  }
  use(e.outputs[index]);
  return ok();
}

const void* Session::input_storage(uint32_t engine, uint32_t index) const {
  std::lock_guard lock(mu_);
  if (engine >= state_.size() || index >= state_[engine].inputs.size()) return nullptr;
  const auto& t = state_[engine].inputs[index];
  return t.generation ? t.bytes.data() : nullptr;
}

Status Session::timings(const LoadedModel& m, std::vector<uint8_t>& out) {
  std::lock_guard lock(mu_);
  AISRV_TRY(usable());
  const EngineState& e = state_[m.engine];
  if (e.timing_generation == m.generation) protocol::encode_timings(e.timing.layers, out);
  return ok();
}

Result<protocol::TimingRecord> Session::timing_record(const LoadedModel& m) {
  std::lock_guard lock(mu_);
  AISRV_TRY(usable());
  const EngineState& e = state_[m.engine];
  if (e.timing_generation == m.generation) return e.timing;
  return protocol::TimingRecord{};
}

Status Session::load_inputs(const LoadedModel& m, const std::function<std::span<uint8_t>(size_t)>& input) {
  std::lock_guard lock(mu_);
  AISRV_TRY(usable());
  EngineState& e = state_[m.engine];
  std::string stale;
  uint64_t held = memory_.load();
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    Tensor& t = e.inputs[i];
    if (t.generation == 0 || t.generation == m.generation) continue;
    stale += fmt::format("{}{}", stale.empty() ? "" : ", ", i);
    if (i == 0 && e.input0_is_frame) {  // the acquired frame stays readable (GET_SENSOR_TENSOR)
      e.last_frame = std::move(t.bytes);
      e.input0_is_frame = false;
    } else {
      held -= t.bytes.size();
    }
    t = Tensor{};
  }
  if (!stale.empty()) {
    set_memory(held);
    return make_error(Errc::model_changed,
                      "input(s) {} were written for the engine's previous model; the model changed since (now {} "
                      "bytes from {}): they were dropped, write the inputs again",
                      stale, m.bytes, m.source);
  }
  for (size_t i = 0; i < m.info.inputs.size(); ++i) {
    std::span<uint8_t> dst = input(i);
    if (i < e.inputs.size() && e.inputs[i].generation == m.generation && e.inputs[i].bytes.size() == dst.size())
      std::memcpy(dst.data(), e.inputs[i].bytes.data(), dst.size());
    else
      std::memset(dst.data(), 0, dst.size());
  }
  return ok();
}

Status Session::reserve_outputs(const LoadedModel& m) {
  std::lock_guard lock(mu_);
  AISRV_TRY(usable());
  uint64_t need = 0;
  for (const auto& o : m.info.outputs) need += o.bytes;
  const uint64_t held = memory_.load() - outputs_bytes(state_[m.engine]);
  if (held + need > limits_.memory) return limit_error(name_, held, need, limits_.memory);
  return ok();
}

std::vector<protocol::LayerTime> Session::store_outputs(
    const LoadedModel& m, const std::function<std::span<const uint8_t>(size_t)>& output, protocol::TimingRecord timing) {
  std::lock_guard lock(mu_);
  if (closed_.load()) return std::move(timing.layers);
  EngineState& e = state_[m.engine];
  uint64_t held = memory_.load() - outputs_bytes(e);
  e.outputs.resize(m.info.outputs.size());
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    const auto src = output(i);
    e.outputs[i].assign(src.begin(), src.end());
    held += src.size();
  }
  e.output_generation = m.generation;
  std::swap(e.timing, timing);
  e.timing_generation = m.generation;
  set_memory(held);
  return std::move(timing.layers);
}

std::vector<protocol::LayerTime> Session::store_timing(const LoadedModel& m, protocol::TimingRecord timing) {
  std::lock_guard lock(mu_);
  if (closed_.load()) return std::move(timing.layers);
  EngineState& e = state_[m.engine];
  std::swap(e.timing, timing);
  e.timing_generation = m.generation;
  return std::move(timing.layers);
}

Status Session::inject_frame(const LoadedModel& m, std::span<const uint8_t> frame) {
  if (m.info.inputs.empty()) return make_error(Errc::bad_tensor, "the model has no input for a sensor frame");
  if (frame.size() != m.info.inputs[0].bytes)
    return make_error(Errc::bad_length, "a sensor frame is input 0's {} bytes, {} were sent", m.info.inputs[0].bytes,
                      frame.size());
  std::lock_guard lock(mu_);
  AISRV_TRY(usable());
  EngineState& e = state_[m.engine];
  const uint64_t old = e.injected_frame ? e.injected_frame->size() : 0;
  const uint64_t held = memory_.load() - old;
  if (held + frame.size() > limits_.memory) return limit_error(name_, held, frame.size(), limits_.memory);
  e.injected_frame.emplace(frame.begin(), frame.end());
  set_memory(held + frame.size());
  return ok();
}

std::optional<std::vector<uint8_t>> Session::take_injected_frame(const LoadedModel& m) {
  std::lock_guard lock(mu_);
  EngineState& e = state_[m.engine];
  if (!e.injected_frame) return std::nullopt;
  auto frame = std::move(*e.injected_frame);
  e.injected_frame.reset();
  set_memory(memory_.load() - frame.size());
  return frame;
}

bool Session::has_injected_frame(uint32_t engine) const {
  std::lock_guard lock(mu_);
  return engine < state_.size() && state_[engine].injected_frame.has_value();
}

Status Session::adopt_frame(const LoadedModel& m, std::vector<uint8_t>& frame) {
  if (m.info.inputs.empty()) return no_input(m, 0);
  if (frame.size() != m.info.inputs[0].bytes)
    return make_error(Errc::bad_length, "a sensor frame is input 0's {} bytes, not {}", m.info.inputs[0].bytes,
                      frame.size());
  std::lock_guard lock(mu_);
  AISRV_TRY(usable());
  EngineState& e = state_[m.engine];
  uint64_t held = fit_input_count(e.inputs, m.info.inputs.size(), memory_.load());
  Tensor& t = e.inputs[0];
  // The new frame replaces input 0 and any frame kept aside.
  const uint64_t old = t.bytes.size() + e.last_frame.size();
  if (held - old + frame.size() > limits_.memory) {
    set_memory(held);
    return limit_error(name_, held - old, frame.size(), limits_.memory);
  }
  std::vector<uint8_t>().swap(e.last_frame);
  t.bytes.swap(frame);
  t.generation = m.generation;
  e.input0_is_frame = true;
  set_memory(held - old + t.bytes.size());
  return ok();
}

Status Session::read_frame(uint32_t engine, std::vector<uint8_t>& out) {
  std::lock_guard lock(mu_);
  AISRV_TRY(usable());
  const EngineState& e = state_[engine];
  if (e.input0_is_frame && !e.inputs.empty()) {
    out = e.inputs[0].bytes;
    return ok();
  }
  if (e.last_frame.empty())
    return make_error(Errc::bad_command, "this session has acquired no frame on engine {} yet", engine);
  out = e.last_frame;
  return ok();
}

void Session::note(uint32_t scope, uint32_t error_bits, std::string_view line) {
  if (scope > engines_) scope = engines_;
  error_bits_[scope].fetch_or(error_bits);
  if (sink_) {
    if (scope < engines_) sink_->debug("engine {}: {}: {}", scope, name_, line.substr(0, AISRV_DEBUG_LOG_LINE_MAX));
    else sink_->debug("server: {}: {}", name_, line.substr(0, AISRV_DEBUG_LOG_LINE_MAX));
  }
  LogLine entry{clock_.next(), clock_.stamp(line)};
  std::lock_guard lock(mu_);
  if (closed_.load()) return;
  auto& lines = logs_[scope].lines;
  if (lines.size() == AISRV_SESSION_LOG_LINES) lines.pop_front();
  lines.push_back(std::move(entry));
}

uint32_t Session::take_errors(uint32_t scope) {
  if (scope > engines_) scope = engines_;
  return error_bits_[scope].exchange(0);
}

std::string Session::last_line(uint32_t scope) const {
  if (scope > engines_) scope = engines_;
  std::lock_guard lock(mu_);
  const auto& lines = logs_[scope].lines;
  if (lines.empty()) return {};
  const std::string& text = lines.back().text;
  const size_t cut = text.find("] ");
  return cut == std::string::npos ? text : text.substr(cut + 2);
}

std::string Session::read_log(uint32_t scope, const DebugLog& shared, size_t n, bool only_new, bool own_only) {
  if (scope > engines_) scope = engines_;
  return shared.with_lines([&](const std::deque<LogLine>& common) {
    static const std::deque<LogLine> none;
    std::lock_guard lock(mu_);
    LogScope& own = logs_[scope];
    const auto lines = merge_tail(own_only ? none : common, own.lines, n, only_new ? own.read_to : 0);
    std::string out;
    for (const LogLine* l : lines) {
      out += l->text;
      out += '\n';
      if (l->seq > own.read_to) own.read_to = l->seq;
    }
    return out;
  });
}

bool Session::try_enqueue() {
  uint32_t n = queued_.load();
  do {
    if (n >= limits_.max_queued) return false;
  } while (!queued_.compare_exchange_weak(n, n + 1));
  return true;
}

void Session::dequeued() { queued_.fetch_sub(1); }

void Session::close() {
  if (closed_.exchange(true)) return;
  std::lock_guard lock(mu_);
  // Swap into temporaries so the memory is really returned, not just cleared.
  std::vector<EngineState>(state_.size()).swap(state_);
  std::vector<LogScope>(logs_.size()).swap(logs_);
  set_memory(0);
}

}  // namespace aisrv::server
