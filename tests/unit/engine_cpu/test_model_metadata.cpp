// aisrv tests — the CPU engine's model metadata (GET_MODEL_METADATA): label files and Ultralytics settings read
// from a zip archive appended to a model (stored and deflated members), hostile archives ignored without harm, and
// what a CpuBackend reports for a model carrying such an archive.
#include <doctest/doctest.h>

#include <zlib.h>

#include <cstring>
#include <random>
#include <string>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "model_metadata.hpp"
#include "test_models.hpp"
#include "testdata.hpp"

using namespace aisrv;
using engine::cpu::appended_zip_members;
using engine::cpu::read_model_metadata;

namespace {

void le(std::vector<uint8_t>& b, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

std::string deflate_raw(const std::string& text) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

struct Member {
  std::string name, text;
  bool deflated = false;
};

// A zip archive of these members, as a metadata populator appends it (offsets relative to the archive's start).
std::vector<uint8_t> zip(const std::vector<Member>& members) {
  std::vector<uint8_t> out, dir;
  for (const Member& m : members) {
    const std::string data = m.deflated ? deflate_raw(m.text) : m.text;
    const uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(m.text.data()),
                                                     static_cast<uInt>(m.text.size())));
    const size_t local = out.size();
    le(out, 0x04034b50, 4); le(out, 20, 2); le(out, 0, 2); le(out, m.deflated ? 8 : 0, 2); le(out, 0, 4);
    le(out, crc, 4); le(out, data.size(), 4); le(out, m.text.size(), 4); le(out, m.name.size(), 2); le(out, 0, 2);
    out.insert(out.end(), m.name.begin(), m.name.end());
    out.insert(out.end(), data.begin(), data.end());
    le(dir, 0x02014b50, 4); le(dir, 20, 2); le(dir, 20, 2); le(dir, 0, 2); le(dir, m.deflated ? 8 : 0, 2);
    le(dir, 0, 4); le(dir, crc, 4); le(dir, data.size(), 4); le(dir, m.text.size(), 4); le(dir, m.name.size(), 2);
    le(dir, 0, 2); le(dir, 0, 2); le(dir, 0, 2); le(dir, 0, 2); le(dir, 0, 4); le(dir, local, 4);
    dir.insert(dir.end(), m.name.begin(), m.name.end());
  }
  const size_t dir_at = out.size();
  out.insert(out.end(), dir.begin(), dir.end());
  le(out, 0x06054b50, 4); le(out, 0, 2); le(out, 0, 2); le(out, members.size(), 2); le(out, members.size(), 2);
  le(out, dir.size(), 4); le(out, dir_at, 4); le(out, 0, 2);
  return out;
}

std::vector<uint8_t> with_zip(std::vector<uint8_t> model, const std::vector<Member>& members) {
  const auto z = zip(members);
  model.insert(model.end(), z.begin(), z.end());
  return model;
}

const std::string* find(const engine::cpu::MetadataEntries& m, const std::string& key) {
  for (const auto& [k, v] : m)
    if (k == key) return &v;
  return nullptr;
}

const std::string kUltralytics =
    "{'description': 'Ultralytics YOLOv8n model trained on coco.yaml', 'author': 'Ultralytics', 'stride': 32, "
    "'task': 'detect', 'batch': 1, 'imgsz': [640, 640], 'names': {0: 'person', 1: 'bicycle', 2: \"teddy's bear\"}}";

}  // namespace

TEST_CASE("model metadata: a label file and Ultralytics' settings from the appended archive") {
  const auto model = test::small_net_model();
  CHECK(read_model_metadata(model).empty());  // no archive: no metadata

  const auto labelled = with_zip(model, {{"labelmap.txt", "background\ncat\ndog\n"}});
  auto m = read_model_metadata(labelled);
  REQUIRE(find(m, "labels"));
  CHECK(*find(m, "labels") == "background\ncat\ndog\n");
  CHECK_FALSE(find(m, "task"));

  const auto deflated = with_zip(model, {{"notes.md", "not labels"}, {"labels.txt", "a\nb\n", true}});
  m = read_model_metadata(deflated);
  REQUIRE(find(m, "labels"));
  CHECK(*find(m, "labels") == "a\nb\n");

  const auto yolo = with_zip(model, {{"temp_meta.txt", kUltralytics, true}});
  m = read_model_metadata(yolo);
  REQUIRE(find(m, "task"));
  CHECK(*find(m, "task") == "detection");
  CHECK(*find(m, "source") == "ultralytics");
  CHECK(*find(m, "labels") == "person\nbicycle\nteddy's bear\n");
  CHECK(*find(m, "preprocess.fit") == "letterbox");
  CHECK(*find(m, "preprocess.mean") == "0");
  CHECK(*find(m, "preprocess.std") == "255");

  // The engine reports them with the model.
  auto backend = engine::cpu::CpuBackend::create({});
  REQUIRE(backend.ok());
  auto info = (*backend)->load(yolo, {});
  REQUIRE(info.ok());
  CHECK(info->metadata == m);
}

TEST_CASE("model metadata: hostile archives are ignored, never read out of bounds") {
  const auto model = test::small_net_model();
  const auto good = with_zip(model, {{"labels.txt", "x\ny\n"}, {"temp_meta.txt", kUltralytics, true}});
  REQUIRE(appended_zip_members(good).size() == 2);
  // Every truncation of the archive, and every single-byte change in its records: no crash (ASan), and whatever
  // is read is a member the archive really holds.
  const size_t zip_at = model.size();
  for (size_t cut = zip_at; cut < good.size(); ++cut) {
    const std::vector<uint8_t> shorter(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
    CHECK(appended_zip_members(shorter).empty());
  }
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    auto bad = good;
    const size_t at = zip_at + rng() % (bad.size() - zip_at);
    bad[at] = static_cast<uint8_t>(rng());
    for (const auto& [name, text] : appended_zip_members(bad)) {
      CHECK(text.size() <= engine::cpu::kMaxMemberBytes);
      (void)read_model_metadata(bad);
    }
  }
  // Local header sizes are ignored; a deflated member that does not inflate to its stated size is skipped.
  auto huge = zip({{"labels.txt", "a\n"}});
  huge[22] = huge[23] = huge[24] = 0xFF;  // the local header's size fields are not trusted (the directory's are)
  CHECK(appended_zip_members(huge).size() == 1);
  std::vector<uint8_t> lying = zip({{"labels.txt", "abc\n", true}});
  const size_t dir_size_field = lying.size() - 22 + 12, dir_at = lying.size() - 22 - (lying[dir_size_field] |
                                                                                      lying[dir_size_field + 1] << 8);
  lying[dir_at + 24] = 9;  // uncompressed size 9 instead of 4
  CHECK(appended_zip_members(lying).empty());
}

TEST_CASE("model metadata: the public models' own labels and settings") {
  const auto yolo = test::read_file(test::testdata_path("tflite/sangho007__yolov8n/yolov8n_full_integer_quant.tflite"));
  auto m = read_model_metadata(yolo);
  REQUIRE(find(m, "task"));
  CHECK(*find(m, "task") == "detection");
  REQUIRE(find(m, "labels"));
  CHECK(find(m, "labels")->rfind("person\nbicycle\ncar\n", 0) == 0);
  CHECK(std::count(find(m, "labels")->begin(), find(m, "labels")->end(), '\n') == 80);
  const auto coral =
      test::read_file(test::testdata_path("tflite/google-coral__test_data/mobilenet_v1_0.25_128_quant.tflite"));
  m = read_model_metadata(coral);
  REQUIRE(find(m, "labels"));
  CHECK(find(m, "labels")->rfind("background\ntench, Tinca tinca\n", 0) == 0);
}
