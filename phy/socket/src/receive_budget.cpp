// aisrv phy/socket — the receive budget: global, per-peer and reserved shares of request bytes in flight.
#include "receive_budget.hpp"

#include <algorithm>

namespace aisrv::phy {

ReceiveBudget::ReceiveBudget(uint64_t total, uint64_t per_peer)
    : total_(total), per_peer_(per_peer == 0 ? total / 2 : std::min(per_peer, total)) {}

Status ReceiveBudget::take(const std::string& peer, uint64_t bytes) {
  if (bytes == 0) return ok();
  std::lock_guard lock(mu_);
  uint64_t& mine = by_peer_[peer];
  if (mine + bytes > per_peer_) {
    const uint64_t had = mine;
    if (mine == 0) by_peer_.erase(peer);
    return make_error(Errc::limit,
                      "a request of {} payload bytes would take the bytes {} is sending to {}; one peer's share is {} "
                      "(aisrvd --max-receive-memory-per-peer)",
                      bytes, peer, had + bytes, per_peer_);
  }
  const bool small = bytes <= small_request();
  const uint64_t ceiling = small ? total_ : total_ - reserve();
  if (held_ + bytes > ceiling) {
    const uint64_t had = held_;
    if (mine == 0) by_peer_.erase(peer);
    return make_error(Errc::limit,
                      "a request of {} payload bytes would take the bytes being received on all connections to {}; "
                      "the limit is {} (aisrvd --max-receive-memory){}",
                      bytes, had + bytes, ceiling,
                      small ? "" : fmt::format(", of which the last {} are kept for requests up to {} bytes", reserve(),
                                               small_request()));
  }
  mine += bytes;
  held_ += bytes;
  return ok();
}

void ReceiveBudget::give_back(const std::string& peer, uint64_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(mu_);
  held_ -= bytes;
  auto it = by_peer_.find(peer);
  if (it == by_peer_.end()) return;
  it->second -= bytes;
  if (it->second == 0) by_peer_.erase(it);
}

uint64_t ReceiveBudget::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

uint64_t ReceiveBudget::held_by(const std::string& peer) const {
  std::lock_guard lock(mu_);
  auto it = by_peer_.find(peer);
  return it == by_peer_.end() ? 0 : it->second;
}

}  // namespace aisrv::phy
