// aisrv interpreter — a session: one client of the server (a socket connection, the USB host, an SPI master, an
// in-process channel handle). It holds what the client creates and nobody else may see: its input tensors, the
// outputs and timings of the inferences it ran, its status error bits, its own debug-log lines and its read position
// in the logs. The model, the engine and its arena are shared (EngineSlot). A transport opens a session when its
// client arrives (Server::open_session, with the peer identity it learned from its medium) and closes it when the
// client leaves; the server then cancels the session's queued work and frees its state at once.
//
// Tensors are checked against the model snapshot (LoadedModel) they were written for: when the engine's model
// changes, inputs written for the old model are "stale" (START_INFER refuses them with ERROR_MODEL_CHANGED and drops
// them) and outputs of the old model are never handed out as the new one's.
//
// Memory: every tensor byte a session holds counts against its cap (SessionLimits::memory); a write or an inference
// that would pass it answers ERROR_LIMIT and changes nothing.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aisrv/debug_log.hpp"
#include "aisrv/loaded_model.hpp"
#include "aisrv/port.hpp"  // Peer
#include "aisrv/protocol/limits.h"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::server {

struct SessionLimits {
  uint64_t memory = 256ull << 20;  // tensor bytes one session may hold (aisrvd --session-memory)
  uint32_t max_queued = 16;        // requests one session may have waiting for engines (aisrvd --max-queued)
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  // `engines`: the server's engine count; scope `engines` is the server's own (log lines, error bits).
  Session(uint64_t id, Peer peer, protocol::Role role, bool needs_auth, SessionLimits limits, uint32_t engines,
          LogClock& clock, std::shared_ptr<spdlog::logger> sink);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  uint64_t id() const { return id_; }
  const Peer& peer() const { return peer_; }
  const std::string& name() const { return name_; }  // "session 7 (unix uid 1000 gid 1000 pid 4242)"
  protocol::Role role() const { return role_.load(); }
  bool is_admin() const { return role() == protocol::Role::admin; }
  bool authenticated() const { return authenticated_.load(); }
  // After a good AUTH token.
  void authenticate(protocol::Role role);
  const SessionLimits& limits() const { return limits_; }
  uint64_t memory_used() const;
  bool closed() const { return closed_.load(); }

  // --- tensors of engine m.engine, as the client sees them -------------------------------------------------------
  // `donor`, when given, holds exactly `data` and becomes the tensor's storage (its old storage is handed back).
  Status write_input(const LoadedModel& m, uint32_t index, std::span<const uint8_t> data,
                     std::vector<uint8_t>* donor = nullptr);
  Status read_input(const LoadedModel& m, uint32_t index, std::vector<uint8_t>& out);
  // Calls `use` with output `index`'s bytes under the session's lock.
  Status read_output(const LoadedModel& m, uint32_t index,
                     const std::function<void(std::span<const uint8_t>)>& use);
  Status timings(const LoadedModel& m, std::vector<uint8_t>& out);
  // Where input `index` of `engine` is stored now (null when never written): diagnostics, and the tests that check a
  // transport's receive buffer is adopted without a copy.
  const void* input_storage(uint32_t engine, uint32_t index) const;
  Result<protocol::TimingRecord> timing_record(const LoadedModel& m);

  // --- the engine's side (EngineSlot, with the engine's lock held) ------------------------------------------------
  // Copies this session's inputs into the backend's (`input(i)`); inputs never written are zeros. Inputs written for
  // an earlier model are an error (Errc::model_changed, naming them) and are dropped.
  Status load_inputs(const LoadedModel& m, const std::function<std::span<uint8_t>(size_t)>& input);
  // Whether the outputs of `m` fit under the memory cap, before an inference runs.
  Status reserve_outputs(const LoadedModel& m);
  // Both return the per-layer list of the timing they replace (the engine refills it for its next inference).
  std::vector<protocol::LayerTime> store_outputs(const LoadedModel& m,
                                                 const std::function<std::span<const uint8_t>(size_t)>& output,
                                                 protocol::TimingRecord timing);
  // INFER leaves the tensors alone and records only its timing.
  std::vector<protocol::LayerTime> store_timing(const LoadedModel& m, protocol::TimingRecord timing);

  // --- sensor frames (acquire commands) --------------------------------------------------------------------------
  Status inject_frame(const LoadedModel& m, std::span<const uint8_t> frame);
  std::optional<std::vector<uint8_t>> take_injected_frame(const LoadedModel& m);
  // A frame waits to be taken (START_ACQUIRE_SINGLE then grabs none from the camera).
  bool has_injected_frame(uint32_t engine) const;
  // An acquired frame becomes input 0 of `m` without a copy: `frame` (input 0's size) is adopted as the tensor's
  // storage and gets the old storage back. It is also the frame GET_SENSOR_TENSOR reads (read_frame) until input 0
  // is written again, which keeps the frame aside then (moved, not copied).
  Status adopt_frame(const LoadedModel& m, std::vector<uint8_t>& frame);
  Status read_frame(uint32_t engine, std::vector<uint8_t>& out);

  // --- status bits and debug-log lines (scope: an engine number, or the engine count for the server) --------------
  void note(uint32_t scope, uint32_t error_bits, std::string_view line);
  uint32_t take_errors(uint32_t scope);
  // The session's newest own line in `scope` (unstamped), "" when none.
  std::string last_line(uint32_t scope) const;
  // GET_DEBUG_LOG: `shared` merged with this session's own lines (only its own with `own_only`); the last `n` (0 =
  // all), or only the lines after this session's read position when `only_new`. Advances the read position.
  std::string read_log(uint32_t scope, const DebugLog& shared, size_t n, bool only_new, bool own_only = false);

  // --- queue accounting (Server::submit) -------------------------------------------------------------------------
  bool try_enqueue();
  void dequeued();
  uint32_t queued() const { return queued_.load(); }

  // Frees every tensor and log line; later tensor calls fail with Errc::cancelled. Idempotent.
  void close();

 private:
  struct Tensor {
    std::vector<uint8_t> bytes;
    uint64_t generation = 0;  // model generation it was written for (0: never written)
  };
  struct EngineState {
    std::vector<Tensor> inputs;
    uint64_t output_generation = 0;  // 0: no outputs
    std::vector<std::vector<uint8_t>> outputs;
    uint64_t timing_generation = 0;
    protocol::TimingRecord timing;
    std::optional<std::vector<uint8_t>> injected_frame;
    std::vector<uint8_t> last_frame;  // the last acquired frame once input 0 no longer holds it
    bool input0_is_frame = false;     // inputs[0] holds the last acquired frame (adopt_frame)
  };
  struct LogScope {
    std::deque<LogLine> lines;
    uint64_t read_to = 0;  // newest line number this session has read
  };

  Status usable() const;  // mu_ held
  uint64_t outputs_bytes(const EngineState& e) const;
  void set_memory(uint64_t bytes) { memory_.store(bytes); }

  const uint64_t id_;
  const Peer peer_;
  const std::string name_;
  std::atomic<protocol::Role> role_;
  std::atomic<bool> authenticated_;
  const SessionLimits limits_;
  const uint32_t engines_;
  LogClock& clock_;
  std::shared_ptr<spdlog::logger> sink_;

  std::array<std::atomic<uint32_t>, AISRV_MAX_ENGINES + 1> error_bits_{};
  std::atomic<uint32_t> queued_{0};
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> memory_{0};

  mutable std::mutex mu_;  // everything below
  std::vector<EngineState> state_;
  std::vector<LogScope> logs_;
};

}  // namespace aisrv::server
