// aisrv tests — hostile HEFs derived from the real ones: truncated at many cut points, single bits flipped anywhere
// (refused by the size rule or the checksum unless the bit is in a reserved header field), and — to reach the
// protobuf and metadata code — bytes of the protobuf mutated with the checksum recomputed. Every outcome must be a
// parsed HEF or Errc::model_error; run under ASan/UBSan this proves the reader never reads out of bounds or
// overflows on them. Deterministic (fixed seeds).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "aisrv/engine/hailo8/hef/describe.hpp"
#include "aisrv/engine/hailo8/hef/reader.hpp"
#include "hef_builder.hpp"
#include "testdata.hpp"

using namespace aisrv;
using namespace aisrv::engine::hailo8;
namespace th = aisrv::test::hef;

namespace {

const char* const kValid[] = {
    "hef/codetam__hailo_project/mnist.hef",
    "hef/xmihol00__hailo8_NN_acceleration/model.hef",
    "hef/soramimi__hailo_yolo_inference/model_3x640x640.hef",
    "hef/hailocs__hailo-apps-internal/hand_landmark_lite.hef",
    "hef/zhaojinchu__Hailo_Testing/fast_depth.hef",
    "hef/phawitb__face-recognition-hailo8-rpi5/arcface_mobilefacenet_v1.hef",
    "hef/guyp98__yolov5seg_hailo/yolov5n_seg.hef",
    "hef/GURUKARTHIKC__Takumi/yolov8n.hef",
};

using Files = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

// The valid HEFs present in the test data, read once.
const Files& load_valid() {
  static const Files files = [] {
    Files out;
    for (const char* rel : kValid) {
      auto p = test::testdata_path(rel);
      std::error_code ec;
      if (!std::filesystem::is_regular_file(p, ec)) continue;
      std::ifstream in(p, std::ios::binary);
      std::vector<uint8_t> bytes(std::filesystem::file_size(p));
      in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      out.emplace_back(rel, std::move(bytes));
    }
    return out;
  }();
  return files;
}

// Reserved header bytes (not covered by any check in HailoRT either).
bool reserved(uint32_t version, size_t offset) {
  switch (version) {
    case 0: return offset >= 12 && offset < 16;
    case 1: return offset >= 24 && offset < 28;
    case 2: return offset >= 28 && offset < 44;
    case 3: return offset >= 40 && offset < 56;
    default: return false;
  }
}

// The reader either accepts the bytes or refuses them with model_error; describing an accepted HEF works too.
void must_be_handled(std::span<const uint8_t> bytes) {
  auto r = hef::read_hef(bytes);
  if (r.ok()) {
    auto t = hef::describe(*r, {.streams = true});
    CHECK(t.ok());
    auto j = hef::to_json(*r);
    if (j.ok()) CHECK_FALSE(hef::dump_json(*j).empty());
  } else {
    CHECK(r.error().code == Errc::model_error);
    CHECK_FALSE(r.error().message.empty());
  }
}

}  // namespace

TEST_CASE("truncated HEFs are refused at every cut point") {
  const auto& files = load_valid();
  REQUIRE_FALSE(files.empty());
  for (const auto& [name, bytes] : files) {
    INFO(name);
    std::vector<size_t> cuts;
    for (size_t i = 0; i <= 80; ++i) cuts.push_back(i);  // inside and just past every header layout
    for (size_t k = 1; k <= 64; ++k) cuts.push_back(bytes.size() * k / 65);
    cuts.push_back(bytes.size() - 1);
    for (size_t cut : cuts) {
      auto r = hef::read_hef(std::span<const uint8_t>(bytes.data(), cut));
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == Errc::model_error);
    }
    // One byte too many is as wrong as one too few.
    auto longer = bytes;
    longer.push_back(0);
    auto r = hef::read_hef(longer);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("longer") != std::string::npos);
  }
}

TEST_CASE("single bit flips are caught by the size rule or the checksum") {
  const auto& files = load_valid();
  std::mt19937_64 rng(0x4845460001ull);
  for (const auto& [name, bytes] : files) {
    INFO(name);
    const uint32_t version = th::get_be32(bytes, 4);
    auto original = hef::read_hef(bytes);
    REQUIRE(original.ok());
    for (int i = 0; i < 24; ++i) {
      // Half of the flips land in the header, half anywhere.
      const size_t at = (i % 2 == 0) ? rng() % 64 : rng() % bytes.size();
      auto m = bytes;
      m[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      auto r = hef::read_hef(m);
      if (reserved(version, at)) {
        CHECK(r.ok());
      } else {
        INFO("flip at " << at);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == Errc::model_error);
      }
    }
  }
}

TEST_CASE("mutated protobufs with valid checksums never crash the reader") {
  const auto& files = load_valid();
  std::mt19937_64 rng(0x5eed);
  size_t accepted = 0, refused = 0;
  for (const auto& [name, bytes] : files) {
    INFO(name);
    const uint32_t version = th::get_be32(bytes, 4);
    const size_t header = th::header_size(version);
    const size_t proto_size = th::get_be32(bytes, 8);
    // Most of a large protobuf is configuration data the reader skips; mutate the metadata-heavy tail harder.
    const int rounds = bytes.size() > 2'000'000 ? 12 : 24;
    for (int i = 0; i < rounds; ++i) {
      auto m = bytes;
      const int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits; ++e) {
        const size_t span = (rng() % 2 == 0) ? proto_size : std::min<size_t>(proto_size, 4096);
        const size_t at = header + (span == proto_size ? rng() % proto_size : proto_size - 1 - rng() % span);
        switch (rng() % 3) {
          case 0: m[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
          case 1: m[at] = static_cast<uint8_t>(rng()); break;
          default: m[at] = 0xff; break;
        }
      }
      th::refresh_checksum(m);
      auto r = hef::read_hef(m);
      r.ok() ? ++accepted : ++refused;
      must_be_handled(m);
    }
    // A protobuf cut short, with the header and checksum made consistent with the cut.
    for (int i = 0; i < 6; ++i) {
      const size_t keep = rng() % proto_size;
      std::vector<uint8_t> m(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header + keep));
      th::put_be32(m, 8, static_cast<uint32_t>(keep));
      if (version == 1) th::put_be64(m, 16, 0);
      if (version >= 2) th::put_be64(m, 20, 0);
      if (version == 3) {
        th::put_be32(m, 28, 0);
        th::put_be64(m, 32, 0);
      }
      th::refresh_checksum(m);
      must_be_handled(m);
    }
  }
  MESSAGE("mutated protobufs: " << accepted << " still parsed, " << refused << " refused");
  CHECK(refused > 0);
}
