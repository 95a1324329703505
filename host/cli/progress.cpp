// aisrv CLI — the progress bar (progress.hpp).
#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace aisrv::cli {

ProgressBar::ProgressBar(bool enabled, std::string label, Unit unit)
    : enabled_(enabled && isatty(STDERR_FILENO)), label_(std::move(label)), unit_(unit) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(uint64_t done, uint64_t total) {
  if (!enabled_ || total == 0) return;
  last_done_ = done;
  last_total_ = total;
  const auto now = std::chrono::steady_clock::now();
  if (done < total && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(done, total);
}

void ProgressBar::draw(uint64_t done, uint64_t total) {
  const double f = static_cast<double>(done) / static_cast<double>(total);
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(f * kWidth);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
  char rate_text[48];
  if (unit_ == Unit::bytes)
    std::snprintf(rate_text, sizeof rate_text, "%.1f MiB/s", rate / (1024.0 * 1024.0));
  else
    std::snprintf(rate_text, sizeof rate_text, "%llu/%llu %.1f/s", static_cast<unsigned long long>(done),
                  static_cast<unsigned long long>(total), rate);
  char left[32] = "";
  if (rate > 0 && done < total)
    std::snprintf(left, sizeof left, " %.0f s left", static_cast<double>(total - done) / rate);
  std::fprintf(stderr, "\r%s [%s%s] %3d%% %s%s\x1b[K", label_.c_str(), std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(), static_cast<int>(f * 100), rate_text,
               left);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (!drawn_) return;
  draw(last_done_, last_total_);
  std::fputc('\n', stderr);
  drawn_ = false;
}

}  // namespace aisrv::cli
