// aisrv tests — power-cut fault injection. Each scenario builds a store, runs one operation once to count its
// program/erase operations, then repeats it cutting the power at EVERY operation k: after op k completed, and
// inside op k at each page (program) or block (erase) it covers. After every cut the store is reopened from the raw
// bytes and the invariant is checked:
//   - it opens;
//   - every client's model is either its model before the operation or after it, byte-exact and hash-verified
//     (clients the operation does not touch: exactly their old model) — never garbage, never lost;
//   - every slot the catalogue still lists verifies (the catalogue never points at overwritten data);
//   - the store is usable again: a new update of the client succeeds and survives another reopen.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <optional>

#include "aisrv/flash/format.hpp"
#include "aisrv/flash/store.hpp"
#include "flash/fault_flash.hpp"
#include "flash_test_util.hpp"

using namespace aisrv;
using namespace aisrv::flash;
using aisrv::test::FaultFlash;
using aisrv::test::FaultPlan;
using aisrv::test::MemoryFlash;
using aisrv::test::Tear;

namespace {

using Model = std::optional<std::vector<uint8_t>>;

struct Scenario {
  std::string name;
  Geometry geometry = test::small_geometry();
  uint32_t clients = 4;
  std::function<void(ModelStore&)> setup;
  std::function<Status(ModelStore&)> action;
  std::map<uint32_t, Model> before, after;  // expected models (nullopt = none) for every client
  uint32_t subject = 0;                     // client the operation works on
  size_t max_units = 48;                    // partial tears sampled per operation (evenly spread)
  bool need_erase = false;                  // the scenario must contain erase operations
};

struct Totals {
  uint64_t runs = 0, cut_ops = 0;
};

std::map<uint32_t, Model> models_of(ModelStore& s) {
  std::map<uint32_t, Model> out;
  for (uint32_t c = 0; c < s.clients(); ++c) {
    auto r = s.read_model(c);
    if (r.ok()) out[c] = std::move(*r);
    else out[c] = std::nullopt;
  }
  return out;
}

std::string describe(const Model& m) {
  return m ? fmt::format("{} bytes xxh64 {:016x}", m->size(), format::xxh64(*m)) : std::string("no model");
}

void check_invariant(const Scenario& sc, MemoryFlash& mem, bool completed, const std::string& where) {
  INFO(where);
  auto opened = ModelStore::open(mem);
  REQUIRE_MESSAGE(opened.ok(), opened.error().what());
  auto& store = **opened;
  for (uint32_t c = 0; c < sc.clients; ++c) {
    auto r = store.read_model(c);
    if (!r.ok()) {
      // "No model" is only acceptable if the client had none before or has none after; corruption never is.
      REQUIRE_MESSAGE(r.error().code == Errc::no_model, r.error().what());
    }
    const Model got = r.ok() ? Model(std::move(*r)) : std::nullopt;
    const Model& b = sc.before.at(c);
    const Model& a = sc.after.at(c);
    INFO("client " << c << ": got " << describe(got) << ", before " << describe(b) << ", after " << describe(a));
    if (completed) CHECK(got == a);
    else CHECK((got == b || got == a));
    // Every slot the catalogue lists must verify.
    const auto e = *store.entry(c);
    for (uint8_t s = 0; s < 2; ++s)
      if (e.slots[s].used()) {
        auto v = store.verify(c, s);
        CHECK_MESSAGE(v.ok(), "client " << c << " slot " << slot_letter(s) << ": " << v.error().what());
      }
  }
  // Usable again: update the subject, reopen, read back.
  const auto fresh = test::make_model(1234, 0xBEEF, "tflite");
  auto w = store.write_model(sc.subject, "recovered", fresh);
  REQUIRE_MESSAGE(w.ok(), w.error().what());
  auto again = ModelStore::open(mem);
  REQUIRE_MESSAGE(again.ok(), again.error().what());
  CHECK(*(*again)->read_model(sc.subject) == fresh);
  for (uint32_t c = 0; c < sc.clients; ++c)
    if (c != sc.subject) {
      auto r = (*again)->read_model(c);
      const Model got = r.ok() ? Model(std::move(*r)) : std::nullopt;
      CHECK((got == sc.before.at(c) || got == sc.after.at(c)));
    }
}

Totals run_scenario(Scenario& sc) {
  Totals t;
  MemoryFlash base(sc.geometry);
  {
    auto store = test::format_store(base, sc.clients);
    sc.setup(*store);
    sc.before = models_of(*store);
  }
  // Dry run: count the operations, learn the expected result.
  std::vector<test::OpRecord> log;
  {
    auto mem = base.clone();
    FaultFlash fault(*mem, FaultPlan{});
    auto store = test::open_store(fault);
    auto st = sc.action(*store);
    REQUIRE_MESSAGE(st.ok(), st.error().what());
    log = fault.log();
    auto reopened = test::open_store(*mem);
    sc.after = models_of(*reopened);
  }
  REQUIRE(!log.empty());
  if (sc.need_erase)
    REQUIRE(std::any_of(log.begin(), log.end(), [](const test::OpRecord& r) { return r.erase; }));
  for (uint64_t k = 1; k <= log.size(); ++k) {
    const auto& op = log[k - 1];
    std::vector<FaultPlan> plans;
    plans.push_back(FaultPlan{k, Tear::complete});
    const uint64_t units = FaultFlash::units(op, sc.geometry, 256);
    const uint64_t step = std::max<uint64_t>(1, units / sc.max_units);
    for (uint64_t u = 0; u < units; u += step)
      plans.push_back(FaultPlan{k, Tear::partial, static_cast<int64_t>(u), 0.5, k * 7919 + u});
    // The extremes of a torn operation: almost nothing done, almost everything done.
    plans.push_back(FaultPlan{k, Tear::partial, -1, 0.02, k * 31});
    plans.push_back(FaultPlan{k, Tear::partial, static_cast<int64_t>(units - 1), 0.98, k * 37});
    // Random spots and densities.
    for (uint64_t r = 0; r < 8; ++r)
      plans.push_back(FaultPlan{k, Tear::partial, -1, 0.1 + 0.1 * static_cast<double>(r), k * 1000 + r});
    for (const auto& plan : plans) {
      auto mem = base.clone();
      Status result = ok();
      {
        FaultFlash fault(*mem, plan);
        auto store = ModelStore::open(fault);
        REQUIRE(store.ok());
        result = sc.action(**store);
        REQUIRE(fault.power_lost());
      }
      CHECK_FALSE(result.ok());
      check_invariant(sc, *mem, false,
                      fmt::format("{}: cut at op {}/{} ({} 0x{:x}+0x{:x}), tear {}, unit {}, density {}", sc.name, k,
                                  log.size(), op.erase ? "erase" : "program", op.offset, op.length,
                                  plan.tear == Tear::complete ? "complete" : "partial", plan.unit, plan.density));
      ++t.runs;
    }
    ++t.cut_ops;
  }
  // And without a cut the operation completes with the new state.
  auto mem = base.clone();
  {
    auto store = test::open_store(*mem);
    REQUIRE(sc.action(*store).ok());
  }
  check_invariant(sc, *mem, true, sc.name + ": no cut");
  const auto erases = std::count_if(log.begin(), log.end(), [](const test::OpRecord& r) { return r.erase; });
  MESSAGE(sc.name << ": " << log.size() << " operations (" << erases << " erases), each cut; " << t.runs
                  << " power-cut states checked");
  return t;
}

Status as_status(const Result<CatalogueEntry>& r) { return r.ok() ? ok() : Status(r.error()); }

const auto kA = test::make_model(5000, 101, "tflite");
const auto kB1 = test::make_model(6000, 102, "hef");
const auto kB2 = test::make_model(7000, 103, "hef");
const auto kC = test::make_model(3000, 104, "tflite");

void three_models(ModelStore& s) {
  REQUIRE(s.write_model(0, "a", kA).ok());
  REQUIRE(s.write_model(1, "b1", kB1).ok());
  REQUIRE(s.write_model(2, "c", kC).ok());
}

}  // namespace

TEST_CASE("power cut at every operation: replacing a model while other clients hold theirs") {
  Scenario sc;
  sc.name = "replace";
  sc.subject = 1;
  sc.setup = three_models;
  sc.action = [](ModelStore& s) { return as_status(s.write_model(1, "b2", kB2)); };
  run_scenario(sc);
}

TEST_CASE("power cut at every operation: second update (slot B -> A, reusing space)") {
  Scenario sc;
  sc.name = "second-update";
  sc.subject = 1;
  sc.setup = [](ModelStore& s) {
    three_models(s);
    REQUIRE(s.write_model(1, "b2", kB2).ok());
  };
  sc.action = [](ModelStore& s) { return as_status(s.write_model(1, "b3", test::make_model(6500, 105, "hef"))); };
  run_scenario(sc);
}

TEST_CASE("power cut at every operation: update into blocks an earlier model left dirty (erase first)") {
  Scenario sc;
  sc.name = "dirty-reuse";
  sc.subject = 1;
  sc.need_erase = true;
  sc.setup = [](ModelStore& s) {
    three_models(s);
    REQUIRE(s.write_model(1, "b2", kB2).ok());
    REQUIRE(s.write_model(1, "b3", test::make_model(6000, 108, "hef")).ok());  // b1's blocks are now free, dirty
  };
  sc.action = [](ModelStore& s) { return as_status(s.write_model(1, "b4", test::make_model(5900, 109, "hef"))); };
  run_scenario(sc);
}

TEST_CASE("power cut at every operation: first model of an empty client") {
  Scenario sc;
  sc.name = "first-model";
  sc.subject = 3;
  sc.setup = three_models;
  sc.action = [](ModelStore& s) { return as_status(s.write_model(3, "d", test::make_model(9000, 106))); };
  run_scenario(sc);
}

TEST_CASE("power cut at every operation: update whose commit compacts the journal") {
  Scenario sc;
  sc.name = "compaction";
  sc.subject = 1;
  sc.setup = [](ModelStore& s) {
    three_models(s);
    const auto small = test::make_model(100, 107);
    for (int i = 0; i < 100; ++i) {
      const auto st = s.journal_stats();
      const auto& b = st.blocks[st.active];
      if (b.used == b.capacity) break;
      REQUIRE(s.write_model(3, fmt::format("fill{}", i), small).ok());
    }
    const auto st = s.journal_stats();
    REQUIRE(st.blocks[st.active].used == st.blocks[st.active].capacity);
  };
  sc.action = [](ModelStore& s) { return as_status(s.write_model(1, "b2", kB2)); };
  run_scenario(sc);
}

TEST_CASE("power cut at every operation: update that must give up earlier models for space") {
  Scenario sc;
  sc.name = "space-release";
  sc.subject = 1;
  sc.need_erase = true;
  const auto big = [](uint64_t seed) { return test::make_model(8 * 4096 - 100, seed); };
  sc.setup = [&](ModelStore& s) {
    REQUIRE(s.write_model(0, "a1", big(1)).ok());
    REQUIRE(s.write_model(1, "b1", big(2)).ok());
    REQUIRE(s.write_model(0, "a2", big(3)).ok());
  };
  sc.action = [&](ModelStore& s) { return as_status(s.write_model(1, "b2", big(4))); };
  run_scenario(sc);
}

TEST_CASE("power cut at every operation: erasing a client's model") {
  Scenario sc;
  sc.name = "erase";
  sc.subject = 1;
  sc.need_erase = true;
  sc.setup = [](ModelStore& s) {
    three_models(s);
    REQUIRE(s.write_model(1, "b2", kB2).ok());
  };
  sc.action = [](ModelStore& s) { return s.erase(1); };
  run_scenario(sc);
}

TEST_CASE("power cut at every operation: abandoned chunked transfer leaves the old model") {
  Scenario sc;
  sc.name = "abandoned-transfer";
  sc.geometry = {1024 * 1024, 4096, 1};
  sc.subject = 1;
  sc.max_units = 12;
  sc.setup = three_models;
  const auto big = test::make_model(700 * 1024, 300);
  sc.action = [&](ModelStore& s) -> Status {
    UpdateInfo info;
    info.name = "never";
    info.sizes[0] = big.size();
    AISRV_TRY(s.begin_update(1, info));
    // 600 KiB of 700 in 64 KiB chunks: two program windows reach the flash, then the transfer stops.
    for (size_t off = 0; off < 600 * 1024; off += 64 * 1024)
      AISRV_TRY(s.write_chunk(1, SegmentKind::model, off, std::span(big).subspan(off, 64 * 1024)));
    return ok();  // no commit: the daemon restarts, the transfer is forgotten
  };
  run_scenario(sc);
}

TEST_CASE("power cut at every operation: 16-byte write granularity") {
  Scenario sc;
  sc.name = "write-size-16";
  sc.geometry = test::small_geometry(16);
  sc.subject = 1;
  sc.setup = three_models;
  sc.action = [](ModelStore& s) { return as_status(s.write_model(1, "b2", kB2)); };
  run_scenario(sc);
}

TEST_CASE("power cut at every operation: large model with parameters over several program windows") {
  Scenario sc;
  sc.name = "large-with-parameters";
  sc.geometry = {1024 * 1024, 4096, 1};
  sc.subject = 0;
  sc.max_units = 12;
  const auto big = test::make_model(600 * 1024, 200);
  const auto params = test::make_model(100 * 1024, 201, "raw");
  sc.setup = [](ModelStore& s) {
    REQUIRE(s.write_model(0, "small", kA).ok());
    REQUIRE(s.write_model(1, "other", kB1).ok());
  };
  sc.action = [&](ModelStore& s) { return as_status(s.write_model(0, "big", big, params)); };
  run_scenario(sc);
}
