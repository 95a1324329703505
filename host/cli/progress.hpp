// aisrv CLI — a one-line progress bar on stderr for long work (model upload, flash write/read, picture batches,
// benchmarks): redrawn in place at most 10 times a second with rate and time left; silent when stderr is not a
// terminal or under --json, so scripts and logs never see it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace aisrv::cli {

class ProgressBar {
 public:
  enum class Unit { bytes, items };
  // `enabled` false (e.g. --json) keeps it silent; it is also silent when stderr is not a terminal.
  ProgressBar(bool enabled, std::string label, Unit unit = Unit::bytes);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(uint64_t done, uint64_t total);
  // Ends the line (the last state stays visible).
  void finish();
  bool active() const { return enabled_; }

 private:
  void draw(uint64_t done, uint64_t total);
  bool enabled_;
  std::string label_;
  Unit unit_;
  bool drawn_ = false;
  uint64_t last_done_ = 0, last_total_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace aisrv::cli
