// Test double: output GPIO lines that record what they were asked to do (held, levels, how often set), and can be
// told to refuse the request like a line another consumer holds.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "aisrv/sensors/gpio_lines.hpp"

namespace aisrv::test {

struct GpioRecord {
  std::mutex mu;
  bool held = false;
  std::vector<uint8_t> levels;
  int sets = 0;
  bool busy = false;  // request() fails as EBUSY would
  std::vector<uint8_t> idle;  // the lines' idle levels (GpioLines::idle); empty: low
};

class RecordingGpio final : public sensors::GpioLines {
 public:
  RecordingGpio(size_t lines, std::shared_ptr<GpioRecord> rec) : lines_(lines), rec_(std::move(rec)) {
    rec_->levels.assign(lines, 0);
  }
  std::string describe() const override { return "gpio:test"; }
  size_t count() const override { return lines_; }
  Status request() override {
    std::lock_guard l(rec_->mu);
    if (rec_->busy) return make_error(Errc::denied, "gpio:test: line 0 is in use by 'other'");
    rec_->held = true;
    rec_->levels = idle_locked();  // requested at the idle level, as the kernel lines are
    return ok();
  }
  std::vector<uint8_t> idle() const override {
    std::lock_guard l(rec_->mu);
    return idle_locked();
  }
  void release() override {
    std::lock_guard l(rec_->mu);
    rec_->held = false;
  }
  bool held() const override {
    std::lock_guard l(rec_->mu);
    return rec_->held;
  }
  Status set(std::span<const uint8_t> levels) override {
    std::lock_guard l(rec_->mu);
    if (!rec_->held) return make_error(Errc::not_supported, "not held");
    rec_->levels.assign(levels.begin(), levels.end());
    ++rec_->sets;
    return ok();
  }

 private:
  std::vector<uint8_t> idle_locked() const {
    return rec_->idle.size() == lines_ ? rec_->idle : std::vector<uint8_t>(lines_, 0);
  }
  size_t lines_;
  std::shared_ptr<GpioRecord> rec_;
};

}  // namespace aisrv::test
