// aisrv tests — the hailo8 backend end to end on synthetic HEFs: tensor sizing at load, refusals, the device check
// of invoke through the driver layer (discovery on a directory tree, QUERY_DRIVER_INFO / QUERY_DEVICE_PROPERTIES
// answered by the hailo_pci driver double with supported and unsupported versions, exact reasons, libhailort never
// loaded when the device check fails), the library checks, and the whole HailoRT call sequence against the HailoRT
// test double (tests/support/hailort_double) injected as the library: vdevice on the checked device's PCI address,
// HEF from memory, configure once, vstreams by name, write inputs, read outputs, release everything in order — plus
// every HailoRT failure the double can script, named in the error. Float I/O: the bytes the double receives are our
// quantization of the user's floats, and the float outputs are our dequantization of the double's bytes (expected
// values computed by hand from HailoRT's formulas).
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <unistd.h>

#include "aisrv/engine/builtin.hpp"
#include "aisrv/engine/hailo8/backend.hpp"
#include "aisrv/engine/hailo8/runtime/hailort_library.hpp"
#include "hailo_device_tree.hpp"
#include "hailo_driver_double.hpp"
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
  decltype(&aisrv_hailort_double_set_devices) set_devices = nullptr;

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
    get(set_devices, "aisrv_hailort_double_set_devices");
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

// One Hailo-8 as the driver layer sees it: hailo0 in a sysfs/dev tree (PCI address 0000:03:00.0) whose node the
// hailo_pci driver double answers (driver 4.23.0, a Hailo-8 on PCIe, firmware loaded unless changed).
struct Rig {
  test::HailoDeviceTree tree;
  std::shared_ptr<test::HailoDriverDouble> driver = std::make_shared<test::HailoDriverDouble>();

  explicit Rig(bool with_device = true) {
    if (with_device) add("hailo0", "0000:03:00.0");
  }
  test::HailoDriverDouble::Node& add(const std::string& name, const std::string& bdf) {
    tree.device(name, bdf);
    return driver->node(tree.dev(name));
  }
  test::HailoDriverDouble::Node& node(const std::string& name = "hailo0") { return driver->node(tree.dev(name)); }
  std::string dev(const std::string& name = "hailo0") const { return tree.dev(name); }

  hailo8::Hailo8Options options(bool explicit_device = true, std::string library = AISRV_HAILORT_DOUBLE) const {
    hailo8::Hailo8Options o;
    o.discovery = tree.paths;
    o.driver_opener = driver;
    if (explicit_device) o.device = dev();
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
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? std::string() : info.error().message));
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
  CHECK((*b)->options() == "device=/dev/hailo3,hailort=/opt/hailo/libhailort.so.4.23.0,float=none");
  auto plain = registry.create(*engine::parse_engine_spec("hailo8"));
  REQUIRE(plain.ok());
  CHECK((*plain)->options() == "device=auto,hailort=auto,float=none");
  auto bad = registry.create(*engine::parse_engine_spec("hailo8:kernels=opt"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == Errc::invalid_argument);
  CHECK(bad.error().message ==
        "engine spec 'hailo8:kernels=opt': hailo8 has no option 'kernels' (it takes device=, hailort=, float=, timeout=, log-dir=)");
  // float=: which tensors are float32 for the user; a bare `float` means both.
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"hailo8:float=in", "in"}, {"hailo8:float=out", "out"}, {"hailo8:float=both", "both"},
           {"hailo8:float", "both"}, {"hailo8:float=none", "none"}, {"hailo8:float=off", "none"}}) {
    auto f = registry.create(*engine::parse_engine_spec(text));
    REQUIRE_MESSAGE(f.ok(), text);
    CHECK((*f)->options() == "device=auto,hailort=auto,float=" + expected);
  }
  auto bad_float = registry.create(*engine::parse_engine_spec("hailo8:float=fp16"));
  REQUIRE_FALSE(bad_float.ok());
  CHECK(bad_float.error().code == Errc::invalid_argument);
  CHECK(bad_float.error().message ==
        "engine spec 'hailo8:float=fp16': float=fp16 is not one of in, out, both, none");
}

TEST_CASE("load sizes the tensors from the HEF: names, shapes, types, quantization") {
  Rig rig;
  auto b = hailo8::make_hailo8_backend(rig.options());
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
  Rig rig;
  auto b = hailo8::make_hailo8_backend(rig.options());
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

// The error of one invoke with `options` on the simple model; libhailort must not have been loaded.
std::string device_refusal(Double& d, const hailo8::Hailo8Options& options) {
  auto b = loaded(options, th::simple_file());
  Run run;
  auto r = b->invoke(run.ctx());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::infer_error);
  CHECK(run.logged("hailo8: " + r.error().message));  // the debug log says the same
  for (uint8_t v : b->output(0)) CHECK(v == 0);        // no fabricated output
  CHECK(std::string(d.log()).empty());                 // libhailort was never loaded
  return r.error().message;
}

TEST_CASE("device check: no Hailo-8 at all, or not at the given device=") {
  Double d;
  Rig rig(false);
  const std::string looked = "(looked in " + rig.tree.paths.sysfs_class.string() + " and " +
                             (rig.tree.paths.dev_dir / "hailo*").string() + ")";
  CHECK(device_refusal(d, rig.options(false)) == "no Hailo-8 device found " + looked);
  CHECK(device_refusal(d, rig.options(true)) == "no Hailo-8 at " + rig.dev() + ": no such device node");

  // Another Hailo accelerator (a Hailo-10, accelerator type 1) is named, and not taken for a Hailo-8.
  rig.tree.device("hailo0", "0000:05:00.0", "1e60:45c4", "1");
  CHECK(device_refusal(d, rig.options(false)) ==
        "no Hailo-8 device found " + looked + "; other Hailo accelerators present: hailo0 (accelerator type 1, PCI id "
        "1e60:45c4)");
  // A Hailo-8 listed in sysfs whose node is missing (e.g. not passed into a container).
  rig.tree.device("hailo1", "0000:06:00.0", "1e60:2864", "0", false);
  CHECK(device_refusal(d, rig.options(false)).find("; listed without a device node: " + rig.dev("hailo1")) !=
        std::string::npos);
}

TEST_CASE("device check: the driver's version through QUERY_DRIVER_INFO, every supported ABI accepted") {
  const std::string supported =
      "supported driver versions: 4.18.0, 4.18.1, 4.19.0, 4.20.0, 4.20.1, 4.21.0, 4.21.1, 4.22.0, 4.23.0";
  for (const auto& v : std::vector<std::array<uint32_t, 3>>{{4, 17, 0}, {4, 23, 1}, {4, 24, 0}, {5, 0, 0}}) {
    Double d;
    Rig rig;
    std::copy(v.begin(), v.end(), rig.node().version);
    const std::string version = std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
    for (bool explicit_device : {true, false}) {
      CHECK(device_refusal(d, rig.options(explicit_device)) ==
            "driver version unsupported: " + rig.dev() + ": hailo_pci driver " + version + " is not supported (" +
                supported + ")");
    }
  }
  {
    // A node that does not know QUERY_DRIVER_INFO (hailo_pci before 4.18, or not the driver at all).
    Double d;
    Rig rig;
    rig.node().fail_ioctl = static_cast<int>(test::HailoDriverDouble::kQueryDriverInfo);
    CHECK(device_refusal(d, rig.options()) ==
          "driver version unsupported: " + rig.dev() +
              ": QUERY_DRIVER_INFO failed: the driver does not know this ioctl (ENOTTY: driver/ABI mismatch)");
  }
  // Every version whose ioctl layout we implement gets through to HailoRT (HailoRT alone would insist on its own).
  for (const auto& v : std::vector<std::array<uint32_t, 3>>{{4, 18, 0}, {4, 20, 1}, {4, 21, 0}, {4, 22, 0},
                                                            {4, 23, 0}}) {
    Double d;
    script_simple(d);
    Rig rig;
    std::copy(v.begin(), v.end(), rig.node().version);
    auto b = loaded(rig.options(), th::simple_file());
    Run run;
    auto r = b->invoke(run.ctx());
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    const std::string version = std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
    CHECK(run.logged("hailo8: configured 'net' on " + rig.dev() + " (driver " + version + ", PCI 0000:03:00.0)"));
  }
}

TEST_CASE("device check: not a Hailo-8, no firmware, no access, no PCI address") {
  {
    Double d;
    Rig rig;
    rig.node().board_type = 3;
    CHECK(device_refusal(d, rig.options()) ==
          "no Hailo-8 at " + rig.dev() + ": board type 3 is not a Hailo-8 (board type 0)");
  }
  {
    Double d;
    Rig rig;
    rig.node().fw_loaded = 0;
    CHECK(device_refusal(d, rig.options()) ==
          "cannot use the Hailo-8 at " + rig.dev() +
              ": the hailo_pci driver reports no firmware loaded (hailo8_fw.bin missing?)");
  }
  {
    Double d;
    Rig rig;
    rig.node().open_errno = EACCES;
    CHECK(device_refusal(d, rig.options()) ==
          "cannot use the Hailo-8 at " + rig.dev() + ": cannot open " + rig.dev() + ": Permission denied");
  }
  {
    // device= names a node that sysfs does not list: HailoRT could not be told which device to use.
    Double d;
    Rig rig;
    std::filesystem::remove_all(rig.tree.paths.sysfs_class / "hailo0");
    CHECK(device_refusal(d, rig.options()) ==
          "cannot use the Hailo-8 at " + rig.dev() + ": its PCI address, which HailoRT selects devices by, is unknown (" +
              rig.tree.paths.sysfs_class.string() + " does not list hailo0)");
  }
  {
    Double d;
    Rig rig;
    rig.tree.write(rig.tree.paths.sysfs_class / "hailo0" / "board_location", "not a pci id\n");
    CHECK(device_refusal(d, rig.options()) ==
          "cannot use the Hailo-8 at " + rig.dev() + ": its PCI address, which HailoRT selects devices by, is unknown "
          "(board_location 'not a pci id' is not a PCI address)");
  }
}

TEST_CASE("device check without device=: HailoRT picks only among devices that passed") {
  {
    // Two good Hailo-8s: HailoRT may take either (the first free one), so no device id is given.
    Double d;
    script_simple(d);
    Rig rig;
    rig.add("hailo1", "0000:04:00.0");
    auto b = loaded(rig.options(false), th::simple_file());
    Run run;
    REQUIRE(b->invoke(run.ctx()).ok());
    CHECK(d.count("hailo_create_vdevice device_count=1 scheduling=1 device_ids=none") == 1);
    CHECK(run.logged("hailo8: configured 'net' on " + rig.dev() + " (driver 4.23.0)"));
  }
  {
    // The first one's driver answers with an unsupported layout: the second is chosen by its PCI address.
    Double d;
    script_simple(d);
    Rig rig;
    rig.node().board_type = 3;
    rig.add("hailo1", "0000:04:00.0");
    auto b = loaded(rig.options(false), th::simple_file());
    Run run;
    auto r = b->invoke(run.ctx());
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    CHECK(d.count("hailo_create_vdevice device_count=1 scheduling=1 device_ids=0000:04:00.0") == 1);
    CHECK(run.logged("hailo8: passed over: no Hailo-8 at " + rig.dev() + ": board type 3 is not a Hailo-8 (board type "
                     "0)"));
  }
  {
    // None passes: the first problem, and how many more were refused.
    Double d;
    Rig rig;
    rig.node().version[1] = 17;
    rig.add("hailo1", "0000:04:00.0").version[1] = 17;
    CHECK(device_refusal(d, rig.options(false)).find(" (and 1 more device(s) refused)") != std::string::npos);
  }
}

TEST_CASE("a configured libhailort that cannot be used is reported as such; nothing else is tried") {
  Rig rig;
  auto b = loaded(rig.options(true, "/nonexistent/libhailort.so.4.23.0"), th::simple_file());
  Run run;
  auto r = b->invoke(run.ctx());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::infer_error);
  CHECK(r.error().message.rfind("the configured libhailort /nonexistent/libhailort.so.4.23.0 cannot be used: ", 0) == 0);
  CHECK(r.error().message.find("(no other library is tried)") != std::string::npos);
  CHECK(run.logged("the configured libhailort"));
  // The default candidates start with HailoRT 4.23's soname and the unversioned link.
  const auto names = hailo8::runtime::HailortLibrary::default_candidates();
  REQUIRE(names.size() >= 2);
  CHECK(names[0] == "libhailort.so.4.23.0");
  CHECK(names[1] == "libhailort.so");
}

TEST_CASE("an unsupported libhailort version is refused by name") {
  Double d;
  d.set_version(4, 17, 0);
  Rig rig;
  auto b = loaded(rig.options(), th::simple_file());
  Run run;
  auto r = b->invoke(run.ctx());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::infer_error);
  CHECK(r.error().message == std::string("the configured libhailort ") + AISRV_HAILORT_DOUBLE +
                                 " cannot be used: HailoRT 4.17.0 is not supported: this engine uses the C API layouts "
                                 "of HailoRT 4.21 to 4.23 (no other library is tried)");
  CHECK(d.count("hailo_create_vdevice") == 0);
  // 4.20 has another hailo_nms_shape_t inside hailo_vstream_info_t: refused too, not read with the 4.21 layout.
  d.set_version(4, 20, 1);
  auto b2 = loaded(rig.options(), th::simple_file());
  auto r2 = b2->invoke(run.ctx());
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().message.find("HailoRT 4.20.1 is not supported") != std::string::npos);
  for (uint32_t minor : {21u, 22u, 23u}) CHECK(hailo8::runtime::layout_supported({4, minor, 0}));
  CHECK_FALSE(hailo8::runtime::layout_supported({4, 20, 0}));
  CHECK_FALSE(hailo8::runtime::layout_supported({4, 24, 0}));
  CHECK_FALSE(hailo8::runtime::layout_supported({5, 0, 0}));
}

TEST_CASE("the loader goes on past candidates that do not load, lack functions or have another version") {
  Double d;
  d.set_version(4, 20, 0);  // the double at its own path now reports 4.20
  // A second copy of the double at another path is a separate library, still reporting 4.23.
  const auto dir = std::filesystem::temp_directory_path() / ("aisrv-hailort-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto copy = (dir / "libhailort.so.4.23.0").string();
  std::filesystem::copy_file(AISRV_HAILORT_DOUBLE, copy, std::filesystem::copy_options::overwrite_existing);
  const std::vector<std::string> candidates{"/nonexistent/libhailort.so", "libz.so.1", AISRV_HAILORT_DOUBLE, copy};
  auto lib = hailo8::runtime::HailortLibrary::open(candidates);
  REQUIRE_MESSAGE(lib.ok(), (lib ? "" : lib.error().message));
  CHECK((*lib)->path() == copy);
  CHECK((*lib)->version().minor == 23);
  lib->reset();

  // Without the good one: every candidate and its reason, and not "not found" since some loaded.
  auto none = hailo8::runtime::HailortLibrary::open({"/nonexistent/libhailort.so", "libz.so.1", AISRV_HAILORT_DOUBLE});
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == Errc::not_supported);
  const std::string& m = none.error().message;
  CHECK_MESSAGE(m.rfind("no usable libhailort (tried: /nonexistent/libhailort.so (", 0) == 0, m);
  CHECK_MESSAGE(m.find("libz.so.1 (lacks hailo_get_library_version") != std::string::npos, m);
  CHECK_MESSAGE(m.find(std::string(AISRV_HAILORT_DOUBLE) + " (HailoRT 4.20.0 is not supported") != std::string::npos, m);
  // Nothing loads at all: not found.
  auto absent = hailo8::runtime::HailortLibrary::open({"/nonexistent/a.so", "/nonexistent/b.so"});
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.error().code == Errc::not_found);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the full HailoRT sequence: configure once, write, read, release") {
  Double d;
  script_simple(d);
  Rig rig;
  const auto hef_bytes = th::container(0, th::simple_file());
  auto b = hailo8::make_hailo8_backend(rig.options());
  REQUIRE(b->load(hef_bytes, {}).ok());
  auto in = b->input(0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(100 + i);

  Run run;
  auto r = b->invoke(run.ctx());
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
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
  CHECK(run.logged("hailo8: configured 'net' on " + rig.dev() + " (driver 4.23.0, PCI 0000:03:00.0)"));

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
  Rig rig;
  auto b = loaded(rig.options(false), th::simple_file());
  Run run;
  REQUIRE(b->invoke(run.ctx()).ok());
  CHECK(d.count("hailo_create_vdevice device_count=1 scheduling=1 device_ids=none") == 1);
  REQUIRE(b->load(th::container(1, th::simple_file()), {}).ok());  // same tensors, v1 container
  CHECK(d.live() == 0);  // the old configured network went with the old model
  REQUIRE(b->invoke(run.ctx()).ok());
  CHECK(d.count("hailo_configure_vdevice") == 2);
  CHECK(d.count("hailo_get_library_version") == 1);  // the library stays loaded
}

TEST_CASE("a sibling loads a new HEF beside the serving model without the device; configures after the old goes") {
  Double d;
  script_simple(d);
  Rig rig;
  auto b = loaded(rig.options(), th::simple_file());
  Run run;
  REQUIRE(b->invoke(run.ctx()).ok());
  const size_t live = d.live();
  CHECK(live > 0);
  auto sibling = b->make_sibling();
  REQUIRE(sibling != nullptr);
  CHECK(sibling->options() == b->options());
  REQUIRE(sibling->load(th::container(1, th::simple_file()), {}).ok());
  CHECK(d.live() == live);  // loading the sibling touched neither the device nor the old configured network
  CHECK(d.count("hailo_create_vdevice") == 1);
  CHECK(sibling->load(std::vector<uint8_t>(64, 0x5A), {}).error().code == Errc::model_error);  // a refused HEF...
  REQUIRE(b->invoke(run.ctx()).ok());  // ...changes nothing for the serving model
  REQUIRE(sibling->load(th::container(1, th::simple_file()), {}).ok());
  b.reset();  // what the interpreter does after the swap: the old network group, its vstreams and the device go first
  CHECK(d.live() == 0);
  REQUIRE(sibling->invoke(run.ctx()).ok());
  CHECK(d.count("hailo_configure_vdevice") == 2);
  CHECK(d.count("hailo_get_library_version") == 1);  // the loaded libhailort is shared, not reopened
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
       "hailo_create_vdevice failed with HAILO_DRIVER_INVALID_IOCTL(86): driver version unsupported: the hailo_pci "
       "driver does not know libhailort's ioctls"},
      // A code above HAILO_STATUS_COUNT (94 in 4.21-4.23): hailo_get_status_message answers NULL, as the real one does.
      {"hailo_configure_vdevice", 200, "hailo_configure_vdevice failed with status 200"},
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
    Rig rig;
    auto b = loaded(rig.options(), th::simple_file());
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
    REQUIRE_MESSAGE(again.ok(), (again.ok() ? std::string() : again.error().message));
    CHECK(b->output(0)[0] == 9);
  }
}

TEST_CASE("disagreements between libhailort and the HEF reader stop the inference") {
  Rig rig;
  {
    Double d;
    d.add_vstream("net/input_layer1", 0, 1, 6, 1, 1, 16, 12);  // libhailort would expect 12 bytes
    d.add_vstream("net/fc1", 1, 1, 6, 1, 1, 10, 10);
    auto b = loaded(rig.options(), th::simple_file());
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
    auto b = loaded(rig.options(), th::simple_file());
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
    auto b = loaded(rig.options(), old);
    Run run;
    auto r = b->invoke(run.ctx());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          "hailo_create_hef_buffer failed with HAILO_HEF_NOT_SUPPORTED(92): libhailort does not support this HEF (the "
          "HEF lacks the PERIPH_CALCULATION_IN_HAILORT extension, which HailoRT 4.14 and later require)");
  }
}

TEST_CASE("a cancelled inference does not start") {
  Double d;
  script_simple(d);
  Rig rig;
  auto b = loaded(rig.options(), th::simple_file());
  std::atomic<bool> cancel{true};
  engine::InvokeContext ctx;
  ctx.cancel = &cancel;
  auto r = b->invoke(ctx);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::cancelled);
  CHECK(d.count("hailo_create_vdevice") == 0);
}

// ---- float I/O: our transforms between the user's float32 tensors and the device's quantized frames -----------------

namespace {

// Inputs: fl/in NC(10) UINT8 (scale 0.5, zp 10, limits [-5, 100]), fl/in16 NC(3) UINT16 (scale 1/256, zp 1000,
// limits [-3, 200]). Outputs: fl/out NC(4) UINT8 (scale 0.25, zp 100), fl/pf NHWC(1x2x3) UINT8 per feature
// (zp 1/2/3, scale 0.5/0.25/2), fl/argmax NHW(2x3) UINT8, fl/o16 NC(2) UINT16 (scale 0.125, zp 30000).
// With OUTPUT_SCALE_PER_FEATURE every output has per-feature vectors: one (zero point, scale) per feature.
void per_feature(th::pb::EdgeLayer* e, const std::vector<std::pair<double, double>>& qps) {
  auto* n = e->mutable_info()->mutable_numeric();
  for (const auto& [zp, scale] : qps) {
    n->add_zero_points(zp);
    n->add_scales(scale);
  }
}

th::pb::File float_file() {
  auto f = th::make_file();
  th::add_extension(f, 25);  // OUTPUT_SCALE_PER_FEATURE
  auto* g = th::add_group(f, "fl");
  th::add_edge(g, {.name = "fl/in", .direction = 0, .f = 10, .format = 2, .scale = 0.5f, .zero_point = 10.0f,
                   .limit_min = -5.0f, .limit_max = 100.0f});
  th::add_edge(g, {.name = "fl/in16", .direction = 0, .f = 3, .pf = 4, .format = 2, .data_bytes = 2,
                   .sys_index = 1, .scale = 1.0f / 256, .zero_point = 1000.0f, .limit_min = -3.0f,
                   .limit_max = 200.0f});
  per_feature(th::add_edge(g, {.name = "fl/out", .direction = 1, .f = 4, .pf = 8, .format = 2, .sys_index = 2}),
              {{100, 0.25}, {100, 0.25}, {100, 0.25}, {100, 0.25}});
  per_feature(th::add_edge(g, {.name = "fl/pf", .direction = 1, .h = 1, .w = 2, .f = 3, .format = 0, .sys_index = 3}),
              {{1, 0.5}, {2, 0.25}, {3, 2.0}});
  per_feature(th::add_edge(g, {.name = "fl/argmax", .direction = 1, .h = 2, .w = 3, .f = 1, .pw = 8, .format = 5,
                               .sys_index = 4}),
              {{0, 0.5}});
  per_feature(th::add_edge(g, {.name = "fl/o16", .direction = 1, .f = 2, .pf = 4, .format = 2, .data_bytes = 2,
                               .sys_index = 5}),
              {{30000, 0.125}, {30000, 0.125}});
  return f;
}

// The double's view of float_file(): device types and frame sizes; scripted output frames.
void script_float(Double& d) {
  d.add_vstream("fl/in", 0, 1, 6, 1, 1, 10, 10);
  d.add_vstream("fl/in16", 0, 2, 6, 1, 1, 3, 6);
  d.add_vstream("fl/out", 1, 1, 6, 1, 1, 4, 4);
  d.add_vstream("fl/pf", 1, 1, 1, 1, 2, 3, 6);
  d.add_vstream("fl/argmax", 1, 1, 5, 2, 3, 1, 6);
  d.add_vstream("fl/o16", 1, 2, 6, 1, 1, 2, 4);
  const std::vector<uint8_t> out = {100, 104, 96, 255};
  const std::vector<uint8_t> pf = {1, 2, 3, 11, 22, 33};
  const std::vector<uint8_t> argmax = {0, 1, 2, 3, 4, 5};
  const std::vector<uint8_t> o16 = {0x30, 0x75, 0x38, 0x75};  // 30000, 30008 little-endian
  d.set_output("fl/out", out.data(), out.size());
  d.set_output("fl/pf", pf.data(), pf.size());
  d.set_output("fl/argmax", argmax.data(), argmax.size());
  d.set_output("fl/o16", o16.data(), o16.size());
}

hailo8::Hailo8Options with_float(hailo8::Hailo8Options o, bool in, bool out) {
  o.float_io = {in, out};
  return o;
}

void put_floats(std::span<uint8_t> bytes, const std::vector<float>& values) {
  REQUIRE(bytes.size() == values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
}

std::vector<float> get_floats(std::span<const uint8_t> bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

std::vector<uint8_t> written_frame(Double& d, const char* name, size_t size) {
  std::vector<uint8_t> w(size);
  CHECK(d.written(name, w.data(), w.size()) == size);
  return w;
}

}  // namespace

TEST_CASE("float I/O: GET_TENSOR_INFO reports FLOAT32 tensors of the host shape, without quantization") {
  Rig rig;
  auto device_types = hailo8::make_hailo8_backend(rig.options());
  auto raw = device_types->load(th::container(2, float_file()), {});
  REQUIRE_MESSAGE(raw.ok(), (raw.ok() ? std::string() : raw.error().message));
  CHECK(raw->layer_count == 2);
  CHECK(raw->inputs[0].dtype == protocol::DType::uint8);
  CHECK(raw->inputs[1].dtype == protocol::DType::uint16);
  CHECK(raw->inputs[1].bytes == 6);
  CHECK(raw->outputs[1].quant_axis == 3);  // per feature on the last axis of [1, 1, 2, 3]
  CHECK(raw->outputs[1].zero_point == std::vector<int32_t>{1, 2, 3});

  auto b = hailo8::make_hailo8_backend(with_float(rig.options(), true, true));
  auto info = b->load(th::container(2, float_file()), {});
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? std::string() : info.error().message));
  CHECK(info->layer_count == 4);  // quantize, write, read, dequantize
  struct Expect {
    std::string name;
    std::vector<int32_t> shape;
    uint32_t bytes;
  };
  const std::vector<Expect> ins = {{"fl/in", {1, 10}, 40}, {"fl/in16", {1, 3}, 12}};
  const std::vector<Expect> outs = {
      {"fl/out", {1, 4}, 16}, {"fl/pf", {1, 1, 2, 3}, 24}, {"fl/argmax", {1, 2, 3}, 24}, {"fl/o16", {1, 2}, 8}};
  REQUIRE(info->inputs.size() == ins.size());
  REQUIRE(info->outputs.size() == outs.size());
  auto check = [](const engine::TensorDesc& t, const Expect& e) {
    CHECK(t.name == e.name);
    CHECK(t.dtype == protocol::DType::float32);
    CHECK(t.shape == e.shape);
    CHECK(t.bytes == e.bytes);
    CHECK(t.scale.empty());
    CHECK(t.zero_point.empty());
  };
  for (size_t i = 0; i < ins.size(); ++i) check(info->inputs[i], ins[i]);
  for (size_t i = 0; i < outs.size(); ++i) check(info->outputs[i], outs[i]);
  CHECK(b->input(0).size() == 40);
  CHECK(b->output(3).size() == 8);

  // float=in leaves the outputs in their device types, float=out the inputs.
  auto in_only = hailo8::make_hailo8_backend(with_float(rig.options(), true, false));
  auto i2 = in_only->load(th::container(2, float_file()), {});
  REQUIRE(i2.ok());
  CHECK(i2->layer_count == 3);
  CHECK(i2->inputs[0].dtype == protocol::DType::float32);
  CHECK(i2->outputs[0].dtype == protocol::DType::uint8);
  auto out_only = hailo8::make_hailo8_backend(with_float(rig.options(), false, true));
  auto o2 = out_only->load(th::container(2, float_file()), {});
  REQUIRE(o2.ok());
  CHECK(o2->inputs[1].dtype == protocol::DType::uint16);
  CHECK(o2->outputs[3].dtype == protocol::DType::float32);
}

TEST_CASE("float I/O: HailoRT gets our quantization of the inputs, the user our dequantization of the outputs") {
  Double d;
  script_float(d);
  Rig rig;
  auto b = hailo8::make_hailo8_backend(with_float(rig.options(), true, true));
  REQUIRE(b->load(th::container(2, float_file()), {}).ok());

  // q = round_half_to_even(clip(x, -5, 100) / 0.5 + 10), saturated to [0, 255]; NaN → 0.
  put_floats(b->input(0), {0.0f, 0.25f, 0.75f, 1.0f, -100.0f, 1000.0f, 3.3f, -4.75f, 2.25f, std::nanf("")});
  // q = round_half_to_even(clip(x, -3, 200) · 256 + 1000): 1384, 232, 52200.
  put_floats(b->input(1), {1.5f, -10.0f, 300.0f});

  Run run;
  auto r = b->invoke(run.ctx());
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  CHECK(written_frame(d, "fl/in", 10) == std::vector<uint8_t>{10, 10, 12, 12, 0, 210, 17, 0, 14, 0});
  CHECK(written_frame(d, "fl/in16", 6) == std::vector<uint8_t>{0x68, 0x05, 0xE8, 0x00, 0xE8, 0xCB});

  CHECK(get_floats(b->output(0)) == std::vector<float>{0.0f, 1.0f, -1.0f, 38.75f});       // (q - 100) · 0.25
  CHECK(get_floats(b->output(1)) == std::vector<float>{0, 0, 0, 5.0f, 5.0f, 60.0f});       // per feature
  CHECK(get_floats(b->output(2)) == std::vector<float>{0, 1, 2, 3, 4, 5});                 // argmax: cast only
  CHECK(get_floats(b->output(3)) == std::vector<float>{0.0f, 1.0f});                       // (q - 30000) · 0.125

  // The HailoRT side is unchanged: user type AUTO, the device frames' sizes.
  CHECK(d.count("hailo_make_input_vstream_params format_type=0") == 1);
  CHECK(d.count("hailo_vstream_write_raw_buffer fl/in size=10") == 1);
  CHECK(d.count("hailo_vstream_write_raw_buffer fl/in16 size=6") == 1);
  CHECK(d.count("hailo_vstream_read_raw_buffer fl/o16 size=4") == 1);
  REQUIRE(r->size() == 4);
  CHECK((*r)[0].name == "fl:quantize");
  CHECK((*r)[0].op == "HOST_QUANTIZE");
  CHECK((*r)[1].name == "fl:write");
  CHECK((*r)[2].name == "fl:read");
  CHECK((*r)[3].name == "fl:dequantize");
  CHECK((*r)[3].op == "HOST_DEQUANTIZE");

  // A failed inference leaves no stale floats behind.
  d.fail("hailo_vstream_read_raw_buffer", 4);
  auto failed = b->invoke(run.ctx());
  REQUIRE_FALSE(failed.ok());
  for (size_t i = 0; i < 4; ++i)
    for (uint8_t v : b->output(i)) CHECK(v == 0);
  d.fail("hailo_vstream_read_raw_buffer", 0);
  b->unload();
  CHECK(d.live() == 0);
}

TEST_CASE("float I/O: NMS outputs are HailoRT's FLOAT32 boxes, passed through unchanged") {
  auto f = th::make_file();
  auto* g = th::add_group(f, "det");
  th::add_edge(g, {.name = "det/in", .direction = 0, .h = 2, .w = 2, .f = 2});  // identity qp: scale 1, zp 0
  auto* e = th::add_edge(g, {.name = "det/nms", .direction = 1, .format = 6, .sys_index = 1});
  auto* n = e->mutable_info()->mutable_base()->mutable_additional()->mutable_nms();
  n->set_classes(2);
  n->set_max_boxes_per_class(2);
  n->set_bbox_size(8);

  Double d;
  d.add_vstream("det/in", 0, 1, 1, 2, 2, 2, 8);
  d.add_vstream("det/nms", 1, 3, 22, 2, 5, 2, 88);  // FLOAT32, HAILO_NMS_BY_CLASS: 2 · (1 + 5 · 2) floats
  std::vector<float> boxes(22, 0.0f);
  boxes[0] = 1.0f;  // class 0: one box
  boxes[1] = 0.125f, boxes[2] = 0.25f, boxes[3] = 0.5f, boxes[4] = 0.75f, boxes[5] = 0.875f;
  std::vector<uint8_t> box_bytes(88);
  std::memcpy(box_bytes.data(), boxes.data(), 88);
  d.set_output("det/nms", box_bytes.data(), box_bytes.size());

  Rig rig;
  auto b = hailo8::make_hailo8_backend(with_float(rig.options(), true, true));
  auto info = b->load(th::container(2, f), {});
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? std::string() : info.error().message));
  CHECK(info->layer_count == 3);  // quantize, write, read: nothing to dequantize
  CHECK(info->inputs[0].dtype == protocol::DType::float32);
  CHECK(info->outputs[0].dtype == protocol::DType::float32);
  CHECK(info->outputs[0].bytes == 88);
  put_floats(b->input(0), {0.4f, 0.5f, 1.5f, 2.5f, -3.0f, 254.5f, 255.5f, 1e9f});  // identity qp: round, saturate
  Run run;
  auto r = b->invoke(run.ctx());
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  CHECK(written_frame(d, "det/in", 8) == std::vector<uint8_t>{0, 0, 2, 2, 0, 254, 255, 255});
  CHECK(get_floats(b->output(0)) == boxes);
}

TEST_CASE("float I/O the transforms cannot do is refused at load, naming the tensor") {
  Rig rig;
  auto b = hailo8::make_hailo8_backend(with_float(rig.options(), true, true));
  {
    // An input whose scale is 0 cannot quantize (without float I/O the model loads).
    auto f = th::simple_file();
    f.mutable_network_groups(0)->mutable_contexts(0)->mutable_metadata()->mutable_edge_layers(0)->mutable_info()
        ->mutable_numeric()->set_scale(0.0f);
    auto r = b->load(th::container(0, f), {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::not_supported);
    CHECK(r.error().message ==
          "input 'net/input_layer1': float input cannot be quantized with the HEF's parameters: quantization scale 0 "
          "is not usable (must be finite and non-zero)");
    CHECK(b->input(0).empty());
    CHECK(hailo8::make_hailo8_backend(rig.options())->load(th::container(0, f), {}).ok());
  }
  {
    // Per-feature quantization in F8CR host order: the feature of an element is not on the innermost axis.
    auto f = th::make_file();
    th::add_extension(f, 25);
    auto* g = th::add_group(f, "p");
    th::add_edge(g, {.name = "p/in", .direction = 0, .f = 4, .format = 2});
    per_feature(th::add_edge(g, {.name = "p/out", .direction = 1, .h = 2, .w = 2, .f = 3, .pf = 8, .format = 7,
                                 .sys_index = 1}),
                {{1, 0.5}, {2, 0.25}, {3, 2.0}});
    auto r = b->load(th::container(0, f), {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::not_supported);
    CHECK(r.error().message ==
          "output 'p/out': per-feature float output is not supported for host order F8CR (features are not the "
          "innermost axis)");
    CHECK(hailo8::make_hailo8_backend(rig.options())->load(th::container(0, f), {}).ok());
  }
  {
    // Quantization that is not a number is refused with or without float I/O.
    auto f = th::simple_file();
    f.mutable_network_groups(0)->mutable_contexts(0)->mutable_metadata()->mutable_edge_layers(1)->mutable_info()
        ->mutable_numeric()->set_zero_point(std::numeric_limits<float>::infinity());
    auto r = hailo8::make_hailo8_backend(rig.options())->load(th::container(0, f), {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::model_error);
    CHECK(r.error().message == "vstream 'net/fc1': quantization scale 0.5 / zero point inf is not a usable number");
  }
}

TEST_CASE("a read with no frame waits the vstream's timeout (timeout=MS, written into the params), then times out") {
  // The double waits like HailoRT (a read blocks up to the vstream's timeout_ms); the engine's timeout= option is
  // what keeps a stalled device from holding an inference for HailoRT's default 10 s.
  Double d;
  d.add_vstream("net/input_layer1", 0, 1, 6, 1, 1, 16, 16);
  d.add_vstream("net/fc1", 1, 1, 6, 1, 1, 10, 10);  // no output data scripted: the device never answers
  Rig rig;
  auto o = rig.options();
  o.timeout_ms = 300;
  auto b = loaded(std::move(o), th::simple_file());
  Run run;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = b->invoke(run.ctx());
  const auto waited = std::chrono::steady_clock::now() - t0;
  REQUIRE_FALSE(r.ok());
  CHECK_MESSAGE(r.error().message.find("HAILO_TIMEOUT(4)") != std::string::npos, r.error().message);
  CHECK(waited >= std::chrono::milliseconds(300));
  CHECK(waited < std::chrono::seconds(5));
  CHECK(std::string(d.log()).find("hailo_vstream_read_raw_buffer net/fc1") != std::string::npos);

  // The option is parsed from the engine spec and refused when malformed.
  auto spec = engine::parse_engine_spec("hailo8:timeout=250");
  REQUIRE(spec.ok());
  auto parsed = hailo8::hailo8_options(*spec);
  REQUIRE(parsed.ok());
  CHECK(parsed->timeout_ms == 250);
  for (const char* bad : {"hailo8:timeout=0", "hailo8:timeout=soon", "hailo8:timeout=99999999"}) {
    auto s = engine::parse_engine_spec(bad);
    REQUIRE(s.ok());
    CHECK_FALSE(hailo8::hailo8_options(*s).ok());
  }
}

TEST_CASE("HailoRT cannot use the device our check accepted: the id asked for and the devices HailoRT sees are named") {
  Double d;
  script_simple(d);
  d.set_devices("0000:07:00.0");  // HailoRT sees another device than the one the driver check picked
  Rig rig;
  auto b = loaded(rig.options(), th::simple_file());
  Run run;
  auto r = b->invoke(run.ctx());
  REQUIRE_FALSE(r.ok());
  const std::string& m = r.error().message;
  CHECK_MESSAGE(m.find("hailo_create_vdevice failed with HAILO_INVALID_ARGUMENT(2)") != std::string::npos, m);
  CHECK_MESSAGE(m.find("asked for device ") != std::string::npos, m);
  CHECK_MESSAGE(m.find("HailoRT sees 0000:07:00.0") != std::string::npos, m);
  CHECK(d.count("hailo_scan_devices") == 1);

  d.set_devices("");
  d.fail("hailo_create_vdevice", 2);
  auto b2 = loaded(rig.options(), th::simple_file());
  auto r2 = b2->invoke(run.ctx());
  REQUIRE_FALSE(r2.ok());
  CHECK_MESSAGE(r2.error().message.find("HailoRT sees no device") != std::string::npos, r2.error().message);
}

TEST_CASE("libhailort's log goes to the state directory (or log-dir=), never the working directory; the user's wins") {
  const char* before = std::getenv("HAILORT_LOGGER_PATH");
  const std::string saved = before ? before : "";
  const auto dir = std::filesystem::temp_directory_path() / ("aisrv-hailort-log-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);

  ::unsetenv("HAILORT_LOGGER_PATH");
  ::setenv("STATE_DIRECTORY", dir.c_str(), 1);  // as systemd sets it for StateDirectory=aisrv
  CHECK(hailo8::prepare_hailort_log_dir(hailo8::Hailo8Options{}) == dir.string());
  CHECK(std::filesystem::is_directory(dir));
  CHECK((std::filesystem::status(dir).permissions() & std::filesystem::perms::others_all) ==
        std::filesystem::perms::none);
  CHECK(std::string(std::getenv("HAILORT_LOGGER_PATH")) == dir.string());
  ::unsetenv("STATE_DIRECTORY");

  // log-dir= when no state directory; a HAILORT_LOGGER_PATH the user set is never overridden
  ::unsetenv("HAILORT_LOGGER_PATH");
  hailo8::Hailo8Options o;
  o.log_dir = (dir / "custom").string();
  CHECK(hailo8::prepare_hailort_log_dir(o) == o.log_dir);
  CHECK(hailo8::prepare_hailort_log_dir(hailo8::Hailo8Options{}) == o.log_dir);  // already set: kept
  auto bad = engine::parse_engine_spec("hailo8:log-dir=relative/dir");
  REQUIRE(bad.ok());
  CHECK_FALSE(hailo8::hailo8_options(*bad).ok());

  std::filesystem::remove_all(dir);
  if (saved.empty()) ::unsetenv("HAILORT_LOGGER_PATH");
  else ::setenv("HAILORT_LOGGER_PATH", saved.c_str(), 1);
}
