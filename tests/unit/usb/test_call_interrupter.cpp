// aisrv tests — phy/usb CallInterrupter, which ends the USB session thread's blocking endpoint read when the host
// resets the link: here the blocking call is a read() on an empty pipe. An abort must end exactly the call that was
// in progress — the I/O thread handles it, rearms and blocks again at once, as the USB session does, and that next
// call must not be interrupted (a stray EINTR there took the USB link down in CI).
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

#include "call_interrupter.hpp"

using namespace aisrv::phy::usb;
using namespace std::chrono_literals;

namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { REQUIRE(::pipe(fd) == 0); }
  ~Pipe() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
};

const int kSignal = SIGRTMIN + 5;

}  // namespace

TEST_CASE("an abort ends the call in progress, and only that one") {
  auto created = CallInterrupter::create(kSignal);
  REQUIRE(created.ok());
  CallInterrupter& in = **created;
  Pipe p;
  constexpr int kRounds = 300;
  std::atomic<int> cancelled{0}, refused{0}, stray{0}, calls{0};
  std::atomic<bool> stop{false};
  std::thread io([&] {
    while (!stop.load()) {
      if (!in.begin()) {  // aborted between calls: the command is dropped
        refused.fetch_add(1);
        in.rearm();
        continue;
      }
      calls.fetch_add(1);
      char byte = 0;
      const ssize_t n = ::read(p.fd[0], &byte, 1);
      const int err = errno;
      in.end();
      if (n == 1) continue;  // the test's wake-up byte
      REQUIRE(err == EINTR);
      if (in.aborted()) {
        cancelled.fetch_add(1);
        in.rearm();  // the command boundary: straight into the next blocking read
      } else {
        stray.fetch_add(1);
      }
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    while (calls.load() <= round) std::this_thread::sleep_for(100us);  // a call began after the last abort
    std::this_thread::sleep_for(200us);
    in.abort(2000ms);
  }
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (cancelled.load() + refused.load() < kRounds && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  stop.store(true);
  in.shut(2000ms);
  io.join();
  CHECK(stray.load() == 0);
  CHECK(cancelled.load() + refused.load() >= kRounds);
  MESSAGE(cancelled.load(), " reads interrupted, ", refused.load(), " refused before they began");
}

TEST_CASE("an abort between calls refuses the next one until rearm; shut is for good") {
  auto created = CallInterrupter::create(kSignal);
  REQUIRE(created.ok());
  CallInterrupter& in = **created;
  CHECK(!in.aborted());
  CHECK(in.begin());
  in.end();
  in.abort(10ms);  // no call in progress: returns at once
  CHECK(in.aborted());
  CHECK(!in.begin());
  in.rearm();
  CHECK(!in.aborted());
  CHECK(in.begin());
  in.end();
  in.shut(10ms);
  CHECK(in.is_shut());
  in.rearm();
  CHECK(in.aborted());
  CHECK(!in.begin());
}

TEST_CASE("a call that completes is not disturbed") {
  auto created = CallInterrupter::create(kSignal);
  REQUIRE(created.ok());
  CallInterrupter& in = **created;
  Pipe p;
  REQUIRE(::write(p.fd[1], "x", 1) == 1);
  REQUIRE(in.begin());
  char byte = 0;
  CHECK(::read(p.fd[0], &byte, 1) == 1);
  in.end();
  CHECK(byte == 'x');
  CHECK(!in.aborted());
}
