// aisrv tests — a fault-injecting SPI master link: wraps another link (normally the simulated wire) and damages
// chosen transactions the way a real bus does: flipped bits on MOSI or MISO, a byte the slave missed or saw twice,
// a byte the master missed or saw twice, CS released mid-frame (the window splits into two transactions), or a
// transaction the slave never saw. Which transactions (on average one in N) and where in them come from a seeded
// generator: random like real interference, and reproducible.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "aisrv/client/spi_master.hpp"

namespace aisrv::test {

enum class SpiFault { none, flip_mosi, flip_miso, drop_mosi, dup_mosi, drop_miso, dup_miso, cs_glitch, lost };

inline const char* fault_name(SpiFault f) {
  switch (f) {
    case SpiFault::none: return "none";
    case SpiFault::flip_mosi: return "bit flip on MOSI";
    case SpiFault::flip_miso: return "bit flip on MISO";
    case SpiFault::drop_mosi: return "byte dropped on MOSI";
    case SpiFault::dup_mosi: return "byte duplicated on MOSI";
    case SpiFault::drop_miso: return "byte dropped on MISO";
    case SpiFault::dup_miso: return "byte duplicated on MISO";
    case SpiFault::cs_glitch: return "CS released mid-frame";
    case SpiFault::lost: return "transaction lost";
  }
  return "?";
}

class FaultyLink final : public client::SpiMasterLink {
 public:
  FaultyLink(std::unique_ptr<client::SpiMasterLink> inner, SpiFault fault, unsigned every, uint32_t seed = 1)
      : inner_(std::move(inner)), fault_(fault), every_(every), rng_(seed) {}

  void set_fault(SpiFault fault, unsigned every) {
    fault_ = fault;
    every_ = every;
  }
  unsigned injected() const { return injected_; }
  unsigned transactions() const { return count_; }
  // Called before each transaction with its number (1, 2, ...).
  std::function<void(unsigned)> before_transaction;

  uint16_t max_frame() const override { return inner_->max_frame(); }
  std::string describe() const override { return "faulty(" + inner_->describe() + ")"; }

 private:
  // One transaction on the inner link.
  std::vector<uint8_t> clock(const std::vector<uint8_t>& mosi) {
    std::vector<uint8_t> miso(mosi.size(), AISRV_SPI_FILLER);
    (void)inner_->transaction(mosi, miso);
    return miso;
  }

  // A CS window, clocked (and damaged) when CS is released.
  int transact(std::span<const uint8_t> window, std::vector<uint8_t>& miso) override {
    ++count_;
    if (before_transaction) before_transaction(count_);
    const std::vector<uint8_t> out(window.begin(), window.end());
    const size_t n = out.size();
    std::vector<uint8_t> in;
    const bool hit = fault_ != SpiFault::none && every_ && n > 1 &&
                     std::uniform_int_distribution<unsigned>(1, every_)(rng_) == 1;
    if (!hit) {
      in = clock(out);
    } else {
      ++injected_;
      const size_t k = std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
      const auto bit = static_cast<uint8_t>(1u << std::uniform_int_distribution<int>(0, 7)(rng_));
      auto mosi = out;
      switch (fault_) {
        case SpiFault::flip_mosi:
          mosi[k] ^= bit;
          in = clock(mosi);
          break;
        case SpiFault::flip_miso:
          in = clock(mosi);
          in[k] ^= bit;
          break;
        case SpiFault::drop_mosi:  // the slave missed a byte: it sees n-1, its MISO runs out one early
          mosi.erase(mosi.begin() + static_cast<std::ptrdiff_t>(k));
          in = clock(mosi);
          in.push_back(AISRV_SPI_FILLER);
          break;
        case SpiFault::dup_mosi:  // the slave saw a byte twice: n+1 bytes, the master keeps the first n of MISO
          mosi.insert(mosi.begin() + static_cast<std::ptrdiff_t>(k), mosi[k]);
          in = clock(mosi);
          in.resize(n);
          break;
        case SpiFault::drop_miso:
          in = clock(mosi);
          in.erase(in.begin() + static_cast<std::ptrdiff_t>(k));
          in.push_back(AISRV_SPI_FILLER);
          break;
        case SpiFault::dup_miso:
          in = clock(mosi);
          in.insert(in.begin() + static_cast<std::ptrdiff_t>(k), in[k]);
          in.resize(n);
          break;
        case SpiFault::cs_glitch: {  // CS high mid-frame: two transactions, the second starts at byte k
          const size_t cut = std::max<size_t>(k, 1);
          auto first = clock({mosi.begin(), mosi.begin() + static_cast<std::ptrdiff_t>(cut)});
          auto second = clock({mosi.begin() + static_cast<std::ptrdiff_t>(cut), mosi.end()});
          in = std::move(first);
          in.insert(in.end(), second.begin(), second.end());
          break;
        }
        case SpiFault::lost:
          in.assign(n, AISRV_SPI_FILLER);
          break;
        case SpiFault::none:
          break;
      }
    }
    if (std::getenv("AISRV_SPI_TRACE")) trace(hit, out, in);
    miso = std::move(in);
    return 0;
  }

  // AISRV_SPI_TRACE=1: one line per transaction (decoded headers) on stderr, for debugging a failing seed.
  void trace(bool hit, const std::vector<uint8_t>& mosi, const std::vector<uint8_t>& miso) const {
    aisrv_spi_request_t q{};
    aisrv_spi_reply_t r{};
    const bool qok = mosi.size() >= AISRV_SPI_HEADER_SIZE && mosi[0] == AISRV_SPI_MAGIC_REQUEST;
    const bool rok = miso.size() >= AISRV_SPI_HEADER_SIZE && miso[0] == AISRV_SPI_MAGIC_REPLY;
    if (qok) aisrv_spi_decode_request(mosi.data(), &q);
    if (rok) aisrv_spi_decode_reply(miso.data(), &r);
    std::fprintf(stderr,
                 "T%u%s n=%zu | MOSI type=%u seq=%u xfer=%u off=%u len=%u want=%u | MISO %s state=%02x seq=%u "
                 "err=%u xfer=%u off=%u len=%u total=%u\n",
                 count_, hit ? "*" : " ", mosi.size(), q.type, q.seq, q.xfer, q.offset, q.length, q.want,
                 rok ? "ok " : "bad", r.state, r.seq, r.error, r.xfer, r.offset, r.length, r.total);
  }

  std::unique_ptr<client::SpiMasterLink> inner_;
  SpiFault fault_;
  unsigned every_;
  std::mt19937 rng_;
  unsigned count_ = 0;
  unsigned injected_ = 0;
};

}  // namespace aisrv::test
