// aisrv tests — the hailo8 backend end to end on synthetic HEFs: tensor sizing at load, refusals, the device and
// library checks of invoke (exact reasons), and the whole HailoRT call sequence against the test double
// (tests/support/hailort_double) injected as the library: vdevice on the configured device's PCI id, HEF from
// memory, configure once, vstreams by name, write inputs, read outputs, release everything in order — plus every
// HailoRT failure the double can script, named in the error.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "aisrv/engine/builtin.hpp"
#include "aisrv/engine/hailo8/backend.hpp"
#include "aisrv/engine/hailo8/runtime/hailort_library.hpp"
#include "hailort_double_control.h"
#include "hef_builder.hpp"

using namespace aisrv;
namespace hailo8 = aisrv::engine::hailo8;
namespace fs = std::filesystem;
namespace th = aisrv::test::hef;

namespace {

// The double's control functions, from the same loaded object the backend uses.
struct Double {
  void* handle = nullptr;
  decltype(&aisrv_hailort_double_reset) reset = nullptr;
  decltype(&aisrv_hailort_double_set_version) set_version = nullptr;
  decltype(&aisrv_hailort_double_add_vstream) add_vstream = nullptr;
  decltype(&aisrv_hailort_double_set_output) set_output = nullptr;
  decltype(&aisrv_hailort_double_fail) fail = nullptr;
  decltype(&aisrv_hailort_double_log) log = nullptr;
  decltype(&aisrv_hailort_double_written) written = nullptr;
  decltype(&aisrv_hailort_double_hef) hef = nullptr;
  decltype(&aisrv_hailort_double_live_handles) live = nullptr;

  Double() {
    handle = dlopen(AISRV_HAILORT_DOUBLE, RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(handle, dlerror());
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      const bool found = fn != nullptr;
      REQUIRE_MESSAGE(found, name);
    };
    get(reset, "aisrv_hailort_double_reset");
    get(set_version, "aisrv_hailort_double_set_version");
    get(add_vstream, "aisrv_hailort_double_add_vstream");
    get(set_output, "aisrv_hailort_double_set_output");
    get(fail, "aisrv_hailort_double_fail");
    get(log, "aisrv_hailort_double_log");
    get(written, "aisrv_hailort_double_written");
    get(hef, "aisrv_hailort_double_hef");
    get(live, "aisrv_hailort_double_live_handles");
    reset();
  }
  ~Double() { dlclose(handle); }

  std::vector<std::string> calls() const {
    std::vector<std::string> out;
    std::istringstream in(log());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  size_t count(const std::string& prefix) const {
    size_t n = 0;
    for (const auto& c : calls())
      if (c.rfind(prefix, 0) == 0) ++n;
    return n;
  }
};

// A device tree: <root>/dev/hailo0 and <root>/sys/hailo0/board_location.
struct DeviceTree {
  fs::path root;
  explicit DeviceTree(bool with_device = true) {
    static std::atomic<int> n{0};
    root = fs::temp_directory_path() / ("aisrv_hailo8_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(root);
    fs::create_directories(root / "dev");
    fs::create_directories(root / "sys" / "hailo0");
    std::ofstream(root / "sys" / "hailo0" / "board_location") << "0000:03:00.0\n";
    if (with_device) std::ofstream(root / "dev" / "hailo0") << "";
  }
  ~DeviceTree() { fs::remove_all(root); }

  hailo8::Hailo8Options options(bool explicit_device = true, std::string library = AISRV_HAILORT_DOUBLE) const {
    hailo8::Hailo8Options o;
    o.dev_root = root / "dev";
    o.sysfs_class = root / "sys";
    if (explicit_device) o.device = (root / "dev" / "hailo0").string();
    o.hailort = std::move(library);
    return o;
  }
};

// The synthetic model: input net/input_layer1 NC(16) UINT8, output net/fc1 NC(10) UINT8 (hw 16).
void script_simple(Double& d) {
  d.add_vstream("net/input_layer1", 0, 1, 6, 1, 1, 16, 16);
  d.add_vstream("net/fc1", 1, 1, 6, 1, 1, 10, 10);
  const std::vector<uint8_t> out = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  d.set_output("net/fc1", out.data(), out.size());
}

struct Run {
  std::vector<std::string> log;
  engine::InvokeContext ctx() {
    engine::InvokeContext c;
    c.log = [this](std::string_view l) { log.emplace_back(l); };
    return c;
  }
  bool logged(const std::string& needle) const {
    for (const auto& l : log)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  }
};

std::unique_ptr<engine::InferenceBackend> loaded(const hailo8::Hailo8Options& o, const th::pb::File& f,
                                                 uint32_t version = 0) {
  auto b = hailo8::make_hailo8_backend(o);
  auto bytes = th::container(version, f);
  auto info = b->load(bytes, {});
  REQUIRE_MESSAGE(info.ok(), info.error().message);
  return b;
}

}  // namespace

TEST_CASE("the registry knows hailo8 and its options") {
  engine::BackendRegistry registry;
  engine::register_builtin_backends(registry);
  auto spec = engine::parse_engine_spec("hailo8:device=/dev/hailo3,hailort=/opt/hailo/libhailort.so.4.23.0");
  REQUIRE(spec.ok());
  auto b = registry.create(*spec);
  REQUIRE(b.ok());
  CHECK((*b)->kind() == "hailo8");
  CHECK((*b)->options() == "device=/dev/hailo3,hailort=/opt/hailo/libhailort.so.4.23.0");
  auto plain = registry.create(*engine::parse_engine_spec("hailo8"));
  REQUIRE(plain.ok());
  CHECK((*plain)->options() == "device=auto,hailort=auto");
  auto bad = registry.create(*engine::parse_engine_spec("hailo8:kernels=opt"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == Errc::invalid_argument);
  CHECK(bad.error().message.find("no option 'kernels'") != std::string::npos);
}

TEST_CASE("load sizes the tensors from the HEF: names, shapes, types, quantization") {
  DeviceTree tree;
  auto b = hailo8::make_hailo8_backend(tree.options());
  auto bytes = th::container(2, th::simple_file());
  std::vector<std::string> log;
  engine::LoadOptions lo;
  lo.log = [&](std::string_view l) { log.emplace_back(l); };
  auto info = b->load(bytes, lo);
  REQUIRE(info.ok());
  CHECK(info->format == "hef");
  CHECK(info->layer_count == 2);
  REQUIRE(info->inputs.size() == 1);
  REQUIRE(info->outputs.size() == 1);
  const auto& in = info->inputs[0];
  CHECK(in.name == "net/input_layer1");
  CHECK(in.dtype == protocol::DType::uint8);
  CHECK(in.shape == std::vector<int32_t>{1, 16});
  CHECK(in.bytes == 16);
  REQUIRE(in.scale.size() == 1);
  CHECK(in.scale[0] == doctest::Approx(1.0 / 255));
  CHECK(in.zero_point == std::vector<int32_t>{0});
  const auto& out = info->outputs[0];
  CHECK(out.name == "net/fc1");
  CHECK(out.shape == std::vector<int32_t>{1, 10});  // host shape, not the padded 16
  CHECK(out.bytes == 10);
  CHECK(out.scale == std::vector<float>{0.5f});
  CHECK(out.zero_point == std::vector<int32_t>{3});
  CHECK(b->input(0).size() == 16);
  CHECK(b->output(0).size() == 10);
  CHECK(b->input(1).empty());
  CHECK(b->output(1).empty());
  CHECK_FALSE(log.empty());
  CHECK(log[0].find("HEF v2 for HAILO8P (SDK 3.27.0), network group 'net'") != std::string::npos);

  // An on-chip NMS output is FLOAT32 by class: 80 x (1 + 5 x 100) x 4 bytes.
  auto nms = th::make_file();
  auto* g = th::add_group(nms, "det");
  th::add_edge(g, {.name = "det/in", .direction = 0, .h = 8, .w = 8, .f = 3});
  auto* e = th::add_edge(g, {.name = "det/nms", .direction = 1, .format = 6});
  auto* n = e->mutable_info()->mutable_base()->mutable_additional()->mutable_nms();
  n->set_classes(80);
  n->set_max_boxes_per_class(100);
  n->set_bbox_size(8);
  auto nms_info = b->load(th::container(0, nms), {});
  REQUIRE(nms_info.ok());
  CHECK(nms_info->inputs[0].shape == std::vector<int32_t>{1, 8, 8, 3});
  CHECK(nms_info->outputs[0].dtype == protocol::DType::float32);
  CHECK(nms_info->outputs[0].bytes == 160320);
  CHECK(nms_info->outputs[0].shape == std::vector<int32_t>{1, 40080});
  CHECK(nms_info->outputs[0].scale.empty());
}

TEST_CASE("load refuses what a Hailo-8 cannot run, with the reason") {
  DeviceTree tree;
  auto b = hailo8::make_hailo8_backend(tree.options());
  const std::vector<uint8_t> junk = {'H', 'E', 'F', 0, 'O', 'N', 'N', 'X', 1, 2, 3, 4, 5};
  auto r = b->load(junk, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::model_error);
  CHECK(r.error().message == "HEF refused: not a HEF: wrong magic 0x48454600 (a HEF starts with 0x01484546, \"\\x01HEF\")");
  CHECK(b->input(0).empty());

  auto h15 = th::simple_file();
  h15.mutable_header()->set_hw_arch(103);
  auto r15 = b->load(th::container(0, h15), {});
  REQUIRE_FALSE(r15.ok());
  CHECK(r15.error().code == Errc::model_error);
  CHECK(r15.error().message ==
        "HEF compiled for HAILO15H (HAILO15H); a Hailo-8 runs HEFs compiled for HAILO8P, HAILO8R or HAILO8L");

  auto two = th::simple_file("a");
  two.add_network_groups()->CopyFrom(th::simple_file("b").network_groups(0));
  auto r2 = b->load(th::container(0, two), {});
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().message == "HEF has 2 network groups; this engine runs HEFs with exactly one");

  auto truncated = th::container(1, th::simple_file());
  truncated.resize(truncated.size() - 3);
  auto rt = b->load(truncated, {});
  REQUIRE_FALSE(rt.ok());
  CHECK(rt.error().message.find("HEF refused: HEF v1 file is shorter than its header says") == 0);

  // A failed load leaves no model behind.
  engine::InvokeContext ctx;
  auto inv = b->invoke(ctx);
  REQUIRE_FALSE(inv.ok());
  CHECK(inv.error().code == Errc::no_model);
}

TEST_CASE("invoke without a device says so and never touches libhailort") {
  Double d;
  DeviceTree tree(false);
  Run run;
  {
    auto b = loaded(tree.options(false), th::simple_file());
    auto r = b->invoke(run.ctx());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::infer_error);
    CHECK(r.error().message == "no Hailo-8 device: no " + (tree.root / "dev").string() +
                                   "/hailo* device node (is the hailo_pci driver loaded?)");
    CHECK(run.logged("no Hailo-8 device"));
    for (uint8_t v : b->output(0)) CHECK(v == 0);  // no fabricated output
  }
  {
    auto b = loaded(tree.options(true), th::simple_file());
    auto r = b->invoke(run.ctx());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "no Hailo-8 at " + (tree.root / "dev" / "hailo0").string() + ": no such device node");
  }
  CHECK(std::string(d.log()).empty());
}

TEST_CASE("invoke without libhailort names every library it tried") {
  DeviceTree tree;
  auto b = loaded(tree.options(true, "/nonexistent/libhailort.so.4.23.0"), th::simple_file());
  Run run;
  auto r = b->invoke(run.ctx());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::infer_error);
  CHECK(r.error().message.rfind("libhailort not found (tried: /nonexistent/libhailort.so.4.23.0 (", 0) == 0);
  CHECK(run.logged("libhailort not found"));
  // The default candidates start with HailoRT 4.23's soname and the unversioned link.
  const auto names = hailo8::runtime::HailortLibrary::default_candidates();
  REQUIRE(names.size() >= 2);
  CHECK(names[0] == "libhailort.so.4.23.0");
  CHECK(names[1] == "libhailort.so");
}

TEST_CASE("an unsupported libhailort version is refused by name") {
  Double d;
  d.set_version(4, 17, 0);
  DeviceTree tree;
  auto b = loaded(tree.options(), th::simple_file());
  Run run;
  auto r = b->invoke(run.ctx());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::infer_error);
  CHECK(r.error().message == std::string("libhailort 4.17.0 at ") + AISRV_HAILORT_DOUBLE +
                                 " is not supported: this engine uses the C API layouts of HailoRT 4.20 to 4.23");
  CHECK(d.count("hailo_create_vdevice") == 0);
}

TEST_CASE("the full HailoRT sequence: configure once, write, read, release") {
  Double d;
  script_simple(d);
  DeviceTree tree;
  const auto hef_bytes = th::container(0, th::simple_file());
  auto b = hailo8::make_hailo8_backend(tree.options());
  REQUIRE(b->load(hef_bytes, {}).ok());
  auto in = b->input(0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(100 + i);

  Run run;
  auto r = b->invoke(run.ctx());
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].name == "net:write");
  CHECK((*r)[0].op == "HAILORT_VSTREAM_WRITE");
  CHECK((*r)[1].name == "net:read");
  const auto out = b->output(0);
  CHECK(std::vector<uint8_t>(out.begin(), out.end()) == std::vector<uint8_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  // What reached the "device": the input frame and the whole HEF.
  std::vector<uint8_t> written(16);
  CHECK(d.written("net/input_layer1", written.data(), written.size()) == 16);
  CHECK(std::vector<uint8_t>(in.begin(), in.end()) == written);
  std::vector<uint8_t> hef(d.hef(nullptr, 0));
  d.hef(hef.data(), hef.size());
  CHECK(hef == hef_bytes);
  CHECK(run.logged("hailo8: loaded libhailort 4.23.0 (" AISRV_HAILORT_DOUBLE ")"));
  CHECK(run.logged("hailo8: configured 'net' on " + (tree.root / "dev" / "hailo0").string() + " (0000:03:00.0)"));

  const std::vector<std::string> expected = {
      "hailo_get_library_version",
      "hailo_init_vdevice_params",
      "hailo_create_vdevice device_count=1 scheduling=1 device_ids=0000:03:00.0",
      "hailo_create_hef_buffer size=" + std::to_string(hef_bytes.size()),
      "hailo_init_configure_params_by_vdevice",
      "hailo_configure_vdevice capacity=8 params=1",
      "hailo_make_input_vstream_params format_type=0 capacity=40",
      "hailo_make_output_vstream_params format_type=0 capacity=40",
      "hailo_create_input_vstreams count=1 net/input_layer1:0",
      "hailo_create_output_vstreams count=1 net/fc1:0",
      "hailo_get_input_vstream_info net/input_layer1",
      "hailo_get_output_vstream_info net/fc1",
      "hailo_vstream_write_raw_buffer net/input_layer1 size=16",
      "hailo_vstream_read_raw_buffer net/fc1 size=10",
  };
  CHECK(d.calls() == expected);

  // A second inference reuses the configured network group.
  in[0] = 7;
  auto r2 = b->invoke(run.ctx());
  REQUIRE(r2.ok());
  CHECK(d.count("hailo_configure_vdevice") == 1);
  CHECK(d.count("hailo_vstream_write_raw_buffer") == 2);
  CHECK(d.count("hailo_vstream_read_raw_buffer") == 2);
  CHECK(d.written("net/input_layer1", written.data(), written.size()) == 16);
  CHECK(written[0] == 7);

  // Unload releases vstreams, HEF and device, in that order.
  b->unload();
  const auto calls = d.calls();
  REQUIRE(calls.size() >= 4);
  CHECK(std::vector<std::string>(calls.end() - 4, calls.end()) ==
        std::vector<std::string>{"hailo_release_output_vstreams count=1", "hailo_release_input_vstreams count=1",
                                 "hailo_release_hef", "hailo_release_vdevice"});
  CHECK(d.live() == 0);
}

TEST_CASE("without device= HailoRT picks the device; loading a new model reconfigures") {
  Double d;
  script_simple(d);
  DeviceTree tree;
  auto b = loaded(tree.options(false), th::simple_file());
  Run run;
  REQUIRE(b->invoke(run.ctx()).ok());
  CHECK(d.count("hailo_create_vdevice device_count=1 scheduling=1 device_ids=none") == 1);
  REQUIRE(b->load(th::container(1, th::simple_file()), {}).ok());  // same tensors, v1 container
  CHECK(d.live() == 0);  // the old session went with the old model
  REQUIRE(b->invoke(run.ctx()).ok());
  CHECK(d.count("hailo_configure_vdevice") == 2);
  CHECK(d.count("hailo_get_library_version") == 1);  // the library stays loaded
}

TEST_CASE("HailoRT failures are named with the status and what it means") {
  struct Case {
    const char* function;
    int32_t status;
    const char* expected;
  };
  const Case cases[] = {
      {"hailo_create_vdevice", 74,
       "hailo_create_vdevice failed with HAILO_OUT_OF_PHYSICAL_DEVICES(74): no free Hailo device: none was found, "
       "or every one is in use by another process"},
      {"hailo_create_vdevice", 76,
       "hailo_create_vdevice failed with HAILO_INVALID_DRIVER_VERSION(76): driver version unsupported: the "
       "hailo_pci driver's version differs from libhailort's (HailoRT requires an exact match)"},
      {"hailo_create_vdevice", 86,
       "hailo_create_vdevice failed with status 86: driver version unsupported: the hailo_pci driver does not know "
       "libhailort's ioctls"},
      {"hailo_configure_vdevice", 93,
       "hailo_configure_vdevice failed with HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE(93): the HEF was compiled for "
       "another architecture than the device's"},
      {"hailo_vstream_write_raw_buffer", 4,
       "hailo_vstream_write_raw_buffer('net/input_layer1') failed with HAILO_TIMEOUT(4): the device did not answer "
       "in time"},
      {"hailo_vstream_read_raw_buffer", 4,
       "hailo_vstream_read_raw_buffer('net/fc1') failed with HAILO_TIMEOUT(4): the device did not answer in time"},
      {"hailo_create_output_vstreams", 61, "hailo_create_output_vstreams failed with HAILO_NOT_FOUND(61)"},
  };
  for (const auto& c : cases) {
    INFO(c.function << " " << c.status);
    Double d;
    script_simple(d);
    d.fail(c.function, c.status);
    DeviceTree tree;
    auto b = loaded(tree.options(), th::simple_file());
    Run run;
    auto r = b->invoke(run.ctx());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::infer_error);
    CHECK(r.error().message == c.expected);
    CHECK(run.logged(c.expected));
    for (uint8_t v : b->output(0)) CHECK(v == 0);
    CHECK(d.live() == 0);  // whatever was created got released
    // Once HailoRT works again the next invoke reconfigures and succeeds.
    d.fail(c.function, 0);
    auto again = b->invoke(run.ctx());
    REQUIRE_MESSAGE(again.ok(), again.error().message);
    CHECK(b->output(0)[0] == 9);
  }
}

TEST_CASE("disagreements between libhailort and the HEF reader stop the inference") {
  DeviceTree tree;
  {
    Double d;
    d.add_vstream("net/input_layer1", 0, 1, 6, 1, 1, 16, 12);  // libhailort would expect 12 bytes
    d.add_vstream("net/fc1", 1, 1, 6, 1, 1, 10, 10);
    auto b = loaded(tree.options(), th::simple_file());
    Run run;
    auto r = b->invoke(run.ctx());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          "input vstream 'net/input_layer1': libhailort expects 12 bytes of format type 1, the HEF reader computed 16 "
          "bytes of type 1");
    CHECK(d.live() == 0);
  }
  {
    Double d;
    script_simple(d);
    d.add_vstream("net/extra", 1, 1, 6, 1, 1, 4, 4);
    auto b = loaded(tree.options(), th::simple_file());
    Run run;
    auto r = b->invoke(run.ctx());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "libhailort lists 1 input and 2 output vstreams, the HEF reader found 1 and 1");
    CHECK(d.live() == 0);
  }
  {
    // A HEF without PERIPH_CALCULATION_IN_HAILORT: the hint goes with HailoRT's refusal.
    Double d;
    script_simple(d);
    d.fail("hailo_create_hef_buffer", 92);
    auto old = th::simple_file();
    old.clear_extensions();
    auto b = loaded(tree.options(), old);
    Run run;
    auto r = b->invoke(run.ctx());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          "hailo_create_hef_buffer failed with HAILO_HEF_NOT_SUPPORTED(92): libhailort does not support this HEF (the "
          "HEF lacks the PERIPH_CALCULATION_IN_HAILORT extension, which HailoRT 4.14 and later require)");
  }
  {
    Double d;
    script_simple(d);
    std::ofstream(tree.root / "sys" / "hailo0" / "board_location") << "not a pci id\n";
    auto b = loaded(tree.options(), th::simple_file());
    Run run;
    auto r = b->invoke(run.ctx());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("holds 'not a pci id', not a PCI id") != std::string::npos);
  }
}

TEST_CASE("a cancelled inference does not start") {
  Double d;
  script_simple(d);
  DeviceTree tree;
  auto b = loaded(tree.options(), th::simple_file());
  std::atomic<bool> cancel{true};
  engine::InvokeContext ctx;
  ctx.cancel = &cancel;
  auto r = b->invoke(ctx);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::cancelled);
  CHECK(d.count("hailo_create_vdevice") == 0);
}
