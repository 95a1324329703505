// aisrv interpreter — debug-log ring buffer.
#include "aisrv/debug_log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "aisrv/protocol/limits.h"

namespace aisrv::server {

DebugLog::DebugLog(std::string prefix, std::shared_ptr<spdlog::logger> sink,
                   std::chrono::steady_clock::time_point epoch, size_t capacity)
    : prefix_(std::move(prefix)), sink_(std::move(sink)), epoch_(epoch), capacity_(capacity ? capacity : 1) {}

void DebugLog::add(std::string_view line) {
  if (line.size() > AISRV_DEBUG_LOG_LINE_MAX) line = line.substr(0, AISRV_DEBUG_LOG_LINE_MAX);
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
  std::string stamped = fmt::format("[{:10.3f}] {}", t, line);
  // Keep lines single: a newline inside a message would split it on the wire.
  for (char& c : stamped)
    if (c == '\n' || c == '\r') c = ' ';
  if (sink_) sink_->info("{}: {}", prefix_, line);
  std::lock_guard lock(mu_);
  if (lines_.size() == capacity_) lines_.pop_front();
  lines_.push_back(std::move(stamped));
}

std::string DebugLog::tail(size_t n) const {
  std::lock_guard lock(mu_);
  const size_t count = (n == 0 || n > lines_.size()) ? lines_.size() : n;
  std::string out;
  for (size_t i = lines_.size() - count; i < lines_.size(); ++i) {
    out += lines_[i];
    out += '\n';
  }
  return out;
}

size_t DebugLog::size() const {
  std::lock_guard lock(mu_);
  return lines_.size();
}

}  // namespace aisrv::server
