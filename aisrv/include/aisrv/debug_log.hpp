// aisrv interpreter — the debug-log ring buffer of one engine (or of the server): the last N lines, each stamped
// with seconds since the server started. GET_DEBUG_LOG returns its tail. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
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

class DebugLog {
 public:
  // `prefix` names the owner in the daemon's own log ("engine 0", "server"); `sink` may be null.
  DebugLog(std::string prefix, std::shared_ptr<spdlog::logger> sink, std::chrono::steady_clock::time_point epoch,
           size_t capacity);

  void add(std::string_view line);
  // The last `n` lines (all when n == 0), oldest first, joined with '\n'.
  std::string tail(size_t n) const;
  size_t size() const;

 private:
  std::string prefix_;
  std::shared_ptr<spdlog::logger> sink_;
  std::chrono::steady_clock::time_point epoch_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::deque<std::string> lines_;
};

}  // namespace aisrv::server
