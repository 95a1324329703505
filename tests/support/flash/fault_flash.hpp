// aisrv tests — FaultFlash: wraps a FlashDevice and cuts the power at the k-th mutating operation (program or erase,
// counted from 1). What the cut leaves behind models what a NOR chip can be left with:
//   Tear::none     operation k never started;
//   Tear::complete operation k finished, nothing after it;
//   Tear::partial  operation k stopped part-way:
//     program: pages (256 bytes, NOR page-program size) before the cut page are programmed, the cut page has a random
//              subset of its 1->0 transitions done (bits never go 0->1), later pages are untouched;
//     erase:   blocks before the cut block are erased, the cut block is a random mix of its old bits and 1s (some
//              cells erased, others not), later blocks are untouched.
// After the cut every operation fails with io_error, like a device that lost power. Reads never change state.
// Not modelled: cells that read differently from one read to the next (marginal charge); see docs/flash-format.md.
#pragma once

#include <random>
#include <vector>

#include "aisrv/flash/device.hpp"

namespace aisrv::test {

enum class Tear { none, complete, partial };

struct FaultPlan {
  uint64_t cut_at = 0;         // operation number to cut at (0 = never)
  Tear tear = Tear::complete;
  int64_t unit = -1;           // partial: page (program) or block (erase) index inside the operation; -1 = random
  double density = 0.5;        // partial: chance that each pending bit transition happened
  uint64_t seed = 1;
  uint32_t page = 256;         // NOR page-program size
};

struct OpRecord {
  bool erase = false;
  uint64_t offset = 0, length = 0;
};

class FaultFlash final : public flash::FlashDevice {
 public:
  FaultFlash(flash::FlashDevice& inner, const FaultPlan& plan)
      : FlashDevice(inner.geometry()), inner_(inner), plan_(plan), rng_(plan.seed) {}

  std::string name() const override { return "fault-injecting " + inner_.name(); }
  uint64_t ops() const { return ops_; }
  bool power_lost() const { return dead_; }
  const std::vector<OpRecord>& log() const { return log_; }
  // Units (pages or blocks) a partial tear can stop in, for operation `op` (1-based) of a previous run's log.
  static uint64_t units(const OpRecord& r, const flash::Geometry& g, uint32_t page) {
    if (r.erase) return r.length / g.erase_block;
    const uint64_t first = r.offset / page, last = (r.offset + r.length - 1) / page;
    return last - first + 1;
  }

 protected:
  Status do_read(uint64_t offset, std::span<uint8_t> out) override {
    if (dead_) return lost();
    return inner_.read(offset, out);
  }
  Status do_sync() override {
    if (dead_) return lost();
    return inner_.sync();
  }
  Status do_program(uint64_t offset, std::span<const uint8_t> data) override {
    if (dead_) return lost();
    log_.push_back({false, offset, data.size()});
    if (++ops_ != plan_.cut_at) return inner_.program(offset, data);
    dead_ = true;
    if (plan_.tear == Tear::complete) (void)inner_.program(offset, data);
    if (plan_.tear != Tear::partial) return lost();
    const uint64_t page = std::max<uint64_t>(plan_.page, geometry().write_size);
    const uint64_t pages = units(log_.back(), geometry(), static_cast<uint32_t>(page));
    const uint64_t cut = pick(pages);
    // Absolute page boundaries, clipped to the operation.
    const uint64_t page_begin = std::max<uint64_t>(offset, (offset / page + cut) * page);
    const uint64_t page_end = std::min<uint64_t>(offset + data.size(), page_begin - page_begin % page + page);
    if (page_begin > offset) (void)inner_.program(offset, data.subspan(0, page_begin - offset));
    std::vector<uint8_t> old(page_end - page_begin);
    (void)inner_.read(page_begin, old);
    std::bernoulli_distribution done(plan_.density);
    for (size_t i = 0; i < old.size(); ++i) {
      const uint8_t want = data[page_begin - offset + i];
      uint8_t v = old[i];
      for (int b = 0; b < 8; ++b) {
        const uint8_t m = static_cast<uint8_t>(1u << b);
        if ((v & m) && !(want & m) && done(rng_)) v = static_cast<uint8_t>(v & ~m);
      }
      old[i] = v;
    }
    (void)inner_.program(page_begin, old);
    return lost();
  }
  Status do_erase(uint64_t offset, uint64_t length) override {
    if (dead_) return lost();
    log_.push_back({true, offset, length});
    if (++ops_ != plan_.cut_at) return inner_.erase(offset, length);
    dead_ = true;
    if (plan_.tear == Tear::complete) (void)inner_.erase(offset, length);
    if (plan_.tear != Tear::partial) return lost();
    const uint32_t eb = geometry().erase_block;
    const uint64_t cut = pick(length / eb);
    if (cut > 0) (void)inner_.erase(offset, cut * eb);
    const uint64_t at = offset + cut * eb;
    std::vector<uint8_t> old(eb);
    (void)inner_.read(at, old);
    std::bernoulli_distribution done(plan_.density);
    for (auto& byte : old)
      for (int b = 0; b < 8; ++b)
        if (done(rng_)) byte = static_cast<uint8_t>(byte | (1u << b));
    (void)inner_.erase(at, eb);
    (void)inner_.program(at, old);
    return lost();
  }

 private:
  uint64_t pick(uint64_t n) {
    if (plan_.unit >= 0) return std::min<uint64_t>(static_cast<uint64_t>(plan_.unit), n - 1);
    return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_);
  }
  static Status lost() { return make_error(Errc::io_error, "power lost (fault injection)"); }

  flash::FlashDevice& inner_;
  FaultPlan plan_;
  std::mt19937_64 rng_;
  uint64_t ops_ = 0;
  bool dead_ = false;
  std::vector<OpRecord> log_;
};

}  // namespace aisrv::test
