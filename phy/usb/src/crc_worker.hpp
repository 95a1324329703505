// aisrv phy/usb (private) — a helper thread that computes the CRC-32 of one part of a payload while the session thread
// does another part (the two are joined with crc32_combine): the device checks a large SET's trailer in about half
// the time on a machine with a second core idle at that moment (the host waits for the status). Only where the bus
// is idle meanwhile: a GET answer's CRC is summed on the session thread alone while the payload is on the bus.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <thread>

#include "aisrv/protocol/usb_link.hpp"

namespace aisrv::phy::usb {

class CrcWorker {
 public:
  CrcWorker() : thread_([this] { loop(); }) {}
  ~CrcWorker() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  CrcWorker(const CrcWorker&) = delete;
  CrcWorker& operator=(const CrcWorker&) = delete;

  // CRC-32 of `data` (from 0): the first half here, the second on the worker, combined.
  uint32_t crc(std::span<const uint8_t> data) {
    if (data.size() < kParallelFrom) return protocol::usb::crc32(0, data);
    const size_t half = data.size() / 2;
    {
      std::lock_guard lock(mu_);
      job_ = data.subspan(half);
      busy_ = true;
    }
    cv_.notify_all();
    const uint32_t first = protocol::usb::crc32(0, data.first(half));
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !busy_; });
    return protocol::usb::crc32_combine(first, result_, data.size() - half);
  }

  static constexpr size_t kParallelFrom = 128u << 10;  // below this a thread hand-off costs more than it saves

 private:
  void loop() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || (busy_ && !job_.empty()); });
      if (stop_) return;
      const auto job = job_;
      job_ = {};
      lock.unlock();
      const uint32_t r = protocol::usb::crc32(0, job);
      lock.lock();
      result_ = r;
      busy_ = false;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::span<const uint8_t> job_;
  uint32_t result_ = 0;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace aisrv::phy::usb
