// aisrv VM test (guest side) — the flash layer on a real Linux MTD device (/dev/mtd0 from the mtdram module):
// MtdFlash geometry from MEMGETINFO and the FlashDevice contract on it, the model store created on it
// (`mtd:/dev/mtd0`), models written, the device reopened, everything verified, journal compaction, and power cuts
// at every program/erase operation of an update (FaultFlash over the real MTD device), each checked after reopening
// the node. Runs inside the QEMU guest only (tests/vm/flash/guest.sh); the MTD node comes from AISRV_VM_MTD.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <random>

#include "aisrv/flash/format.hpp"
#include "aisrv/flash/mtd_device.hpp"
#include "aisrv/flash/open.hpp"
#include "aisrv/flash/store.hpp"
#include "flash/fault_flash.hpp"

using namespace aisrv;
using namespace aisrv::flash;

namespace {

std::string node() {
  const char* n = std::getenv("AISRV_VM_MTD");
  return n && *n ? n : "/dev/mtd0";
}

std::unique_ptr<MtdFlash> open_mtd() {
  auto d = MtdFlash::open(node(), false);
  REQUIRE_MESSAGE(d.ok(), (d.ok() ? "" : d.error().what()));
  return std::move(*d);
}

std::vector<uint8_t> model(size_t size, uint64_t seed) {
  std::vector<uint8_t> b(size);
  std::mt19937_64 rng(seed);
  for (auto& c : b) c = static_cast<uint8_t>(rng());
  if (size >= 8) b[4] = 'T', b[5] = 'F', b[6] = 'L', b[7] = '3';
  return b;
}

// Whole-device snapshot and restore (erase + program), to repeat a scenario from the same state.
std::vector<uint8_t> snapshot(FlashDevice& d) {
  std::vector<uint8_t> b(d.geometry().size);
  REQUIRE(d.read(0, b).ok());
  return b;
}
void restore(FlashDevice& d, const std::vector<uint8_t>& b) {
  const uint32_t eb = d.geometry().erase_block;
  std::vector<uint8_t> cur(eb);
  for (uint64_t at = 0; at < b.size(); at += eb) {
    REQUIRE(d.read(at, cur).ok());
    if (std::equal(cur.begin(), cur.end(), b.begin() + static_cast<long>(at))) continue;
    REQUIRE(d.erase(at, eb).ok());
    REQUIRE(d.program(at, std::span(b).subspan(at, eb)).ok());
  }
}

}  // namespace

TEST_CASE("MTD device: geometry from MEMGETINFO, erase, NOR program rule, bounds") {
  auto d = open_mtd();
  const auto& g = d->geometry();
  MESSAGE(d->name() << ": " << describe(g));
  CHECK(validate(g).ok());
  CHECK(g.size >= 1024 * 1024);
  const uint64_t last = g.size - g.erase_block;
  REQUIRE(d->erase(last, g.erase_block).ok());
  CHECK(*d->is_erased(last, g.erase_block));
  const std::vector<uint8_t> a{0xF0, 0x0F, 0x33, 0xCC};
  REQUIRE(d->program(last, a).ok());
  std::vector<uint8_t> back(4);
  REQUIRE(d->read(last, back).ok());
  CHECK(back == a);
  const std::vector<uint8_t> up{0xF1, 0x0F, 0x33, 0xCC};
  auto refused = d->program(last, up);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("would set bits from 0 to 1") != std::string::npos);
  REQUIRE(d->read(last, back).ok());
  CHECK(back == a);
  CHECK_FALSE(d->erase(last + 1, g.erase_block).ok());
  CHECK_FALSE(d->read(g.size - 2, back).ok());
  REQUIRE(d->erase(last, g.erase_block).ok());
  CHECK(*d->is_erased(last, g.erase_block));
  auto bad = MtdFlash::open("/dev/null", true);
  CHECK_FALSE(bad.ok());
}

TEST_CASE("store on mtd:/dev/mtd0: format a blank chip, write, reopen, verify, compact") {
  {
    auto d = open_mtd();
    REQUIRE(d->erase(0, d->geometry().size).ok());  // a blank chip
  }
  OpenOptions o;
  o.format_blank = true;
  o.format.clients = 16;
  std::map<uint32_t, std::vector<uint8_t>> current;
  {
    auto s = open_store("mtd:" + node(), o);
    REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().what()));
    CHECK(s->formatted);
    for (uint32_t c : {0u, 1u, 5u, 15u}) {
      current[c] = model(100'000 + c * 1000, c);
      auto e = s->store->write_model(c, fmt::format("m{}", c), current[c]);
      REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.error().what()));
    }
  }
  {
    auto s = open_store("mtd:" + node(), {});
    REQUIRE(s.ok());
    CHECK_FALSE(s->formatted);
    for (const auto& [c, m] : current) CHECK(*s->store->read_model(c) == m);
    // Enough small updates to fill the active journal block and compact it at least once.
    const uint32_t per_block = s->store->superblock().records_per_block();
    for (uint32_t i = 0; i < per_block + 8; ++i) {
      const uint32_t c = (i % 2) ? 5u : 1u;
      current[c] = model(3000 + i, 1000 + i);
      auto e = s->store->write_model(c, fmt::format("u{}", i), current[c]);
      REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.error().what()));
    }
    CHECK(s->store->journal_stats().compactions >= 1);
  }
  auto s = open_store("mtd:" + node(), {});
  REQUIRE(s.ok());
  for (const auto& [c, m] : current) {
    CHECK(*s->store->read_model(c) == m);
    CHECK(s->store->verify(c).ok());
  }
  CHECK(s->store->notes().empty());
  MESSAGE("store on " << s->device->name() << ": " << describe(s->device->geometry()) << ", "
                      << s->store->journal_stats().next_seq - 1 << " records written");
}

TEST_CASE("power cut at every operation of an update, on the real MTD device") {
  auto base_dev = open_mtd();
  REQUIRE(base_dev->erase(0, base_dev->geometry().size).ok());
  const auto a = model(70'000, 1), b1 = model(90'000, 2), b2 = model(95'000, 3), c = model(40'000, 4);
  const auto b3 = model(80'000, 5), b4 = model(85'000, 6);
  {
    auto s = ModelStore::format(*base_dev, {4});
    REQUIRE(s.ok());
    REQUIRE((*s)->write_model(0, "a", a).ok());
    REQUIRE((*s)->write_model(1, "b1", b1).ok());
    REQUIRE((*s)->write_model(2, "c", c).ok());
    REQUIRE((*s)->write_model(1, "b2", b2).ok());
    REQUIRE((*s)->write_model(1, "b3", b3).ok());  // b1's blocks are free but dirty: the update erases first
  }
  const auto base = snapshot(*base_dev);
  // Dry run: the operations of the update.
  std::vector<test::OpRecord> log;
  {
    test::FaultFlash f(*base_dev, {});
    auto s = ModelStore::open(f);
    REQUIRE(s.ok());
    REQUIRE((*s)->write_model(1, "b4", b4).ok());
    log = f.log();
  }
  REQUIRE(std::any_of(log.begin(), log.end(), [](const test::OpRecord& r) { return r.erase; }));
  int cuts = 0;
  for (uint64_t k = 1; k <= log.size(); ++k) {
    for (int variant = 0; variant < 4; ++variant) {
      restore(*base_dev, base);
      test::FaultPlan plan{k, variant == 0 ? test::Tear::complete : test::Tear::partial, -1,
                           variant == 1 ? 0.05 : variant == 2 ? 0.5 : 0.95, k * 10 + static_cast<uint64_t>(variant)};
      {
        test::FaultFlash f(*base_dev, plan);
        auto s = ModelStore::open(f);
        REQUIRE(s.ok());
        CHECK_FALSE((*s)->write_model(1, "b4", b4).ok());
        REQUIRE(f.power_lost());
      }
      // Reopen the node from scratch, as after a reboot.
      auto dev = open_mtd();
      auto s = ModelStore::open(*dev);
      INFO("cut at op " << k << " variant " << variant);
      REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().what()));
      auto m1 = (*s)->read_model(1);
      REQUIRE_MESSAGE(m1.ok(), (m1.ok() ? "" : m1.error().what()));
      CHECK((*m1 == b3 || *m1 == b4));
      CHECK(*(*s)->read_model(0) == a);
      CHECK(*(*s)->read_model(2) == c);
      for (uint32_t cl = 0; cl < 3; ++cl) {
        const auto e = *(*s)->entry(cl);
        for (uint8_t sl = 0; sl < 2; ++sl)
          if (e.slots[sl].used()) CHECK((*s)->verify(cl, sl).ok());
      }
      ++cuts;
    }
  }
  MESSAGE("power cuts on " << node() << ": " << log.size() << " operations, " << cuts << " cut states checked");
}

int main(int argc, char** argv) {
  doctest::Context ctx(argc, argv);
  const int rc = ctx.run();
  std::printf("%s: vm_flash_mtd (doctest exit %d)\n", rc == 0 ? "PASS" : "FAIL", rc);
  return rc;
}
