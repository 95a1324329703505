// Integration test: Frigate's `zmq` detector protocol through the Frigate endpoint to the Hailo-8 engine, with the
// shared yolov8n.hef (one 320x320x3 UINT8 input, one FLOAT32 HAILO_NMS_BY_CLASS output) on the HailoRT test double and
// the hailo_pci driver double. A REQ client (libzmq) plays Frigate: the model handshake transfers the HEF into a
// file-backed model store and the endpoint loads it; a detection sends the pixels, which reach the device as they
// are (uint8 input), and the double's scripted NMS frame comes back as Frigate's rows (score order, the box
// coordinates, the threshold). An ordinary client (an in-process channel) shares the engine and gets the raw frame.
// The double computes nothing: this checks the glue from Frigate's bytes to the device and back.
#include <doctest/doctest.h>
#include <dlfcn.h>
#include <zmq.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "aisrv/engine/hailo8/backend.hpp"
#include "aisrv/flash/open.hpp"
#include "aisrv/phy/frigate_endpoint.hpp"
#include "aisrv/phy/local_channel.hpp"
#include "aisrv/server.hpp"
#include "hailo_device_tree.hpp"
#include "hailo_driver_double.hpp"
#include "hailort_double_control.h"
#include "process.hpp"
#include "testdata.hpp"

using namespace aisrv;
namespace hailo8 = aisrv::engine::hailo8;
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kSide = 320, kClasses = 110, kBoxes = 100;
constexpr size_t kFrameFloats = kClasses * (1 + 5 * kBoxes);

std::vector<std::string> request(void* socket, const std::vector<std::string>& parts) {
  for (size_t i = 0; i < parts.size(); ++i)
    REQUIRE(zmq_send(socket, parts[i].data(), parts[i].size(), i + 1 < parts.size() ? ZMQ_SNDMORE : 0) >= 0);
  std::vector<std::string> reply;
  for (;;) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    REQUIRE_MESSAGE(zmq_msg_recv(&m, socket, 0) >= 0, zmq_strerror(zmq_errno()));
    reply.emplace_back(static_cast<const char*>(zmq_msg_data(&m)), zmq_msg_size(&m));
    const bool more = zmq_msg_more(&m);
    zmq_msg_close(&m);
    if (!more) return reply;
  }
}

}  // namespace

TEST_CASE("Frigate -> endpoint -> Hailo-8 (yolov8n.hef, NMS by class) -> Frigate's rows") {
  const fs::path hef_path = test::testdata_path("hef/GURUKARTHIKC__Takumi/yolov8n.hef");
  if (!fs::is_regular_file(hef_path)) {
    MESSAGE("not in this copy of the test data: yolov8n.hef");
    return;
  }
  std::string hef(fs::file_size(hef_path), '\0');
  std::ifstream(hef_path, std::ios::binary).read(hef.data(), static_cast<std::streamsize>(hef.size()));

  void* h = dlopen(AISRV_HAILORT_DOUBLE, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h != nullptr);
  auto reset = reinterpret_cast<decltype(&aisrv_hailort_double_reset)>(dlsym(h, "aisrv_hailort_double_reset"));
  auto add =
      reinterpret_cast<decltype(&aisrv_hailort_double_add_vstream)>(dlsym(h, "aisrv_hailort_double_add_vstream"));
  auto set_output =
      reinterpret_cast<decltype(&aisrv_hailort_double_set_output)>(dlsym(h, "aisrv_hailort_double_set_output"));
  auto written = reinterpret_cast<decltype(&aisrv_hailort_double_written)>(dlsym(h, "aisrv_hailort_double_written"));
  REQUIRE((reset && add && set_output && written));
  reset();
  add("yolov8n/input_layer1", 0, 1 /* UINT8 */, 1 /* NHWC */, kSide, kSide, 3, kSide * kSide * 3);
  add("yolov8n/yolov8_nms_postprocess", 1, 3 /* FLOAT32 */, 22 /* NMS_BY_CLASS */, kClasses, 5, kBoxes,
      kFrameFloats * 4);
  // The scripted detections: class 0 one box (0.9), class 33 two boxes (0.7 and 0.3: below the 0.4 threshold),
  // {y_min, x_min, y_max, x_max, score} normalised.
  std::vector<float> frame(kFrameFloats, 0.0f);
  size_t pos = 0;
  for (uint32_t cls = 0; cls < kClasses; ++cls) {
    if (cls == 0) {
      frame[pos] = 1;
      const float box[5] = {0.5f, 0.25f, 0.9f, 0.375f, 0.9f};
      std::memcpy(&frame[pos + 1], box, sizeof box);
      pos += 1 + 5;
    } else if (cls == 33) {
      frame[pos] = 2;
      const float boxes[10] = {0.0625f, 0.5f, 0.25f, 0.75f, 0.7f, 0.1f, 0.1f, 0.2f, 0.2f, 0.3f};
      std::memcpy(&frame[pos + 1], boxes, sizeof boxes);
      pos += 1 + 10;
    } else {
      pos += 1;
    }
  }
  set_output("yolov8n/yolov8_nms_postprocess", frame.data(), frame.size() * 4);

  test::HailoDeviceTree tree;
  tree.device("hailo0", "0000:01:00.0");
  auto driver = std::make_shared<test::HailoDriverDouble>();
  driver->node(tree.dev("hailo0"));
  hailo8::Hailo8Options o;
  o.discovery = tree.paths;
  o.driver_opener = driver;
  o.hailort = AISRV_HAILORT_DOUBLE;

  test::TempDir dir;
  flash::OpenOptions fo;
  fo.create = true;
  fo.format_blank = true;
  fo.format.clients = 1;
  auto store = flash::open_store(dir.file("store.img"), fo);
  REQUIRE_MESSAGE(store.ok(), (store.ok() ? std::string() : store.error().message));

  {
    std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
    backends.push_back(hailo8::make_hailo8_backend(o));
    server::ServerOptions so;
    so.store = store->store.get();
    auto server = server::Server::create(std::move(so), std::move(backends));
    REQUIRE(server.ok());
    phy::frigate::EndpointConfig config;
    config.endpoint = "ipc://" + dir.file("zmq_detector");
    config.accept_models = true;
    auto endpoint = phy::frigate::FrigateEndpoint::bind(**server, config, nullptr);
    REQUIRE_MESSAGE(endpoint.ok(), (endpoint.ok() ? std::string() : endpoint.error().message));
    (*endpoint)->start();

    void* ctx = zmq_ctx_new();
    void* req = zmq_socket(ctx, ZMQ_REQ);
    const int timeout = 60000, linger = 0;
    zmq_setsockopt(req, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(req, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(req, ZMQ_LINGER, &linger, sizeof linger);
    REQUIRE(zmq_connect(req, config.endpoint.c_str()) == 0);

    CHECK(request(req, {R"({"model_request": true, "model_name": "yolov8n.hef"})"}) ==
          std::vector<std::string>{R"({"model_available":false,"model_loaded":false})"});
    CHECK(request(req, {R"({"model_data": true, "model_name": "yolov8n.hef"})", hef}) ==
          std::vector<std::string>{R"({"model_loaded":true,"model_saved":true})"});
    auto entry = store->store->entry(0);
    REQUIRE(entry.ok());
    REQUIRE(entry->has_model());
    CHECK(entry->active_slot()->name == "yolov8n.hef");

    std::string pixels(kSide * kSide * 3, '\0');
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<char>((i * 7) & 0xFF);
    // model_type "yolonas" is not decoded by itself, but Hailo-8 NMS output is whatever the type says.
    const auto reply =
        request(req, {R"({"shape": [1, 320, 320, 3], "dtype": "uint8", "model_type": "yolonas"})", pixels});
    REQUIRE(reply.size() == 1);
    REQUIRE(reply[0].size() == 480);
    float rows[20][6];
    std::memcpy(rows, reply[0].data(), 480);
    const float expected0[6] = {0, 0.9f, 0.5f, 0.25f, 0.9f, 0.375f};
    const float expected1[6] = {33, 0.7f, 0.0625f, 0.5f, 0.25f, 0.75f};
    for (int k = 0; k < 6; ++k) {
      CHECK(rows[0][k] == doctest::Approx(expected0[k]).epsilon(1e-6));
      CHECK(rows[1][k] == doctest::Approx(expected1[k]).epsilon(1e-6));
    }
    for (int r = 2; r < 20; ++r)
      for (int k = 0; k < 6; ++k) CHECK(rows[r][k] == 0.0f);
    // The pixels reached the device as they were (uint8 input, NHWC).
    std::string sent(pixels.size(), '\0');
    CHECK(written("yolov8n/input_layer1", sent.data(), sent.size()) == pixels.size());
    CHECK(sent == pixels);

    // An ordinary client of the same engine: its own inference, the raw NMS frame.
    auto channel = phy::LocalChannel::open(**server, 0, "ordinary client");
    REQUIRE(channel.ok());
    std::vector<uint8_t> in(kSide * kSide * 3, 17);
    REQUIRE(channel->set_input(0, in).ok());
    REQUIRE(channel->start_inference().ok());
    std::vector<uint8_t> out(kFrameFloats * 4);
    REQUIRE(channel->get_output(0, out).ok());
    CHECK(std::memcmp(out.data(), frame.data(), out.size()) == 0);

    const auto stats = (*endpoint)->stats();
    CHECK(stats.model_requests == 1);
    CHECK(stats.models_saved == 1);
    CHECK(stats.models_loaded == 1);
    CHECK(stats.detect_requests == 1);
    CHECK(stats.detections == 2);
    CHECK(stats.peers_open == 1);

    zmq_close(req);
    zmq_ctx_term(ctx);
    (*endpoint)->stop();
    CHECK((*endpoint)->stats().peers_open == 0);
  }
  dlclose(h);
}
