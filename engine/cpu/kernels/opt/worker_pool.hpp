// aisrv CPU engine, optimised kernels — the worker pool of one kernel backend: `threads - 1` threads started with
// the backend (never per inference) plus the calling thread. run() hands out the parts of one operator through an
// atomic counter and returns when all are done; idle workers sleep on a condition variable (no spinning). A part
// knows which participant runs it (0 = the caller), so a kernel can give each participant its own scratch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace aisrv::engine::cpu::opt {

class WorkerPool {
 public:
  using Part = std::function<void(size_t part, size_t participant)>;

  explicit WorkerPool(size_t threads);  // threads >= 1; 1 starts no thread
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Participants: the caller plus the workers.
  size_t size() const { return workers_.size() + 1; }

  // Runs fn(part, participant) for every part in [0, parts); returns when every part has finished. Called from one
  // thread at a time (the engine's); with one participant or one part, runs inline.
  void run(size_t parts, const Part& fn);

 private:
  void work(size_t participant);
  void take_parts(size_t participant);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  uint64_t generation_ = 0;  // bumped for every run(); guarded by mu_
  bool stop_ = false;
  size_t busy_ = 0;          // workers still inside the current run
  const Part* fn_ = nullptr;
  size_t parts_ = 0;
  std::atomic<size_t> next_{0};
};

}  // namespace aisrv::engine::cpu::opt
