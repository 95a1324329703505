// aisrv tests — the real HEFs of ../shared/testdata through the hailo8 backend: load -> tensor descriptions checked
// against SOURCES.md (names, shapes, element types, frame sizes, quantization), broken HEFs refused with the reason,
// invoke on this machine (no Hailo-8) refused with the exact reason, and mnist.hef's data path through the HailoRT
// test double: the author's five MNIST digits go out byte for byte, the double's scripted answers (the author's
// documented one-hot rows) come back. The double computes nothing: this checks the glue, not the network.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>


#include "aisrv/engine/hailo8/backend.hpp"
#include "aisrv/engine/hailo8/driver/discovery.hpp"
#include "hailo_device_tree.hpp"
#include "hailo_driver_double.hpp"
#include "hailort_double_control.h"
#include "testdata.hpp"

using namespace aisrv;
namespace hailo8 = aisrv::engine::hailo8;
namespace fs = std::filesystem;

namespace {

std::optional<std::vector<uint8_t>> hef_bytes(const std::string& relative) {
  const auto p = test::testdata_path(relative);
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) {
    MESSAGE("not in this copy of the test data: " << relative);
    return std::nullopt;
  }
  std::ifstream in(p, std::ios::binary);
  std::vector<uint8_t> bytes(fs::file_size(p));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(in.good());
  return bytes;
}

struct Loaded {
  std::unique_ptr<engine::InferenceBackend> backend;
  engine::ModelInfo info;
  std::vector<std::string> log;
};

std::optional<Loaded> load(const std::string& relative, hailo8::Hailo8Options options = {}) {
  auto bytes = hef_bytes(relative);
  if (!bytes) return std::nullopt;
  Loaded l;
  l.backend = hailo8::make_hailo8_backend(std::move(options));
  engine::LoadOptions lo;
  lo.log = [&l](std::string_view s) { l.log.emplace_back(s); };
  auto info = l.backend->load(*bytes, lo);
  REQUIRE_MESSAGE(info.ok(), relative << ": " << (info.ok() ? std::string() : info.error().message));
  l.info = std::move(*info);
  return l;
}

const engine::TensorDesc* by_suffix(const std::vector<engine::TensorDesc>& list, const std::string& suffix) {
  for (const auto& t : list)
    if (t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("mnist.hef: NC(784) UINT8 in, NC(10) UINT8 out, scale 1/255, zero point 0") {
  auto l = load("hef/codetam__hailo_project/mnist.hef");
  if (!l) return;
  REQUIRE(l->info.inputs.size() == 1);
  REQUIRE(l->info.outputs.size() == 1);
  const auto& in = l->info.inputs[0];
  CHECK(in.name == "mnist/input_layer1");
  CHECK(in.dtype == protocol::DType::uint8);
  CHECK(in.shape == std::vector<int32_t>{1, 784});
  CHECK(in.bytes == 784);
  REQUIRE(in.scale.size() == 1);
  CHECK(in.scale[0] == doctest::Approx(1.0 / 255));
  CHECK(in.zero_point == std::vector<int32_t>{0});
  const auto& out = l->info.outputs[0];
  CHECK(out.name == "mnist/softmax1");
  CHECK(out.shape == std::vector<int32_t>{1, 10});
  CHECK(out.bytes == 10);
  CHECK(out.scale[0] == doctest::Approx(1.0 / 255));
  CHECK(out.zero_point == std::vector<int32_t>{0});
  // SOURCES.md: this old HEF lacks PERIPH_CALCULATION_IN_HAILORT; load says so (HailoRT >= 4.14 refuses it).
  bool warned = false;
  for (const auto& s : l->log) warned |= s.find("lacks the PERIPH_CALCULATION_IN_HAILORT extension") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("yolov8n.hef: one 320x320x3 input, one FLOAT32 NMS-by-class output") {
  auto l = load("hef/GURUKARTHIKC__Takumi/yolov8n.hef");
  if (!l) return;
  REQUIRE(l->info.inputs.size() == 1);
  REQUIRE(l->info.outputs.size() == 1);
  CHECK(l->info.inputs[0].name == "yolov8n/input_layer1");
  CHECK(l->info.inputs[0].shape == std::vector<int32_t>{1, 320, 320, 3});
  CHECK(l->info.inputs[0].bytes == 320 * 320 * 3);
  CHECK(l->info.inputs[0].scale == std::vector<float>{1.0f});
  const auto& out = l->info.outputs[0];
  CHECK(out.name == "yolov8n/yolov8_nms_postprocess");
  CHECK(out.dtype == protocol::DType::float32);
  CHECK(out.bytes == 110 * (1 + 5 * 100) * 4);  // 110 classes, 100 boxes per class
  CHECK(out.shape == std::vector<int32_t>{1, 110 * (1 + 5 * 100)});
}

TEST_CASE("hand_landmark_lite.hef and model_3x640x640.hef (HAILO8L)") {
  if (auto l = load("hef/hailocs__hailo-apps-internal/hand_landmark_lite.hef")) {
    CHECK(l->info.inputs[0].shape == std::vector<int32_t>{1, 224, 224, 3});
    REQUIRE(l->info.outputs.size() == 4);
    for (auto [name, features] : {std::pair{"/fc1", 63}, {"/fc2", 63}, {"/fc3", 1}, {"/fc4", 1}}) {
      const auto* t = by_suffix(l->info.outputs, name);
      REQUIRE_MESSAGE(t, name);
      CHECK(t->bytes == static_cast<uint32_t>(features));
      CHECK(t->dtype == protocol::DType::uint8);
    }
  }
  if (auto l = load("hef/soramimi__hailo_yolo_inference/model_3x640x640.hef")) {
    // A Hailo-8 runs Hailo-8L HEFs (SOURCES.md: "Hailo-8L or Hailo-8"), at lower performance.
    CHECK(l->info.inputs[0].name == "model_3x640x640/input_layer1");
    CHECK(l->info.inputs[0].bytes == 640 * 640 * 3);
    CHECK(l->info.outputs[0].name == "model_3x640x640/normalization1");
    CHECK(l->info.outputs[0].shape == std::vector<int32_t>{1, 640, 640, 3});
    bool noted = false;
    for (const auto& s : l->log) noted |= s.find("compiled for Hailo-8L") != std::string::npos;
    CHECK(noted);
  }
}

TEST_CASE("held-back HEFs, when present: sizes from SOURCES.md") {
  if (auto l = load("hef/phawitb__face-recognition-hailo8-rpi5/arcface_mobilefacenet_v1.hef")) {
    CHECK(l->info.inputs[0].shape == std::vector<int32_t>{1, 112, 112, 3});
    CHECK(l->info.outputs[0].name == "arcface_mobilenet_v1/fc1");
    CHECK(l->info.outputs[0].bytes == 512);
  }
  if (auto l = load("hef/guyp98__yolov5seg_hailo/yolov5n_seg.hef")) {
    const auto* t = by_suffix(l->info.outputs, "/conv48");
    REQUIRE(t);
    CHECK(t->dtype == protocol::DType::uint16);
    CHECK(t->bytes == 80 * 80 * 351 * 2);
  }
  if (auto l = load("hef/zhaojinchu__Hailo_Testing/fast_depth.hef")) {
    CHECK(l->info.outputs[0].name == "fast_depth/conv20");
    CHECK(l->info.outputs[0].shape == std::vector<int32_t>{1, 224, 224, 1});
  }
  if (auto l = load("hef/xmihol00__hailo8_NN_acceleration/model.hef")) {
    CHECK(l->info.inputs[0].shape == std::vector<int32_t>{1, 32, 32, 1});
    CHECK(l->info.outputs[0].bytes == 4 * 4 * 16);
  }
}

TEST_CASE("broken HEFs are refused at load with the reason") {
  auto b = hailo8::make_hailo8_backend({});
  if (auto bytes = hef_bytes("hef/invalid/darrr05__Major_Project-Raspberrypi03/yolov8n.hef")) {
    auto r = b->load(*bytes, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::model_error);
    CHECK(r.error().message ==
          "HEF refused: HEF v0 file is shorter than its header says: the header declares a protobuf (10453729 bytes) "
          "after the header, the file has 2883552 bytes");
  }
  if (auto bytes = hef_bytes("hef/invalid/darrr05__Major_Project-Raspberrypi03/New1.hef")) {
    auto r = b->load(*bytes, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          "HEF refused: HEF v2 file is shorter than its header says: the header declares a protobuf and CCWs "
          "(31240774 bytes) after the header, the file has 2883540 bytes");
  }
  if (auto bytes = hef_bytes("hef/invalid/ilya-kkk__cm5_yolo/yolov8n.hef")) {
    auto r = b->load(*bytes, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("HEF refused: not a HEF: wrong magic 0x48454600") == 0);
  }
}

TEST_CASE("invoke on a machine without a Hailo-8 reports exactly that") {
  // An empty device tree: deterministic wherever the test runs.
  test::HailoDeviceTree tree;
  hailo8::Hailo8Options o;
  o.discovery = tree.paths;
  auto l = load("hef/codetam__hailo_project/mnist.hef", o);
  if (!l) return;
  engine::InvokeContext ctx;
  auto r = l->backend->invoke(ctx);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::infer_error);
  CHECK(r.error().message == "no Hailo-8 device found (looked in " + tree.paths.sysfs_class.string() + " and " +
                                 (tree.paths.dev_dir / "hailo*").string() + ")");
  for (uint8_t v : l->backend->output(0)) CHECK(v == 0);

  // The real sysfs and /dev of this machine, with default options (the real driver opener).
  auto found = hailo8::driver::discover({});
  if (!found || !found->empty()) {
    MESSAGE("this machine lists Hailo devices; the no-device check against the real sysfs and /dev is skipped");
    return;
  }
  auto real = load("hef/codetam__hailo_project/mnist.hef");
  auto rr = real->backend->invoke(ctx);
  REQUIRE_FALSE(rr.ok());
  CHECK(rr.error().message == "no Hailo-8 device found (looked in /sys/class/hailo_chardev and /dev/hailo*)");
}

TEST_CASE("mnist.hef through the HailoRT test double: the author's digits out, scripted answers back") {
  auto digits = hef_bytes("reference_io/hailo/mnist_test_0to4_u8_5x784.bin");
  if (!digits) return;
  REQUIRE(digits->size() == 5 * 784);
  void* h = dlopen(AISRV_HAILORT_DOUBLE, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h != nullptr);
  auto reset = reinterpret_cast<decltype(&aisrv_hailort_double_reset)>(dlsym(h, "aisrv_hailort_double_reset"));
  auto add = reinterpret_cast<decltype(&aisrv_hailort_double_add_vstream)>(dlsym(h, "aisrv_hailort_double_add_vstream"));
  auto set_output = reinterpret_cast<decltype(&aisrv_hailort_double_set_output)>(dlsym(h, "aisrv_hailort_double_set_output"));
  auto written = reinterpret_cast<decltype(&aisrv_hailort_double_written)>(dlsym(h, "aisrv_hailort_double_written"));
  auto live = reinterpret_cast<decltype(&aisrv_hailort_double_live_handles)>(dlsym(h, "aisrv_hailort_double_live_handles"));
  const bool resolved = reset && add && set_output && written && live;
  REQUIRE(resolved);
  reset();
  add("mnist/input_layer1", 0, 1, 6, 1, 1, 784, 784);
  add("mnist/softmax1", 1, 1, 6, 1, 1, 10, 10);

  // One Hailo-8 (driver 4.23.0) in a device tree, answered by the hailo_pci driver double.
  test::HailoDeviceTree tree;
  tree.device("hailo0", "0000:01:00.0");
  auto driver = std::make_shared<test::HailoDriverDouble>();
  driver->node(tree.dev("hailo0"));
  hailo8::Hailo8Options o;
  o.discovery = tree.paths;
  o.driver_opener = driver;
  o.hailort = AISRV_HAILORT_DOUBLE;
  {
    auto l = load("hef/codetam__hailo_project/mnist.hef", o);
    REQUIRE(l);
    const int labels[5] = {7, 2, 1, 0, 4};  // SOURCES.md: the author's documented argmax
    for (int i = 0; i < 5; ++i) {
      auto in = l->backend->input(0);
      std::copy_n(digits->begin() + i * 784, 784, in.begin());
      std::vector<uint8_t> one_hot(10, 0);
      one_hot[static_cast<size_t>(labels[i])] = 255;
      set_output("mnist/softmax1", one_hot.data(), one_hot.size());
      engine::InvokeContext ctx;
      auto r = l->backend->invoke(ctx);
      REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
      std::vector<uint8_t> sent(784);
      CHECK(written("mnist/input_layer1", sent.data(), sent.size()) == 784);
      CHECK(std::equal(sent.begin(), sent.end(), digits->begin() + i * 784));
      const auto out = l->backend->output(0);
      CHECK(std::vector<uint8_t>(out.begin(), out.end()) == one_hot);
    }
  }
  CHECK(live() == 0);
  dlclose(h);
}

TEST_CASE("mnist.hef with float=both: the digits as floats reach the device as the author's bytes") {
  // The user writes pixel values dequantized with the HEF's own qp, (q - zp) · scale, computed here from GET_TENSOR_INFO
  // of a plain load; our quantization must hand HailoRT exactly the author's bytes. The scripted one-hot answer comes
  // back as (q - zp) · scale of the output qp.
  auto digits = hef_bytes("reference_io/hailo/mnist_test_0to4_u8_5x784.bin");
  if (!digits) return;
  auto plain = load("hef/codetam__hailo_project/mnist.hef");
  REQUIRE(plain);
  const engine::TensorDesc in_desc = plain->info.inputs.at(0);
  const engine::TensorDesc out_desc = plain->info.outputs.at(0);
  REQUIRE(in_desc.scale.size() == 1);
  REQUIRE(out_desc.scale.size() == 1);

  void* h = dlopen(AISRV_HAILORT_DOUBLE, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h != nullptr);
  auto reset = reinterpret_cast<decltype(&aisrv_hailort_double_reset)>(dlsym(h, "aisrv_hailort_double_reset"));
  auto add = reinterpret_cast<decltype(&aisrv_hailort_double_add_vstream)>(dlsym(h, "aisrv_hailort_double_add_vstream"));
  auto set_output = reinterpret_cast<decltype(&aisrv_hailort_double_set_output)>(dlsym(h, "aisrv_hailort_double_set_output"));
  auto written = reinterpret_cast<decltype(&aisrv_hailort_double_written)>(dlsym(h, "aisrv_hailort_double_written"));
  const bool resolved = reset && add && set_output && written;
  REQUIRE(resolved);
  reset();
  add("mnist/input_layer1", 0, 1, 6, 1, 1, 784, 784);
  add("mnist/softmax1", 1, 1, 6, 1, 1, 10, 10);

  test::HailoDeviceTree tree;
  tree.device("hailo0", "0000:01:00.0");
  auto driver = std::make_shared<test::HailoDriverDouble>();
  driver->node(tree.dev("hailo0"));
  hailo8::Hailo8Options o;
  o.discovery = tree.paths;
  o.driver_opener = driver;
  o.hailort = AISRV_HAILORT_DOUBLE;
  o.float_io = {true, true};
  {
    auto l = load("hef/codetam__hailo_project/mnist.hef", o);
    REQUIRE(l);
    REQUIRE(l->info.inputs.at(0).dtype == protocol::DType::float32);
    REQUIRE(l->info.inputs.at(0).bytes == 784 * 4);
    REQUIRE(l->info.outputs.at(0).bytes == 10 * 4);
    const int labels[5] = {7, 2, 1, 0, 4};
    for (int i = 0; i < 5; ++i) {
      std::vector<float> pixels(784);
      for (size_t k = 0; k < 784; ++k)
        pixels[k] = (static_cast<float>((*digits)[i * 784 + k]) - static_cast<float>(in_desc.zero_point[0])) *
                    in_desc.scale[0];
      auto in = l->backend->input(0);
      std::memcpy(in.data(), pixels.data(), in.size());
      std::vector<uint8_t> one_hot(10, 0);
      one_hot[static_cast<size_t>(labels[i])] = 255;
      set_output("mnist/softmax1", one_hot.data(), one_hot.size());
      engine::InvokeContext ctx;
      auto r = l->backend->invoke(ctx);
      REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
      std::vector<uint8_t> sent(784);
      CHECK(written("mnist/input_layer1", sent.data(), sent.size()) == 784);
      CHECK(std::equal(sent.begin(), sent.end(), digits->begin() + i * 784));
      std::vector<float> got(10);
      std::memcpy(got.data(), l->backend->output(0).data(), 40);
      for (size_t k = 0; k < 10; ++k)
        CHECK(got[k] == (static_cast<float>(one_hot[k]) - static_cast<float>(out_desc.zero_point[0])) *
                            out_desc.scale[0]);
    }
  }
  dlclose(h);
}
