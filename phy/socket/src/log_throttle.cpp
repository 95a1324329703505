// aisrv phy/socket — per-peer rate limit for connection log lines.
#include "log_throttle.hpp"

#include <fmt/format.h>

#include <vector>

namespace aisrv::phy {

namespace {
std::string summary(const std::string& peer, size_t left_out, std::chrono::milliseconds interval,
                    const std::string& last) {
  return fmt::format("{}: {} more connection log line(s) left out in the last {} s; the last: {}", peer, left_out,
                     interval.count() / 1000.0, last);
}
}  // namespace

void LogThrottle::line(const std::string& peer, const std::string& text, const Sink& sink, Clock::time_point now) {
  std::unique_lock lock(mu_);
  auto [it, fresh] = windows_.try_emplace(peer);
  Window& w = it->second;
  if (fresh || now - w.start >= interval_) {
    const std::string left = w.left_out ? summary(peer, w.left_out, interval_, w.last) : std::string();
    w = Window{now, 0, 0, {}};
    if (!left.empty()) {
      lock.unlock();
      sink(left);
      lock.lock();
    }
  }
  Window& cur = windows_[peer];
  if (cur.written < burst_) {
    ++cur.written;
    lock.unlock();
    sink(text);
    return;
  }
  ++cur.left_out;
  ++suppressed_total_;
  cur.last = text;
}

void LogThrottle::flush(const Sink& sink, Clock::time_point now) {
  std::vector<std::string> out;
  {
    std::lock_guard lock(mu_);
    for (auto it = windows_.begin(); it != windows_.end();) {
      Window& w = it->second;
      if (now - w.start < interval_) {
        ++it;
        continue;
      }
      if (w.left_out)
        out.push_back(summary(it->first, w.left_out, interval_, w.last));
      it = windows_.erase(it);  // a quiet peer's window is forgotten: the map stays as small as the active peers
    }
  }
  for (const auto& l : out) sink(l);
}

size_t LogThrottle::suppressed_total() const {
  std::lock_guard lock(mu_);
  return suppressed_total_;
}

}  // namespace aisrv::phy
