// aisrv CPU engine, optimised kernels — the worker pool (worker_pool.hpp).
#include "worker_pool.hpp"

namespace aisrv::engine::cpu::opt {

namespace {
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

WorkerPool::WorkerPool(size_t threads, uint64_t min_parallel_work) : min_work_(min_parallel_work) {
  for (size_t i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void WorkerPool::take_parts(size_t participant) {
  for (size_t part = next_.fetch_add(1); part < parts_; part = next_.fetch_add(1)) {
    (*fn_)(part, participant);
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void WorkerPool::run(size_t parts, const Part& fn, uint64_t work) {
  if (parts == 0) return;
  if (workers_.empty() || parts == 1 || work < min_work_) {
    for (size_t part = 0; part < parts; ++part) fn(part, 0);
    return;
  }
  bool wake;
  while (true) {
    std::unique_lock lock(mu_);
    // A worker that joined the previous run late may still be looking for a part of it: the run's state changes
    // only when none is (workers join under this lock, so none can join that run from here on).
    if (active_.load(std::memory_order_acquire) != 0) {
      lock.unlock();
      relax();
      continue;
    }
    fn_ = &fn;
    parts_ = parts;
    next_.store(0);
    done_.store(0);
    generation_.fetch_add(1, std::memory_order_release);
    wake = sleeping_ > 0;
    break;
  }
  if (wake) wake_.notify_all();
  take_parts(0);
  // Finished when every part is done and no worker that joined is still inside take_parts(). Workers that have not
  // woken up yet are not waited for: when they do, the parts are gone and they go back to sleep.
  auto finished = [&] {
    return done_.load(std::memory_order_acquire) == parts && active_.load(std::memory_order_acquire) == 0;
  };
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (!finished() && std::chrono::steady_clock::now() < until) relax();
  if (!finished()) {
    std::unique_lock lock(mu_);
    finished_.wait(lock, finished);
  }
}

void WorkerPool::work(size_t participant) {
  uint64_t seen = 0;
  while (true) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (generation_.load(std::memory_order_acquire) == seen && !stop_.load() &&
           std::chrono::steady_clock::now() < until)
      relax();
    {
      std::unique_lock lock(mu_);
      ++sleeping_;
      wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      --sleeping_;
      if (stop_.load()) return;
      seen = generation_.load();
      active_.fetch_add(1, std::memory_order_acq_rel);  // joined this run (under the lock: see run())
    }
    take_parts(participant);
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mu_);  // the caller is either polling or waiting with this lock released
      finished_.notify_one();
    }
  }
}

}  // namespace aisrv::engine::cpu::opt
