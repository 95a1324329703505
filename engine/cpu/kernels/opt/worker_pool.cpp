// aisrv CPU engine, optimised kernels — the worker pool (worker_pool.hpp).
#include "worker_pool.hpp"

namespace aisrv::engine::cpu::opt {

WorkerPool::WorkerPool(size_t threads) {
  for (size_t i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void WorkerPool::take_parts(size_t participant) {
  for (size_t part = next_.fetch_add(1); part < parts_; part = next_.fetch_add(1)) (*fn_)(part, participant);
}

void WorkerPool::run(size_t parts, const Part& fn) {
  if (parts == 0) return;
  if (workers_.empty() || parts == 1) {
    for (size_t part = 0; part < parts; ++part) fn(part, 0);
    return;
  }
  {
    std::lock_guard lock(mu_);
    fn_ = &fn;
    parts_ = parts;
    next_.store(0);
    busy_ = workers_.size();
    ++generation_;
  }
  wake_.notify_all();
  take_parts(0);
  std::unique_lock lock(mu_);
  finished_.wait(lock, [&] { return busy_ == 0; });
  fn_ = nullptr;
}

void WorkerPool::work(size_t participant) {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    take_parts(participant);
    bool last;
    {
      std::lock_guard lock(mu_);
      last = --busy_ == 0;
    }
    if (last) finished_.notify_one();
  }
}

}  // namespace aisrv::engine::cpu::opt
