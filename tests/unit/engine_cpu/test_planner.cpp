// aisrv tests — the greedy arena planner: buffers alive at the same time never overlap, buffers with disjoint
// lifetimes share memory, offsets are aligned, and the reported peak-live lower bound is right.
#include <doctest/doctest.h>

#include <random>

#include "memory_planner.hpp"

using namespace aisrv::engine::cpu;

namespace {

void check_no_overlap(const std::vector<BufferRequest>& r, const MemoryPlan& p, size_t alignment) {
  for (size_t i = 0; i < r.size(); ++i) {
    CHECK(p.offsets[i] % alignment == 0);
    CHECK(p.offsets[i] + r[i].bytes <= p.arena_bytes);
    for (size_t j = i + 1; j < r.size(); ++j) {
      const bool time = r[i].first <= r[j].last && r[j].first <= r[i].last;
      const bool space = p.offsets[i] < p.offsets[j] + r[j].bytes && p.offsets[j] < p.offsets[i] + r[i].bytes;
      CHECK_FALSE_MESSAGE((time && space && r[i].bytes && r[j].bytes), "buffers " << i << " and " << j);
    }
  }
}

}  // namespace

TEST_CASE("a chain reuses memory: each tensor lives from its producer to its reader") {
  // t0 -> op0 -> t1 -> op1 -> t2 -> op2 -> t3: at most two tensors alive at once.
  std::vector<BufferRequest> r = {{1000, 0, 0}, {1000, 0, 1}, {1000, 1, 2}, {1000, 2, 2}};
  const MemoryPlan p = plan_memory(r, 64);
  check_no_overlap(r, p, 64);
  CHECK(p.arena_bytes == 2 * 1024);
  CHECK(p.peak_live_bytes == 2 * 1024);
  CHECK(p.naive_bytes == 4 * 1024);
  CHECK(p.efficiency() == doctest::Approx(1.0));
}

TEST_CASE("a buffer alive for the whole run is never shared") {
  std::vector<BufferRequest> r = {{500, 0, 3}, {300, 0, 1}, {300, 2, 3}, {100, 1, 2}};
  const MemoryPlan p = plan_memory(r, 16);
  check_no_overlap(r, p, 16);
  CHECK(p.offsets[1] == p.offsets[2]);  // disjoint lifetimes, same size: same slot
  CHECK(p.arena_bytes == 512 + 304 + 112);
}

TEST_CASE("random lifetimes: never overlapping, never below the peak-live bound") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 50; ++round) {
    std::vector<BufferRequest> r;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const auto a = static_cast<int32_t>(rng() % 20), b = static_cast<int32_t>(rng() % 20);
      r.push_back({rng() % 5000, std::min(a, b), std::max(a, b)});
    }
    const MemoryPlan p = plan_memory(r, 64);
    check_no_overlap(r, p, 64);
    CHECK(p.arena_bytes >= p.peak_live_bytes);
    CHECK(p.arena_bytes <= p.naive_bytes);
  }
}
