// aisrv benchmarks — how far apart two processors are: the round trip of a cache line between two threads pinned to
// them. A virtual machine's host may place two vCPUs on cores that share a last-level cache (about 100 ns on the
// AMD EPYC machine of issue 29) or on different core complexes (about 570 ns, and data the other core wrote read at a
// quarter of the speed), and it moves them while a benchmark runs; a thread pool's speed-up depends on which, so the
// threads benchmarks label each measurement with the round trip taken just before it.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

namespace aisrv::bench {

// Round trips at or below this count as "the processors share a cache" (measured: 90-150 ns when they do,
// 560-610 ns when they do not).
inline constexpr double kNearRoundTripNs = 250;

// The median, over 5 batches of `trips` round trips, of the mean round trip (ns) between processors `a` and `b`,
// each thread pinned (the caller's affinity is restored after). nullopt when either processor is not in the caller's
// affinity mask or pinning fails. Threads that poll on a or b (a pool's workers) compete with it: let them go idle
// first.
inline std::optional<double> core_round_trip_ns(int a = 0, int b = 1, int trips = 50) {
  cpu_set_t saved;
  if (sched_getaffinity(0, sizeof saved, &saved) != 0 || !CPU_ISSET(a, &saved) || !CPU_ISSET(b, &saved))
    return std::nullopt;
  auto pin = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  };
  if (!pin(a)) return std::nullopt;
  struct alignas(64) Line {
    std::atomic<int> value{0};
  };
  Line ping, pong;
  constexpr int kBatches = 5;
  const int total = kBatches * trips;
  std::atomic<bool> pinned{false}, failed{false};
  std::thread other([&] {
    if (!pin(b)) failed.store(true);
    pinned.store(true);
    for (int i = 1; i <= total && !failed.load(std::memory_order_relaxed); ++i) {
      while (ping.value.load(std::memory_order_acquire) != i) {}
      pong.value.store(i, std::memory_order_release);
    }
  });
  while (!pinned.load()) {}
  std::vector<double> means;
  for (int batch = 0, i = 1; batch < kBatches && !failed.load(); ++batch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < trips; ++k, ++i) {
      ping.value.store(i, std::memory_order_release);
      while (pong.value.load(std::memory_order_acquire) != i) {}
    }
    means.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / trips);
  }
  other.join();
  pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  if (failed.load() || means.empty()) return std::nullopt;
  std::sort(means.begin(), means.end());
  return means[means.size() / 2];
}

}  // namespace aisrv::bench
