// aisrv interpreter — the failed-AUTH backoff per peer address and for the whole server.
#include "auth_throttle.hpp"

#include <algorithm>

namespace aisrv::server {

namespace {
double seconds(AuthThrottle::Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

Status AuthThrottle::admit(const std::string& address, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (now - window_start_ < std::chrono::seconds(1) && window_failures_ >= kFailuresPerSecond)
    return make_error(Errc::denied, "too many failed AUTH attempts on this server ({} in the last second); try again "
                                    "in {:.1f} s",
                      window_failures_, seconds(window_start_ + std::chrono::seconds(1) - now));
  auto it = records_.find(address);
  if (it != records_.end() && now < it->second.next_try)
    return make_error(Errc::denied, "{} failed AUTH attempt(s) from {}; the next is allowed in {:.1f} s",
                      it->second.failures, address, seconds(it->second.next_try - now));
  return ok();
}

void AuthThrottle::failed(const std::string& address, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (now - window_start_ >= std::chrono::seconds(1)) {
    window_start_ = now;
    window_failures_ = 0;
  }
  ++window_failures_;
  if (records_.size() >= kMaxAddresses && !records_.count(address))
    std::erase_if(records_, [&](const auto& kv) { return now - kv.second.last_failure > std::chrono::minutes(10); });
  Record& r = records_[address];
  r.failures = std::min<uint32_t>(r.failures + 1, 64);
  const auto delay = std::min<Clock::duration>(kFirstDelay * (int64_t{1} << std::min<uint32_t>(r.failures - 1, 20)),
                                               kMaxDelay);
  r.next_try = now + delay;
  r.last_failure = now;
}

void AuthThrottle::succeeded(const std::string& address) {
  std::lock_guard lock(mu_);
  records_.erase(address);
}

}  // namespace aisrv::server
