// aisrv phy/usb (private) — interrupting one blocking call of another thread with a thread-directed signal.
#include "call_interrupter.hpp"

#include <signal.h>

#include <cerrno>
#include <cstring>

namespace aisrv::phy::usb {

namespace {
extern "C" void ignore_signal(int) {}
}  // namespace

Result<std::unique_ptr<CallInterrupter>> CallInterrupter::create(int signal) {
  // A handler that does nothing, without SA_RESTART: the signal only makes a blocking call return EINTR.
  struct sigaction sa {};
  sa.sa_handler = ignore_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  if (sigaction(signal, &sa, nullptr) != 0)
    return make_error(Errc::internal, "cannot install the handler of signal {}: {}", signal, std::strerror(errno));
  return std::unique_ptr<CallInterrupter>(new CallInterrupter(signal));
}

bool CallInterrupter::begin() {
  std::lock_guard lock(mu_);
  if (aborted_) return false;
  in_call_ = true;
  ++calls_;
  thread_ = pthread_self();
  return true;
}

void CallInterrupter::end() {
  std::lock_guard lock(mu_);
  in_call_ = false;
  cv_.notify_all();
}

void CallInterrupter::abort(std::chrono::milliseconds patience) {
  std::unique_lock lock(mu_);
  aborted_ = true;
  interrupt(lock, patience);
}

void CallInterrupter::shut(std::chrono::milliseconds patience) {
  std::unique_lock lock(mu_);
  aborted_ = shut_ = true;
  interrupt(lock, patience);
}

void CallInterrupter::interrupt(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds patience) {
  // Only the call in progress now: once it returned, the I/O thread may handle the abort, rearm and begin another
  // call before this thread wakes — a signal then would end that one, which nobody asked to end.
  const uint64_t target = calls_;
  const auto until = std::chrono::steady_clock::now() + patience;
  while (in_call_ && calls_ == target && std::chrono::steady_clock::now() < until) {
    pthread_kill(thread_, signal_);
    cv_.wait_for(lock, std::chrono::milliseconds(5));
  }
}

void CallInterrupter::rearm() {
  std::lock_guard lock(mu_);
  if (!shut_) aborted_ = false;
}

bool CallInterrupter::aborted() const {
  std::lock_guard lock(mu_);
  return aborted_;
}

bool CallInterrupter::is_shut() const {
  std::lock_guard lock(mu_);
  return shut_;
}

}  // namespace aisrv::phy::usb
