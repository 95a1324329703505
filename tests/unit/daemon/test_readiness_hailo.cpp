// Unit tests: /readyz and aisrv_engine_ready (aisrv/daemon/metrics_page.cpp) with a real Server and the real hailo8
// backend on its test doubles (the hailo_pci driver double and the HailoRT double, tests/support): the engine is
// ready after a completed inference, not ready with HailoRT's reason when the device stops answering mid-run
// (hailo_vstream_write_raw_buffer fails), ready again once an inference completes; a --boot engine without a model
// is not ready; a shutting-down server is not ready.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include "aisrv/engine/hailo8/backend.hpp"
#include "aisrv/server.hpp"
#include "hailo_device_tree.hpp"
#include "hailo_driver_double.hpp"
#include "hailort_double_control.h"
#include "hef_builder.hpp"
#include "metrics_page.hpp"

using namespace aisrv;
namespace th = aisrv::test::hef;

namespace {

// The double's control functions, from the same loaded object the backend uses.
struct HailortDouble {
  void* handle = dlopen(AISRV_HAILORT_DOUBLE, RTLD_NOW | RTLD_LOCAL);
  template <typename Fn>
  Fn get(const char* name) {
    REQUIRE_MESSAGE(handle, dlerror());
    auto fn = reinterpret_cast<Fn>(dlsym(handle, name));
    const bool found = fn != nullptr;
    REQUIRE_MESSAGE(found, name);
    return fn;
  }
  ~HailortDouble() {
    if (handle) dlclose(handle);
  }
};

std::string value_line(const std::string& page, const std::string& series) {
  const size_t at = page.find("\n" + series + " ");
  return at == std::string::npos ? std::string() : page.substr(at + 1, page.find('\n', at + 1) - at - 1);
}

}  // namespace

TEST_CASE("readiness with a Hailo-8 engine whose device stops answering") {
  HailortDouble d;
  d.get<decltype(&aisrv_hailort_double_reset)>("aisrv_hailort_double_reset")();
  auto add_vstream = d.get<decltype(&aisrv_hailort_double_add_vstream)>("aisrv_hailort_double_add_vstream");
  auto set_output = d.get<decltype(&aisrv_hailort_double_set_output)>("aisrv_hailort_double_set_output");
  auto fail = d.get<decltype(&aisrv_hailort_double_fail)>("aisrv_hailort_double_fail");
  // The synthetic HEF's tensors: input net/input_layer1 (16 bytes), output net/fc1 (10 bytes).
  add_vstream("net/input_layer1", 0, 1, 6, 1, 1, 16, 16);
  add_vstream("net/fc1", 1, 1, 6, 1, 1, 10, 10);
  const std::vector<uint8_t> out = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  set_output("net/fc1", out.data(), out.size());

  test::HailoDeviceTree tree;
  auto driver = std::make_shared<test::HailoDriverDouble>();
  tree.device("hailo0", "0000:03:00.0");
  driver->node(tree.dev("hailo0"));
  engine::hailo8::Hailo8Options o;
  o.discovery = tree.paths;
  o.driver_opener = driver;
  o.device = tree.dev("hailo0");
  o.hailort = AISRV_HAILORT_DOUBLE;
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  backends.push_back(engine::hailo8::make_hailo8_backend(o));
  auto server = server::Server::create({}, std::move(backends));
  REQUIRE(server.ok());
  server::Server& s = **server;
  daemon::MetricsPage page(s, {0}, std::chrono::system_clock::now());

  // Configured to boot a model (--boot 0) and it has none.
  auto r = page.readiness();
  CHECK_FALSE(r.ready);
  CHECK(r.text == "not ready: engine 0 (hailo8): no model loaded, and it is configured to have one (--boot 0); "
                  "its log says why (aisrv log 0)\n");

  server::EngineSlot& slot = *s.engine(0);
  const auto hef = th::container(0, th::simple_file());
  REQUIRE(slot.load_model(hef, engine::Placement::external, "wire (external)").ok());
  auto session = s.open_session(server::Peer::of(server::Trust::process, "local"));
  const std::vector<uint8_t> input(16, 7);
  const protocol::InferTensor in{0, input};
  std::vector<uint8_t> answer;
  REQUIRE(s.acquisition().infer_call(*session, slot, std::span(&in, 1), 0, answer).ok());
  r = page.readiness();
  CHECK(r.ready);
  CHECK(r.text == "ready: 1 engine\n");

  // The device stops answering: HailoRT's write times out, the inference fails with its reason.
  fail("hailo_vstream_write_raw_buffer", 4);
  CHECK_FALSE(s.acquisition().infer_call(*session, slot, std::span(&in, 1), 0, answer).ok());
  r = page.readiness();
  CHECK_FALSE(r.ready);
  CHECK(r.text.find("not ready: engine 0 (hailo8): failing: its last inference failed: hailo_vstream_write_raw_buffer"
                    "('net/input_layer1') failed with HAILO_TIMEOUT(4)") == 0);
  std::string metrics = page.render();
  CHECK(value_line(metrics, "aisrv_ready") == "aisrv_ready 0");
  CHECK(value_line(metrics, R"(aisrv_engine_ready{engine="0",kind="hailo8"})") ==
        R"(aisrv_engine_ready{engine="0",kind="hailo8"} 0)");
  CHECK(value_line(metrics, R"(aisrv_inferences_total{engine="0",result="failed"})") ==
        R"(aisrv_inferences_total{engine="0",result="failed"} 1)");

  // It answers again: the next inference reconfigures, completes, and the engine is ready.
  fail("hailo_vstream_write_raw_buffer", 0);
  REQUIRE(s.acquisition().infer_call(*session, slot, std::span(&in, 1), 0, answer).ok());
  CHECK(page.readiness().ready);
  metrics = page.render();
  CHECK(value_line(metrics, R"(aisrv_inferences_total{engine="0",result="completed"})") ==
        R"(aisrv_inferences_total{engine="0",result="completed"} 2)");
  CHECK(value_line(metrics, R"(aisrv_compute_seconds_count{engine="0"})") ==
        R"(aisrv_compute_seconds_count{engine="0"} 2)");
  CHECK(value_line(metrics, R"x(aisrv_model_info{engine="0",format="hef",source="wire (external)"})x") ==
        R"x(aisrv_model_info{engine="0",format="hef",source="wire (external)"} 1)x");

  s.close_session(*session);
  s.begin_shutdown();
  r = page.readiness();
  CHECK_FALSE(r.ready);
  CHECK(r.text == "not ready: the server is shutting down\n");
}
