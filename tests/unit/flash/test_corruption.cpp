// aisrv tests — corruption and hostile images. Bit flips in stored data are detected and reported while the other
// clients are still served; random flips anywhere never make a read return bytes that were not stored; bad images
// (erased, foreign or future version word, truncated, catalogue pointing outside the device, overlapping extents,
// inconsistent segments) are refused with a message naming the problem, and opening them writes nothing.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "aisrv/flash/file_device.hpp"
#include "aisrv/flash/format.hpp"
#include "aisrv/flash/open.hpp"
#include "aisrv/flash/store.hpp"
#include "flash_test_util.hpp"

using namespace aisrv;
using namespace aisrv::flash;
using aisrv::test::MemoryFlash;

namespace {

const auto kM0 = test::make_model(5000, 1);
const auto kM1a = test::make_model(6000, 2, "hef");
const auto kM1b = test::make_model(6100, 3, "hef");
const auto kM2 = test::make_model(4000, 4);

// Clients 0 and 2 hold one model, client 1 two (b is active, a the previous one).
std::unique_ptr<MemoryFlash> populated() {
  auto dev = std::make_unique<MemoryFlash>(test::small_geometry());
  auto s = test::format_store(*dev);
  REQUIRE(s->write_model(0, "m0", kM0).ok());
  REQUIRE(s->write_model(1, "m1a", kM1a).ok());
  REQUIRE(s->write_model(2, "m2", kM2).ok());
  REQUIRE(s->write_model(1, "m1b", kM1b).ok());
  return dev;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Opening must fail with `part` in the message and leave the device untouched.
void expect_refused(MemoryFlash& dev, const std::string& part) {
  const auto before = dev.bytes();
  const auto programs = dev.programs, erases = dev.erases;
  auto s = ModelStore::open(dev);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code == Errc::flash_error);
  CHECK_MESSAGE(contains(s.error().message, part), "message: " << s.error().message);
  CHECK(dev.bytes() == before);
  CHECK(dev.programs == programs);
  CHECK(dev.erases == erases);
}

// Programs a crafted (intact, checksummed) catalogue record at the next free journal position.
void inject(MemoryFlash& dev, const format::Record& r) {
  auto s = test::open_store(dev);
  const auto st = s->journal_stats();
  const auto& sb = s->superblock();
  const auto& b = st.blocks[st.active];
  REQUIRE(b.used < b.capacity);
  const uint64_t at = sb.block_offset(b.erase_block) + sb.journal_header_size + uint64_t{b.used} * sb.record_size;
  const auto bytes = format::encode(r);
  REQUIRE(dev.program(at, bytes).ok());
}

format::Record crafted(ModelStore& s, uint32_t client, uint64_t extent_offset, uint64_t extent_length) {
  format::Record r;
  r.seq = 1000;
  r.client = client;
  r.active = 0;
  r.slots[0].extent_offset = extent_offset;
  r.slots[0].extent_length = extent_length;
  r.slots[0].seq = 1000;
  r.slots[0].name = "crafted";
  r.slots[0].segments[0] = Segment{0, 100, 0};
  (void)s;
  return r;
}

void put_word(MemoryFlash& dev, uint32_t w) {
  for (int i = 0; i < 4; ++i) dev.bytes()[i] = static_cast<uint8_t>(w >> (8 * i));
}

}  // namespace

TEST_CASE("bit flip in a model: detected and reported, other clients still served") {
  auto dev = populated();
  const auto e1 = *test::open_store(*dev)->entry(1);
  const Slot& s = *e1.active_slot();
  dev->flip_bit((s.extent_offset + s.segment(SegmentKind::model).offset + 4 + 3000) * 8 + 5);
  auto store = test::open_store(*dev);
  auto r = store->read_model(1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::flash_error);
  CHECK(contains(r.error().message, "xxh64 mismatch"));
  CHECK(contains(r.error().message, "m1b"));
  CHECK_FALSE(store->verify(1).ok());
  CHECK(store->verify(1, e1.active == 0 ? 1 : 0).ok());  // the previous model is intact
  CHECK(*store->read_model(0) == kM0);
  CHECK(*store->read_model(2) == kM2);
  // Repairing it is an ordinary update.
  REQUIRE(store->write_model(1, "fixed", kM1b).ok());
  CHECK(*test::open_store(*dev)->read_model(1) == kM1b);
}

TEST_CASE("bit flip in the length prefix: detected") {
  auto dev = populated();
  const auto e0 = *test::open_store(*dev)->entry(0);
  const Slot& s = *e0.active_slot();
  dev->flip_bit((s.extent_offset + s.segment(SegmentKind::model).offset) * 8 + 9);
  auto r = test::open_store(*dev)->read_model(0);
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "length prefix"));
}

TEST_CASE("bit flip in a client's newest catalogue record: reported, that client falls back, others untouched") {
  auto dev = populated();
  auto s = test::open_store(*dev);
  const auto st = s->journal_stats();
  const auto& sb = s->superblock();
  // Client 1's second record is the 4th record written (position 3 of the active block).
  const uint64_t at = sb.block_offset(st.blocks[st.active].erase_block) + sb.journal_header_size + 3 * sb.record_size;
  dev->flip_bit((at + 40) * 8);
  auto store = test::open_store(*dev);
  const auto notes = store->notes();
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "unreadable record"));
  CHECK(*store->read_model(1) == kM1a);  // the previous record (and its model) is intact
  CHECK(*store->read_model(0) == kM0);
  CHECK(*store->read_model(2) == kM2);
  // Writing goes on after the damaged position.
  REQUIRE(store->write_model(1, "again", kM1b).ok());
  CHECK(*test::open_store(*dev)->read_model(1) == kM1b);
}

TEST_CASE("random bit flips anywhere: reads return stored bytes or an error, never anything else") {
  const auto base = populated();
  std::map<uint32_t, std::set<std::vector<uint8_t>>> known{{0, {kM0}}, {1, {kM1a, kM1b}}, {2, {kM2}}, {3, {}}};
  std::mt19937_64 rng(42);
  int opened = 0, refused = 0, detected = 0;
  for (int i = 0; i < 300; ++i) {
    auto dev = base->clone();
    // Mostly the metadata region (superblock, journal), sometimes anywhere.
    const uint64_t limit = (i % 3 == 0) ? dev->bytes().size() : 3 * 4096;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) dev->flip_bit(rng() % (limit * 8));
    auto s = ModelStore::open(*dev);
    if (!s.ok()) {
      ++refused;
      CHECK(s.error().code == Errc::flash_error);
      continue;
    }
    ++opened;
    for (uint32_t c = 0; c < 4; ++c) {
      auto r = (*s)->read_model(c);
      if (r.ok()) CHECK_MESSAGE(known[c].count(*r) == 1, "flip round " << i << " client " << c);
      else {
        CHECK((r.error().code == Errc::flash_error || r.error().code == Errc::no_model));
        if (r.error().code == Errc::flash_error) ++detected;
      }
    }
    // An update afterwards either works or fails cleanly, and never damages what the other clients read.
    const auto m3 = test::make_model(2000, 99);
    const bool wrote = (*s)->write_model(3, "new", m3).ok();
    auto again = ModelStore::open(*dev);
    if (!again.ok()) continue;
    for (uint32_t c = 0; c < 3; ++c) {
      auto r = (*again)->read_model(c);
      if (r.ok()) CHECK(known[c].count(*r) == 1);
    }
    if (wrote) CHECK(*(*again)->read_model(3) == m3);
  }
  MESSAGE("300 flip rounds: " << opened << " opened, " << refused << " refused, " << detected
                              << " corrupt reads detected");
  CHECK(opened > 0);
  CHECK(refused > 0);
}

TEST_CASE("bad images are refused with a clear message and nothing is written") {
  SUBCASE("erased flash") {
    MemoryFlash dev(test::small_geometry());
    expect_refused(dev, "flash is erased");
  }
  SUBCASE("foreign data: version word without valid complements") {
    auto dev = populated();
    put_word(*dev, 0x12345678);
    expect_refused(*dev, "version word 0x12345678");
  }
  SUBCASE("the XMOS seed layout 1.2") {
    auto dev = populated();
    put_word(*dev, format::version_word(1, 2));
    expect_refused(*dev, "XMOS seed layout 1.2");
  }
  SUBCASE("a future major version") {
    auto dev = populated();
    put_word(*dev, format::version_word(3, 0));
    expect_refused(*dev, "store format 3.0 is not supported");
  }
  SUBCASE("corrupt superblock") {
    auto dev = populated();
    dev->bytes()[21] ^= 0x01;  // client count
    expect_refused(*dev, "superblock checksum mismatch");
  }
  SUBCASE("truncated image") {
    auto full = populated();
    std::vector<uint8_t> half(full->bytes().begin(), full->bytes().begin() + 64 * 1024);
    MemoryFlash dev({64 * 1024, 4096, 1}, half);
    expect_refused(dev, "truncated image: the store spans 131072 bytes but the device has only 65536");
  }
  SUBCASE("catalogue pointing outside the device") {
    auto dev = populated();
    auto s = test::open_store(*dev);
    inject(*dev, crafted(*s, 3, 128 * 1024, 4096));
    expect_refused(*dev, "points outside the data area");
  }
  SUBCASE("catalogue pointing into the journal") {
    auto dev = populated();
    auto s = test::open_store(*dev);
    inject(*dev, crafted(*s, 3, 4096, 4096));
    expect_refused(*dev, "points outside the data area");
  }
  SUBCASE("extent length overflowing 64 bits") {
    auto dev = populated();
    auto s = test::open_store(*dev);
    inject(*dev, crafted(*s, 3, 16 * 4096, ~uint64_t{0} - 4095));
    expect_refused(*dev, "points outside the data area");
  }
  SUBCASE("overlapping extents of two clients") {
    auto dev = populated();
    auto s = test::open_store(*dev);
    const auto e0 = *s->entry(0);
    inject(*dev, crafted(*s, 3, e0.active_slot()->extent_offset, 4096));
    expect_refused(*dev, "overlapping extents");
  }
  SUBCASE("slots A and B overlapping") {
    auto dev = populated();
    auto s = test::open_store(*dev);
    auto r = crafted(*s, 3, 20 * 4096, 8192);
    r.slots[1] = r.slots[0];
    r.slots[1].extent_offset += 4096;
    inject(*dev, r);
    expect_refused(*dev, "slots A and B overlap");
  }
  SUBCASE("segment outside its extent") {
    auto dev = populated();
    auto s = test::open_store(*dev);
    auto r = crafted(*s, 3, 20 * 4096, 4096);
    r.slots[0].segments[0].length = 5000;
    inject(*dev, r);
    expect_refused(*dev, "points outside its extent");
  }
  SUBCASE("overlapping segments") {
    auto dev = populated();
    auto s = test::open_store(*dev);
    auto r = crafted(*s, 3, 20 * 4096, 4096);
    r.slots[0].segments[1] = Segment{64, 100, 0};
    inject(*dev, r);
    expect_refused(*dev, "model and parameters segments overlap");
  }
  SUBCASE("record for a client the store does not have") {
    auto dev = populated();
    auto s = test::open_store(*dev);
    inject(*dev, crafted(*s, 9, 20 * 4096, 4096));
    expect_refused(*dev, "record for client 9, but the store has 4 clients");
  }
  SUBCASE("active slot that is empty") {
    auto dev = populated();
    auto s = test::open_store(*dev);
    auto r = crafted(*s, 3, 20 * 4096, 4096);
    r.active = 1;
    inject(*dev, r);
    expect_refused(*dev, "active slot B is empty");
  }
  SUBCASE("name with a control character") {
    auto dev = populated();
    auto s = test::open_store(*dev);
    auto r = crafted(*s, 3, 20 * 4096, 4096);
    r.slots[0].name = "bad\x01name";
    inject(*dev, r);
    expect_refused(*dev, "control character");
  }
}

TEST_CASE("bad image files: truncated file, wrong erase-block size; nothing written") {
  test::TempPath tmp("badimg");
  {
    OpenOptions o;
    o.create = true;
    o.format_blank = true;
    o.create_geometry = {256 * 1024, 8192, 1};
    o.format.clients = 4;
    auto opened = open_store(tmp.str(), o);
    REQUIRE_MESSAGE(opened.ok(), opened.error().what());
    REQUIRE(opened->store->write_model(0, "m", kM0).ok());
  }
  auto file_bytes = [&] {
    std::ifstream in(tmp.path(), std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  };
  SUBCASE("erase block given wrongly") {
    const auto before = file_bytes();
    OpenOptions o;
    o.erase_block = 4096;
    auto r = open_store(tmp.str(), o);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "formatted for 8192-byte erase blocks; the device has 4096"));
    CHECK(file_bytes() == before);
  }
  SUBCASE("truncated file") {
    std::filesystem::resize_file(tmp.path(), 128 * 1024);
    const auto before = file_bytes();
    OpenOptions o;
    o.format_blank = true;
    auto r = open_store(tmp.str(), o);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "truncated image"));
    CHECK(file_bytes() == before);
  }
  SUBCASE("file size not a whole number of erase blocks") {
    std::filesystem::resize_file(tmp.path(), 100000);
    auto r = open_store(tmp.str(), {});
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "does not fit the geometry"));
  }
  SUBCASE("foreign file is never formatted implicitly") {
    {
      std::ofstream out(tmp.path(), std::ios::binary | std::ios::trunc);
      std::vector<char> junk(256 * 1024, 'x');
      out.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
    const auto before = file_bytes();
    OpenOptions o;
    o.format_blank = true;
    o.erase_block = 8192;
    auto r = open_store(tmp.str(), o);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "not an aisrv model store"));
    CHECK(file_bytes() == before);
  }
}
