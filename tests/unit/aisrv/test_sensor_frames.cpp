// Unit tests: camera frames in the real world — the bad-frame decision on crafted buffers and real JPEGs (made by
// libjpeg-turbo here, then truncated or corrupted), bad frames answered (single) or skipped and counted (stream), a
// stalled camera that holds no other session's work, a camera absent at start and its persistent udev names.
#include <doctest/doctest.h>
#include <linux/videodev2.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "aisrv/protocol/payloads.hpp"
#include "aisrv/server.hpp"
#include "process.hpp"
#include "scripted_frame_source.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using namespace aisrv::protocol;
using namespace std::chrono_literals;
using aisrv::sensors::BufferFormat;
using aisrv::server::Server;
using aisrv::test::ScriptedFrameSource;

namespace {

// A real JPEG of a w x h RGB picture (a smooth pattern plus noise, so the scan has plenty of entropy-coded data).
std::vector<uint8_t> make_jpeg(uint32_t w, uint32_t h) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  uint32_t seed = 12345;
  for (size_t i = 0; i < rgb.size(); ++i) {
    seed = seed * 1103515245u + 12345u;
    rgb[i] = static_cast<uint8_t>((i * 7 / 3) % 200 + ((seed >> 16) % 40));
  }
  tjhandle tj = tjInitCompress();
  REQUIRE(tj != nullptr);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(tj, rgb.data(), static_cast<int>(w), 0, static_cast<int>(h), TJPF_RGB, &buf, &size, TJSAMP_422,
                      90, 0) == 0);
  std::vector<uint8_t> out(buf, buf + size);
  tjFree(buf);
  tjDestroy(tj);
  return out;
}

// The offset just past the JPEG's SOS segment: where the entropy-coded scan begins.
size_t scan_start(const std::vector<uint8_t>& j) {
  for (size_t i = 2; i + 3 < j.size();) {
    REQUIRE(j[i] == 0xFF);
    const uint8_t marker = j[i + 1];
    const size_t len = static_cast<size_t>(j[i + 2]) << 8 | j[i + 3];
    if (marker == 0xDA) return i + 2 + len;
    i += 2 + len;
  }
  FAIL("no SOS in the JPEG");
  return 0;
}

const BufferFormat kYuyv2x2{V4L2_PIX_FMT_YUYV, 2, 2, 4};
// Two lines of YUYV: white, black / mid grey, mid grey (BT.601 limited range: Y 235, 16, 126; U = V = 128).
const std::vector<uint8_t> kYuyvFrame{235, 128, 16, 128, 126, 128, 126, 128};
const std::vector<uint8_t> kYuyvRgb{255, 255, 255, 0, 0, 0, 128, 128, 128, 128, 128, 128};

bool is_bad_frame(const Status& st) {
  return !st && st.error().code == Errc::sensor_error && st.error().message.find("bad frame") != std::string::npos;
}

struct Harness {
  std::unique_ptr<Server> server;
  std::shared_ptr<server::Session> session;
  Server* operator->() const { return server.get(); }
};

Harness make_server(std::unique_ptr<sensors::FrameSource> source, std::chrono::milliseconds interval = 5ms,
                    uint32_t delay_us = 0) {
  server::ServerOptions o;
  o.sensors.emplace_back(0, server::SensorConfig{std::move(source), interval, nullptr});
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  backends.push_back(std::make_unique<test::TestBackend>());
  auto s = Server::create(std::move(o), std::move(backends));
  REQUIRE(s.ok());
  Harness h{std::move(s).value(), nullptr};
  h.session = h->open_session(server::Peer::of(server::Trust::process, "local", "test"));
  // A flat 12-byte input: one 2x2 RGB picture.
  Response r;
  const auto model = test::make_test_model(test::TestModelSpec{{12}, {4}, 1, delay_us, 0});
  h->handle(*h.session, Request{Header{static_cast<uint32_t>(Command::SET_MODEL_SECONDARY), 0, 0}, model}, r);
  REQUIRE(r.status == 0);
  return h;
}

Response call(Harness& h, server::Session& s, Command cmd, uint32_t tensor = 0, std::span<const uint8_t> payload = {}) {
  Response r;
  h->handle(s, Request{Header{static_cast<uint32_t>(cmd), 0, tensor}, payload}, r);
  return r;
}

std::string log_of(Harness& h) {
  auto r = call(h, *h.session, Command::GET_DEBUG_LOG);
  return std::string(r.payload.begin(), r.payload.end());
}

}  // namespace

TEST_CASE("bad frames: the decision on crafted buffers") {
  image::Image out;
  // A whole YUYV frame converts (BT.601 limited range).
  REQUIRE(sensors::decode_buffer(kYuyv2x2, false, kYuyvFrame, out, "cam").ok());
  CHECK(out.pixels == kYuyvRgb);
  // One byte short: bad, saying how many bytes came and were needed.
  auto st = sensors::decode_buffer(kYuyv2x2, false, std::span(kYuyvFrame).first(7), out, "cam");
  CHECK(is_bad_frame(st));
  CHECK(st.error().message.find("7 bytes, a 2x2 YUYV frame needs 8") != std::string::npos);
  CHECK(is_bad_frame(sensors::decode_buffer(kYuyv2x2, false, {}, out, "cam")));
  // The driver's error flag (V4L2_BUF_FLAG_ERROR) makes a complete frame bad.
  st = sensors::decode_buffer(kYuyv2x2, true, kYuyvFrame, out, "cam");
  CHECK(is_bad_frame(st));
  CHECK(st.error().message.find("flagged") != std::string::npos);
  // Padded lines: the last line needs only its pixels.
  const BufferFormat padded{V4L2_PIX_FMT_GREY, 3, 2, 8};
  const std::vector<uint8_t> grey{1, 2, 3, 0, 0, 0, 0, 0, 4, 5, 6};
  REQUIRE(sensors::decode_buffer(padded, false, grey, out, "cam").ok());
  CHECK(out.pixels == std::vector<uint8_t>{1, 2, 3, 4, 5, 6});
  CHECK(is_bad_frame(sensors::decode_buffer(padded, false, std::span(grey).first(10), out, "cam")));
  // BGR is reordered to RGB.
  REQUIRE(sensors::decode_buffer({V4L2_PIX_FMT_BGR24, 1, 1, 3}, false, std::vector<uint8_t>{1, 2, 3}, out, "cam").ok());
  CHECK(out.pixels == std::vector<uint8_t>{3, 2, 1});
  // A line shorter than its pixels is a negotiation bug, not a bad frame.
  st = sensors::decode_buffer({V4L2_PIX_FMT_YUYV, 4, 1, 6}, false, std::vector<uint8_t>(8), out, "cam");
  CHECK(!st);
  CHECK(st.error().code == Errc::internal);
}

TEST_CASE("bad frames: a real MJPEG frame, truncated and corrupted") {
  const auto jpeg = make_jpeg(64, 48);
  const BufferFormat mjpg{V4L2_PIX_FMT_MJPEG, 64, 48, 0};
  image::Image out;
  REQUIRE(sensors::decode_buffer(mjpg, false, jpeg, out, "cam").ok());
  CHECK((out.width == 64 && out.height == 48 && out.channels == 3));

  // Truncated (a USB transfer cut short): libjpeg would pad it with grey and warn; the camera path refuses it.
  for (size_t keep : {jpeg.size() - 2, jpeg.size() * 2 / 3, scan_start(jpeg) + 10}) {
    CAPTURE(keep);
    auto st = sensors::decode_buffer(mjpg, false, std::span(jpeg).first(keep), out, "cam");
    CHECK(is_bad_frame(st));
  }
  // Corrupt scan data: a marker that has no place in the middle of the scan.
  auto corrupt = jpeg;
  const size_t mid = scan_start(jpeg) + (jpeg.size() - scan_start(jpeg)) / 2;
  corrupt[mid] = 0xFF;
  corrupt[mid + 1] = 0xD5;  // RST5 out of sequence
  auto st = sensors::decode_buffer(mjpg, false, corrupt, out, "cam");
  CHECK(is_bad_frame(st));
  CHECK(st.error().message.find("corrupt") != std::string::npos);
  // Not a JPEG at all, a JPEG of another size than negotiated, a flagged one.
  CHECK(is_bad_frame(sensors::decode_buffer(mjpg, false, std::vector<uint8_t>(100, 0x55), out, "cam")));
  st = sensors::decode_buffer({V4L2_PIX_FMT_MJPEG, 640, 480, 0}, false, jpeg, out, "cam");
  CHECK(is_bad_frame(st));
  CHECK(st.error().message.find("64x48") != std::string::npos);
  CHECK(is_bad_frame(sensors::decode_buffer(mjpg, true, jpeg, out, "cam")));
}

TEST_CASE("bad frames: a single acquisition answers ERROR_SENSOR with the reason; the next good frame works") {
  const auto jpeg = make_jpeg(2, 2);
  auto truncated = jpeg;
  truncated.resize(jpeg.size() / 2);
  std::deque<ScriptedFrameSource::Step> script{
      {kYuyv2x2, false, std::vector<uint8_t>(kYuyvFrame.begin(), kYuyvFrame.end() - 1)},  // short
      {{V4L2_PIX_FMT_MJPEG, 2, 2, 0}, false, truncated},                                   // corrupt MJPEG
      {kYuyv2x2, true, kYuyvFrame},                                                       // flagged by the driver
      {kYuyv2x2, false, kYuyvFrame}};
  auto h = make_server(std::make_unique<ScriptedFrameSource>(script, 2000ms));
  auto& s = *h.session;
  auto r = call(h, s, Command::START_ACQUIRE_SINGLE, 1);
  CHECK(r.status == AISRV_STATUS_ERROR_SENSOR);
  CHECK(log_of(h).find("bad frame: 7 bytes, a 2x2 YUYV frame needs 8") != std::string::npos);
  r = call(h, s, Command::START_ACQUIRE_SINGLE, 1);
  CHECK(r.status == AISRV_STATUS_ERROR_SENSOR);  // not ERROR_INTERNAL
  CHECK(log_of(h).find("bad frame: JPEG") != std::string::npos);
  CHECK(call(h, s, Command::START_ACQUIRE_SINGLE, 1).status == AISRV_STATUS_ERROR_SENSOR);
  CHECK(log_of(h).find("flagged the buffer as damaged") != std::string::npos);
  r = call(h, s, Command::START_ACQUIRE_SINGLE, 1);
  REQUIRE(r.status == 0);
  CHECK(call(h, s, Command::GET_SENSOR_TENSOR).payload == kYuyvRgb);
  CHECK(h->acquisition().bad_frames(0) == 3);
}

// A camera-like source: a picture for the acquisition to fit, and where fit() was told to write it. (The test
// backend's flat [1, 12] input is not a picture shape, so fit lays the 2x2 RGB pixels out itself; the real fit's
// resize into a span is engine/image's image_to_tensor, tested there.)
class PictureSource final : public sensors::FrameSource {
 public:
  std::string describe() const override { return "picture"; }
  Status grab(const protocol::TensorInfo&, sensors::SensorFrame& out) override {
    out.what = describe();
    return sensors::decode_buffer(kYuyv2x2, false, kYuyvFrame, out.picture, "picture");
  }
  Status fit(const sensors::SensorFrame& grabbed, const protocol::TensorInfo& input,
             const std::optional<sensors::AcquireWindow>& window, std::span<uint8_t> frame) const override {
    written = frame.data();
    if (window || grabbed.picture.pixels.size() != frame.size() || frame.size() != input.bytes)
      return make_error(Errc::internal, "picture: not a 2x2 RGB input");
    std::copy(grabbed.picture.pixels.begin(), grabbed.picture.pixels.end(), frame.begin());
    return ok();
  }
  mutable const void* written = nullptr;
};

TEST_CASE("one copy: the frame lands in the session's input 0 itself; GET_SENSOR_TENSOR keeps it") {
  auto source = std::make_unique<ScriptedFrameSource>(
      std::deque<ScriptedFrameSource::Step>{{kYuyv2x2, false, kYuyvFrame}}, 2000ms);
  auto* src = source.get();
  auto h = make_server(std::move(source));
  auto& s = *h.session;
  REQUIRE(call(h, s, Command::START_ACQUIRE_SINGLE).status == 0);
  // A raw frame: the bytes the source read are the tensor's storage, not a copy of them.
  REQUIRE(src->last_bytes() != nullptr);
  CHECK(s.input_storage(0, 0) == src->last_bytes());
  CHECK(call(h, s, Command::GET_INPUT_TENSOR).payload == kYuyvRgb);
  CHECK(call(h, s, Command::GET_SENSOR_TENSOR).payload == kYuyvRgb);
  // Input 0 written by the client: the acquired frame stays what GET_SENSOR_TENSOR answers.
  const std::vector<uint8_t> mine(12, 9);
  REQUIRE(call(h, s, Command::SET_INPUT_TENSOR, 0, mine).status == 0);
  CHECK(call(h, s, Command::GET_INPUT_TENSOR).payload == mine);
  CHECK(call(h, s, Command::GET_SENSOR_TENSOR).payload == kYuyvRgb);
  REQUIRE(call(h, s, Command::START_INFER).status == 0);
  CHECK(call(h, s, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(mine, 4, 0));

  // A camera's picture: fitted straight into the buffer that becomes the input tensor.
  auto picture = std::make_unique<PictureSource>();
  auto* pic = picture.get();
  auto h2 = make_server(std::move(picture));
  REQUIRE(call(h2, *h2.session, Command::START_ACQUIRE_SINGLE, 1).status == 0);
  REQUIRE(pic->written != nullptr);
  CHECK(h2.session->input_storage(0, 0) == pic->written);
  CHECK(call(h2, *h2.session, Command::GET_SENSOR_TENSOR).payload == kYuyvRgb);
  CHECK(call(h2, *h2.session, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(kYuyvRgb, 4, 0));
}

TEST_CASE("bad frames: a stream skips and counts them and keeps running") {
  const auto jpeg = make_jpeg(2, 2);
  std::vector<uint8_t> corrupt(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() / 2));
  std::deque<ScriptedFrameSource::Step> script{{kYuyv2x2, false, kYuyvFrame},
                                               {kYuyv2x2, false, std::vector<uint8_t>(kYuyvFrame.begin(), kYuyvFrame.begin() + 5)},
                                               {kYuyv2x2, false, kYuyvFrame},
                                               {{V4L2_PIX_FMT_MJPEG, 2, 2, 0}, false, corrupt},
                                               {kYuyv2x2, true, kYuyvFrame},
                                               {kYuyv2x2, false, kYuyvFrame}};
  auto source = std::make_unique<ScriptedFrameSource>(script, 2000ms);
  auto* src = source.get();
  auto h = make_server(std::move(source), 2ms);
  auto& slot = *h->engine(0);
  REQUIRE(h->acquisition().start_stream(*h.session, slot, 2ms).ok());
  for (int i = 0; i < 500 && src->grabs() < 10; ++i) std::this_thread::sleep_for(5ms);
  CHECK(src->grabs() >= 10);
  // Still streaming after three bad frames.
  CHECK(h->acquisition().mode(0) == server::Acquisition::Mode::stream);
  h->acquisition().stop_stream(slot);
  const auto log = log_of(h);
  CAPTURE(log);
  CHECK(log.find("acquire stream: skipped 1 bad frame(s) (1 in all), the last: scripted: bad frame: 5 bytes") !=
        std::string::npos);
  CHECK(log.find("3 bad frame(s) skipped") != std::string::npos);
  CHECK(log.find("stopped after an error") == std::string::npos);
  CHECK(h->acquisition().bad_frames(0) == 3);
  // The others learnt nothing went wrong.
  CHECK((call(h, *h.session, Command::GET_STATUS).status & AISRV_STATUS_ERROR_SENSOR) == 0);
}

TEST_CASE("a stalled camera holds no other session's inference") {
  auto source = std::make_unique<ScriptedFrameSource>(
      std::deque<ScriptedFrameSource::Step>{{kYuyv2x2, false, kYuyvFrame, true}}, 3000ms);
  auto* src = source.get();
  auto h = make_server(std::move(source));
  auto other = h->open_session(server::Peer::of(server::Trust::process, "local", "other"));
  const std::vector<uint8_t> input(12, 7);
  REQUIRE(call(h, *other, Command::SET_INPUT_TENSOR, 0, input).status == 0);

  // The acquirer's request waits for a frame that does not come.
  Response acquired;
  const Request acquire{Header{static_cast<uint32_t>(Command::START_ACQUIRE_SINGLE), 0, 1}, {}};
  std::promise<void> done;
  auto answered = done.get_future();
  h->submit(*h.session, acquire, acquired, [&done] { done.set_value(); });
  REQUIRE(src->wait_stalling(2000ms));

  // Another session's inference on the same engine runs meanwhile, promptly.
  const auto t0 = std::chrono::steady_clock::now();
  auto r = call(h, *other, Command::START_INFER);
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.status == 0);
  CHECK(took < 500ms);
  CHECK(call(h, *other, Command::GET_OUTPUT_TENSOR).payload == test::expected_output(input, 4, 0));
  // While the acquisition still waits; the acquirer's own next request waits behind it (its order is kept).
  CHECK(answered.wait_for(0ms) == std::future_status::timeout);
  CHECK((h->engine(0)->state_bits() & AISRV_STATUS_SENSING) != 0);

  src->release({kYuyv2x2, false, kYuyvFrame});
  REQUIRE(answered.wait_for(2000ms) == std::future_status::ready);
  CHECK(acquired.status == 0);
  CHECK(call(h, *h.session, Command::GET_SENSOR_TENSOR).payload == kYuyvRgb);
}

TEST_CASE("a stalled camera under a stream holds no other session's inference") {
  auto source = std::make_unique<ScriptedFrameSource>(
      std::deque<ScriptedFrameSource::Step>{{kYuyv2x2, false, kYuyvFrame, true}}, 3000ms);
  auto* src = source.get();
  auto h = make_server(std::move(source), 5ms);
  auto& slot = *h->engine(0);
  REQUIRE(h->acquisition().start_stream(*h.session, slot, 5ms).ok());
  REQUIRE(src->wait_stalling(2000ms));
  auto other = h->open_session(server::Peer::of(server::Trust::process, "local", "other"));
  const std::vector<uint8_t> input(12, 3);
  REQUIRE(call(h, *other, Command::SET_INPUT_TENSOR, 0, input).status == 0);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(call(h, *other, Command::START_INFER).status == 0);
  CHECK(std::chrono::steady_clock::now() - t0 < 500ms);
  h->acquisition().stop_stream(slot);
  src->release({kYuyv2x2, false, kYuyvFrame});  // the grabber's wait ends; the stopped stream takes no more rounds
}

TEST_CASE("a camera absent at start: the engine serves, acquisitions say why, the path is tried again each time") {
  test::TempDir dir;
  const std::string path = dir.file("video-absent");
  auto source = sensors::open_v4l2_frame_source(*sensors::parse_v4l2_spec("v4l2:" + path + ":640x480:YUYV"));
  REQUIRE(source.ok());
  CHECK_FALSE((*source)->present());
  auto h = make_server(std::move(source).value());
  CHECK((h->capabilities() & AISRV_CAP_SENSOR) != 0);
  auto& s = *h.session;
  CHECK(call(h, s, Command::START_ACQUIRE_SINGLE, 1).status == AISRV_STATUS_ERROR_SENSOR);
  CHECK(log_of(h).find(path + " is absent (No such file or directory); it is opened when it appears") !=
        std::string::npos);
  // The engine still infers.
  REQUIRE(call(h, s, Command::SET_INPUT_TENSOR, 0, std::vector<uint8_t>(12, 1)).status == 0);
  CHECK(call(h, s, Command::START_INFER).status == 0);
  // Something appears at the path: the next acquisition opens it (here: not a camera, and says so).
  std::filesystem::create_symlink("/dev/null", path);
  CHECK(call(h, s, Command::START_ACQUIRE_SINGLE, 1).status == AISRV_STATUS_ERROR_SENSOR);
  CHECK(log_of(h).find(path + " is not a V4L2 device") != std::string::npos);
}

TEST_CASE("camera specs: udev's persistent names contain ':'") {
  const std::string by_path = "/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1:1.0-video-index0";
  auto o = sensors::parse_v4l2_spec("v4l2:" + by_path);
  REQUIRE(o.ok());
  CHECK(o->device == by_path);
  CHECK((o->width == 0 && o->fourcc.empty()));
  o = sensors::parse_v4l2_spec("v4l2:" + by_path + ":1280x720:MJPG");
  REQUIRE(o.ok());
  CHECK(o->device == by_path);
  CHECK((o->width == 1280 && o->height == 720 && o->fourcc == "MJPG"));
  o = sensors::parse_v4l2_spec("v4l2:" + by_path + "::YUYV");
  REQUIRE(o.ok());
  CHECK((o->device == by_path && o->width == 0 && o->fourcc == "YUYV"));
  const std::string by_id = "/dev/v4l/by-id/usb-046d_HD_Pro_Webcam_C920_A1B2C3D4-video-index0";
  o = sensors::parse_v4l2_spec("v4l2:" + by_id + ":640x480");
  REQUIRE(o.ok());
  CHECK((o->device == by_id && o->width == 640 && o->height == 480));
  // Outside /dev/v4l a ':' left over is a mistyped size or format.
  for (const char* bad : {"v4l2:/dev/video0:640", "v4l2:/dev/video0:YUYV", "v4l2:/dev/video0:640x480:YUV",
                          "v4l2:/dev/video0:1x1:YUYV:extra", "v4l2:/dev/video0:0x480"}) {
    CAPTURE(bad);
    CHECK_FALSE(sensors::parse_v4l2_spec(bad).ok());
  }
}
