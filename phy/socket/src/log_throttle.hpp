// aisrv phy/socket (private) — per-peer rate limit for connection log lines. A peer that connects and closes in a
// loop would otherwise write a line per connection (31 MB in 10 s from four processes): each peer key gets `burst`
// lines per `interval`; the lines beyond are counted, and one summary line per peer and interval says how many were
// left out and what the last one was.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace aisrv::phy {

class LogThrottle {
 public:
  using Sink = std::function<void(const std::string&)>;
  using Clock = std::chrono::steady_clock;

  LogThrottle(size_t burst, std::chrono::milliseconds interval) : burst_(burst), interval_(interval) {}

  // Writes `line` through `sink` unless `peer` already had its `burst` lines in this interval.
  void line(const std::string& peer, const std::string& line, const Sink& sink, Clock::time_point now = Clock::now());
  // Writes the summary of every peer whose interval ended with lines left out (the sweeper calls this).
  void flush(const Sink& sink, Clock::time_point now = Clock::now());
  size_t suppressed_total() const;

 private:
  struct Window {
    Clock::time_point start;
    size_t written = 0, left_out = 0;
    std::string last;
  };

  const size_t burst_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mu_;
  std::map<std::string, Window> windows_;
  size_t suppressed_total_ = 0;
};

}  // namespace aisrv::phy
