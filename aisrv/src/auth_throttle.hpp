// aisrv interpreter (private) — slows down token guessing. After a failed AUTH a peer address waits before its next
// attempt, twice as long after each further failure (0.1 s, 0.2 s, ... up to 30 s), whatever connection it uses; and
// the whole server takes at most kFailuresPerSecond failed attempts a second (so binding many loopback addresses
// does not multiply the rate). A good token clears the address's record. Attempts made while waiting are refused
// without looking at the token.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "aisrv/protocol/result.hpp"

namespace aisrv::server {

class AuthThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr uint32_t kFailuresPerSecond = 20;
  static constexpr auto kFirstDelay = std::chrono::milliseconds(100);
  static constexpr auto kMaxDelay = std::chrono::seconds(30);
  static constexpr size_t kMaxAddresses = 4096;  // beyond, addresses quiet for 10 min are forgotten

  // Errc::denied saying how long to wait, when `address` may not try now.
  Status admit(const std::string& address, Clock::time_point now = Clock::now());
  void failed(const std::string& address, Clock::time_point now = Clock::now());
  void succeeded(const std::string& address);

 private:
  struct Record {
    uint32_t failures = 0;
    Clock::time_point next_try{}, last_failure{};
  };
  std::mutex mu_;
  std::unordered_map<std::string, Record> records_;
  Clock::time_point window_start_{};
  uint32_t window_failures_ = 0;
};

}  // namespace aisrv::server
