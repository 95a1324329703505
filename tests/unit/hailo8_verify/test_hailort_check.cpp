// aisrv tests — `aisrv hef verify-hailort`'s comparisons without a real libhailort: HailoRT's stream and vstream
// records (built here the way hailort.h lays them out, from the streams our reader finds in the shared HEFs) are read
// back into our vocabulary and compared; equal records give no difference, and each edited field is reported once,
// named. The loader part: a library without the HEF inspection functions (our hailort double) is refused by name, and
// the configured library (explicit path, else AISRV_HAILORT_LIBRARY) is tried alone.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>

#include "aisrv/engine/hailo8/hef/reader.hpp"
#include "aisrv/engine/hailo8/verify/hailort_check.hpp"
#include "testdata.hpp"

namespace abi = aisrv::engine::hailo8::hailort_abi;
namespace hef = aisrv::engine::hailo8::hef;
namespace verify = aisrv::engine::hailo8::verify;
using aisrv::engine::hailo8::runtime::HailortLibrary;

namespace {

// Our stream as HailoRT 4.23 would fill hailo_stream_info_t (hailort.h: the union holds hailo_nms_info_t for NMS
// orders; burst types H8_BBOX 0, H15_BBOX 1, H8_PER_CLASS 2, H15_PER_CLASS 3, H15_PER_FRAME 4).
abi::hailo_stream_info_t to_hailort(const hef::StreamInfo& s) {
  abi::hailo_stream_info_t r;
  std::memset(&r, 0, sizeof r);
  std::strncpy(r.name, s.name.c_str(), sizeof r.name - 1);
  r.direction = s.direction == hef::Direction::device_to_host ? 1 : 0;
  r.format = {static_cast<uint32_t>(s.type), static_cast<uint32_t>(s.order), s.transposed ? 2u : 0u};
  r.hw_data_bytes = s.hw_data_bytes;
  r.hw_frame_size = static_cast<uint32_t>(s.hw_frame_size);
  r.index = s.index;
  r.quant_info = {s.quant.zero_point, s.quant.scale, s.quant.limit_min, s.quant.limit_max};
  r.is_mux = s.is_mux;
  if (s.nms) {
    auto& n = r.nms_info;
    n.number_of_classes = s.nms->number_of_classes;
    n.max_bboxes_per_class = s.nms->max_bboxes_per_class;
    n.max_bboxes_total = s.nms->max_bboxes_total;
    n.bbox_size = s.nms->bbox_size;
    n.chunks_per_frame = s.nms->chunks_per_frame;
    n.is_defused = s.nms->is_defused;
    n.defuse_info.class_group_index = s.nms->class_group_index;
    std::strncpy(n.defuse_info.original_name, s.nms->original_name.c_str(), sizeof n.defuse_info.original_name - 1);
    n.burst_size = s.nms->burst_size;
    switch (s.nms->burst_type) {
      case hef::NmsBurstType::h8_bbox: n.burst_type = 0; break;
      case hef::NmsBurstType::h15_bbox: n.burst_type = 1; break;
      case hef::NmsBurstType::h8_per_class: n.burst_type = 2; break;
      case hef::NmsBurstType::h15_per_class: n.burst_type = 3; break;
      case hef::NmsBurstType::h15_per_frame: n.burst_type = 4; break;
    }
  } else {
    r.shapes.shape = {s.shape.height, s.shape.width, s.shape.features};
    r.shapes.hw_shape = {s.hw_shape.height, s.hw_shape.width, s.hw_shape.features};
  }
  return r;
}

abi::hailo_vstream_info_t to_hailort(const hef::VStreamInfo& v) {
  abi::hailo_vstream_info_t r;
  std::memset(&r, 0, sizeof r);
  std::strncpy(r.name, v.name.c_str(), sizeof r.name - 1);
  std::strncpy(r.network_name, v.network_name.c_str(), sizeof r.network_name - 1);
  r.direction = v.direction == hef::Direction::device_to_host ? 1 : 0;
  r.format = {static_cast<uint32_t>(v.type), static_cast<uint32_t>(v.order), v.transposed ? 2u : 0u};
  if (v.nms) r.nms_shape = {v.nms->number_of_classes, v.nms->max_bboxes_per_class, v.nms->max_bboxes_total, 0};
  else r.shape = {v.shape.height, v.shape.width, v.shape.features};
  r.quant_info = {v.quant.zero_point, v.quant.scale, v.quant.limit_min, v.quant.limit_max};
  return r;
}

struct Group {
  std::string name;
  std::vector<hef::StreamInfo> streams;
  std::vector<hef::VStreamInfo> vstreams;
};

// Every network group of every shared HEF our reader reads.
std::vector<Group> shared_groups() {
  std::vector<Group> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(aisrv::test::testdata_path("hef"))) {
    if (e.path().extension() != ".hef") continue;
    auto h = hef::read_hef_file(e.path());
    if (!h) continue;
    for (const auto& g : h->network_groups) {
      Group x{e.path().filename().string() + ":" + g.name, {}, {}};
      if (auto in = hef::input_stream_infos(g)) x.streams = *in;
      if (auto o = hef::output_stream_infos(g)) x.streams.insert(x.streams.end(), o->begin(), o->end());
      if (auto in = hef::input_vstream_infos(g)) x.vstreams = *in;
      if (auto o = hef::output_vstream_infos(g)) x.vstreams.insert(x.vstreams.end(), o->begin(), o->end());
      out.push_back(std::move(x));
    }
  }
  return out;
}

template <typename Info, typename Raw>
std::vector<Info> read_back(const std::vector<Raw>& raw, std::vector<uint32_t>& flags,
                            Info (*from)(const Raw&, uint32_t*)) {
  std::vector<Info> out;
  flags.assign(raw.size(), 0);
  for (size_t i = 0; i < raw.size(); ++i) out.push_back(from(raw[i], &flags[i]));
  return out;
}

}  // namespace

TEST_CASE("HailoRT's records of the shared HEFs' streams, read back, agree with the reader on every fact") {
  const auto groups = shared_groups();
  REQUIRE(groups.size() >= 4);  // the four HEFs outside invalid/
  size_t facts = 0, nms_vstreams = 0;
  for (const auto& g : groups) {
    CAPTURE(g.name);
    std::vector<abi::hailo_stream_info_t> raw;
    for (const auto& s : g.streams) raw.push_back(to_hailort(s));
    std::vector<abi::hailo_vstream_info_t> vraw;
    for (const auto& v : g.vstreams) vraw.push_back(to_hailort(v));
    std::vector<uint32_t> flags, vflags;
    const auto theirs = read_back(raw, flags, &verify::stream_from_hailort);
    const auto vtheirs = read_back(vraw, vflags, &verify::vstream_from_hailort);
    verify::Comparison c;
    verify::compare_streams(g.name, g.streams, theirs, flags, c);
    verify::compare_vstreams(g.name, g.vstreams, vtheirs, vflags, c);
    for (const auto& d : c.differences()) MESSAGE(d.where << ": aisrv " << d.aisrv << ", HailoRT " << d.hailort);
    CHECK(c.differences().empty());
    facts += c.facts();
    for (const auto& v : g.vstreams) nms_vstreams += v.nms.has_value();
  }
  CHECK(facts > 200);
  CHECK(nms_vstreams >= 1);  // the NMS branch of the vstream union was exercised (no shared HEF has on-chip NMS)
}

TEST_CASE("an edited field of HailoRT's record is one difference, named") {
  const auto groups = shared_groups();
  REQUIRE(!groups.empty());
  Group g = groups.front();
  // The shared HEFs have no on-chip NMS stream: add one, as a Hailo-8 SSD/YOLOv5 HEF describes it.
  hef::StreamInfo nms;
  nms.name = "synthetic/nms1";
  nms.direction = hef::Direction::device_to_host;
  nms.order = hef::FormatOrder::nms_on_chip;
  nms.type = hef::FormatType::uint16;
  nms.hw_data_bytes = 2;
  nms.nms = hef::NmsInfo{80, 100, 8000, 8, 1, 1, hef::NmsBurstType::h8_bbox, false, 0, ""};
  nms.hw_frame_size = nms.nms->hw_frame_size();
  nms.index = 9;
  g.streams.push_back(nms);
  std::vector<abi::hailo_stream_info_t> base;
  for (const auto& s : g.streams) base.push_back(to_hailort(s));
  const size_t nms_at = g.streams.size() - 1, plain_at = 0;
  REQUIRE(!g.streams[plain_at].nms);

  struct Edit {
    const char* field;
    size_t at;
    void (*apply)(abi::hailo_stream_info_t&);
  };
  const Edit edits[] = {
      {"hw_shape", plain_at, [](abi::hailo_stream_info_t& r) { r.shapes.hw_shape.width += 1; }},
      {"shape", plain_at, [](abi::hailo_stream_info_t& r) { r.shapes.shape.features += 8; }},
      {"qp_scale", plain_at, [](abi::hailo_stream_info_t& r) { r.quant_info.qp_scale *= 2; }},
      {"format order", plain_at, [](abi::hailo_stream_info_t& r) { r.format.order = r.format.order == 4 ? 1 : 4; }},
      {"format flags", plain_at, [](abi::hailo_stream_info_t& r) { r.format.flags = 2; }},
      {"hw_frame_size", plain_at, [](abi::hailo_stream_info_t& r) { r.hw_frame_size += 8; }},
      {"index", plain_at, [](abi::hailo_stream_info_t& r) { r.index += 1; }},
      {"nms bbox_size", nms_at, [](abi::hailo_stream_info_t& r) { r.nms_info.bbox_size += 1; }},
      {"nms burst_type", nms_at, [](abi::hailo_stream_info_t& r) { r.nms_info.burst_type ^= 2; }},
      {"nms max_bboxes_per_class", nms_at, [](abi::hailo_stream_info_t& r) { r.nms_info.max_bboxes_per_class += 1; }},
  };
  for (const auto& e : edits) {
    CAPTURE(e.field);
    auto raw = base;
    e.apply(raw[e.at]);
    std::vector<uint32_t> flags;
    const auto theirs = read_back(raw, flags, &verify::stream_from_hailort);
    verify::Comparison c;
    verify::compare_streams(g.name, g.streams, theirs, flags, c);
    REQUIRE(c.differences().size() == 1);
    const auto& d = c.differences()[0];
    CHECK(d.where.find(g.streams[e.at].name) != std::string::npos);
    CHECK(d.where.find(std::string(": ") + e.field) != std::string::npos);
    CHECK(d.aisrv != d.hailort);
  }
}

TEST_CASE("missing, extra and reordered entries are differences") {
  const auto groups = shared_groups();
  const Group* g = nullptr;
  for (const auto& x : groups)
    if (x.vstreams.size() >= 3 && !g) g = &x;
  REQUIRE(g);
  std::vector<abi::hailo_vstream_info_t> raw;
  for (const auto& v : g->vstreams) raw.push_back(to_hailort(v));

  SUBCASE("HailoRT lists one more") {
    auto more = raw;
    std::strcpy(more.back().name, "only-in-hailort");
    more.push_back(raw.back());
    std::vector<uint32_t> flags;
    const auto theirs = read_back(more, flags, &verify::vstream_from_hailort);
    verify::Comparison c;
    verify::compare_vstreams(g->name, g->vstreams, theirs, flags, c);
    bool count = false, extra = false;
    for (const auto& d : c.differences()) {
      count = count || d.where.find("number of vstream") != std::string::npos;
      extra = extra || (d.where.find("only-in-hailort") != std::string::npos && d.aisrv == "absent");
    }
    CHECK(count);
    CHECK(extra);
  }
  SUBCASE("HailoRT lists two in the other order") {
    auto swapped = raw;
    std::swap(swapped[0], swapped[1]);
    std::vector<uint32_t> flags;
    const auto theirs = read_back(swapped, flags, &verify::vstream_from_hailort);
    verify::Comparison c;
    verify::compare_vstreams(g->name, g->vstreams, theirs, flags, c);
    REQUIRE(c.differences().size() == 2);
    for (const auto& d : c.differences()) CHECK(d.where.find(": position") != std::string::npos);
  }
}

TEST_CASE("a HEF report agrees only when nothing differs; a HEF HailoRT refuses is not a disagreement") {
  verify::HefReport r;
  r.path = "x.hef";
  r.hailort_accepted = false;
  r.hailort_status = "HAILO_HEF_NOT_SUPPORTED(92)";
  r.hailort_note = "it lacks the PERIPH_CALCULATION_IN_HAILORT extension";
  CHECK(r.agrees());
  CHECK(r.summary_line().find("refused by HailoRT: HAILO_HEF_NOT_SUPPORTED(92)") != std::string::npos);

  r.hailort_accepted = true;
  r.aisrv_accepted = true;
  verify::TransformCheck t;
  t.outcome = verify::TransformCheck::Outcome::bit_exact;
  r.transforms = {t};
  CHECK(r.agrees());
  t.outcome = verify::TransformCheck::Outcome::hailort_refused;  // HailoRT refusing a transform is reported, not failed
  r.transforms.push_back(t);
  CHECK(r.agrees());
  t.outcome = verify::TransformCheck::Outcome::differs;
  r.transforms.push_back(t);
  CHECK_FALSE(r.agrees());
  CHECK(r.summary_line().find("DIFFERS") != std::string::npos);
  r.transforms.pop_back();
  r.differences.push_back({"g/s (stream): hw_shape", "1x2x3", "1x2x4"});
  CHECK_FALSE(r.agrees());
  r.differences.clear();
  r.aisrv_accepted = false;  // HailoRT reads it and we do not
  CHECK_FALSE(r.agrees());
  const auto j = verify::to_json(r);
  CHECK(j["agrees"] == false);
  CHECK(j["transforms"].size() == 2);
}

TEST_CASE("a libhailort without the HEF inspection functions is refused, naming them") {
  auto lib = HailortLibrary::open_path(AISRV_HAILORT_DOUBLE);
  REQUIRE_MESSAGE(lib.ok(), (lib ? "" : lib.error().message));
  auto api = (*lib)->hef_api();
  REQUIRE_FALSE(api.ok());
  CHECK(api.error().code == aisrv::Errc::not_supported);
  CHECK(api.error().message.find("hailo_create_hef_file") != std::string::npos);
  CHECK(api.error().message.find("hailo_transform_frame_by_output_transform_context") != std::string::npos);
}

TEST_CASE("the reason of a refusal is the first error line HailoRT logged, without its prefix fields") {
  // lines as libhailort 4.23.0 wrote them into hailort.log (HAILORT_LOCAL_FILE_LOGGER_PATTERN)
  const std::string log =
      "[2026-11-26 07:28:19.701] [11371] [HailoRT] [info] [hef.cpp:1052] [Impl] Parsing HEF\n"
      "[2026-11-26 07:28:19.717] [11371] [HailoRT] [error] [hef.cpp:451] [validate_hef_header] CHECK failed - HEF "
      "file length does not match\n"
      "[2026-11-26 07:28:19.717] [11371] [HailoRT] [error] [hef.cpp:596] [parse_hef_file] CHECK_SUCCESS failed with "
      "status=HAILO_HEF_FILE_CORRUPTED(91)\n";
  CHECK(verify::first_logged_error(log) == "CHECK failed - HEF file length does not match");
  CHECK(verify::first_logged_error("[x] [HailoRT] [info] [a.cpp:1] [f] fine\n").empty());
  CHECK(verify::first_logged_error("").empty());
  CHECK(verify::first_logged_error("[error] no fields").find("no fields") != std::string::npos);
}

TEST_CASE("the configured libhailort: an explicit path, else AISRV_HAILORT_LIBRARY, each tried alone") {
  const char* before = std::getenv("AISRV_HAILORT_LIBRARY");
  const std::string saved = before ? before : "";
  ::setenv("AISRV_HAILORT_LIBRARY", AISRV_HAILORT_DOUBLE, 1);
  auto lib = HailortLibrary::open_configured("");
  REQUIRE_MESSAGE(lib.ok(), (lib ? "" : lib.error().message));
  CHECK((*lib)->path() == AISRV_HAILORT_DOUBLE);
  ::setenv("AISRV_HAILORT_LIBRARY", "/nonexistent/libhailort.so.4.23.0", 1);
  auto bad = HailortLibrary::open_configured("");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("AISRV_HAILORT_LIBRARY names /nonexistent/libhailort.so.4.23.0") != std::string::npos);
  CHECK(bad.error().message.find("no other library is tried") != std::string::npos);
  auto explicit_wins = HailortLibrary::open_configured(AISRV_HAILORT_DOUBLE);  // the environment is not consulted
  CHECK(explicit_wins.ok());
  if (saved.empty()) ::unsetenv("AISRV_HAILORT_LIBRARY");
  else ::setenv("AISRV_HAILORT_LIBRARY", saved.c_str(), 1);
}
