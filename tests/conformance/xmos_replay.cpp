// aisrv conformance — XMOS host scripts replayed. The command sequences of three host programs of xmos/aisrv, written
// from reading them (not copied): host_python/stream_animals.py (a stream, output GPIO in max mode, then output
// tensors read in a loop), app_person_detection/run_demo.py (a single acquisition into input 0, the input read back,
// START_INFER on engine 0 chained to engine 1, float outputs 0 and 2 of engine 1, timings of both engines) and
// app_lib_vision_test/xcore_lvt.py (every request its host class sends: tensor write and read back, inference, a
// windowed acquisition, an I2C register write, a stream, GPIO enable / threshold / modes), each byte for byte as the
// Python sends it (header {cmd, engine, tensor}; XMOS sends tensor 0 where it has no tensor, 1-byte EN and MODE
// payloads, a 2-byte {index, int8} THRESH payload, no payload to START_ACQUIRE_STREAM and START_INFER), against a
// server with the CPU engine running real TFLite models (the demo digit classifier and a dequantizing head), a raw
// frame source of rendered digits (the real file source) or, where the host asks for a crop window, a test camera
// that records the window, and recording GPIO lines and I2C bus. Each step's status and answer is checked against
// what an XMOS host expects of it. Test doubles: only the camera for windows, the GPIO lines and the I2C bus.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <thread>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "aisrv/protocol/bytes.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/server.hpp"
#include "demo_model.hpp"
#include "process.hpp"
#include "recording_gpio.hpp"
#include "tflite_writer.hpp"

using namespace aisrv;
using namespace aisrv::protocol;

namespace {

// XMOS's opcodes (lib_aisrv/api/aisrv_cmd.py), spelled out so that a renumbering on our side shows up here.
constexpr uint32_t kGetInputTensor = 0x03, kSetInputTensor = 0x83, kStartInfer = 0x84, kGetOutputTensor = 0x05,
                   kGetTimings = 0x09, kStartAcquireSingle = 0x8C, kStartAcquireStream = 0x8E,
                   kStartAcquireSetI2c = 0x8F, kGetAcquireMode = 0x0E, kSetOutputGpioEn = 0x91,
                   kSetOutputGpioThresh = 0x92, kSetOutputGpioMode = 0x93;

// The head of the run_demo pipeline: engine 0's int8 class scores in, three outputs as an SSD-style head has them
// (float32 boxes-like output 0, int8 output 1, float32 scores output 2; run_demo reads 0 and 2 as floats).
std::vector<uint8_t> head_model() {
  namespace tw = aisrv::tflite_writer;
  tw::ModelBuilder b;
  const tw::Quant q{{1.0f / 256}, {-128}, 0};  // the demo model's probabilities
  const int32_t in = b.add_tensor(tw::TensorDef{"scores", DType::int8, {1, 10}, q, {}, std::nullopt, false});
  const int32_t out0 = b.add_tensor(tw::TensorDef{"boxes", DType::float32, {1, 10}, std::nullopt, {}, std::nullopt, false});
  const int32_t out1 = b.add_tensor(tw::TensorDef{"classes", DType::int8, {1, 10}, q, {}, std::nullopt, false});
  const int32_t out2 = b.add_tensor(tw::TensorDef{"probabilities", DType::float32, {1, 10}, std::nullopt, {},
                                                  std::nullopt, false});
  const int32_t shape = b.add_constant<int32_t>("classes/shape", DType::int32, {2}, {1, 10});
  b.add_operator(tw::Op::dequantize, {in}, {out0});
  b.add_operator(tw::Op::reshape, {in, shape}, {out1}, tw::Reshape{{1, 10}});
  b.add_operator(tw::Op::dequantize, {in}, {out2});
  b.set_inputs({in});
  b.set_outputs({out0, out1, out2});
  return b.finish("aisrv test: dequantizing head");
}

// A camera for the windowed acquisition of xcore_lvt.py: records the window and delivers a frame made from it.
struct WindowLog {
  std::mutex mu;
  std::vector<std::optional<sensors::AcquireWindow>> windows;
};
class WindowCamera final : public sensors::FrameSource {
 public:
  explicit WindowCamera(std::shared_ptr<WindowLog> log) : log_(std::move(log)) {}
  std::string describe() const override { return "test:window-camera"; }
  Status grab(const TensorInfo&, sensors::SensorFrame& out) override {
    out.what = describe();
    return ok();
  }
  Status fit(const sensors::SensorFrame&, const TensorInfo&, const std::optional<sensors::AcquireWindow>& w,
             std::span<uint8_t> frame) const override {
    std::lock_guard l(log_->mu);
    log_->windows.push_back(w);
    for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>((w ? w->x0 + w->y0 : 0) + i);
    return ok();
  }

 private:
  std::shared_ptr<WindowLog> log_;
};

// A sensor I2C bus that records the writes (address, register, value, 16-bit register).
struct I2cWrite {
  uint8_t address;
  uint16_t reg;
  uint8_t value;
  bool wide;
  bool operator==(const I2cWrite&) const = default;
};
class RecordingI2c final : public sensors::I2cBus {
 public:
  explicit RecordingI2c(std::shared_ptr<std::vector<I2cWrite>> log) : log_(std::move(log)) {}
  std::string describe() const override { return "i2c:test"; }
  Status write_register(uint8_t a, uint8_t r, uint8_t v) override {
    log_->push_back({a, r, v, false});
    return ok();
  }
  Status write_register16(uint8_t a, uint16_t r, uint8_t v) override {
    log_->push_back({a, r, v, true});
    return ok();
  }

 private:
  std::shared_ptr<std::vector<I2cWrite>> log_;
};

std::unique_ptr<engine::InferenceBackend> cpu_engine() {
  auto b = engine::cpu::CpuBackend::create({});
  REQUIRE(b.ok());
  return std::unique_ptr<engine::InferenceBackend>(std::move(b).value());
}

// An XMOS host: raw requests on one session (USB host, as XMOS's hosts are).
struct Host {
  std::unique_ptr<server::Server> server;
  std::shared_ptr<server::Session> session;

  Response send(uint32_t cmd, uint32_t engine, uint32_t tensor, std::vector<uint8_t> payload = {}) {
    Response r;
    server->handle(*session, Request{Header{cmd, engine, tensor}, payload}, r);
    return r;
  }
  void ok(uint32_t cmd, uint32_t engine, uint32_t tensor, std::vector<uint8_t> payload = {}) {
    const auto r = send(cmd, engine, tensor, std::move(payload));
    if (r.status != AISRV_STATUS_OKAY) {
      auto log = send(static_cast<uint32_t>(Command::GET_DEBUG_LOG), engine, 0);
      FAIL_CHECK("command 0x" << std::hex << cmd << " answered status 0x" << r.status << ": "
                               << std::string(log.payload.begin(), log.payload.end()));
    }
  }
  void load(uint32_t engine, const std::vector<uint8_t>& model) {
    ok(static_cast<uint32_t>(Command::SET_MODEL_SECONDARY), engine, 0, model);
  }
};

Host make_host(server::ServerOptions o, size_t engines) {
  std::vector<std::unique_ptr<engine::InferenceBackend>> b;
  for (size_t i = 0; i < engines; ++i) b.push_back(cpu_engine());
  auto s = server::Server::create(std::move(o), std::move(b));
  REQUIRE(s.ok());
  Host h{std::move(s).value(), nullptr};
  h.session = h.server->open_session(server::Peer::of(server::Trust::physical, "usb", "host"));
  return h;
}

std::vector<uint8_t> digit_bytes(int digit) {
  const auto px = demo::render_digit(digit);
  return std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(px.data()),
                              reinterpret_cast<const uint8_t*>(px.data()) + px.size());
}

std::string raw_frames(test::TempDir& dir, std::initializer_list<int> digits) {
  const std::string path = dir.file("frames.raw");
  std::ofstream f(path, std::ios::binary);
  for (int d : digits) {
    const auto b = digit_bytes(d);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  return path;
}

int argmax_i8(const std::vector<uint8_t>& b) {
  int best = 0;
  for (size_t i = 1; i < b.size(); ++i)
    if (static_cast<int8_t>(b[i]) > static_cast<int8_t>(b[static_cast<size_t>(best)])) best = static_cast<int>(i);
  return best;
}

std::vector<float> floats(const std::vector<uint8_t>& b) {
  std::vector<float> f(b.size() / 4);
  std::memcpy(f.data(), b.data(), f.size() * 4);
  return f;
}

std::vector<uint8_t> levels(test::GpioRecord& rec) {
  std::lock_guard l(rec.mu);
  return rec.levels;
}

}  // namespace

TEST_CASE("XMOS stream_animals.py: stream started with tensor 0, GPIO in max mode, outputs read by the starter") {
  test::TempDir dir;
  server::ServerOptions o;
  auto src = sensors::open_raw_frame_source(raw_frames(dir, {2}));
  REQUIRE(src.ok());
  o.sensors.emplace_back(0, server::SensorConfig{std::move(src).value(), std::chrono::milliseconds(5), nullptr});
  auto rec = std::make_shared<test::GpioRecord>();
  auto lines = std::make_unique<test::RecordingGpio>(4, rec);  // XMOS's AISRV_GPIO_LENGTH
  REQUIRE(lines->request().ok());
  o.gpio.emplace_back(0, std::move(lines));
  auto h = make_host(std::move(o), 1);
  h.load(0, demo::build_digit_model());

  // ie.start_acquire_stream(): header {0x8E, 0, 0}, then a zero-length packet.
  h.ok(kStartAcquireStream, 0, 0);
  CHECK(*decode_u32(h.send(kGetAcquireMode, 0, 0).payload) == 1);  // XMOS's AISRV_ACQUIRE_MODE_STREAM
  // ie.enable_output_gpio(): {0x91, 0, 0} + [1]; set_output_gpio_mode_max(): {0x93, 0, 0} + [1];
  // set_output_gpio_threshold(i, 50) for i in 0..3: {0x92, 0, 0} + [i, 50].
  h.ok(kSetOutputGpioEn, 0, 0, {1});
  h.ok(kSetOutputGpioMode, 0, 0, {1});
  for (uint8_t i = 0; i < 4; ++i) h.ok(kSetOutputGpioThresh, 0, 0, {i, 50});
  // while True: ie.read_output_tensor() -> {0x05, 0, 0}. The first read may come before the stream's first
  // inference ended (then ERROR_INFER_ERR: no output yet, where XMOS hands out its stale buffer); after that every
  // read is the stream's latest output, which classifies the camera's digit 2.
  std::vector<uint8_t> out;
  for (int i = 0; i < 400; ++i) {
    auto r = h.send(kGetOutputTensor, 0, 0);
    if (r.status == AISRV_STATUS_OKAY) {
      out = r.payload;
      break;
    }
    CHECK(r.status == AISRV_STATUS_ERROR_INFER_ERR);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(out.size() == 10);
  CHECK(argmax_i8(out) == 2);
  const double prob = (static_cast<int8_t>(out[2]) + 128) / 256.0;  // the script's (value - zero point) * scale
  CHECK(prob > 0.85);
  for (int i = 0; i < 3; ++i) {  // the loop goes on reading
    auto r = h.send(kGetOutputTensor, 0, 0);
    REQUIRE(r.status == AISRV_STATUS_OKAY);
    CHECK(argmax_i8(r.payload) == 2);
  }
  // The stream drove the GPIO lines: max mode, the arg-max's line (2) above its threshold 50.
  for (int i = 0; i < 400 && levels(*rec) != std::vector<uint8_t>{0, 0, 1, 0}; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(levels(*rec) == std::vector<uint8_t>{0, 0, 1, 0});
  // XMOS has no stop; aisrv's extension (a u32 mode 0 payload, never sent by XMOS hosts) stops the stream.
  h.ok(kStartAcquireStream, 0, 0, {0, 0, 0, 0});
  CHECK(*decode_u32(h.send(kGetAcquireMode, 0, 0).payload) == 0);
}

TEST_CASE("XMOS run_demo.py: acquire single fills input 0 only; START_INFER runs the chain; float outputs of engine 1") {
  test::TempDir dir;
  server::ServerOptions o;
  auto src = sensors::open_raw_frame_source(raw_frames(dir, {4, 9}));
  REQUIRE(src.ok());
  o.sensors.emplace_back(0, server::SensorConfig{std::move(src).value(), std::chrono::milliseconds(100), nullptr});
  o.chains = {{0, 1}};  // the person-detection app chains engine 0 into engine 1
  auto rec = std::make_shared<test::GpioRecord>();
  auto lines = std::make_unique<test::RecordingGpio>(10, rec);  // on engine 1, whose output 0 is float32
  REQUIRE(lines->request().ok());
  o.gpio.emplace_back(1, std::move(lines));
  auto h = make_host(std::move(o), 2);
  h.load(0, demo::build_digit_model());
  h.load(1, head_model());

  // ie.start_inference(engine_num=1) before anything was written: inputs never written are zeros.
  h.ok(kStartInfer, 1, 0);
  auto zero_in = floats(h.send(kGetOutputTensor, 1, 0).payload);
  REQUIRE(zero_in.size() == 10);
  CHECK(zero_in[0] == doctest::Approx(0.5));  // int8 0 at scale 1/256, zero point -128

  // A float32 output's GPIO threshold is a float (aisrv's 4-byte form with an IEEE-754 value): 0.5 on every line.
  const float half = 0.5f;
  std::vector<uint8_t> half_bytes(4);
  std::memcpy(half_bytes.data(), &half, 4);
  for (uint32_t line = 0; line < 10; ++line) {
    h.ok(static_cast<uint32_t>(Command::SET_OUTPUT_GPIO_THRESH), 1, line, half_bytes);
    h.ok(static_cast<uint32_t>(Command::SET_OUTPUT_GPIO_EN), 1, line, {1, 0, 0, 0});
  }
  const auto thresh = h.send(static_cast<uint32_t>(Command::GET_OUTPUT_GPIO_THRESH), 1, 3);
  REQUIRE(thresh.status == AISRV_STATUS_OKAY);
  CHECK(thresh.payload == half_bytes);

  const auto engine0_inferences = [&] {
    return decode_engine_info(h.send(static_cast<uint32_t>(Command::GET_ENGINE_INFO), 0, 0).payload)->inferences;
  };
  for (int digit : {4, 9}) {
    CAPTURE(digit);
    // ie.start_acquire_single(0): {0x8C, 0, 0} and a zero-length packet (the whole picture). XMOS fills input 0 and
    // runs nothing: the inference count stays.
    const auto before = engine0_inferences();
    h.ok(kStartAcquireSingle, 0, 0);
    CHECK(engine0_inferences() == before);
    // ie.read_input_tensor(): the frame as the model takes it.
    const auto in = h.send(kGetInputTensor, 0, 0);
    REQUIRE(in.status == AISRV_STATUS_OKAY);
    CHECK(in.payload == digit_bytes(digit));
    // ie.start_inference(): engine 0, then (chained) engine 1.
    h.ok(kStartInfer, 0, 0);
    CHECK(engine0_inferences() == before + 1);
    // ie.read_output_tensor(tensor_num=0 and 2, engine_num=1), read as floats by the script's to_float.
    for (uint32_t t : {0u, 2u}) {
      const auto r = h.send(kGetOutputTensor, 1, t);
      REQUIRE(r.status == AISRV_STATUS_OKAY);
      const auto f = floats(r.payload);
      REQUIRE(f.size() == 10);
      const auto best = std::max_element(f.begin(), f.end()) - f.begin();
      CHECK(best == digit);
      CHECK(f[static_cast<size_t>(digit)] > 0.85f);
    }
    // ie.read_times() and read_times(engine_num=1): one u32 per operator (the digit model has 4, the head 3).
    const auto t0 = h.send(kGetTimings, 0, 0), t1 = h.send(kGetTimings, 1, 0);
    REQUIRE(t0.status == AISRV_STATUS_OKAY);
    REQUIRE(t1.status == AISRV_STATUS_OKAY);
    CHECK(t0.payload.size() == 4 * 4);
    CHECK(t1.payload.size() == 3 * 4);
    // Engine 1's lines follow its float output 0 against the 0.5 threshold: only the digit's line is high.
    std::vector<uint8_t> want(10, 0);
    want[static_cast<size_t>(digit)] = 1;
    CHECK(levels(*rec) == want);
  }
  // A float threshold that is not a number is refused; the old one stays.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint8_t> nan_bytes(4);
  std::memcpy(nan_bytes.data(), &nan, 4);
  CHECK(h.send(static_cast<uint32_t>(Command::SET_OUTPUT_GPIO_THRESH), 1, 0, nan_bytes).status ==
        AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(h.send(static_cast<uint32_t>(Command::GET_OUTPUT_GPIO_THRESH), 1, 0).payload == half_bytes);
}

TEST_CASE("XMOS xcore_lvt.py: every request of its host class") {
  server::ServerOptions o;
  auto windows = std::make_shared<WindowLog>();
  auto i2c = std::make_shared<std::vector<I2cWrite>>();
  o.sensors.emplace_back(0, server::SensorConfig{std::make_unique<WindowCamera>(windows), std::chrono::milliseconds(5),
                                                 std::make_unique<RecordingI2c>(i2c)});
  auto rec = std::make_shared<test::GpioRecord>();
  auto lines = std::make_unique<test::RecordingGpio>(4, rec);
  REQUIRE(lines->request().ok());
  o.gpio.emplace_back(0, std::move(lines));
  auto h = make_host(std::move(o), 1);
  h.load(0, head_model());  // a 10-byte input, as send_picture.py's write_tensor([1..10]) fills

  // write_tensor([1, ..., 10]): CMD_SET_ARRAY (0x83) {0x83, 0, 0} + the bytes; read_array(): CMD_GET_ARRAY (0x03).
  const std::vector<uint8_t> ten{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  h.ok(kSetInputTensor, 0, 0, ten);
  auto back = h.send(kGetInputTensor, 0, 0);
  REQUIRE(back.status == AISRV_STATUS_OKAY);
  CHECK(back.payload == ten);
  // start_inference(): {0x84, 0, 0} + a zero-length packet.
  h.ok(kStartInfer, 0, 0);
  const auto f = floats(h.send(kGetOutputTensor, 0, 0).payload);
  REQUIRE(f.size() == 10);
  CHECK(f[9] == doctest::Approx((10 + 128) / 256.0));
  // start_acquire_single(sx, ex, sy, ey, rw, rh): {0x8C, 0, 0} + six u16 little-endian; rw = rh = 0.
  h.ok(kStartAcquireSingle, 0, 0, {8, 0, 72, 0, 4, 0, 68, 0, 0, 0, 0, 0});
  {
    std::lock_guard l(windows->mu);
    REQUIRE(windows->windows.size() == 1);
    REQUIRE(windows->windows[0].has_value());
    CHECK(windows->windows[0]->x0 == 8);
    CHECK(windows->windows[0]->x1 == 72);
    CHECK(windows->windows[0]->y0 == 4);
    CHECK(windows->windows[0]->y1 == 68);
  }
  back = h.send(kGetInputTensor, 0, 0);
  REQUIRE(back.status == AISRV_STATUS_OKAY);
  CHECK(back.payload == std::vector<uint8_t>{12, 13, 14, 15, 16, 17, 18, 19, 20, 21});
  CHECK(floats(h.send(kGetOutputTensor, 0, 0).payload)[9] == doctest::Approx((10 + 128) / 256.0));  // not inferred
  // acquire_set_i2c(0x3C, 0x12, 0x80): {0x8F, 0, 0} + three bytes; the 16-bit register extension (never sent by
  // XMOS) carries a u16 register.
  h.ok(kStartAcquireSetI2c, 0, 0, {0x3C, 0x12, 0x80});
  h.ok(kStartAcquireSetI2c, 0, 0, {0x10, 0x72, 0x01, 0x05});  // IMX219-style register 0x0172
  CHECK(*i2c == std::vector<I2cWrite>{{0x3C, 0x12, 0x80, false}, {0x10, 0x0172, 0x05, true}});
  // Hostile: an 8-bit address, a short payload; refused before the bus, nothing written.
  CHECK(h.send(kStartAcquireSetI2c, 0, 0, {0x80, 0x12, 0x80}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(h.send(kStartAcquireSetI2c, 0, 0, {0x80, 0x12, 0x00, 0x80}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(h.send(kStartAcquireSetI2c, 0, 0, {0x3C, 0x12}).status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(i2c->size() == 2);
  // start_acquire_stream(): {0x8E, 0, 0} + a zero-length packet; aisrv's stop extension ends it.
  h.ok(kStartAcquireStream, 0, 0);
  CHECK(*decode_u32(h.send(kGetAcquireMode, 0, 0).payload) == 1);
  h.ok(kStartAcquireStream, 0, 0, {0, 0, 0, 0});
  CHECK(*decode_u32(h.send(kGetAcquireMode, 0, 0).payload) == 0);
  // enable_output_gpio(): [1] for every line; set_output_gpio_threshold(index, threshold): [index, int8];
  // set_output_gpio_mode_max(): [1]; set_output_gpio_mode_none(): [0]; disable_output_gpio(): [0].
  h.ok(kSetOutputGpioEn, 0, 0, {1});
  for (uint32_t line = 0; line < 4; ++line)
    CHECK(*decode_u32(h.send(static_cast<uint32_t>(Command::GET_OUTPUT_GPIO_EN), 0, line).payload) == 1);
  h.ok(kSetOutputGpioThresh, 0, 0, {1, 0x9C});  // -100 as XMOS's int8
  // The head's output 0 is float32, so the threshold reads back as a float.
  const auto t = floats(h.send(static_cast<uint32_t>(Command::GET_OUTPUT_GPIO_THRESH), 0, 1).payload);
  REQUIRE(t.size() == 1);
  CHECK(t[0] == -100.0f);
  h.ok(kSetOutputGpioMode, 0, 0, {1});
  CHECK(*decode_u32(h.send(static_cast<uint32_t>(Command::GET_OUTPUT_GPIO_MODE), 0, 0).payload) == 1);
  h.ok(kSetOutputGpioMode, 0, 0, {0});
  CHECK(*decode_u32(h.send(static_cast<uint32_t>(Command::GET_OUTPUT_GPIO_MODE), 0, 0).payload) == 0);
  h.ok(kStartInfer, 0, 0);  // threshold mode: line i high when output i > its threshold (-128, -100, -128, -128)
  CHECK(levels(*rec) == std::vector<uint8_t>{1, 1, 1, 1});
  h.ok(kSetOutputGpioEn, 0, 0, {0});
  h.ok(kStartInfer, 0, 0);
  CHECK(levels(*rec) == std::vector<uint8_t>{0, 0, 0, 0});
}
