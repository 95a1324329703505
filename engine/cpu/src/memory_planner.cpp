// aisrv CPU engine — greedy arena planner (see memory_planner.hpp).
#include "memory_planner.hpp"

#include <algorithm>
#include <numeric>

namespace aisrv::engine::cpu {

namespace {

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

bool lifetimes_overlap(const BufferRequest& a, const BufferRequest& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

MemoryPlan plan_memory(std::span<const BufferRequest> requests, size_t alignment) {
  MemoryPlan plan;
  const size_t n = requests.size();
  plan.offsets.assign(n, 0);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
    return requests[a].first < requests[b].first;
  });

  std::vector<size_t> placed;  // indices of placed requests
  struct Interval {
    size_t begin, end;
  };
  std::vector<Interval> busy;
  for (size_t idx : order) {
    const BufferRequest& r = requests[idx];
    const size_t size = align_up(r.bytes, alignment);
    plan.naive_bytes += size;
    busy.clear();
    for (size_t p : placed)
      if (lifetimes_overlap(r, requests[p]))
        busy.push_back({plan.offsets[p], plan.offsets[p] + align_up(requests[p].bytes, alignment)});
    std::sort(busy.begin(), busy.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
    size_t candidate = 0;
    for (const Interval& b : busy) {
      if (candidate + size <= b.begin) break;  // fits in the gap before b
      candidate = std::max(candidate, b.end);
    }
    plan.offsets[idx] = candidate;
    plan.arena_bytes = std::max(plan.arena_bytes, candidate + size);
    placed.push_back(idx);
  }

  // Lower bound: the most memory alive at any one operator (sweep over lifetime start/end events).
  int32_t horizon = 0;
  for (const BufferRequest& r : requests) horizon = std::max(horizon, r.last);
  std::vector<int64_t> delta(static_cast<size_t>(horizon) + 2, 0);
  for (const BufferRequest& r : requests) {
    const auto size = static_cast<int64_t>(align_up(r.bytes, alignment));
    delta[static_cast<size_t>(r.first)] += size;
    delta[static_cast<size_t>(r.last) + 1] -= size;
  }
  int64_t live = 0;
  for (int64_t d : delta) {
    live += d;
    plan.peak_live_bytes = std::max(plan.peak_live_bytes, static_cast<size_t>(live));
  }
  return plan;
}

}  // namespace aisrv::engine::cpu
