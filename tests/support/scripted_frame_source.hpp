// Test double (tests only): a frame source that plays a script of camera buffers through the real bad-frame decision
// and conversion (sensors::decode_buffer), and can stall — wait inside grab() until the test releases it or a timeout
// passes, as a camera that stopped delivering. A good buffer's converted pixels are handed over as raw bytes (the
// test models take flat inputs), so a test sees exactly what the conversion made.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "aisrv/sensors/frame_source.hpp"

namespace aisrv::test {

class ScriptedFrameSource final : public sensors::FrameSource {
 public:
  struct Step {
    sensors::BufferFormat format;
    bool flags_error = false;
    std::vector<uint8_t> data;
    bool stall = false;  // wait for release() (or the timeout) instead of delivering
  };

  // The last step repeats once the script is used up.
  ScriptedFrameSource(std::deque<Step> script, std::chrono::milliseconds stall_timeout)
      : script_(std::move(script)), timeout_(stall_timeout) {}

  std::string describe() const override { return "scripted"; }

  Status grab(const protocol::TensorInfo& input, sensors::SensorFrame& out) override {
    Step step;
    {
      std::unique_lock lock(mu_);
      if (script_.empty()) return make_error(Errc::sensor_error, "scripted: no step");
      step = script_.size() > 1 ? std::move(script_.front()) : script_.front();
      if (script_.size() > 1) script_.pop_front();
      ++grabs_;
      if (step.stall) {
        stalling_ = true;
        cv_.notify_all();
        const bool released = cv_.wait_for(lock, timeout_, [&] { return released_; });
        stalling_ = false;
        released_ = false;
        if (!released) return make_error(Errc::sensor_error, "scripted: no frame within {} ms (the camera stalled)",
                                         timeout_.count());
        step = release_step_;
      }
    }
    out.what = describe();
    auto st = sensors::decode_buffer(step.format, step.flags_error, step.data, out.picture, "scripted");
    if (!st) {
      if (st.error().code == Errc::sensor_error) bad_.fetch_add(1);
      return st;
    }
    out.bytes = std::move(out.picture.pixels);
    out.picture = {};
    out.bytes.resize(input.bytes);
    std::lock_guard lock(mu_);
    last_bytes_ = out.bytes.data();
    return ok();
  }
  // Where the last good grab's bytes are stored (the acquisition adopts them as the input tensor: no copy).
  const void* last_bytes() const {
    std::lock_guard lock(mu_);
    return last_bytes_;
  }

  uint64_t bad_frames() const override { return bad_.load(); }

  // Waits until a grab stalls; true when it does within `within`.
  bool wait_stalling(std::chrono::milliseconds within) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, within, [&] { return stalling_; });
  }
  // The stalled grab delivers `step`.
  void release(Step step) {
    std::lock_guard lock(mu_);
    release_step_ = std::move(step);
    released_ = true;
    cv_.notify_all();
  }
  uint64_t grabs() const {
    std::lock_guard lock(mu_);
    return grabs_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Step> script_;
  std::chrono::milliseconds timeout_;
  bool stalling_ = false, released_ = false;
  Step release_step_;
  uint64_t grabs_ = 0;
  const void* last_bytes_ = nullptr;
  std::atomic<uint64_t> bad_{0};
};

}  // namespace aisrv::test
