// aisrv interpreter — debug-log ring buffer and the line clock.
#include "aisrv/debug_log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "aisrv/protocol/limits.h"

namespace aisrv::server {

std::string LogClock::stamp(std::string_view line) const {
  if (line.size() > AISRV_DEBUG_LOG_LINE_MAX) line = line.substr(0, AISRV_DEBUG_LOG_LINE_MAX);
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
  std::string stamped = fmt::format("[{:10.3f}] {}", t, line);
  // Keep lines single: a newline inside a message would split it on the wire.
  for (char& c : stamped)
    if (c == '\n' || c == '\r') c = ' ';
  return stamped;
}

std::vector<const LogLine*> merge_tail(const std::deque<LogLine>& a, const std::deque<LogLine>& b, size_t n,
                                       uint64_t after) {
  std::vector<const LogLine*> out;
  // Walk both from the newest end, taking the newer line each time, until n lines or the cursor.
  auto ia = a.rbegin(), ib = b.rbegin();
  while (n == 0 || out.size() < n) {
    const LogLine* next = nullptr;
    if (ia != a.rend() && (ib == b.rend() || ia->seq > ib->seq)) {
      next = &*ia++;
    } else if (ib != b.rend()) {
      next = &*ib++;
    } else {
      break;
    }
    if (next->seq <= after) break;
    out.push_back(next);
  }
  return {out.rbegin(), out.rend()};
}

DebugLog::DebugLog(std::string prefix, std::shared_ptr<spdlog::logger> sink, LogClock& clock, size_t capacity)
    : prefix_(std::move(prefix)), sink_(std::move(sink)), clock_(clock), capacity_(capacity ? capacity : 1) {}

void DebugLog::add(std::string_view line) {
  LogLine entry{clock_.next(), clock_.stamp(line)};
  if (sink_) sink_->info("{}: {}", prefix_, line.substr(0, AISRV_DEBUG_LOG_LINE_MAX));
  std::lock_guard lock(mu_);
  if (lines_.size() == capacity_) lines_.pop_front();
  lines_.push_back(std::move(entry));
}

std::string DebugLog::tail(size_t n) const {
  std::lock_guard lock(mu_);
  const size_t count = (n == 0 || n > lines_.size()) ? lines_.size() : n;
  std::string out;
  for (size_t i = lines_.size() - count; i < lines_.size(); ++i) {
    out += lines_[i].text;
    out += '\n';
  }
  return out;
}

size_t DebugLog::size() const {
  std::lock_guard lock(mu_);
  return lines_.size();
}

}  // namespace aisrv::server
