// aisrv tests — engine/results: every case of tests/data/results/*.json (shared with host/python/tests/
// test_results.py; expectations written by hand) through decode() and recognise(), label files through
// parse_labels(), then the pieces the cases do not reach: names, the skeleton, class_at() without a placement,
// YOLOv8 heads of Ultralytics' full size (8400 and 40000 candidates) and mutated outputs that must not crash.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

#include "aisrv/results/results.hpp"

using namespace aisrv;
using namespace aisrv::results;
using nlohmann::json;
using protocol::DType;
using protocol::TensorInfo;

namespace {

struct Case {
  std::string file;
  json j;
};

std::vector<Case> load_cases() {
  std::vector<Case> cases;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(AISRV_RESULTS_CASES))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    json doc = json::parse(in);
    for (auto& c : doc.at("cases")) cases.push_back({f.filename().string(), c});
  }
  return cases;
}

DType dtype_of(const std::string& name) {
  static const std::pair<const char*, DType> names[] = {
      {"float32", DType::float32}, {"int8", DType::int8},   {"uint8", DType::uint8},     {"int16", DType::int16},
      {"uint16", DType::uint16},   {"int32", DType::int32}, {"int64", DType::int64},     {"boolean", DType::boolean},
      {"float16", DType::float16}, {"unknown", DType::unknown}};
  for (const auto& [n, t] : names)
    if (name == n) return t;
  FAIL("unknown dtype " << name);
  return DType::unknown;
}

TensorInfo tensor_of(const json& j) {
  TensorInfo t;
  t.name = j.at("name").get<std::string>();
  t.dtype = dtype_of(j.at("dtype").get<std::string>());
  t.shape = j.at("shape").get<std::vector<int32_t>>();
  uint64_t n = 1;
  for (auto d : t.shape) n *= d < 0 ? 0 : static_cast<uint64_t>(d);
  t.bytes = static_cast<uint32_t>(n * protocol::dtype_size(t.dtype));
  t.scale = j.value("scale", std::vector<float>{});
  t.zero_point = j.value("zero_point", std::vector<int32_t>{});
  t.quant_axis = j.value("quant_axis", -1);
  return t;
}

ModelDescription model_of(const json& j) {
  ModelDescription m;
  for (const auto& t : j.at("inputs")) m.inputs.push_back(tensor_of(t));
  for (const auto& t : j.at("outputs")) m.outputs.push_back(tensor_of(t));
  if (j.contains("metadata"))
    for (const auto& kv : j.at("metadata"))
      m.metadata.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  return m;
}

double number(const json& v) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    FAIL("bad number " << s);
  }
  return v.get<double>();
}

void flatten(const json& v, std::vector<double>& out) {
  if (v.is_array())
    for (const auto& e : v) flatten(e, out);
  else
    out.push_back(number(v));
}

uint16_t to_half(float f) {  // round to nearest even; enough for test values
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  if (std::isnan(f)) return sign | 0x7e00;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (exp >= 31) return sign | 0x7c00;
  if (exp <= 0) return sign;  // no subnormals needed here
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

template <typename T>
void put(std::vector<uint8_t>& b, T v) {
  const size_t at = b.size();
  b.resize(at + sizeof v);
  std::memcpy(b.data() + at, &v, sizeof v);
}

// {"values": nested list} | {"fill": v, ["count": n], ["values": prefix]} | {"hex": "..."}
std::vector<uint8_t> output_bytes(const json& j, const TensorInfo& t) {
  std::vector<uint8_t> b;
  if (j.contains("hex")) {
    const auto hex = j.at("hex").get<std::string>();
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
      b.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return b;
  }
  std::vector<double> prefix;
  if (j.contains("values")) flatten(j.at("values"), prefix);
  size_t count = prefix.size();
  std::vector<double> v = prefix;
  if (j.contains("fill")) {
    count = 1;
    for (auto d : t.shape) count *= static_cast<size_t>(std::max(d, 0));
    if (j.contains("count")) count = j.at("count").get<size_t>();
    v.assign(count, number(j.at("fill")));
    std::copy(prefix.begin(), prefix.end(), v.begin());
  }
  for (double x : v) {
    switch (t.dtype) {
      case DType::float32: put(b, static_cast<float>(x)); break;
      case DType::float16: put(b, to_half(static_cast<float>(x))); break;
      case DType::int8: put(b, static_cast<int8_t>(x)); break;
      case DType::uint8: put(b, static_cast<uint8_t>(x)); break;
      case DType::int16: put(b, static_cast<int16_t>(x)); break;
      case DType::uint16: put(b, static_cast<uint16_t>(x)); break;
      case DType::int32: put(b, static_cast<int32_t>(x)); break;
      case DType::int64: put(b, static_cast<int64_t>(x)); break;
      case DType::boolean: put(b, static_cast<uint8_t>(x != 0)); break;
      default: FAIL("no encoding for this dtype");
    }
  }
  return b;
}

image::Placement placement_of(const json& j) {
  image::Placement p;
  p.input_width = j.at("input_width").get<uint32_t>();
  p.input_height = j.at("input_height").get<uint32_t>();
  p.picture_width = j.at("picture_width").get<uint32_t>();
  p.picture_height = j.at("picture_height").get<uint32_t>();
  p.scale_x = j.value("scale_x", 1.0);
  p.scale_y = j.value("scale_y", 1.0);
  p.left = j.value("left", 0.0);
  p.top = j.value("top", 0.0);
  p.crop_x = j.value("crop_x", 0u);
  p.crop_y = j.value("crop_y", 0u);
  return p;
}

Options options_of(const json& c) {
  Options o;
  if (!c.contains("options")) return o;
  const json& j = c.at("options");
  if (j.contains("task")) {
    auto t = task_from_name(j.at("task").get<std::string>());
    REQUIRE(t);
    o.task = *t;
  }
  if (j.contains("labels")) o.labels = j.at("labels").get<std::vector<std::string>>();
  if (j.contains("labels_text")) {
    auto l = parse_labels(j.at("labels_text").get<std::string>());
    REQUIRE(l);
    o.labels = *l;
  }
  if (j.contains("threshold")) o.threshold = static_cast<float>(number(j.at("threshold")));
  if (j.contains("iou_threshold")) o.iou_threshold = static_cast<float>(number(j.at("iou_threshold")));
  if (j.contains("max_results")) o.max_results = j.at("max_results").get<size_t>();
  if (j.contains("placement")) o.placement = placement_of(j.at("placement"));
  return o;
}

void check_error(const Error& e, const json& expected) {
  CHECK(errc_name(e.code) == expected.at("code").get<std::string>());
  const auto contains = expected.at("contains").get<std::string>();
  CHECK_MESSAGE(e.message.find(contains) != std::string::npos,
                "message: " << e.message << "\nexpected in it: " << contains);
}

void check_near(double got, const json& expected, double tol, const char* what) {
  CHECK_MESSAGE(std::fabs(got - number(expected)) <= tol, what << ": got " << got << ", expected " << expected);
}

void check_decoded(const Decoded& d, const json& e, double tol) {
  CHECK(task_name(d.task) == e.at("task").get<std::string>());
  CHECK(d.decoder == e.at("decoder").get<std::string>());
  const json none = json::array();
  const json& classes = e.contains("classes") ? e.at("classes") : none;
  REQUIRE(d.classes.size() == classes.size());
  for (size_t i = 0; i < classes.size(); ++i) {
    CHECK(d.classes[i].index == classes[i].at("index").get<int32_t>());
    CHECK(d.classes[i].label == classes[i].at("label").get<std::string>());
    check_near(d.classes[i].score, classes[i].at("score"), tol, "score");
  }
  const json& dets = e.contains("detections") ? e.at("detections") : none;
  REQUIRE(d.detections.size() == dets.size());
  for (size_t i = 0; i < dets.size(); ++i) {
    INFO("detection " << i);
    CHECK(d.detections[i].class_id == dets[i].at("class_id").get<int32_t>());
    CHECK(d.detections[i].label == dets[i].at("label").get<std::string>());
    check_near(d.detections[i].score, dets[i].at("score"), tol, "score");
    const auto& b = dets[i].at("box");
    check_near(d.detections[i].box.x0, b[0], tol, "x0");
    check_near(d.detections[i].box.y0, b[1], tol, "y0");
    check_near(d.detections[i].box.x1, b[2], tol, "x1");
    check_near(d.detections[i].box.y1, b[3], tol, "y1");
  }
  const json& kps = e.contains("keypoints") ? e.at("keypoints") : none;
  REQUIRE(d.keypoints.size() == kps.size());
  for (size_t i = 0; i < kps.size(); ++i) {
    INFO("keypoint " << i);
    CHECK(d.keypoints[i].name == kps[i].at("name").get<std::string>());
    check_near(d.keypoints[i].x, kps[i].at("x"), tol, "x");
    check_near(d.keypoints[i].y, kps[i].at("y"), tol, "y");
    check_near(d.keypoints[i].score, kps[i].at("score"), tol, "score");
  }
  REQUIRE(d.mask.has_value() == e.contains("mask"));
  if (!d.mask) return;
  const auto& m = *d.mask;
  const json& em = e.at("mask");
  CHECK(m.width == em.at("width").get<uint32_t>());
  CHECK(m.height == em.at("height").get<uint32_t>());
  if (em.contains("classes")) CHECK(m.classes == em.at("classes").get<std::vector<int32_t>>());
  const json& present = em.at("present");
  REQUIRE(m.present.size() == present.size());
  for (size_t i = 0; i < present.size(); ++i) {
    CHECK(m.present[i].class_id == present[i].at("class_id").get<int32_t>());
    CHECK(m.present[i].label == present[i].at("label").get<std::string>());
    CHECK(m.present[i].pixels == present[i].at("pixels").get<uint64_t>());
    check_near(m.present[i].fraction, present[i].at("fraction"), 1e-6, "fraction");
  }
  if (em.contains("placement")) {
    REQUIRE(m.placement.has_value() == !em.at("placement").is_null());
    if (m.placement) {
      const auto p = placement_of(em.at("placement"));
      CHECK(m.placement->input_width == p.input_width);
      CHECK(m.placement->input_height == p.input_height);
      CHECK(m.placement->picture_width == p.picture_width);
      CHECK(m.placement->picture_height == p.picture_height);
      CHECK(m.placement->scale_x == doctest::Approx(p.scale_x));
      CHECK(m.placement->scale_y == doctest::Approx(p.scale_y));
      CHECK(m.placement->left == doctest::Approx(p.left));
      CHECK(m.placement->top == doctest::Approx(p.top));
    }
  }
  if (e.contains("class_at"))
    for (const auto& q : e.at("class_at")) {
      INFO("class_at(" << q[0] << ", " << q[1] << ")");
      CHECK(class_at(m, q[0].get<double>(), q[1].get<double>()) == q[2].get<int32_t>());
    }
}

// A small detector description for the pieces below.
ModelDescription yolo_model(int32_t rows, int32_t candidates, int32_t input = 640) {
  ModelDescription m;
  m.inputs.push_back(TensorInfo{"images", DType::float32, {1, input, input, 3},
                                static_cast<uint32_t>(input * input * 3 * 4), -1, {}, {}});
  m.outputs.push_back(TensorInfo{"output0", DType::float32, {1, rows, candidates},
                                 static_cast<uint32_t>(rows * candidates * 4), -1, {}, {}});
  return m;
}

}  // namespace

TEST_CASE("the shared cases (tests/data/results)") {
  const auto cases = load_cases();
  CHECK(cases.size() >= 60);
  size_t decoded = 0, errors = 0, labels = 0;
  for (const auto& c : cases) {
    const json& j = c.j;
    INFO(c.file << ": " << j.at("name").get<std::string>());
    if (j.contains("labels_text") && !j.contains("model")) {
      auto l = parse_labels(j.at("labels_text").get<std::string>());
      if (j.contains("error")) {
        REQUIRE_FALSE(l.ok());
        check_error(l.error(), j.at("error"));
      } else {
        REQUIRE_MESSAGE(l.ok(), l.error().what());
        CHECK(*l == j.at("expect_labels").get<std::vector<std::string>>());
      }
      ++labels;
      continue;
    }
    const auto model = model_of(j.at("model"));
    const auto options = options_of(j);
    std::vector<std::vector<uint8_t>> outputs;
    const auto& outs = j.at("outputs");
    for (size_t i = 0; i < outs.size(); ++i)
      outputs.push_back(output_bytes(outs[i], i < model.outputs.size() ? model.outputs[i] : model.outputs.back()));
    if (j.contains("recognise")) {
      auto t = recognise(model, options);
      REQUIRE_MESSAGE(t.ok(), t.error().what());
      CHECK(task_name(*t) == j.at("recognise").get<std::string>());
    }
    auto r = decode(model, outputs, options);
    if (j.contains("error")) {
      REQUIRE_FALSE(r.ok());
      check_error(r.error(), j.at("error"));
      ++errors;
    } else {
      REQUIRE_MESSAGE(r.ok(), r.error().what());
      check_decoded(*r, j.at("expect"), j.value("tolerance", 1e-3));
      ++decoded;
    }
  }
  MESSAGE(decoded << " decoded, " << errors << " refused, " << labels << " label files");
}

TEST_CASE("task names") {
  CHECK(task_from_name("classify") == Task::classification);
  CHECK(task_from_name("detect") == Task::detection);
  CHECK(task_from_name("Segment") == Task::segmentation);
  CHECK(task_from_name("pose") == Task::pose);
  CHECK_FALSE(task_from_name("obb"));
  for (Task t : {Task::classification, Task::detection, Task::segmentation, Task::pose})
    CHECK(task_from_name(task_name(t)) == t);
}

TEST_CASE("the COCO skeleton joins 17 keypoints") {
  auto edges = coco_skeleton();
  CHECK(edges.size() == 18);
  for (auto [a, b] : edges) {
    CHECK(a >= 0);
    CHECK(a < 17);
    CHECK(b >= 0);
    CHECK(b < 17);
    CHECK(a != b);
  }
}

TEST_CASE("metadata labels: parsed, broken ones ignored") {
  ModelDescription m;
  m.metadata = {{"labels", "0 cat\n1 dog\n"}};
  CHECK(metadata_labels(m) == std::vector<std::string>{"cat", "dog"});
  m.metadata = {{"labels", "0 cat\ndog\n"}};
  CHECK(metadata_labels(m).empty());
  m.metadata.clear();
  CHECK(metadata_labels(m).empty());
}

TEST_CASE("class_at on a mask without a placement takes mask cells; a mask whose size lies gives -1") {
  Segmentation s;
  s.width = 2;
  s.height = 1;
  s.classes = {4, 7};
  CHECK(class_at(s, 0, 0) == 4);
  CHECK(class_at(s, 1, 0) == 7);
  CHECK(class_at(s, 0, 1) == -1);
  CHECK(class_at(s, std::nan(""), 0) == -1);
  s.classes.pop_back();
  CHECK(class_at(s, 0, 0) == -1);
}

TEST_CASE("YOLOv8 at Ultralytics' size: 8400 candidates of one box collapse to one detection") {
  const int32_t n = 8400, rows = 84;
  auto m = yolo_model(rows, n);
  std::vector<float> v(static_cast<size_t>(rows) * n, 0.0f);
  for (int32_t a = 0; a < n; ++a) {
    v[0 * n + a] = 0.5f;
    v[1 * n + a] = 0.5f;
    v[2 * n + a] = 0.25f;
    v[3 * n + a] = 0.25f;
    v[static_cast<size_t>(4 + 7) * n + a] = 0.3f + 0.6f * static_cast<float>(a) / n;  // class 7
  }
  std::vector<std::vector<uint8_t>> out(1, std::vector<uint8_t>(v.size() * 4));
  std::memcpy(out[0].data(), v.data(), out[0].size());
  const auto t0 = std::chrono::steady_clock::now();
  auto r = decode(m, out);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.ok());
  REQUIRE(r->detections.size() == 1);
  CHECK(r->detections[0].class_id == 7);
  CHECK(r->detections[0].score == doctest::Approx(0.3 + 0.6 * 8399.0 / 8400).epsilon(1e-5));
  CHECK(r->detections[0].box.x0 == doctest::Approx(240));
  CHECK(r->detections[0].box.x1 == doctest::Approx(400));
  MESSAGE("8400 x 84 decoded in " << ms << " ms");
}

TEST_CASE("YOLOv8 with 40000 candidates: the best 30000 go to NMS, the best 300 come out") {
  const int32_t n = 40000, rows = 5;
  auto m = yolo_model(rows, n, 2000);
  std::vector<float> v(static_cast<size_t>(rows) * n, 0.0f);
  for (int32_t a = 0; a < n; ++a) {  // disjoint 5x5 boxes on a 200 x 200 grid, pixel coordinates
    v[0 * n + a] = static_cast<float>((a % 200) * 10 + 5);
    v[1 * n + a] = static_cast<float>((a / 200) * 10 + 5);
    v[2 * n + a] = 5;
    v[3 * n + a] = 5;
    v[4 * n + a] = 0.3f + 0.6f * static_cast<float>(a) / n;
  }
  std::vector<std::vector<uint8_t>> out(1, std::vector<uint8_t>(v.size() * 4));
  std::memcpy(out[0].data(), v.data(), out[0].size());
  auto r = decode(m, out);
  REQUIRE(r.ok());
  REQUIRE(r->detections.size() == 300);
  for (size_t i = 0; i < 300; ++i)
    CHECK(r->detections[i].score == doctest::Approx(v[static_cast<size_t>(4 * n + n - 1) - i]));
  CHECK(r->detections[0].box.x0 == doctest::Approx(1992.5));
}

TEST_CASE("mutated outputs of every case decode or fail cleanly") {
  std::mt19937 rng(1234);
  size_t runs = 0, failures = 0;
  for (const auto& c : load_cases()) {
    if (!c.j.contains("model")) continue;
    const auto model = model_of(c.j.at("model"));
    const auto options = options_of(c.j);
    std::vector<std::vector<uint8_t>> outputs;
    const auto& outs = c.j.at("outputs");
    for (size_t i = 0; i < outs.size(); ++i)
      outputs.push_back(output_bytes(outs[i], i < model.outputs.size() ? model.outputs[i] : model.outputs.back()));
    for (int k = 0; k < 200; ++k) {
      auto mutated = outputs;
      for (auto& o : mutated) {
        if (o.empty()) continue;
        const int flips = 1 + static_cast<int>(rng() % 8);
        for (int f = 0; f < flips; ++f) o[rng() % o.size()] = static_cast<uint8_t>(rng());
        if (rng() % 16 == 0) o.resize(rng() % (o.size() + 2));
      }
      auto r = decode(model, mutated, options);
      ++runs;
      if (!r) {
        ++failures;
        CHECK(r.error().code == Errc::invalid_argument);
      }
    }
  }
  MESSAGE(runs << " mutated decodes, " << failures << " refused");
}
