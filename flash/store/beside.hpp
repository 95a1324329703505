// aisrv flash — run_beside: start CPU work (hashing) on a second thread while the caller does device I/O (programs
// or the durability barrier), so the two overlap on a multi-core board. Where no thread can be started the work runs
// when its result is asked for, so the outcome is the same either way. The work must not touch the device.
#pragma once

#include <future>
#include <system_error>

namespace aisrv::flash::detail {

template <class F>
auto run_beside(F work) -> std::future<decltype(work())> {
  try {
    return std::async(std::launch::async, work);
  } catch (const std::system_error&) {
    return std::async(std::launch::deferred, work);
  }
}

}  // namespace aisrv::flash::detail
