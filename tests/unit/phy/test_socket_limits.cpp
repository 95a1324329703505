// Unit tests of the socket transport's fairness parts: the receive budget's three rules (total, per-peer share, the
// reserve for small requests) and the per-peer log throttle.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "log_throttle.hpp"
#include "receive_budget.hpp"

using namespace aisrv;
using phy::LogThrottle;
using phy::ReceiveBudget;

TEST_CASE("receive budget: one peer's share, the total, and the reserve for small requests") {
  constexpr uint64_t MiB = 1 << 20;
  ReceiveBudget b(512 * MiB, 0);  // per-peer: half
  CHECK(b.per_peer() == 256 * MiB);
  CHECK(b.reserve() == 64 * MiB);
  CHECK(b.small_request() == 4 * MiB);

  // One peer: four 64 MiB requests, the fifth is over its share.
  for (int i = 0; i < 4; ++i) REQUIRE(b.take("tcp peers", 64 * MiB).ok());
  auto over = b.take("tcp peers", 64 * MiB);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().code == Errc::limit);
  CHECK(over.error().message.find("--max-receive-memory-per-peer") != std::string::npos);

  // A second peer takes large requests up to the total minus the reserve (448 MiB).
  for (int i = 0; i < 3; ++i) REQUIRE(b.take("uid 1000", 64 * MiB).ok());
  auto large = b.take("uid 1000", 8 * MiB);
  REQUIRE_FALSE(large.ok());
  CHECK(large.error().message.find("kept for requests up to") != std::string::npos);
  // ... but a small request of a third peer still fits into the reserve.
  CHECK(b.take("uid 1001", 150 * 1024).ok());
  CHECK(b.held() == 448 * MiB + 150 * 1024);

  // Giving back frees the share.
  b.give_back("tcp peers", 64 * MiB);
  CHECK(b.held_by("tcp peers") == 192 * MiB);
  CHECK(b.take("tcp peers", 4 * MiB).ok());
  b.give_back("uid 1001", 150 * 1024);
  CHECK(b.held_by("uid 1001") == 0);
}

TEST_CASE("receive budget: a per-peer share above the total is the total; zero-byte requests always fit") {
  ReceiveBudget b(100, 1000);
  CHECK(b.per_peer() == 100);
  CHECK(b.take("a", 0).ok());
  CHECK(b.held() == 0);
}

TEST_CASE("log throttle: a burst per peer and interval, then one summary line") {
  LogThrottle t(3, std::chrono::milliseconds(1000));
  std::vector<std::string> out;
  auto sink = [&](const std::string& l) { out.push_back(l); };
  const auto t0 = LogThrottle::Clock::time_point{} + std::chrono::hours(1);
  for (int i = 0; i < 100; ++i) t.line("uid 7", "line " + std::to_string(i), sink, t0);
  t.line("uid 8", "other peer", sink, t0);
  CHECK(out.size() == 4);  // 3 of uid 7, 1 of uid 8
  CHECK(t.suppressed_total() == 97);
  t.flush(sink, t0 + std::chrono::milliseconds(500));  // interval not over
  CHECK(out.size() == 4);
  t.flush(sink, t0 + std::chrono::milliseconds(1000));
  REQUIRE(out.size() == 5);
  CHECK(out.back().find("uid 7: 97 more") != std::string::npos);
  CHECK(out.back().find("line 99") != std::string::npos);
  // A new interval starts afresh.
  t.line("uid 7", "again", sink, t0 + std::chrono::milliseconds(1500));
  CHECK(out.back() == "again");
}
