// aisrv interpreter (private) — the work queue of one engine. Jobs come from many sessions; they run one at a time in
// the engine's turn (a strand of the server's worker pool), taken round robin across the sessions that have work:
// session A's fifth request does not run before session B's first. Jobs of one session run in the order they came.
// A session's jobs that have not started can be taken out (the session closed), and the queue can be closed
// (shutdown); a job taken out is run by the caller with `dropped = true`, so every submitted request is answered.
// A job may be pushed held (it waits for a camera frame grabbed outside the engine's turn): it and its session's
// later jobs wait, while other sessions' jobs run, until release().
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace aisrv::server {

class EngineQueue {
 public:
  using Job = std::function<void(bool dropped)>;

  explicit EngineQueue(boost::asio::thread_pool& pool);
  EngineQueue(const EngineQueue&) = delete;
  EngineQueue& operator=(const EngineQueue&) = delete;

  // Queues `job` for session `owner` (0: the server itself). False when the queue is closed: the job was not taken
  // (and not moved from).
  bool push(uint64_t owner, Job&& job);
  // Queues `job` held under `ticket` (non-zero, unique): it does not run before release(owner, ticket); the owner's
  // later jobs wait behind it. Held jobs count as queued (idle() is false). False when the queue is closed.
  bool push_held(uint64_t owner, uint64_t ticket, Job&& job);
  // Lets a held job run (in its turn). No effect when it was taken out or the queue closed meanwhile.
  void release(uint64_t owner, uint64_t ticket);
  // Takes out every job of `owner` that has not started (oldest first).
  std::vector<Job> take(uint64_t owner);
  // Refuses further jobs and takes out every job that has not started.
  std::vector<Job> close();
  // Nothing queued and nothing running.
  bool idle() const;
  size_t depth() const;
  // Waits until idle() or the deadline; true when idle.
  bool wait_idle(std::chrono::steady_clock::time_point deadline) const;

  // Queues `job` for `owner` after `delay` (stream pacing); one pending timer per queue, a new call replaces it.
  void push_after(uint64_t owner, std::chrono::milliseconds delay, Job job);
  void cancel_timer();

 private:
  void schedule_locked();
  void run_one();

  boost::asio::strand<boost::asio::thread_pool::executor_type> strand_;
  boost::asio::steady_timer timer_;
  mutable std::mutex mu_;
  mutable std::condition_variable idle_cv_;
  std::deque<uint64_t> ring_;  // sessions whose first queued job is runnable, in turn order
  struct Entry {
    Job job;
    uint64_t held = 0;  // ticket of a job that waits for release(); 0: runnable
  };
  bool push_locked(uint64_t owner, uint64_t held, Job&& job);
  void make_ready_locked(uint64_t owner);  // owner joins the ring when its first job is runnable
  std::unordered_map<uint64_t, std::deque<Entry>> jobs_;  // per session, in arrival order
  size_t depth_ = 0;
  bool scheduled_ = false;  // a run_one is posted or running
  bool running_ = false;    // a job runs now
  bool closed_ = false;
};

}  // namespace aisrv::server
