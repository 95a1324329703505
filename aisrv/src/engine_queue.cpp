// aisrv interpreter — an engine's round-robin work queue on a strand.
#include "engine_queue.hpp"

#include <boost/asio/post.hpp>

namespace aisrv::server {

EngineQueue::EngineQueue(boost::asio::thread_pool& pool)
    : strand_(boost::asio::make_strand(pool)), timer_(strand_) {}

bool EngineQueue::push(uint64_t owner, Job&& job) {
  std::lock_guard lock(mu_);
  if (closed_) return false;
  auto& q = jobs_[owner];
  if (q.empty()) ring_.push_back(owner);
  q.push_back(std::move(job));
  ++depth_;
  schedule_locked();
  return true;
}

void EngineQueue::schedule_locked() {
  if (scheduled_ || ring_.empty()) return;
  scheduled_ = true;
  boost::asio::post(strand_, [this] { run_one(); });
}

void EngineQueue::run_one() {
  Job job;
  {
    std::lock_guard lock(mu_);
    if (ring_.empty()) {  // everything was taken out meanwhile
      scheduled_ = false;
      idle_cv_.notify_all();
      return;
    }
    const uint64_t owner = ring_.front();
    ring_.pop_front();
    auto it = jobs_.find(owner);
    job = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) jobs_.erase(it);
    else ring_.push_back(owner);  // its next job waits for everyone else's turn
    --depth_;
    running_ = true;
  }
  job(false);
  std::lock_guard lock(mu_);
  running_ = false;
  scheduled_ = false;
  // One job per post: stream timers and other strands' handlers get their turn between jobs.
  schedule_locked();
  if (!scheduled_) idle_cv_.notify_all();
}

std::vector<EngineQueue::Job> EngineQueue::take(uint64_t owner) {
  std::vector<Job> out;
  std::lock_guard lock(mu_);
  auto it = jobs_.find(owner);
  if (it == jobs_.end()) return out;
  for (auto& j : it->second) out.push_back(std::move(j));
  depth_ -= it->second.size();
  jobs_.erase(it);
  std::erase(ring_, owner);
  if (depth_ == 0 && !running_) idle_cv_.notify_all();
  return out;
}

std::vector<EngineQueue::Job> EngineQueue::close() {
  std::vector<Job> out;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (uint64_t owner : ring_)
      for (auto& j : jobs_[owner]) out.push_back(std::move(j));
    jobs_.clear();
    ring_.clear();
    depth_ = 0;
    if (!running_) idle_cv_.notify_all();
  }
  cancel_timer();
  return out;
}

bool EngineQueue::idle() const {
  std::lock_guard lock(mu_);
  return depth_ == 0 && !running_;
}

size_t EngineQueue::depth() const {
  std::lock_guard lock(mu_);
  return depth_;
}

bool EngineQueue::wait_idle(std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_until(lock, deadline, [this] { return depth_ == 0 && !running_; });
}

void EngineQueue::push_after(uint64_t owner, std::chrono::milliseconds delay, Job job) {
  boost::asio::post(strand_, [this, owner, delay, job = std::move(job)]() mutable {
    timer_.expires_after(delay);
    timer_.async_wait([this, owner, job = std::move(job)](const boost::system::error_code& ec) mutable {
      if (!ec) push(owner, std::move(job));
    });
  });
}

void EngineQueue::cancel_timer() {
  boost::asio::post(strand_, [this] { timer_.cancel(); });
}

}  // namespace aisrv::server
