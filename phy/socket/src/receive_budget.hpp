// aisrv phy/socket (private) — the bytes of requests being received or run, shared fairly between peers. Each
// request's payload is taken from the budget when its length prefix arrives and given back when its answer is sent.
// Three rules (docs/security.md, "Limits"):
//   - all connections together hold at most `total` bytes (aisrvd --max-receive-memory);
//   - one peer (a Unix uid, or all TCP peers together) holds at most `per_peer` of them
//     (aisrvd --max-receive-memory-per-peer);
//   - the last eighth of `total` is kept for small requests (up to 1/16 of that eighth): a peer holding large
//     half-sent requests cannot make a small INFER of someone else fail.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "aisrv/protocol/result.hpp"

namespace aisrv::phy {

class ReceiveBudget {
 public:
  // `per_peer` 0: half of `total`.
  ReceiveBudget(uint64_t total, uint64_t per_peer);

  // Takes `bytes` for `peer`; Errc::limit naming the rule when the request does not fit.
  Status take(const std::string& peer, uint64_t bytes);
  void give_back(const std::string& peer, uint64_t bytes);

  uint64_t total() const { return total_; }
  uint64_t per_peer() const { return per_peer_; }
  uint64_t reserve() const { return total_ / 8; }
  // Requests of at most this many bytes may use the reserve.
  uint64_t small_request() const { return reserve() / 16; }
  uint64_t held() const;
  uint64_t held_by(const std::string& peer) const;

 private:
  const uint64_t total_, per_peer_;
  mutable std::mutex mu_;
  uint64_t held_ = 0;
  std::map<std::string, uint64_t> by_peer_;
};

}  // namespace aisrv::phy
