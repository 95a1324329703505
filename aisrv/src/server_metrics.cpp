// aisrv interpreter — lock-free monitoring instruments (histograms, answer and transport counters).
#include "aisrv/server_metrics.hpp"

#include <algorithm>
#include <bit>

namespace aisrv::server {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
}

void LatencyHistogram::observe_ns(uint64_t ns) {
  const auto& b = kUpperBoundsNs;
  const size_t i = static_cast<size_t>(std::lower_bound(b.begin(), b.end(), ns) - b.begin());  // ns <= bound
  buckets_[i].fetch_add(1, kRelaxed);
  sum_ns_.fetch_add(ns, kRelaxed);
}

LatencyHistogram::Snapshot LatencyHistogram::snapshot() const {
  Snapshot s;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    s.buckets[i] = buckets_[i].load(kRelaxed);
    s.count += s.buckets[i];
  }
  s.sum_ns = sum_ns_.load(kRelaxed);
  return s;
}

ServerMetrics::ServerMetrics(size_t engines) {
  for (size_t i = 0; i < engines; ++i) engines_.push_back(std::make_unique<EngineMetrics>());
  transports_[kMaxTransports].name = "other";
}

TransportMetrics& ServerMetrics::transport(std::string_view name) {
  size_t n = transport_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i)
    if (transports_[i].name == name) return transports_[i];
  std::lock_guard lock(add_mu_);
  n = transport_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i)
    if (transports_[i].name == name) return transports_[i];
  if (n == kMaxTransports) return transports_[kMaxTransports];
  transports_[n].name = std::string(name);
  transport_count_.store(n + 1, std::memory_order_release);
  return transports_[n];
}

std::vector<const TransportMetrics*> ServerMetrics::transports() const {
  std::vector<const TransportMetrics*> out;
  const size_t n = transport_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) out.push_back(&transports_[i]);
  const auto& other = transports_[kMaxTransports];
  if (other.sessions_opened.load(kRelaxed) != 0 || other.request_bytes.load(kRelaxed) != 0) out.push_back(&other);
  return out;
}

size_t ServerMetrics::status_slot(uint32_t status) {
  return status == 0 ? 0 : 1 + static_cast<size_t>(std::countr_zero(status));
}

void ServerMetrics::note_answer(uint32_t status) { answers_[status_slot(status)].fetch_add(1, kRelaxed); }

}  // namespace aisrv::server
