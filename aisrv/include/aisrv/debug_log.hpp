// aisrv interpreter — debug-log lines. A DebugLog is the ring buffer of lines every session of an engine (or of the
// server) may read: model loads, chain and stream events, failures not caused by one session. Lines caused by one
// session's command live in that session (aisrv/session.hpp) and only it reads them; both kinds carry a number from
// the server's LogClock, so GET_DEBUG_LOG can merge them in order. Each line is stamped with seconds since the server
// started. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace spdlog {
class logger;
}

namespace aisrv::server {

// Numbers and stamps lines: one per server, shared by its logs and sessions.
class LogClock {
 public:
  explicit LogClock(std::chrono::steady_clock::time_point epoch) : epoch_(epoch) {}
  uint64_t next() { return ++seq_; }
  // "[    12.345] line" with newlines flattened and the length capped (AISRV_DEBUG_LOG_LINE_MAX).
  std::string stamp(std::string_view line) const;
  std::chrono::steady_clock::time_point epoch() const { return epoch_; }

 private:
  std::chrono::steady_clock::time_point epoch_;
  std::atomic<uint64_t> seq_{0};
};

struct LogLine {
  uint64_t seq = 0;
  std::string text;  // stamped
};

// The last `n` lines of `a` and `b` merged by number (all when n == 0), only those numbered above `after`.
std::vector<const LogLine*> merge_tail(const std::deque<LogLine>& a, const std::deque<LogLine>& b, size_t n,
                                       uint64_t after);

class DebugLog {
 public:
  // `prefix` names the owner in the daemon's own log ("engine 0", "server"); `sink` may be null.
  DebugLog(std::string prefix, std::shared_ptr<spdlog::logger> sink, LogClock& clock, size_t capacity);

  void add(std::string_view line);
  // The last `n` lines (all when n == 0), oldest first, joined with '\n'.
  std::string tail(size_t n) const;
  size_t size() const;
  // Calls `fn(lines)` with the ring under its lock (merging with a session's lines).
  template <typename Fn>
  auto with_lines(Fn&& fn) const {
    std::lock_guard lock(mu_);
    return fn(lines_);
  }
  const std::string& prefix() const { return prefix_; }
  LogClock& clock() const { return clock_; }
  const std::shared_ptr<spdlog::logger>& sink() const { return sink_; }

 private:
  std::string prefix_;
  std::shared_ptr<spdlog::logger> sink_;
  LogClock& clock_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::deque<LogLine> lines_;
};

}  // namespace aisrv::server
