// aisrv tests — ModelStore behaviour without faults: format/open, A/B updates, chunked transfers, catalogue, reads
// (READ_MODEL / READ_PARAMETERS), erase, allocation when space runs out, journal compaction, argument checks.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "aisrv/flash/file_device.hpp"
#include "aisrv/flash/format.hpp"
#include "aisrv/flash/store.hpp"
#include "flash_test_util.hpp"

using namespace aisrv;
using namespace aisrv::flash;
using aisrv::test::MemoryFlash;

TEST_CASE("format then open: empty catalogue, seed version word at offset 0") {
  MemoryFlash dev(test::small_geometry());
  auto store = test::format_store(dev, 4);
  CHECK(store->clients() == 4);
  for (const auto& e : store->list()) {
    CHECK_FALSE(e.has_model());
    CHECK(e.seq == 0);
  }
  // 2.0 with complements, little-endian: 02 00 FD FF.
  CHECK(dev.bytes()[0] == 0x02);
  CHECK(dev.bytes()[1] == 0x00);
  CHECK(dev.bytes()[2] == 0xFD);
  CHECK(dev.bytes()[3] == 0xFF);
  auto again = test::open_store(dev);
  CHECK(again->superblock().data_block_count == 29);
  CHECK(again->notes().empty());
}

TEST_CASE("write, read back, reopen: bytes, name, format, hash, seq") {
  MemoryFlash dev(test::small_geometry());
  auto store = test::format_store(dev);
  const auto m = test::make_model(9000, 7, "tflite");
  auto e = store->write_model(1, "kws", m);
  REQUIRE_MESSAGE(e.ok(), e.error().what());
  CHECK(e->active == 0);
  const Slot* s = e->active_slot();
  REQUIRE(s);
  CHECK(s->name == "kws");
  CHECK(s->format == ModelFormat::tflite);
  CHECK(s->model_size() == 9000);
  CHECK(s->model_hash() == format::xxh64(m));
  CHECK(s->extent_length == 3 * 4096);

  auto reopened = test::open_store(dev);
  auto back = reopened->read_model(1);
  REQUIRE(back.ok());
  CHECK(*back == m);
  CHECK(reopened->entry(1)->seq == e->seq);
  auto none = reopened->read_model(0);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == Errc::no_model);
}

TEST_CASE("updates alternate slots A/B and keep the previous model intact") {
  MemoryFlash dev(test::small_geometry());
  auto store = test::format_store(dev);
  const auto v1 = test::make_model(5000, 1, "hef");
  const auto v2 = test::make_model(6000, 2, "hef");
  const auto v3 = test::make_model(4000, 3, "tflite");
  REQUIRE(store->write_model(2, "v1", v1).ok());
  auto e2 = store->write_model(2, "v2", v2);
  REQUIRE(e2.ok());
  CHECK(e2->active == 1);
  REQUIRE(e2->previous_slot());
  CHECK(e2->previous_slot()->name == "v1");
  CHECK(store->verify(2, 0).ok());
  CHECK(store->verify(2, 1).ok());
  auto e3 = store->write_model(2, "v3", v3);
  REQUIRE(e3.ok());
  CHECK(e3->active == 0);
  CHECK(e3->previous_slot()->name == "v2");
  CHECK(e3->seq > e2->seq);
  auto reopened = test::open_store(dev);
  CHECK(*reopened->read_model(2) == v3);
  const auto e = *reopened->entry(2);
  CHECK(e.active_slot()->format == ModelFormat::tflite);
}

TEST_CASE("chunked update: chunks in order, progress, unfinished transfer keeps the old model") {
  MemoryFlash dev(test::small_geometry());
  auto store = test::format_store(dev);
  const auto old = test::make_model(3000, 11);
  REQUIRE(store->write_model(0, "old", old).ok());
  const auto m = test::make_model(10000, 12);
  UpdateInfo info;
  info.name = "new";
  info.sizes[0] = m.size();
  info.expected_hash = format::xxh64(m);
  info.expected_format = ModelFormat::tflite;
  REQUIRE(store->begin_update(0, info).ok());
  REQUIRE(store->write_chunk(0, SegmentKind::model, 0, std::span(m).subspan(0, 1000)).ok());
  auto wrong = store->write_chunk(0, SegmentKind::model, 2000, std::span(m).subspan(2000, 10));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().code == Errc::bad_length);
  CHECK(wrong.error().message.find("expected the model segment at offset 1000") != std::string::npos);
  auto prog = store->update_progress(0);
  REQUIRE(prog);
  CHECK(prog->offset == 1000);
  CHECK(prog->total == 10000);
  auto early = store->commit_update(0);
  REQUIRE_FALSE(early.ok());
  CHECK(early.error().code == Errc::bad_length);
  // The failed commit ended the transfer; nothing changed.
  CHECK_FALSE(store->update_progress(0));
  CHECK(*store->read_model(0) == old);

  // Begin again, send it in odd-sized chunks, abandon before commit: reopen shows the old model.
  REQUIRE(store->begin_update(0, info).ok());
  for (size_t off = 0; off < 7000; off += 333)
    REQUIRE(store->write_chunk(0, SegmentKind::model, off, std::span(m).subspan(off, std::min<size_t>(333, 7000 - off)))
                .ok());
  {
    auto reopened = test::open_store(dev);
    CHECK(*reopened->read_model(0) == old);
  }
  for (size_t off = 7000; off < m.size(); off += 777)
    REQUIRE(store->write_chunk(0, SegmentKind::model, off,
                               std::span(m).subspan(off, std::min<size_t>(777, m.size() - off)))
                .ok());
  auto e = store->commit_update(0);
  REQUIRE_MESSAGE(e.ok(), e.error().what());
  CHECK(*test::open_store(dev)->read_model(0) == m);
}

TEST_CASE("commit refuses a transfer whose hash or format differs from what was announced") {
  MemoryFlash dev(test::small_geometry());
  auto store = test::format_store(dev);
  const auto old = test::make_model(2000, 1);
  REQUIRE(store->write_model(3, "old", old).ok());
  const auto m = test::make_model(5000, 2, "tflite");
  UpdateInfo info;
  info.name = "x";
  info.sizes[0] = m.size();
  info.expected_hash = format::xxh64(m) ^ 1;
  REQUIRE(store->begin_update(3, info).ok());
  REQUIRE(store->write_chunk(3, SegmentKind::model, 0, m).ok());
  auto bad = store->commit_update(3);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == Errc::crc_error);
  CHECK(*store->read_model(3) == old);

  info.expected_hash.reset();
  info.expected_format = ModelFormat::hef;
  REQUIRE(store->begin_update(3, info).ok());
  REQUIRE(store->write_chunk(3, SegmentKind::model, 0, m).ok());
  auto fmt_bad = store->commit_update(3);
  REQUIRE_FALSE(fmt_bad.ok());
  CHECK(fmt_bad.error().code == Errc::model_error);
  CHECK(fmt_bad.error().message.find("announced a hef model but the bytes are tflite") != std::string::npos);
  CHECK(*test::open_store(dev)->read_model(3) == old);
}

TEST_CASE("parameters segment: READ_PARAMETERS by offset and size, bounds checked") {
  MemoryFlash dev(test::small_geometry(16));
  auto store = test::format_store(dev);
  const auto m = test::make_model(3001, 5);
  const auto params = test::make_model(7777, 6, "raw");
  REQUIRE(store->write_model(1, "with-params", m, params).ok());
  auto reopened = test::open_store(dev);
  CHECK(*reopened->read_model(1) == m);
  auto p = reopened->read_parameters(1, 100, 50);
  REQUIRE(p.ok());
  CHECK(std::equal(p->begin(), p->end(), params.begin() + 100));
  CHECK(reopened->read_parameters(1, 0, params.size()).ok());
  auto over = reopened->read_parameters(1, params.size() - 10, 11);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().code == Errc::bad_length);
  auto huge = reopened->read_parameters(1, UINT64_MAX, 2);
  CHECK_FALSE(huge.ok());
  auto whole = reopened->read_segment(1, SegmentKind::parameters);
  REQUIRE(whole.ok());
  CHECK(*whole == params);
  const auto entry = *reopened->entry(1);
  const Slot* s = entry.active_slot();
  CHECK(s->segment(SegmentKind::parameters).offset % 16 == 0);
  CHECK(s->segment(SegmentKind::parameters).hash == format::xxh64(params));
  CHECK(reopened->verify(1).ok());
}

TEST_CASE("read_model_range returns raw slices and checks bounds") {
  MemoryFlash dev(test::small_geometry());
  auto store = test::format_store(dev);
  const auto m = test::make_model(6000, 9);
  REQUIRE(store->write_model(0, "m", m).ok());
  std::vector<uint8_t> out(1000);
  REQUIRE(store->read_model_range(0, 4500, out).ok());
  CHECK(std::equal(out.begin(), out.end(), m.begin() + 4500));
  out.resize(1501);
  CHECK(store->read_model_range(0, 4500, out).error().code == Errc::bad_length);
}

TEST_CASE("erase removes the model from the catalogue and erases its blocks") {
  MemoryFlash dev(test::small_geometry());
  auto store = test::format_store(dev);
  const auto a = test::make_model(5000, 1);
  const auto b = test::make_model(5000, 2);
  REQUIRE(store->write_model(0, "a", a).ok());
  REQUIRE(store->write_model(0, "b", b).ok());
  const auto before = *store->entry(0);
  REQUIRE(store->erase(0).ok());
  CHECK_FALSE(store->entry(0)->has_model());
  for (const Slot& s : before.slots) {
    REQUIRE(s.used());
    CHECK(std::all_of(dev.bytes().begin() + static_cast<long>(s.extent_offset),
                      dev.bytes().begin() + static_cast<long>(s.extent_offset + s.extent_length),
                      [](uint8_t c) { return c == 0xFF; }));
  }
  auto reopened = test::open_store(dev);
  CHECK(reopened->read_model(0).error().code == Errc::no_model);
  CHECK(reopened->erase(0).ok());  // erasing nothing is fine
  REQUIRE(reopened->write_model(0, "c", a).ok());
  CHECK(*reopened->read_model(0) == a);
}

TEST_CASE("many updates across clients: journal compaction keeps every client's newest record") {
  MemoryFlash dev(test::small_geometry());
  auto store = test::format_store(dev);
  std::vector<std::vector<uint8_t>> current(4);
  for (int round = 0; round < 30; ++round) {
    const uint32_t c = static_cast<uint32_t>(round % 4);
    current[c] = test::make_model(1500 + 97 * static_cast<size_t>(round), static_cast<uint64_t>(round) + 100);
    auto e = store->write_model(c, fmt::format("r{}", round), current[c]);
    REQUIRE_MESSAGE(e.ok(), e.error().what());
  }
  CHECK(store->journal_stats().compactions >= 2);
  auto reopened = test::open_store(dev);
  for (uint32_t c = 0; c < 4; ++c) {
    CHECK(*reopened->read_model(c) == current[c]);
    CHECK(reopened->verify(c).ok());
  }
  CHECK(reopened->notes().empty());
}

TEST_CASE("space: earlier models are given up (catalogue first), a model too large is refused cleanly") {
  MemoryFlash dev(test::small_geometry());  // 29 data blocks
  auto store = test::format_store(dev);
  const auto big = test::make_model(8 * 4096 - 100, 1);  // 8 blocks
  REQUIRE(store->write_model(0, "a1", big).ok());
  REQUIRE(store->write_model(1, "b1", big).ok());
  REQUIRE(store->write_model(0, "a2", big).ok());  // 24 blocks used, A/B of client 0 + client 1
  // 5 free blocks left: an 8-block update of client 1 must give up an earlier model (client 0's a1).
  const auto b2 = test::make_model(8 * 4096 - 100, 2);
  auto e = store->write_model(1, "b2", b2);
  REQUIRE_MESSAGE(e.ok(), e.error().what());
  const auto e0 = *store->entry(0), e1 = *store->entry(1);
  CHECK(e0.previous_slot() == nullptr);
  CHECK(e0.active_slot()->name == "a2");
  CHECK(e1.previous_slot()->name == "b1");
  auto reopened = test::open_store(dev);
  CHECK(reopened->verify(0).ok());
  CHECK(reopened->verify(1, 0).ok());
  CHECK(reopened->verify(1, 1).ok());

  const auto huge = test::make_model(30 * 4096, 3);
  auto too_big = reopened->write_model(2, "huge", huge);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.error().code == Errc::flash_error);
  CHECK(*reopened->read_model(1) == b2);
}

TEST_CASE("argument checks: engine range, names, sizes, chunks without begin") {
  MemoryFlash dev(test::small_geometry());
  auto store = test::format_store(dev);
  const auto m = test::make_model(100, 1);
  CHECK(store->write_model(4, "x", m).error().code == Errc::bad_engine);
  CHECK(store->read_model(99).error().code == Errc::bad_engine);
  CHECK(store->write_model(0, std::string(33, 'n'), m).error().code == Errc::model_error);
  CHECK(store->write_model(0, std::string("a\nb"), m).error().code == Errc::model_error);
  CHECK(store->write_model(0, std::string(32, 'n'), m).ok());
  CHECK(store->write_model(0, "empty", {}).error().code == Errc::model_error);
  CHECK(store->write_chunk(1, SegmentKind::model, 0, m).error().code == Errc::bad_command);
  CHECK(store->commit_update(1).error().code == Errc::bad_command);
  UpdateInfo info;
  info.sizes[0] = 10;
  REQUIRE(store->begin_update(1, info).ok());
  CHECK(store->write_chunk(1, SegmentKind::model, 0, m).error().code == Errc::bad_length);  // 100 > 10
  CHECK(store->write_chunk(1, SegmentKind::parameters, 0, std::span(m).subspan(0, 1)).error().code ==
        Errc::bad_length);
}

TEST_CASE("format refuses geometries that cannot hold the journal") {
  MemoryFlash tiny({4 * 1024, 1024, 1});
  auto s = ModelStore::format(tiny, {4});
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("catalogue records") != std::string::npos);
  MemoryFlash small({16 * 1024, 4096, 1});
  auto many = ModelStore::format(small, {16});
  REQUIRE_FALSE(many.ok());
  CHECK(many.error().message.find("16 clients need at least 17") != std::string::npos);
}

TEST_CASE("model format detection") {
  const uint8_t tfl[8] = {0x1c, 0, 0, 0, 'T', 'F', 'L', '3'};
  const uint8_t hef[4] = {0x01, 0x48, 0x45, 0x46};
  const uint8_t other[8] = {0x46, 0x45, 0x48, 0x01, 'T', 'F', 'L', '2'};
  CHECK(detect_model_format(tfl) == ModelFormat::tflite);
  CHECK(detect_model_format(hef) == ModelFormat::hef);
  CHECK(detect_model_format(other) == ModelFormat::unknown);
  CHECK(detect_model_format(std::span(tfl, 5)) == ModelFormat::unknown);
}

TEST_CASE("write granularity 16: records and segments aligned, everything readable") {
  MemoryFlash dev({256 * 1024, 8192, 16});
  auto store = test::format_store(dev, 8);
  CHECK(store->superblock().record_size == 352);
  CHECK(store->superblock().journal_header_size == 32);
  for (uint32_t c = 0; c < 8; ++c) REQUIRE(store->write_model(c, "m", test::make_model(1000 + c * 13, c)).ok());
  auto reopened = test::open_store(dev);
  for (uint32_t c = 0; c < 8; ++c) CHECK(*reopened->read_model(c) == test::make_model(1000 + c * 13, c));
}

// On a file image the store hashes large chunks on a second thread while it programs them, hashes the new slot
// (through the image's memory view) beside the durability barrier, and hashes READ_MODEL's bytes beside the copy;
// the outcome must be the same as in sequence, corruption included.
namespace {

// Changes one byte of the image through a second descriptor (the image lock is advisory): the first occurrence of
// `needle` gets bit 4 flipped. The store cannot know: only its hashes can tell.
void corrupt_behind_the_store(const std::filesystem::path& image, std::span<const uint8_t> needle) {
  const int fd = ::open(image.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  std::vector<uint8_t> bytes(std::filesystem::file_size(image));
  REQUIRE(::pread(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  const auto at = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end());
  REQUIRE(at != bytes.end());
  const uint8_t flipped = static_cast<uint8_t>(*at ^ 0x10);
  REQUIRE(::pwrite(fd, &flipped, 1, at - bytes.begin()) == 1);
  ::close(fd);
}

}  // namespace

TEST_CASE("file image: large models hashed beside programming, the barrier and the read; corruption detected") {
  test::TempPath tmp("beside");
  auto dev = FileFlash::create(tmp.path(), {16 * 1024 * 1024, 64 * 1024, 1});
  REQUIRE(dev.ok());
  auto store = test::format_store(**dev, 2);
  const auto model = test::make_model(3 * 1024 * 1024 + 123, 41);  // chunks >= 512 KiB: arrival hash beside
  const auto params = test::make_model(700 * 1024, 42, "raw");
  const auto inside_model = std::span(model).subspan(4096, 64);

  SUBCASE("whole model in one call, read back, reopened from the file; a later flip fails READ_MODEL") {
    auto e = store->write_model(0, "big", model, params);
    REQUIRE_MESSAGE(e.ok(), e.error().what());
    CHECK(e->active_slot()->model_hash() == format::xxh64(model));
    CHECK(*store->read_model(0) == model);
    store.reset();
    dev->reset();
    auto again = FileFlash::open(tmp.path(), 64 * 1024u, 1u, false);
    REQUIRE(again.ok());
    auto reopened = test::open_store(**again);
    CHECK(*reopened->read_model(0) == model);
    CHECK(*reopened->read_parameters(0, 0, params.size()) == params);
    CHECK(reopened->verify(0).ok());
    corrupt_behind_the_store(tmp.path(), inside_model);
    auto bad = reopened->read_model(0);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.find("xxh64 mismatch") != std::string::npos);
  }

  SUBCASE("bytes changed on the medium after programming: commit refuses, the old model stays") {
    REQUIRE(store->write_model(0, "old", params).ok());
    UpdateInfo info;
    info.name = "new";
    info.sizes[0] = model.size();
    REQUIRE(store->begin_update(0, info).ok());
    for (size_t off = 0; off < model.size(); off += 1024 * 1024) {
      const size_t n = std::min<size_t>(1024 * 1024, model.size() - off);
      REQUIRE(store->write_chunk(0, SegmentKind::model, off, std::span(model).subspan(off, n)).ok());
    }
    corrupt_behind_the_store(tmp.path(), inside_model);
    auto c = store->commit_update(0);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == Errc::flash_error);
    CHECK(c.error().message.find("verification of the new slot failed") != std::string::npos);
    CHECK(c.error().message.find("xxh64 mismatch") != std::string::npos);
    CHECK(*store->read_model(0) == params);
    CHECK(store->entry(0)->active_slot()->name == "old");
  }
}
