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
  for (size_t part = next_.fetch_add(1); part < parts_; part = next_.fetch_add(1)) (*fn_)(part, participant);
}

void WorkerPool::run(size_t parts, const Part& fn, uint64_t work) {
  if (parts == 0) return;
  if (workers_.empty() || parts == 1 || work < min_work_) {
    for (size_t part = 0; part < parts; ++part) fn(part, 0);
    return;
  }
  bool wake;
  {
    std::lock_guard lock(mu_);
    fn_ = &fn;
    parts_ = parts;
    next_.store(0);
    busy_.store(workers_.size());
    generation_.fetch_add(1, std::memory_order_release);
    wake = sleeping_ > 0;
  }
  if (wake) wake_.notify_all();
  take_parts(0);
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (busy_.load(std::memory_order_acquire) != 0 && std::chrono::steady_clock::now() < until) relax();
  if (busy_.load(std::memory_order_acquire) != 0) {
    std::unique_lock lock(mu_);
    finished_.wait(lock, [&] { return busy_.load() == 0; });
  }
  fn_ = nullptr;
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
    }
    take_parts(participant);
    if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mu_);  // the caller is either polling busy_ or waiting with this lock released
      finished_.notify_one();
    }
  }
}

}  // namespace aisrv::engine::cpu::opt
