// aisrv phy/usb (private) — lets one thread end another thread's blocking system call (a FunctionFS endpoint read):
// a thread-directed signal whose handler does nothing (no SA_RESTART), so the call returns EINTR. abort() signals
// only the call that was in progress when it was asked, repeating until that call has returned (the signal may land
// just before the call starts) — never a later call the I/O thread began after it had handled the abort.
#pragma once

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "aisrv/protocol/result.hpp"

namespace aisrv::phy::usb {

class CallInterrupter {
 public:
  // Installs the do-nothing handler of `signal` (process-wide; the same for every interrupter using the signal).
  static Result<std::unique_ptr<CallInterrupter>> create(int signal);

  // I/O thread: about to make a blocking call; false (make no call) while aborted or after shut().
  bool begin();
  // I/O thread: the call returned.
  void end();
  // Any thread: begin() is refused until rearm(); the call in progress, if any, is interrupted. Returns once that
  // call has returned, or after `patience`.
  void abort(std::chrono::milliseconds patience);
  // abort() for good: rearm() no longer clears it.
  void shut(std::chrono::milliseconds patience);
  // I/O thread, at a command boundary after it handled an abort: begin() works again (unless shut).
  void rearm();

  bool aborted() const;
  bool is_shut() const;

 private:
  explicit CallInterrupter(int signal) : signal_(signal) {}
  void interrupt(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds patience);

  int signal_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool aborted_ = false;
  bool shut_ = false;
  bool in_call_ = false;
  uint64_t calls_ = 0;  // calls begun so far: tells the call abort() aims at from any later one
  pthread_t thread_{};
};

}  // namespace aisrv::phy::usb
