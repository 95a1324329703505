// aisrv interpreter — the server's instruments for monitoring (Prometheus, docs/metrics.md): latency histograms per
// engine (queue wait, compute, transfer), answered requests by status, sessions and payload bytes by transport.
// Everything is recorded with relaxed atomics, so the request path never takes a lock here; the daemon's metrics page
// reads snapshots. What the engines already count (inferences completed / failed / cancelled, the loaded model) stays
// in EngineSlot and GET_SERVER_STATS; this class only adds what those do not keep.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace aisrv::server {

// A latency histogram with fixed buckets from 100 µs to 10 s (upper bounds, seconds), recorded in nanoseconds.
class LatencyHistogram {
 public:
  static constexpr size_t kBuckets = 16;
  // Upper bounds in nanoseconds; one more bucket (+Inf) holds what is above the last.
  static constexpr std::array<uint64_t, kBuckets> kUpperBoundsNs = {
      100'000,     250'000,     500'000,       1'000'000,     2'500'000,     5'000'000,
      10'000'000,  25'000'000,  50'000'000,    100'000'000,   250'000'000,   500'000'000,
      1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};

  struct Snapshot {
    std::array<uint64_t, kBuckets + 1> buckets{};  // per bucket (not cumulative); the last is +Inf
    uint64_t count = 0;                            // the sum of `buckets` (consistent with them)
    uint64_t sum_ns = 0;
  };

  void observe_ns(uint64_t ns);
  Snapshot snapshot() const;

 private:
  std::array<std::atomic<uint64_t>, kBuckets + 1> buckets_{};
  std::atomic<uint64_t> sum_ns_{0};
};

// One engine's latencies.
struct EngineMetrics {
  // Request received -> its turn on the engine began: every request that waited in the engine's queue and ran.
  LatencyHistogram queue_wait;
  // The backend's invoke of every completed inference (requests, chain targets, acquire streams).
  LatencyHistogram compute;
  // For requests whose inference completed: request received -> answer ready, minus queue wait and compute. It is the
  // server's own work around the inference (decoding the request, copying inputs into and outputs out of the
  // engine, encoding the answer, chained engines' inferences), not the time on the wire.
  LatencyHistogram transfer;
};

// Sessions and payload bytes of one transport ("unix", "tcp", "usb", "spi", "local", "internal", …).
struct TransportMetrics {
  std::string name;
  std::atomic<uint64_t> sessions_opened{0};
  std::atomic<int64_t> sessions_open{0};
  std::atomic<uint64_t> request_bytes{0};   // request payload bytes received (headers not counted)
  std::atomic<uint64_t> response_bytes{0};  // response payload bytes answered (also those sent straight from a tensor)
};

class ServerMetrics {
 public:
  // At most this many distinct transport names; further ones share the entry "other".
  static constexpr size_t kMaxTransports = 15;
  // Status words are OKAY (0) or one error bit; one counter for OKAY and one per bit.
  static constexpr size_t kStatusSlots = 33;

  explicit ServerMetrics(size_t engines);
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  EngineMetrics& engine(size_t number) { return *engines_[number]; }
  const EngineMetrics& engine(size_t number) const { return *engines_[number]; }
  size_t engine_count() const { return engines_.size(); }

  // The counters of transport `name`, created on first use (lock-free once it exists).
  TransportMetrics& transport(std::string_view name);
  // Every transport seen so far, in order of first use.
  std::vector<const TransportMetrics*> transports() const;

  // One answered request with this status word.
  void note_answer(uint32_t status);
  // Answers by status: slot 0 is OKAY, slot 1 + b is bit b (the lowest error bit of a word with several).
  uint64_t answers(size_t slot) const { return answers_[slot].load(std::memory_order_relaxed); }
  static size_t status_slot(uint32_t status);
  // The status word a slot stands for (0 for OKAY).
  static uint32_t slot_status(size_t slot) { return slot == 0 ? 0u : 1u << (slot - 1); }

 private:
  std::vector<std::unique_ptr<EngineMetrics>> engines_;
  std::array<std::atomic<uint64_t>, kStatusSlots> answers_{};
  // Append-only: entries are written before `transport_count_` publishes them.
  std::array<TransportMetrics, kMaxTransports + 1> transports_{};
  std::atomic<size_t> transport_count_{0};
  std::mutex add_mu_;  // adding a transport (rare)
};

}  // namespace aisrv::server
