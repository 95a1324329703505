// aisrv tests — flash devices: the FlashDevice contract (bounds, alignment, NOR program rule) on the file image,
// file creation/opening/locking, size parsing, MTD open errors on non-MTD nodes, device specifications.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "aisrv/flash/file_device.hpp"
#include "aisrv/flash/mtd_device.hpp"
#include "aisrv/flash/open.hpp"
#include "flash/memory_flash.hpp"
#include "flash_test_util.hpp"

using namespace aisrv;
using namespace aisrv::flash;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("file image: created erased, geometry, NOR program and erase semantics") {
  test::TempPath tmp("dev");
  auto dev = FileFlash::create(tmp.path(), {64 * 1024, 4096, 1});
  REQUIRE_MESSAGE(dev.ok(), dev.error().what());
  FlashDevice& d = **dev;
  CHECK(d.geometry().size == 64 * 1024);
  CHECK(d.geometry().block_count() == 16);
  auto bytes = read_file(tmp.path());
  REQUIRE(bytes.size() == 64 * 1024);
  CHECK(std::all_of(bytes.begin(), bytes.end(), [](uint8_t c) { return c == 0xFF; }));

  const std::vector<uint8_t> a{0xF0, 0x0F, 0x55, 0xAA};
  REQUIRE(d.program(100, a).ok());
  // Clearing more bits over programmed bytes is allowed (NOR).
  const std::vector<uint8_t> b{0x80, 0x01, 0x05, 0x0A};
  REQUIRE(d.program(100, b).ok());
  std::vector<uint8_t> out(4);
  REQUIRE(d.read(100, out).ok());
  CHECK(out == b);
  // Setting a bit from 0 to 1 is refused, and nothing is written.
  const std::vector<uint8_t> c{0x80, 0x01, 0x07, 0x0A};
  auto bad = d.program(100, c);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == Errc::flash_error);
  CHECK(contains(bad.error().message, "would set bits from 0 to 1"));
  CHECK(contains(bad.error().message, "0x66"));
  REQUIRE(d.read(100, out).ok());
  CHECK(out == b);
  // Erase restores 0xFF over the whole block only.
  REQUIRE(d.program(4096, a).ok());
  REQUIRE(d.erase(0, 4096).ok());
  REQUIRE(d.read(100, out).ok());
  CHECK(out == std::vector<uint8_t>(4, 0xFF));
  REQUIRE(d.read(4096, out).ok());
  CHECK(out == a);
  CHECK(*d.is_erased(0, 4096));
  CHECK_FALSE(*d.is_erased(4096, 4096));
}

TEST_CASE("file image: bounds and alignment are checked") {
  test::TempPath tmp("dev");
  auto dev = FileFlash::create(tmp.path(), {64 * 1024, 4096, 16});
  REQUIRE(dev.ok());
  FlashDevice& d = **dev;
  std::vector<uint8_t> buf(16, 0);
  CHECK(contains(d.read(64 * 1024 - 8, buf).error().message, "outside the device"));
  CHECK(contains(d.read(UINT64_MAX - 4, buf).error().message, "outside the device"));
  CHECK(contains(d.program(8, buf).error().message, "not aligned to the 16-byte write granularity"));
  CHECK(contains(d.program(0, std::span(buf).subspan(0, 8)).error().message, "16-byte write granularity"));
  CHECK(contains(d.erase(100, 4096).error().message, "whole 4096-byte erase blocks"));
  CHECK(contains(d.erase(0, 100).error().message, "whole 4096-byte erase blocks"));
  CHECK(contains(d.erase(60 * 1024, 8192).error().message, "outside the device"));
  CHECK(d.program(16, buf).ok());
}

TEST_CASE("file image: create refuses an existing file, open checks size and locks") {
  test::TempPath tmp("dev");
  REQUIRE(FileFlash::create(tmp.path(), {64 * 1024, 4096, 1}).ok());
  auto again = FileFlash::create(tmp.path(), {64 * 1024, 4096, 1});
  REQUIRE_FALSE(again.ok());
  {
    auto rw = FileFlash::open(tmp.path(), 4096, 1, false);
    REQUIRE(rw.ok());
    auto second = FileFlash::open(tmp.path(), 4096, 1, false);
    REQUIRE_FALSE(second.ok());
    CHECK(contains(second.error().message, "in use by another process"));
    auto ro = FileFlash::open(tmp.path(), 4096, 1, true);
    REQUIRE_FALSE(ro.ok());
  }
  {
    auto ro = FileFlash::open(tmp.path(), 4096, 1, true);
    REQUIRE(ro.ok());
    auto ro2 = FileFlash::open(tmp.path(), 4096, 1, true);
    CHECK(ro2.ok());  // shared
    std::vector<uint8_t> z(1, 0);
    CHECK(contains((*ro)->program(0, z).error().message, "read-only"));
    CHECK(contains((*ro)->erase(0, 4096).error().message, "read-only"));
  }
  auto bad_geometry = FileFlash::open(tmp.path(), 3000, 1, false);
  REQUIRE_FALSE(bad_geometry.ok());
  CHECK(contains(bad_geometry.error().message, "power of two"));
  auto missing = FileFlash::open(tmp.path().string() + ".nope", 4096, 1, false);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == Errc::not_found);
  auto dir = FileFlash::open(std::filesystem::temp_directory_path(), 4096, 1, true);
  REQUIRE_FALSE(dir.ok());
  CHECK(contains(dir.error().message, "not a regular file"));
}

TEST_CASE("file image: a file shrunk while open is reported, not read past") {
  test::TempPath tmp("dev");
  auto dev = FileFlash::create(tmp.path(), {64 * 1024, 4096, 1});
  REQUIRE(dev.ok());
  std::filesystem::resize_file(tmp.path(), 32 * 1024);
  std::vector<uint8_t> buf(16);
  auto r = (*dev)->read(40 * 1024, buf);
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "truncated while open"));
}

TEST_CASE("geometry validation and size parsing") {
  CHECK(validate(Geometry{64 * 1024, 4096, 1}).ok());
  CHECK_FALSE(validate(Geometry{64 * 1024, 4000, 1}).ok());
  CHECK_FALSE(validate(Geometry{64 * 1024, 4096, 3}).ok());
  CHECK_FALSE(validate(Geometry{64 * 1024, 4096, 8192}).ok());
  CHECK_FALSE(validate(Geometry{65 * 1024, 4096, 1}).ok());
  CHECK_FALSE(validate(Geometry{0, 4096, 1}).ok());
  CHECK(*parse_size("65536") == 65536);
  CHECK(*parse_size("64K") == 65536);
  CHECK(*parse_size("64kib") == 65536);
  CHECK(*parse_size("16M") == 16u << 20);
  CHECK(*parse_size("1G") == 1u << 30);
  CHECK_FALSE(parse_size("").ok());
  CHECK_FALSE(parse_size("K").ok());
  CHECK_FALSE(parse_size("12Q").ok());
  CHECK_FALSE(parse_size("0").ok());
  CHECK_FALSE(parse_size("99999999999999999999").ok());
  CHECK_FALSE(parse_size("17179869184G").ok());
  CHECK(format_size(65536) == "64 KiB");
  CHECK(format_size(16u << 20) == "16 MiB");
  CHECK(format_size(1000) == "1000 B");
}

TEST_CASE("MTD: nodes that are not MTD character devices are refused clearly") {
  test::TempPath tmp("notmtd");
  { std::ofstream(tmp.path()) << "x"; }
  auto file = MtdFlash::open(tmp.str(), true);
  REQUIRE_FALSE(file.ok());
  CHECK(contains(file.error().message, "not a character device"));
  auto null = MtdFlash::open("/dev/null", true);
  REQUIRE_FALSE(null.ok());
  CHECK(contains(null.error().message, "not an MTD character device"));
  auto missing = MtdFlash::open("/dev/mtd-does-not-exist", true);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == Errc::not_found);
  auto spec = open_device("mtd:", {});
  REQUIRE_FALSE(spec.ok());
  CHECK(contains(spec.error().message, "expected mtd:/dev/mtdN"));
}

TEST_CASE("device specification: create, format a blank image, reopen with the erase block from the superblock") {
  test::TempPath tmp("spec");
  OpenOptions o;
  auto missing = open_store(tmp.str(), o);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == Errc::not_found);
  o.create = true;
  o.format_blank = true;
  o.create_geometry = {512 * 1024, 16 * 1024, 1};
  o.format.clients = 8;
  const auto m = test::make_model(20000, 5);
  {
    auto s = open_store(tmp.str(), o);
    REQUIRE_MESSAGE(s.ok(), s.error().what());
    CHECK(s->created);
    CHECK(s->formatted);
    CHECK(s->store->clients() == 8);
    REQUIRE(s->store->write_model(7, "seven", m).ok());
  }
  auto s = open_store(tmp.str(), OpenOptions{});  // erase block probed from the superblock
  REQUIRE_MESSAGE(s.ok(), s.error().what());
  CHECK_FALSE(s->formatted);
  CHECK(s->device->geometry().erase_block == 16 * 1024);
  CHECK(*s->store->read_model(7) == m);
}

TEST_CASE("program check: bytes known to be erased need no read-back; everything else is checked") {
  test::MemoryFlash d({64 * 1024, 4096, 1});
  const std::vector<uint8_t> a(100, 0x5A), ones(4, 0xFF);
  // Nothing is known about a fresh device: the check reads.
  REQUIRE(d.program(0, a).ok());
  CHECK(d.reads == 1);
  // After an erase, programming in order needs no reads.
  REQUIRE(d.erase(4096, 4096).ok());
  const uint64_t before = d.reads;
  REQUIRE(d.program(4096, a).ok());
  REQUIRE(d.program(4196, a).ok());
  REQUIRE(d.program(4400, a).ok());  // a gap is still known erased
  CHECK(d.reads == before);
  // Going back over programmed bytes is checked, and setting bits is refused.
  auto bad = d.program(4096, ones);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("would set bits from 0 to 1") != std::string::npos);
  CHECK(d.reads > before);
  // Changing the medium behind the API forgets what was known: a bit cleared behind its back is seen.
  REQUIRE(d.erase(8192, 4096).ok());
  d.flip_bit((8192 + 200) * 8);  // byte 8392 now reads 0xFE
  const std::vector<uint8_t> one_ff(1, 0xFF);
  auto refused = d.program(8192 + 200, one_ff);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("0x20c8") != std::string::npos);
}

TEST_CASE("file image: erases are deferred until the block is programmed or synced, reads see 0xFF at once") {
  test::TempPath tmp("defer");
  auto dev = FileFlash::create(tmp.path(), {64 * 1024, 4096, 1});
  REQUIRE(dev.ok());
  FlashDevice& d = **dev;
  const std::vector<uint8_t> zeros(4096, 0x00);
  REQUIRE(d.program(0, zeros).ok());
  REQUIRE(d.program(4096, zeros).ok());
  REQUIRE(d.program(8192, zeros).ok());
  REQUIRE(d.sync().ok());
  REQUIRE(d.erase(0, 3 * 4096).ok());
  std::vector<uint8_t> out(3 * 4096);
  REQUIRE(d.read(0, out).ok());
  CHECK(std::all_of(out.begin(), out.end(), [](uint8_t c) { return c == 0xFF; }));
  CHECK(*d.is_erased(0, 3 * 4096));
  // Block 0 fully programmed, block 1 partly, block 2 left erased; after sync the file shows exactly that.
  const std::vector<uint8_t> pattern(4096, 0xA5);
  REQUIRE(d.program(0, pattern).ok());
  REQUIRE(d.program(4096 + 100, std::span(pattern).subspan(0, 50)).ok());
  REQUIRE(d.sync().ok());
  const auto file = read_file(tmp.path());
  CHECK(std::equal(pattern.begin(), pattern.end(), file.begin()));
  for (size_t i = 4096; i < 3 * 4096; ++i) {
    const uint8_t want = (i >= 4196 && i < 4246) ? 0xA5 : 0xFF;
    if (file[i] != want) {
      FAIL_CHECK("byte " << i << " is " << int(file[i]) << ", expected " << int(want));
      break;
    }
  }
  // A program over a pending block that covers it only partly keeps the rest 0xFF.
  REQUIRE(d.erase(3 * 4096, 4096).ok());
  REQUIRE(d.program(3 * 4096 + 10, std::span(pattern).subspan(0, 10)).ok());
  dev->reset();  // close: pending erases are written
  const auto after = read_file(tmp.path());
  CHECK(after[3 * 4096] == 0xFF);
  CHECK(after[3 * 4096 + 10] == 0xA5);
  CHECK(after[3 * 4096 + 4095] == 0xFF);
}
