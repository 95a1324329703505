// aisrv interpreter — an engine's round-robin work queue on a strand.
#include "engine_queue.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace aisrv::server {

EngineQueue::EngineQueue(boost::asio::thread_pool& pool)
    : strand_(boost::asio::make_strand(pool)), timer_(strand_) {}

bool EngineQueue::push(uint64_t owner, Job&& job) {
  std::lock_guard lock(mu_);
  return push_locked(owner, 0, std::move(job));
}

bool EngineQueue::push_held(uint64_t owner, uint64_t ticket, Job&& job) {
  std::lock_guard lock(mu_);
  return push_locked(owner, ticket, std::move(job));
}

bool EngineQueue::push_locked(uint64_t owner, uint64_t held, Job&& job) {
  if (closed_) return false;
  auto& q = jobs_[owner];
  const bool first = q.empty();
  q.push_back(Entry{std::move(job), held});
  ++depth_;
  if (first) make_ready_locked(owner);
  return true;
}

void EngineQueue::make_ready_locked(uint64_t owner) {
  auto it = jobs_.find(owner);
  if (it == jobs_.end() || it->second.empty() || it->second.front().held) return;
  if (std::find(ring_.begin(), ring_.end(), owner) == ring_.end()) ring_.push_back(owner);
  schedule_locked();
}

void EngineQueue::release(uint64_t owner, uint64_t ticket) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(owner);
  if (it == jobs_.end()) return;
  for (auto& e : it->second)
    if (e.held == ticket) {
      e.held = 0;
      make_ready_locked(owner);
      return;
    }
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
    job = std::move(it->second.front().job);
    it->second.pop_front();
    if (it->second.empty()) jobs_.erase(it);
    else if (!it->second.front().held) ring_.push_back(owner);  // its next job waits for everyone else's turn
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
  for (auto& e : it->second) out.push_back(std::move(e.job));
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
    for (auto& [owner, q] : jobs_)  // also the owners that wait for a held job (not in the ring)
      for (auto& e : q) out.push_back(std::move(e.job));
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
