// aisrv CPU engine, optimised kernels — the worker pool of one kernel backend: `threads - 1` threads started with
// the backend (never per inference) plus the calling thread. run() hands out the parts of one operator through an
// atomic counter and returns when all are done, without waiting for workers that have not woken up by then (the
// caller takes the parts itself; a late worker finds none left). Between operators a worker polls for the next run
// for a short, bounded time (kSpin: the operators of one inference follow each other within microseconds, and a
// condition variable's wake-up costs more than a small operator), then sleeps on a condition variable — an idle
// engine uses no processor time. A part knows which participant runs it (0 = the caller), so a kernel can give each
// participant its own scratch.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace aisrv::engine::cpu::opt {

class WorkerPool {
 public:
  using Part = std::function<void(size_t part, size_t participant)>;
  static constexpr std::chrono::microseconds kSpin{200};

  // threads >= 1 (1 starts no thread); runs with less work than `min_parallel_work` stay on the caller.
  explicit WorkerPool(size_t threads, uint64_t min_parallel_work = kMinParallelWork);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Participants: the caller plus the workers.
  size_t size() const { return workers_.size() + 1; }

  // Runs fn(part, participant) for every part in [0, parts); returns when every part has finished. Called from one
  // thread at a time (the engine's); with one participant, one part, or `work` (multiply-accumulates, or another
  // measure of the same size) below the pool's minimum, runs inline on the caller.
  void run(size_t parts, const Part& fn, uint64_t work = UINT64_MAX);

  // Less work than this is not worth handing out (a hand-over costs about a microsecond).
  static constexpr uint64_t kMinParallelWork = 64 * 1024;

 private:
  void work(size_t participant);
  void take_parts(size_t participant);

  uint64_t min_work_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  std::atomic<uint64_t> generation_{0};  // bumped (under mu_) for every run()
  std::atomic<bool> stop_{false};
  size_t sleeping_ = 0;                   // workers waiting on wake_; guarded by mu_
  std::atomic<size_t> active_{0};         // workers that joined a run and may still take one of its parts
  // The current run; written under mu_ while no worker is active, read by the active workers.
  const Part* fn_ = nullptr;
  size_t parts_ = 0;
  std::atomic<size_t> next_{0};           // the next part to hand out
  std::atomic<size_t> done_{0};           // parts finished
};

}  // namespace aisrv::engine::cpu::opt
