// aisrv VM test (runs in the guest) — a real USB camera path: the kernel's uvcvideo driver on a UVC webcam whose
// frames the test chooses, through aisrvd's V4L2 source, for YUYV and MJPEG, with a corrupt MJPEG frame; and the same
// camera on QEMU's PCI xHCI (usb-redir, usbredir_uvc_camera.*) through aisrvd's libcamera source (the cases at the end).
//
// Why USB/IP and not the usb_f_uvc gadget over dummy_hcd: the gadget's streaming endpoint is isochronous, and
// Debian's dummy_hcd has no isochronous endpoints (its ep3in-iso, ep8in-iso, ... are commented out in the driver,
// and its host side fails every isochronous URB with -EINVAL), so binding the gadget fails with "uvc: Unable to
// allocate streaming EP" (guest.sh tries it and prints the kernel's lines). vhci-hcd (USB/IP's virtual host
// controller, in Debian's kernel) carries any transfer type to a user-space device: usbip_uvc_camera.* plays a UVC
// 1.0 camera with a bulk streaming endpoint there, and the unmodified uvcvideo driver makes /dev/videoN of it.
//
// Checks: the frame START_ACQUIRE_SINGLE puts into the RGB uint8 input (GET_SENSOR_TENSOR) equals an independent
// conversion of the frame the camera sent (floating-point BT.601 for YUYV; libjpeg's own decoder for the JPEG the test
// encoded) resized independently (frame_check.hpp); a stream of MJPEG frames of which every third is corrupt (cut
// short, as a USB glitch leaves it) keeps running, skips and counts them; a single acquisition of a corrupt frame
// answers ERROR_SENSOR with the reason; the next good frame works again. Needs /vmtest/data/mobilenet.tflite (an RGB
// uint8 model, 128x128 input).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <cstdio>  // before jpeglib.h, which uses FILE
#include <jpeglib.h>
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "aisrv/client/client.hpp"
#include "frame_check.hpp"
#include "process.hpp"
#include "usbip_uvc_camera.hpp"
#ifdef AISRV_VM_USBREDIR
#include "usbredir_uvc_camera.hpp"
#endif

using namespace aisrv;
using test::UsbipUvcCamera;
using test::UvcCamera;
namespace frames = aisrv::test::frames;

namespace {

constexpr uint32_t kOut = 128;

// The USB/IP camera (on vhci-hcd), attached once.
UsbipUvcCamera& camera() {
  static std::unique_ptr<UsbipUvcCamera> cam = [] {
    std::string error;
    auto c = UsbipUvcCamera::attach(10, error);
    REQUIRE_MESSAGE(c != nullptr, error);
    return c;
  }();
  return *cam;
}

#ifdef AISRV_VM_USBREDIR
// The usbredir camera (on the PCI xHCI, vm-run --usb-redir-port uvc), plugged in once.
test::UsbredirUvcCamera& xhci_camera() {
  static std::unique_ptr<test::UsbredirUvcCamera> cam = [] {
    std::string error;
    auto c = test::UsbredirUvcCamera::open("uvc", 10, error);
    REQUIRE_MESSAGE(c != nullptr, error);
    return c;
  }();
  return *cam;
}
#endif

// The capture node uvcvideo made for the camera on the host controller whose bus_info contains `bus` ("vhci": the
// USB/IP camera, "usb-0000:": the one on the PCI xHCI). uvcvideo also makes a metadata node.
std::string uvc_node(const std::string& bus = "vhci") {
  for (int tries = 0; tries < 300; ++tries) {
    for (int i = 0; i < 16; ++i) {
      const std::string path = "/dev/video" + std::to_string(i);
      const int fd = ::open(path.c_str(), O_RDWR);
      if (fd < 0) continue;
      v4l2_capability cap{};
      const bool ok = ::ioctl(fd, VIDIOC_QUERYCAP, &cap) == 0 &&
                      std::string(reinterpret_cast<char*>(cap.driver)) == "uvcvideo" &&
                      std::string(reinterpret_cast<char*>(cap.bus_info)).find(bus) != std::string::npos &&
                      (cap.device_caps & V4L2_CAP_VIDEO_CAPTURE);
      ::close(fd);
      if (ok) return path;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return {};
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// A YUYV picture with every kind of variation: a luma ramp, chroma changing along both axes (`seed` shifts them).
std::vector<uint8_t> yuyv_picture(uint32_t w, uint32_t h, uint32_t seed = 0) {
  std::vector<uint8_t> f(size_t(w) * h * 2);
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; x += 2) {
      uint8_t* p = &f[(size_t(y) * w + x) * 2];
      p[0] = uint8_t(16 + (x + 2 * y + seed * 70) % 220);
      p[1] = uint8_t(16 + (x * 3 + y + seed * 50) % 225);
      p[2] = uint8_t(16 + (x + 1 + 2 * y + seed * 70) % 220);
      p[3] = uint8_t(16 + (y * 3 + x / 2 + seed * 90) % 225);
    }
  return f;
}

// An RGB picture (gradients and a checkerboard) encoded as a webcam does (4:2:2, quality 90) with TurboJPEG.
std::vector<uint8_t> jpeg_picture(uint32_t w, uint32_t h, int seed) {
  std::vector<uint8_t> rgb(size_t(w) * h * 3);
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x) {
      uint8_t* p = &rgb[(size_t(y) * w + x) * 3];
      p[0] = uint8_t((x * 255 / w + seed * 40) % 256);
      p[1] = uint8_t(y * 255 / h);
      p[2] = uint8_t(((x / 40 + y / 40 + seed) % 2) ? 220 : 30);
    }
  tjhandle tj = tjInitCompress();
  REQUIRE(tj != nullptr);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(tj, rgb.data(), int(w), 0, int(h), TJPF_RGB, &out, &size, TJSAMP_422, 90, 0) == 0);
  std::vector<uint8_t> jpeg(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  return jpeg;
}

// The reference decoding: libjpeg's own API (not TurboJPEG's, which aisrvd uses), RGB out.
std::vector<double> jpeg_to_rgb(const std::vector<uint8_t>& jpeg, uint32_t w, uint32_t h) {
  jpeg_decompress_struct d{};
  jpeg_error_mgr e{};
  d.err = jpeg_std_error(&e);
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  REQUIRE(jpeg_read_header(&d, TRUE) == JPEG_HEADER_OK);
  d.out_color_space = JCS_RGB;
  jpeg_start_decompress(&d);
  REQUIRE(d.output_width == w);
  REQUIRE(d.output_height == h);
  std::vector<uint8_t> px(size_t(w) * h * 3);
  while (d.output_scanline < d.output_height) {
    JSAMPROW row = &px[size_t(d.output_scanline) * w * 3];
    jpeg_read_scanlines(&d, &row, 1);
  }
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  return std::vector<double>(px.begin(), px.end());
}

// A JPEG cut short (what a lost USB transfer leaves): libjpeg warns "Premature end of JPEG file".
std::vector<uint8_t> corrupt(std::vector<uint8_t> jpeg) {
  jpeg.resize(jpeg.size() * 6 / 10);
  return jpeg;
}

struct Daemon {
  test::TempDir dir;
  std::string sock;
  std::unique_ptr<test::ServerProcess> process;
  Daemon(const std::string& spec, std::vector<std::string> more = {}) {
    sock = dir.file("uvc.sock");
    std::vector<std::string> args{"/vmtest/bin/aisrvd", "--listen", "unix:" + sock, "--engine", "0=cpu", "--sensor",
                                  "0=" + spec};
    args.insert(args.end(), more.begin(), more.end());
    process = std::make_unique<test::ServerProcess>(args, sock);
  }
};

const auto kAcquire = static_cast<uint32_t>(protocol::Command::START_ACQUIRE_SINGLE);
const auto kSensor = static_cast<uint32_t>(protocol::Command::GET_SENSOR_TENSOR);

// The counts of the last "acquire stream of … stopped: I frame(s) inferred, D dropped by the camera, S bad frame(s)
// skipped" line of an engine's debug log: {I, D, S}.
struct StreamCounts {
  int inferred, dropped, skipped;
};
StreamCounts stream_counts(const std::string& log) {
  const auto at = log.rfind("frame(s) inferred, ");
  REQUIRE(at != std::string::npos);
  const auto dropped_at = log.find(" dropped by the camera", at);
  const auto bad_at = log.find(" bad frame(s) skipped", at);
  REQUIRE(dropped_at != std::string::npos);
  REQUIRE(bad_at != std::string::npos);
  return {std::stoi(log.substr(log.rfind("stopped: ", at) + 9)), std::stoi(log.substr(log.rfind(", ", dropped_at) + 2)),
          std::stoi(log.substr(log.rfind(", ", bad_at) + 2))};
}

// The int8 camera path: mobilenet_v2's input is int8, channels first (1x3x224x224): the pixels - 128, planes R, G, B.
// Loads that model (when the test data has it), acquires, and compares the input with the independent conversion of
// the 320x240 YUYV frame the camera streams. Compared as signed bytes shifted back (+128), so the checker's 0..255
// rule applies unchanged.
void check_int8_input(client::Client& c, const std::vector<uint8_t>& yuyv) {
  const auto model224 = read_file("/vmtest/data/model224.tflite");
  if (model224.empty()) {
    MESSAGE("SKIP int8 path: no /vmtest/data/model224.tflite");
    return;
  }
  REQUIRE(c.load_model(0, model224).ok());
  auto st = c.call(kAcquire, 0, 0);
  REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
  auto frame = c.call(kSensor, 0, 0);
  REQUIRE(frame.ok());
  const auto hwc = frames::resize(frames::yuyv_to_rgb(yuyv, 320, 240), 320, 0, 0, 320, 240, 224);
  std::vector<uint8_t> want(hwc.size());
  for (size_t ch = 0; ch < 3; ++ch)
    for (size_t i = 0; i < 224 * 224; ++i) want[ch * 224 * 224 + i] = hwc[i * 3 + ch];
  std::vector<uint8_t> got(frame->size());
  for (size_t i = 0; i < got.size(); ++i) got[i] = uint8_t((*frame)[i] + 128);
  frames::compare(got, want);
}

}  // namespace

TEST_CASE("UVC camera (uvcvideo over USB/IP): YUYV and MJPEG frames reach the input tensor exactly") {
  auto& cam = camera();
  const std::string node = uvc_node();
  REQUIRE_MESSAGE(!node.empty(), "uvcvideo made no capture node; the camera's refused requests: " << cam.log());
  MESSAGE("uvcvideo capture node " << node);
  const auto model = read_file("/vmtest/data/mobilenet.tflite");
  REQUIRE(!model.empty());

  // YUYV 320x240 (uncompressed): the frame converted with BT.601.
  const auto yuyv = yuyv_picture(320, 240);
  cam.set_frames(UsbipUvcCamera::kYuyv, UsbipUvcCamera::kSmall, {yuyv});
  {
    Daemon d("v4l2:" + node + ":320x240:YUYV");
    {
      auto c = client::Client::connect("unix:" + d.sock);
      REQUIRE(c.ok());
      REQUIRE(c->load_model(0, model).ok());
      auto st = c->call(kAcquire, 0, 0);
      REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
      CHECK(cam.committed() == std::pair<uint8_t, uint8_t>{UsbipUvcCamera::kYuyv, UsbipUvcCamera::kSmall});
      auto frame = c->call(kSensor, 0, 0);
      REQUIRE(frame.ok());
      frames::compare(*frame, frames::resize(frames::yuyv_to_rgb(yuyv, 320, 240), 320, 0, 0, 320, 240, kOut));
      REQUIRE(c->start_inference(0).ok());
      CHECK(c->get_output(0, 0)->size() == 1001);

      check_int8_input(*c, yuyv);  // the int8 camera path
    }
    CHECK(d.process->stop() == 0);
  }

  // MJPEG 640x480 (what USB 2.0 webcams send at this size and up): the JPEG decoded by libjpeg, a window too.
  const auto jpeg = jpeg_picture(640, 480, 0);
  cam.set_frames(UsbipUvcCamera::kMjpeg, UsbipUvcCamera::kLarge, {jpeg});
  const auto rgb = jpeg_to_rgb(jpeg, 640, 480);
  {
    Daemon d("v4l2:" + node + ":640x480:MJPG");
    {
      auto c = client::Client::connect("unix:" + d.sock);
      REQUIRE(c.ok());
      REQUIRE(c->load_model(0, model).ok());
      auto st = c->call(kAcquire, 0, 0);
      REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
      CHECK(cam.committed() == std::pair<uint8_t, uint8_t>{UsbipUvcCamera::kMjpeg, UsbipUvcCamera::kLarge});
      auto frame = c->call(kSensor, 0, 0);
      REQUIRE(frame.ok());
      frames::compare(*frame, frames::resize(rgb, 640, 0, 0, 640, 480, kOut));
      // XMOS's window payload: x 100..420, y 60..380 (u16 each), then the output size.
      std::vector<uint8_t> window;
      for (uint32_t v : {100u, 420u, 60u, 380u, kOut, kOut}) {
        window.push_back(uint8_t(v));
        window.push_back(uint8_t(v >> 8));
      }
      st = c->call(kAcquire, 0, 0, window);
      REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
      frame = c->call(kSensor, 0, 0);
      REQUIRE(frame.ok());
      frames::compare(*frame, frames::resize(rgb, 640, 100, 60, 320, 320, kOut));
    }
    CHECK(d.process->stop() == 0);
  }
}

TEST_CASE("UVC camera, MJPEG: a stream survives corrupt frames (skipped, counted); a single acquisition of one "
          "answers ERROR_SENSOR; the next good frame works") {
  auto& cam = camera();
  const std::string node = uvc_node();
  REQUIRE(!node.empty());
  const auto model = read_file("/vmtest/data/mobilenet.tflite");
  const auto good = jpeg_picture(320, 240, 1), other = jpeg_picture(320, 240, 2);
  // Every other frame is cut short; the camera sends 10 a second, the stream takes the newest each round (4 a second
  // at most; under TCG an inference takes about a second), so which ones it meets is chance: it runs until it has met
  // both kinds, 30 s at most.
  cam.set_frames(UsbipUvcCamera::kMjpeg, UsbipUvcCamera::kSmall, {good, corrupt(good), other, corrupt(other)});
  Daemon d("v4l2:" + node + ":320x240:MJPG", {"--stream-fps", "4"});
  {
    auto c = client::Client::connect("unix:" + d.sock);
    REQUIRE(c.ok());
    REQUIRE(c->load_model(0, model).ok());
    const uint64_t sent_before = cam.frames_sent();
    REQUIRE(c->acquire_stream(0, true).ok());
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      auto log = c->debug_log(0);
      REQUIRE(log.ok());
      auto outputs = c->get_output(0, 0);  // the starter reads the stream's outputs, as an XMOS host does
      if ((log->find("skipped") != std::string::npos && outputs.ok()) ||
          std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30))
        break;
    }
    CHECK(*c->acquire_mode(0) == AISRV_ACQUIRE_MODE_STREAM);  // still running after the bad frames
    REQUIRE(c->acquire_stream(0, false).ok());
    MESSAGE("the camera sent " << cam.frames_sent() - sent_before << " frames meanwhile");
    auto log = c->debug_log(0);
    REQUIRE(log.ok());
    MESSAGE(*log);
    const auto [inferred, dropped, skipped] = stream_counts(*log);
    MESSAGE("stream: " << inferred << " inferred, " << dropped << " dropped, " << skipped << " bad skipped");
    CHECK(inferred >= 1);
    CHECK(skipped >= 1);
    CHECK(log->find("JPEG data corrupt") != std::string::npos);  // the reason, from the decoder
    CHECK((*c->status(0) & AISRV_STATUS_ERROR_SENSOR) == 0);     // nobody's status word changed

    // Only corrupt frames now: a single acquisition answers ERROR_SENSOR and says why.
    cam.set_frames(UsbipUvcCamera::kMjpeg, UsbipUvcCamera::kSmall, {corrupt(other)});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto st = c->call(kAcquire, 0, 0);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == Errc::sensor_error);
    CHECK_MESSAGE(st.error().message.find("bad frame: JPEG data corrupt") != std::string::npos, st.error().message);
    // Good again: the next acquisition is that frame.
    cam.set_frames(UsbipUvcCamera::kMjpeg, UsbipUvcCamera::kSmall, {other});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    st = c->call(kAcquire, 0, 0);
    REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
    auto frame = c->call(kSensor, 0, 0);
    REQUIRE(frame.ok());
    frames::compare(*frame, frames::resize(jpeg_to_rgb(other, 320, 240), 320, 0, 0, 320, 240, kOut));
  }
  CHECK(d.process->stop() == 0);
}

#ifdef AISRV_VM_LIBCAMERA
#ifdef AISRV_VM_USBREDIR
// libcamera (Debian's 0.0.3 has the uvcvideo pipeline handler; it finds a camera through the media controller node
// uvcvideo registers, /dev/mediaN, once udevd has recorded it) on the camera the test plays on QEMU's PCI xHCI over
// usbredir: the same frames through aisrvd's libcamera source, the same checks as the V4L2 path, an inference on them.
// The USB/IP camera stays plugged in: libcamera 0.0.3 names a camera after the firmware (ACPI or device tree) node of
// its USB host controller, vhci_hcd.0 is a platform device without one, so libcamera refuses that camera ("Can not
// find controller ID") — checked, it is the limit docs/sensors-gpio.md states — while the xHCI one (its PCI device
// has an ACPI node) is listed and delivers frames.
namespace {

struct LibcameraDaemon : Daemon {
  using Daemon::Daemon;
  std::string out() const { return process->log(); }
};

// The libcamera camera on the xHCI, its V4L2 node (for messages), the udev records settled.
std::string xhci_ready() {
  auto& cam = xhci_camera();
  const std::string node = uvc_node("usb-0000:");
  REQUIRE_MESSAGE(!node.empty(), "uvcvideo made no capture node on the xHCI ("
                                     << (cam.connected() ? "QEMU's usb-redir connected" : "no hello from QEMU")
                                     << "); the camera's log: " << cam.log());
  const auto settle = test::run({"/usr/bin/udevadm", "settle", "--timeout=10"});
  CHECK_MESSAGE(settle.exit_code == 0, settle.err);
  return node;
}

}  // namespace

TEST_CASE("libcamera's uvcvideo pipeline handler on the xHCI camera through aisrvd: YUYV and MJPEG frames into the "
          "input, the int8 input, an inference, the newest frame; the vhci camera refused") {
  auto& vhci = camera();
  REQUIRE(!uvc_node().empty());
  auto& cam = xhci_camera();
  MESSAGE("xHCI camera's capture node " << xhci_ready());
  const auto model = read_file("/vmtest/data/mobilenet.tflite");
  const auto yuyv = yuyv_picture(320, 240), yuyv2 = yuyv_picture(320, 240, 3);
  const auto jpeg = jpeg_picture(640, 480, 3);
  cam.set_frames(UvcCamera::kYuyv, UvcCamera::kSmall, {yuyv});
  cam.set_frames(UvcCamera::kMjpeg, UvcCamera::kLarge, {jpeg});
  const auto vhci_committed = vhci.committed();
  struct Case {
    std::string spec;
    std::pair<uint8_t, uint8_t> mode;
    std::vector<uint8_t> want;
  };
  const std::vector<Case> cases{
      {"libcamera::320x240:YUYV", {UvcCamera::kYuyv, UvcCamera::kSmall},
       frames::resize(frames::yuyv_to_rgb(yuyv, 320, 240), 320, 0, 0, 320, 240, kOut)},
      {"libcamera:0:640x480:MJPG", {UvcCamera::kMjpeg, UvcCamera::kLarge},
       frames::resize(jpeg_to_rgb(jpeg, 640, 480), 640, 0, 0, 640, 480, kOut)}};
  for (const auto& k : cases) {
    CAPTURE(k.spec);
    LibcameraDaemon d(k.spec);
    INFO("aisrvd's output: " << d.out());
    {
      auto c = client::Client::connect("unix:" + d.sock);
      REQUIRE(c.ok());
      REQUIRE(c->load_model(0, model).ok());
      const uint64_t sent_before = cam.frames_sent();
      auto st = c->call(kAcquire, 0, 0);
      REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()) << "; the xHCI camera's log: " << cam.log());
      CHECK(cam.committed() == k.mode);
      CHECK(vhci.committed() == vhci_committed);  // libcamera did not open the vhci camera
      CHECK(cam.frames_sent() > sent_before);
      auto frame = c->call(kSensor, 0, 0);
      REQUIRE(frame.ok());
      frames::compare(*frame, k.want);
      REQUIRE(c->start_inference(0).ok());
      auto out = c->get_output(0, 0);
      REQUIRE(out.ok());
      CHECK(out->size() == 1001);
      // The vhci camera: listed by uvcvideo, refused by libcamera for want of a firmware node (the documented limit).
      const std::string log = d.out();
      CHECK_MESSAGE(log.find("Can not find controller ID") != std::string::npos, log);
      if (k.mode.first == UvcCamera::kYuyv) {
        // The newest frame: the camera switches picture; a second later (10 frames, more than libcamera's buffers)
        // the acquisition must be the new one, not a frame that waited in a completed request.
        cam.set_frames(UvcCamera::kYuyv, UvcCamera::kSmall, {yuyv2});
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));
        st = c->call(kAcquire, 0, 0);
        REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
        frame = c->call(kSensor, 0, 0);
        REQUIRE(frame.ok());
        frames::compare(*frame, frames::resize(frames::yuyv_to_rgb(yuyv2, 320, 240), 320, 0, 0, 320, 240, kOut));
        // The int8 camera path through libcamera, as the V4L2 case (no inference on it: 224x224 int8 under TCG + ASan
        // takes longer than the client waits; the inference above ran on the frame).
        check_int8_input(*c, yuyv2);
      }
      auto dlog = c->debug_log(0, 0);
      REQUIRE(dlog.ok());
      MESSAGE(*dlog);
    }
    CHECK(d.process->stop() == 0);
  }
}

TEST_CASE("libcamera on the xHCI camera, MJPEG: a stream keeps up and survives corrupt frames (skipped, counted)") {
  auto& cam = xhci_camera();
  xhci_ready();
  const auto model = read_file("/vmtest/data/mobilenet.tflite");
  const auto good = jpeg_picture(320, 240, 1), other = jpeg_picture(320, 240, 2);
  cam.set_frames(UvcCamera::kMjpeg, UvcCamera::kSmall, {good, corrupt(good), other, corrupt(other)});
  LibcameraDaemon d("libcamera::320x240:MJPG", {"--stream-fps", "4"});
  INFO("aisrvd's output: " << d.out());
  {
    auto c = client::Client::connect("unix:" + d.sock);
    REQUIRE(c.ok());
    REQUIRE(c->load_model(0, model).ok());
    const uint64_t sent_before = cam.frames_sent();
    REQUIRE(c->acquire_stream(0, true).ok());
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      auto log = c->debug_log(0);
      REQUIRE(log.ok());
      auto outputs = c->get_output(0, 0);
      if ((log->find("skipped") != std::string::npos && outputs.ok()) ||
          std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30))
        break;
    }
    CHECK(*c->acquire_mode(0) == AISRV_ACQUIRE_MODE_STREAM);
    REQUIRE(c->acquire_stream(0, false).ok());
    const uint64_t sent = cam.frames_sent() - sent_before;
    auto log = c->debug_log(0);
    REQUIRE(log.ok());
    MESSAGE(*log);
    const auto [inferred, dropped, skipped] = stream_counts(*log);
    MESSAGE("libcamera stream: the camera sent " << sent << " frames, " << inferred << " inferred, " << dropped
                                                 << " dropped, " << skipped << " bad skipped");
    // Every frame counted once: the newest-frame rule's give-backs are not counted again as sequence gaps (they were,
    // 80 dropped of 46 sent). Slack 2: a frame completed just before the stream and one in flight at the stop.
    CHECK(uint64_t(inferred + dropped + skipped) <= sent + 2);
    CHECK(inferred >= 1);
    CHECK(skipped >= 1);
    CHECK(log->find("JPEG data corrupt") != std::string::npos);
    CHECK((*c->status(0) & AISRV_STATUS_ERROR_SENSOR) == 0);
  }
  CHECK(d.process->stop() == 0);
}
#else
// libcamera (Debian's build has the uvcvideo pipeline handler; it finds the camera through the media controller node
// uvcvideo registers, /dev/mediaN, once udevd has recorded it): the same frames through aisrvd's libcamera source, with
// the same checks, and an inference on them — or, where libcamera refuses the camera for the one known reason (no
// firmware node above the virtual host controller, see below), exactly that reason.
TEST_CASE("libcamera's uvcvideo pipeline handler on the same camera through aisrvd: YUYV and MJPEG frames into the "
          "input and an inference") {
  auto& cam = camera();
  REQUIRE(!uvc_node().empty());
  const auto model = read_file("/vmtest/data/mobilenet.tflite");
  const auto yuyv = yuyv_picture(320, 240);
  const auto jpeg = jpeg_picture(640, 480, 3);
  cam.set_frames(UsbipUvcCamera::kYuyv, UsbipUvcCamera::kSmall, {yuyv});
  cam.set_frames(UsbipUvcCamera::kMjpeg, UsbipUvcCamera::kLarge, {jpeg});
  struct Case {
    std::string spec;
    std::pair<uint8_t, uint8_t> mode;
    std::vector<uint8_t> want;
  };
  const std::vector<Case> cases{
      {"libcamera::320x240:YUYV", {UsbipUvcCamera::kYuyv, UsbipUvcCamera::kSmall},
       frames::resize(frames::yuyv_to_rgb(yuyv, 320, 240), 320, 0, 0, 320, 240, kOut)},
      {"libcamera:0:640x480:MJPG", {UsbipUvcCamera::kMjpeg, UsbipUvcCamera::kLarge},
       frames::resize(jpeg_to_rgb(jpeg, 640, 480), 640, 0, 0, 640, 480, kOut)}};
  // The media device's udev record must be there before libcamera enumerates.
  const auto settle = test::run({"/usr/bin/udevadm", "settle", "--timeout=10"});
  CHECK_MESSAGE(settle.exit_code == 0, settle.err);
  for (const auto& k : cases) {
    CAPTURE(k.spec);
    Daemon d(k.spec);
    INFO("aisrvd's output: " << d.process->log());
    {
      auto c = client::Client::connect("unix:" + d.sock);
      REQUIRE(c.ok());
      REQUIRE(c->load_model(0, model).ok());
      auto st = c->call(kAcquire, 0, 0);
      if (!st) {
        // libcamera 0.0.3's uvcvideo handler names a camera after the firmware (ACPI or device tree) node of its USB
        // host controller; vhci_hcd.0 (like dummy_hcd.0) is a platform device without one, so libcamera refuses the
        // camera ("Can not find controller ID", "Failed to generate camera ID") and lists none. That, and only that,
        // is the known blocker here (docs/sensors-gpio.md): aisrvd serves, the acquisition says libcamera sees no
        // camera, and the engine still infers.
        const std::string out = d.process->log();
        CHECK(st.error().code == Errc::sensor_error);
        REQUIRE_MESSAGE(st.error().message.find("libcamera sees: none") != std::string::npos, st.error().message);
        REQUIRE_MESSAGE(out.find("Can not find controller ID") != std::string::npos, out);
        MESSAGE("libcamera refused the camera: " << out.substr(out.find("uvcvideo.cpp"), 160));
        std::vector<uint8_t> input(kOut * kOut * 3, 100);
        REQUIRE(c->set_input(0, 0, input).ok());
        CHECK(c->start_inference(0).ok());
      } else {
        CHECK(cam.committed() == k.mode);
        auto frame = c->call(kSensor, 0, 0);
        REQUIRE(frame.ok());
        frames::compare(*frame, k.want);
        REQUIRE(c->start_inference(0).ok());
        auto out = c->get_output(0, 0);
        REQUIRE(out.ok());
        CHECK(out->size() == 1001);
        auto log = c->debug_log(0, 0);
        REQUIRE(log.ok());
        MESSAGE(*log);
      }
    }
    CHECK(d.process->stop() == 0);
  }
}
#endif  // AISRV_VM_USBREDIR
#endif  // AISRV_VM_LIBCAMERA
