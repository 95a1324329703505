// aisrv VM test (runs in the guest) — the sensor path on the real kernel interfaces: vivid's virtual camera through
// V4L2 and i2c-stub through i2c-dev. The test captures vivid's test pattern itself first (its own plain read() of one
// YUYV frame, with the on-screen text switched off so frames are identical), then starts aisrvd with
// --sensor 0=v4l2:… and --sensor-i2c, and checks that START_ACQUIRE_SINGLE's frame (GET_SENSOR_TENSOR) equals what an
// independent conversion (floating-point BT.601) and an independent bilinear resize (half-pixel centres, double
// precision) of that frame give — also for a crop window (XMOS's payload) — and that register writes reach the
// i2c-stub chip and a write to an absent address fails with the errno. The float32 path: a float32 RGB model made
// here with the TFLite writer (channel means) takes pixel / 255 of the same independent conversion; and its output
// drives the lines of the emulated CP2112 (tests/vm/gpio) from a stream while vivid's colour changes. Needs
// /vmtest/data/mobilenet.tflite (an RGB uint8 model, 128x128 input).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <gpiod.h>
#include <linux/i2c-dev.h>
#include <linux/i2c.h>
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "aisrv/client/client.hpp"
#include "cp2112_emulator.hpp"
#include "frame_check.hpp"
#include "process.hpp"
#include "tflite_writer.hpp"

using namespace aisrv;

namespace {

constexpr uint32_t kW = 640, kH = 480, kOut = 128;

std::string vivid_capture_node() {
  for (int i = 0; i < 16; ++i) {
    const std::string path = "/dev/video" + std::to_string(i);
    const int fd = ::open(path.c_str(), O_RDWR);
    if (fd < 0) continue;
    v4l2_capability cap{};
    const bool ok = ::ioctl(fd, VIDIOC_QUERYCAP, &cap) == 0 && std::string(reinterpret_cast<char*>(cap.driver)) == "vivid" &&
                    (cap.device_caps & V4L2_CAP_VIDEO_CAPTURE);
    ::close(fd);
    if (ok) return path;
  }
  return {};
}

// Sets a menu control of vivid by its name and the item's name (e.g. "OSD Text Mode" = "None").
void set_menu(int fd, const std::string& control, const std::string& item) {
  v4l2_queryctrl q{};
  q.id = V4L2_CTRL_FLAG_NEXT_CTRL;
  while (::ioctl(fd, VIDIOC_QUERYCTRL, &q) == 0) {
    if (std::string(reinterpret_cast<char*>(q.name)) == control) {
      v4l2_querymenu m{};
      m.id = q.id;
      for (m.index = static_cast<uint32_t>(q.minimum); m.index <= static_cast<uint32_t>(q.maximum); ++m.index) {
        if (::ioctl(fd, VIDIOC_QUERYMENU, &m) == 0 && std::string(reinterpret_cast<char*>(m.name)) == item) {
          v4l2_control c{q.id, static_cast<int32_t>(m.index)};
          REQUIRE(::ioctl(fd, VIDIOC_S_CTRL, &c) == 0);
          return;
        }
      }
    }
    q.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
  }
  FAIL("vivid has no control '" << control << "' with an item '" << item << "'");
}

// One frame read with read() (the plain I/O method, unrelated to aisrv's mmap streaming).
// The on-screen text (time, frame counter) is switched off so that every frame of a pattern is the same; the
// pattern stays set for aisrvd's capture after this one.
std::vector<uint8_t> reference_frame(const std::string& node, uint32_t fourcc, uint32_t bytes_per_pixel,
                                     const std::string& pattern) {
  const int fd = ::open(node.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  set_menu(fd, "OSD Text Mode", "None");
  set_menu(fd, "Test Pattern", pattern);
  v4l2_format f{};
  f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  f.fmt.pix.width = kW;
  f.fmt.pix.height = kH;
  f.fmt.pix.pixelformat = fourcc;
  f.fmt.pix.field = V4L2_FIELD_NONE;
  REQUIRE(::ioctl(fd, VIDIOC_S_FMT, &f) == 0);
  REQUIRE(f.fmt.pix.width == kW);
  REQUIRE(f.fmt.pix.pixelformat == fourcc);
  REQUIRE(f.fmt.pix.bytesperline == kW * bytes_per_pixel);
  std::vector<uint8_t> frame(kW * kH * bytes_per_pixel);
  for (int i = 0; i < 2; ++i) {  // the second frame: the pattern is settled
    size_t have = 0;
    while (have < frame.size()) {
      const ssize_t n = ::read(fd, frame.data() + have, frame.size() - have);
      REQUIRE(n > 0);
      have += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  return frame;
}

// RGB24 and GREY frames as doubles (GREY repeated into three channels, as the RGB input takes it).
std::vector<double> as_rgb(const std::vector<uint8_t>& frame, bool grey) {
  std::vector<double> rgb(kW * kH * 3);
  for (uint32_t i = 0; i < kW * kH; ++i)
    for (uint32_t c = 0; c < 3; ++c) rgb[i * 3 + c] = grey ? frame[i] : frame[i * 3 + c];
  return rgb;
}

std::vector<uint8_t> window(uint32_t x0, uint32_t x1, uint32_t y0, uint32_t y1, uint32_t rw, uint32_t rh) {
  std::vector<uint8_t> p;
  for (uint32_t v : {x0, x1, y0, y1, rw, rh}) {
    p.push_back(static_cast<uint8_t>(v));
    p.push_back(static_cast<uint8_t>(v >> 8));
  }
  return p;
}

std::string i2c_stub_bus() {
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/i2c-dev")) {
    std::ifstream name(e.path() / "name");
    std::string n;
    std::getline(name, n);
    if (n.find("SMBus stub") != std::string::npos) return "/dev/" + e.path().filename().string();
  }
  return {};
}

int read_register(const std::string& bus, uint8_t address, uint8_t reg) {
  const int fd = ::open(bus.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  REQUIRE(::ioctl(fd, I2C_SLAVE, static_cast<unsigned long>(address)) == 0);
  i2c_smbus_data data{};
  i2c_smbus_ioctl_data args{I2C_SMBUS_READ, reg, I2C_SMBUS_BYTE_DATA, &data};
  const int r = ::ioctl(fd, I2C_SMBUS, &args);
  ::close(fd);
  return r < 0 ? -1 : data.byte;
}

}  // namespace

TEST_CASE("vivid through aisrvd: the acquired frame is the independently converted test pattern; I2C to i2c-stub") {
  const std::string node = vivid_capture_node();
  REQUIRE_MESSAGE(!node.empty(), "no vivid capture node");
  const std::string bus = i2c_stub_bus();
  REQUIRE_MESSAGE(!bus.empty(), "no i2c-stub bus");
  test::TempDir dir;
  std::ifstream model_file("/vmtest/data/mobilenet.tflite", std::ios::binary);
  REQUIRE(model_file);
  const std::vector<uint8_t> model((std::istreambuf_iterator<char>(model_file)), std::istreambuf_iterator<char>());

  // RGB24 and GREY: the picture itself, no colour conversion; a grey ramp (every level, so the interpolation shows)
  // and colour squares.
  for (const auto& [fourcc, name, bpp, pattern] :
       {std::tuple{V4L2_PIX_FMT_RGB24, "RGB3", 3u, "Gray Ramp"}, std::tuple{V4L2_PIX_FMT_RGB24, "RGB3", 3u, "100% Color Squares"},
        std::tuple{V4L2_PIX_FMT_GREY, "GREY", 1u, "Gray Ramp"}}) {
    const std::string format_name = name, pattern_name = pattern;
    CAPTURE(format_name);
    CAPTURE(pattern_name);
    const auto ref = reference_frame(node, fourcc, bpp, pattern);
    const std::string sock = dir.file(std::string(name) + std::to_string(std::hash<std::string>{}(pattern) % 1000) + ".sock");
    test::ServerProcess d({"/vmtest/bin/aisrvd", "--listen", "unix:" + sock, "--engine", "0=cpu", "--sensor",
                           "0=v4l2:" + node + ":640x480:" + name},
                          sock);
    {
      auto c = client::Client::connect("unix:" + sock);
      REQUIRE(c.ok());
      REQUIRE(c->load_model(0, model).ok());
      auto st = c->call(static_cast<uint32_t>(protocol::Command::START_ACQUIRE_SINGLE), 0, 0);
      REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
      auto frame = c->call(static_cast<uint32_t>(protocol::Command::GET_SENSOR_TENSOR), 0, 0);
      REQUIRE(frame.ok());
      test::frames::compare(*frame,
                            test::frames::resize(as_rgb(ref, fourcc == V4L2_PIX_FMT_GREY), kW, 0, 0, kW, kH, kOut));
    }
    CHECK(d.stop() == 0);
  }

  // YUYV: converted (BT.601), the whole picture and a window; then the I2C bus.
  const auto yuyv = reference_frame(node, V4L2_PIX_FMT_YUYV, 2, "75% Colorbar");
  const auto rgb = test::frames::yuyv_to_rgb(yuyv, kW, kH);
  const std::string sock = dir.file("s.sock");
  test::ServerProcess d({"/vmtest/bin/aisrvd", "--listen", "unix:" + sock, "--engine", "0=cpu", "--sensor",
                         "0=v4l2:" + node + ":640x480:YUYV", "--sensor-i2c", "0=" + bus},
                        sock);
  {
  auto c = client::Client::connect("unix:" + sock);
  REQUIRE(c.ok());
  REQUIRE(c->load_model(0, model).ok());
  const auto acquire = static_cast<uint32_t>(protocol::Command::START_ACQUIRE_SINGLE);
  const auto sensor = static_cast<uint32_t>(protocol::Command::GET_SENSOR_TENSOR);

  // The whole picture, stretched to 128x128. Tensor 0 (as XMOS): input 0 only; the host starts the inference.
  auto st = c->call(acquire, 0, 0);
  REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
  auto frame = c->call(sensor, 0, 0);
  REQUIRE(frame.ok());
  test::frames::compare(*frame, test::frames::resize(rgb, kW, 0, 0, kW, kH, kOut));
  CHECK(c->get_output(0, 0).error().code == Errc::infer_error);  // nothing inferred yet
  REQUIRE(c->start_inference(0).ok());
  auto out = c->get_output(0, 0);  // the inference ran on it
  REQUIRE(out.ok());
  CHECK(out->size() == 1001);

  // A window (XMOS's payload: x 100..420, y 60..380, resized to the input's 128x128).
  st = c->call(acquire, 0, 0, window(100, 420, 60, 380, 128, 128));
  REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
  frame = c->call(sensor, 0, 0);
  REQUIRE(frame.ok());
  test::frames::compare(*frame, test::frames::resize(rgb, kW, 100, 60, 320, 320, kOut));
  // Refused windows: empty, outside the picture, another output size.
  CHECK(c->call(acquire, 0, 0, window(10, 10, 0, 100, 0, 0)).error().code == Errc::bad_length);
  CHECK(c->call(acquire, 0, 0, window(600, 700, 0, 100, 0, 0)).error().code == Errc::bad_length);
  auto wrong = c->call(acquire, 0, 0, window(0, 100, 0, 100, 64, 64));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().message.find("128x128") != std::string::npos);
  CHECK(c->call(acquire, 0, 0, std::vector<uint8_t>{1, 2, 3}).error().code == Errc::bad_length);

  // I2C: a register write reaches the chip; an address nobody answers fails with the errno.
  const auto i2c = static_cast<uint32_t>(protocol::Command::START_ACQUIRE_SET_I2C);
  REQUIRE(c->call(i2c, 0, 0, std::vector<uint8_t>{0x48, 0x10, 0xAB}).ok());
  CHECK(read_register(bus, 0x48, 0x10) == 0xAB);
  REQUIRE(c->call(i2c, 0, 0, std::vector<uint8_t>{0x48, 0x11, 0x5C}).ok());
  CHECK(read_register(bus, 0x48, 0x11) == 0x5C);
  auto absent = c->call(i2c, 0, 0, std::vector<uint8_t>{0x49, 0x10, 0x01});
  REQUIRE_FALSE(absent.ok());
  MESSAGE("absent address: " << absent.error().message);
  CHECK(absent.error().message.find("errno") != std::string::npos);
  CHECK(absent.error().code == Errc::sensor_error);
  CHECK(c->call(i2c, 0, 0, std::vector<uint8_t>{0x80, 0x10, 0x01}).error().code == Errc::bad_length);
  // 16-bit register addresses (aisrv extension: u8 address, u16 register LE, u8 value), as an IMX219 takes them: the
  // bus carries the register's high byte, its low byte, the value. i2c-stub models 8-bit registers only, so it
  // stores the low byte at register `high` and the value at `high + 1`: that shows the bytes on the wire.
  REQUIRE(c->call(i2c, 0, 0, std::vector<uint8_t>{0x48, 0x30, 0x20, 0x77}).ok());  // register 0x2030 = 0x77
  CHECK(read_register(bus, 0x48, 0x20) == 0x30);
  CHECK(read_register(bus, 0x48, 0x21) == 0x77);
  auto absent16 = c->call(i2c, 0, 0, std::vector<uint8_t>{0x49, 0x30, 0x20, 0x77});
  REQUIRE_FALSE(absent16.ok());
  CHECK(absent16.error().code == Errc::sensor_error);
  CHECK(absent16.error().message.find("register 0x2030 of device 0x49") != std::string::npos);

  }  // the client disconnects before the daemon stops
  CHECK(d.stop() == 0);
}

namespace {

// Presses a button control of vivid by name (e.g. "Disconnect").
void press(const std::string& node, const std::string& control) {
  const int fd = ::open(node.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  v4l2_queryctrl q{};
  q.id = V4L2_CTRL_FLAG_NEXT_CTRL;
  bool found = false;
  while (!found && ::ioctl(fd, VIDIOC_QUERYCTRL, &q) == 0) {
    if (std::string(reinterpret_cast<char*>(q.name)) == control) {
      v4l2_control c{q.id, 1};
      REQUIRE(::ioctl(fd, VIDIOC_S_CTRL, &c) == 0);
      found = true;
    }
    q.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
  }
  ::close(fd);
  REQUIRE_MESSAGE(found, "vivid has no control '" << control << "'");
}

}  // namespace

TEST_CASE("vivid stream through aisrvd: paced, dropped frames counted; an unplugged camera stops it with "
          "ERROR_SENSOR, the engine keeps serving, the next acquisition reopens the camera") {
  const std::string node = vivid_capture_node();
  REQUIRE(!node.empty());
  test::TempDir dir;
  std::ifstream model_file("/vmtest/data/mobilenet.tflite", std::ios::binary);
  const std::vector<uint8_t> model((std::istreambuf_iterator<char>(model_file)), std::istreambuf_iterator<char>());
  const std::string sock = dir.file("stream.sock");
  test::ServerProcess d({"/vmtest/bin/aisrvd", "--listen", "unix:" + sock, "--engine", "0=cpu", "--sensor",
                         "0=v4l2:" + node + ":640x480:YUYV", "--stream-fps", "4"},
                        sock);
  {  // the client disconnects before the daemon stops
  auto c = client::Client::connect("unix:" + sock);
  REQUIRE(c.ok());
  REQUIRE(c->load_model(0, model).ok());
  // Started and stopped with the CLI, as a user would; the stream outlives the CLI's connection.
  auto cli = [&](std::vector<std::string> args) {
    std::vector<std::string> full{"/vmtest/bin/aisrv", "--connect", "unix:" + sock};
    full.insert(full.end(), args.begin(), args.end());
    return test::run(full);
  };
  auto r = cli({"acquire", "stream", "start"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  CHECK(*c->acquire_mode(0) == AISRV_ACQUIRE_MODE_STREAM);
  r = cli({"acquire", "stream", "stop"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto log = c->debug_log(0);
  REQUIRE(log.ok());
  MESSAGE(*log);
  // "... stopped: F frame(s) inferred, D dropped by the camera": vivid delivers 25-30 frames a second, the stream
  // takes 4, so most are dropped — and counted.
  const auto at = log->rfind("frame(s) inferred, ");
  REQUIRE(at != std::string::npos);
  const auto line_start = log->rfind("stopped: ", at);
  const int frames = std::stoi(log->substr(line_start + 9));
  const int dropped = std::stoi(log->substr(at + 19));
  CHECK(frames >= 3);
  CHECK(dropped > frames);
  CHECK(log->find("the camera delivered") != std::string::npos);  // reported while it ran

  // Unplugged mid-stream (vivid's Disconnect control unregisters the device as a USB unplug would).
  REQUIRE(c->acquire_stream(0, true).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  press(node, "Disconnect");
  for (int i = 0; i < 100 && *c->acquire_mode(0) != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(*c->acquire_mode(0) == 0);
  const uint32_t status = *c->status(0);
  CHECK((status & AISRV_STATUS_ERROR_SENSOR) != 0);
  log = c->debug_log(0, 4);
  MESSAGE(*log);
  CHECK(log->find("acquire stream stopped after an error") != std::string::npos);
  // The engine keeps serving other commands.
  std::vector<uint8_t> input(128 * 128 * 3, 100);
  REQUIRE(c->set_input(0, 0, input).ok());
  CHECK(c->start_inference(0).ok());
  // vivid's disconnect fails the handles that were open (as an unplug does); the device node stays, so the next
  // acquisition opens the camera again and works.
  auto back = c->acquire_single(0);
  CHECK_MESSAGE(back.ok(), (back ? "" : back.error().message));
  CHECK(c->get_output(0, 0)->size() == 1001);
  }
  CHECK(d.stop() == 0);
}

TEST_CASE("hotplug: aisrvd starts without its camera, picks it up when it appears under a /dev/v4l/by-path name, and "
          "an idle unplug and replug is reopened at once") {
  const std::string node = vivid_capture_node();
  REQUIRE(!node.empty());
  test::TempDir dir;
  std::ifstream model_file("/vmtest/data/mobilenet.tflite", std::ios::binary);
  const std::vector<uint8_t> model((std::istreambuf_iterator<char>(model_file)), std::istreambuf_iterator<char>());
  // A name as udev's persistent-storage rules make them (':' inside); no udev runs in the guest, so the test makes it.
  const std::string named = "/dev/v4l/by-path/platform-dummy_hcd.0-usb-0:1:1.0-video-index0";
  std::filesystem::create_directories("/dev/v4l/by-path");
  std::filesystem::remove(named);
  const std::string sock = dir.file("hotplug.sock");
  test::ServerProcess d({"/vmtest/bin/aisrvd", "--listen", "unix:" + sock, "--engine", "0=cpu", "--sensor",
                         "0=v4l2:" + named + ":640x480:YUYV"},
                        sock);
  {
    auto c = client::Client::connect("unix:" + sock);
    REQUIRE(c.ok());
    REQUIRE(c->load_model(0, model).ok());
    const auto acquire = static_cast<uint32_t>(protocol::Command::START_ACQUIRE_SINGLE);
    const auto sensor = static_cast<uint32_t>(protocol::Command::GET_SENSOR_TENSOR);
    // Absent: the engine serves; an acquisition says why.
    auto st = c->call(acquire, 0, 0);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == Errc::sensor_error);
    CHECK_MESSAGE(st.error().message.find(named + " is absent") != std::string::npos, st.error().message);
    std::vector<uint8_t> input(128 * 128 * 3, 100);
    REQUIRE(c->set_input(0, 0, input).ok());
    CHECK(c->start_inference(0).ok());
    // Plugged in: the next acquisition opens it.
    std::filesystem::create_symlink(node, named);
    st = c->call(acquire, 0, 0);
    REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
    CHECK(c->call(sensor, 0, 0)->size() == 128u * 128u * 3u);
    // Unplugged while idle (vivid's Disconnect fails the open handle as an unplug does) and plugged in again (a new
    // device node, as the kernel and udev make at a replug): the very next acquisition works.
    press(node, "Disconnect");
    struct stat old_node {};
    REQUIRE(::stat(node.c_str(), &old_node) == 0);
    REQUIRE(::unlink(node.c_str()) == 0);
    REQUIRE(::mknod(node.c_str(), S_IFCHR | 0660, old_node.st_rdev) == 0);
    st = c->call(acquire, 0, 0);
    CHECK_MESSAGE(st.ok(), (st ? "" : st.error().what()));
    // Unplugged and not back: said so, and picked up again once it is.
    std::filesystem::remove(named);
    st = c->call(acquire, 0, 0);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message.find(named + " is absent") != std::string::npos);
    std::filesystem::create_symlink(node, named);
    st = c->call(acquire, 0, 0);
    CHECK_MESSAGE(st.ok(), (st ? "" : st.error().what()));
  }
  CHECK(d.stop() == 0);
  std::filesystem::remove(named);
}

namespace {

constexpr uint32_t kFloatSide = 128;

// A float32 RGB model made here (the shared test data has none): input "image" 1x128x128x3 float32, one
// AVERAGE_POOL_2D over the whole picture, output 0 1x1x1x3 float32 = the mean of each channel of the input. So its
// output is a known function of the camera's picture, and (float32 output 0) GPIO thresholds are floats.
std::vector<uint8_t> float_mean_model() {
  namespace tw = aisrv::tflite_writer;
  tw::ModelBuilder b;
  const auto side = static_cast<int32_t>(kFloatSide);
  const int32_t in = b.add_tensor(tw::TensorDef{"image", tw::DType::float32, {1, side, side, 3}, std::nullopt, {},
                                                std::nullopt, false});
  const int32_t out = b.add_tensor(tw::TensorDef{"channel_means", tw::DType::float32, {1, 1, 1, 3}, std::nullopt, {},
                                                 std::nullopt, false});
  tw::Pool2D pool;
  pool.padding = tw::Padding::valid;
  pool.stride_w = pool.stride_h = pool.filter_w = pool.filter_h = side;
  b.add_operator(tw::Op::average_pool_2d, {in}, {out}, pool);
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("aisrv vm test: float32 RGB channel means");
}

std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> f(bytes.size() / 4);
  std::memcpy(f.data(), bytes.data(), f.size() * 4);
  return f;
}

}  // namespace

TEST_CASE("float32 camera path: vivid's YUYV frame into a float32 RGB input is pixel / 255 of the independent "
          "conversion; the model infers on it") {
  const std::string node = vivid_capture_node();
  REQUIRE(!node.empty());
  test::TempDir dir;
  const auto model = float_mean_model();
  const auto yuyv = reference_frame(node, V4L2_PIX_FMT_YUYV, 2, "75% Colorbar");
  const auto rgb = test::frames::yuyv_to_rgb(yuyv, kW, kH);
  const std::string sock = dir.file("float.sock");
  test::ServerProcess d({"/vmtest/bin/aisrvd", "--listen", "unix:" + sock, "--engine", "0=cpu", "--sensor",
                         "0=v4l2:" + node + ":640x480:YUYV"},
                        sock);
  {
    auto c = client::Client::connect("unix:" + sock);
    REQUIRE(c.ok());
    REQUIRE(c->load_model(0, model).ok());
    auto info = c->tensor_info(0);
    REQUIRE(info.ok());
    REQUIRE(info->inputs.size() == 1);
    CHECK(info->inputs[0].dtype == protocol::DType::float32);
    CHECK(info->inputs[0].bytes == kFloatSide * kFloatSide * 3 * 4);
    const auto acquire = static_cast<uint32_t>(protocol::Command::START_ACQUIRE_SINGLE);
    // The whole picture (tensor 1: acquire and infer), then a window (tensor 0, XMOS's: input only).
    auto st = c->call(acquire, 0, 1);
    REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
    auto frame = c->sensor_frame(0);
    REQUIRE(frame.ok());
    test::frames::compare_float(*frame, test::frames::resize_real(rgb, kW, 0, 0, kW, kH, kFloatSide));
    // The model's output is the channel means of exactly that input: within 1e-3 of the mean in double (a float sum
    // of n = 16384 values in 0..1 is off by at most n * 2^-24 * the sum, i.e. the mean by under 1e-3).
    const auto in = as_floats(*frame);
    double mean[3] = {0, 0, 0};
    for (size_t i = 0; i < in.size(); ++i) mean[i % 3] += in[i];
    auto out = c->get_output(0, 0);
    REQUIRE(out.ok());
    const auto means = as_floats(*out);
    REQUIRE(means.size() == 3);
    for (int ch = 0; ch < 3; ++ch) {
      CAPTURE(ch);
      CHECK(std::abs(means[ch] - mean[ch] / (kFloatSide * kFloatSide)) <= 1e-3);
    }
    MESSAGE("channel means of the colour bars: " << means[0] << " " << means[1] << " " << means[2]);

    st = c->call(acquire, 0, 0, window(100, 420, 60, 380, kFloatSide, kFloatSide));
    REQUIRE_MESSAGE(st.ok(), (st ? "" : st.error().what()));
    frame = c->sensor_frame(0);
    REQUIRE(frame.ok());
    test::frames::compare_float(*frame, test::frames::resize_real(rgb, kW, 100, 60, 320, 320, kFloatSide));
  }
  CHECK(d.stop() == 0);
}

TEST_CASE("GPIO driven by a stream: vivid's colour decides which line of the emulated CP2112 is high while the stream "
          "runs; the stop and unloading leave them at the idle level") {
  const std::string node = vivid_capture_node();
  REQUIRE(!node.empty());
  // The chip: the CP2112 emulated over FunctionFS (the guest script made the gadget; the GPIO test before this one
  // may have left it bound to a closed FunctionFS, so it is detached first).
  test::run({"/vmtest/bin/usb-gadget", "unbind", "--name", "cp2112"});
  test::Cp2112Emulator chip("/dev/ffs-cp2112");
  REQUIRE_MESSAGE(chip.start(), chip.error());
  const auto bound = test::run({"/vmtest/bin/usb-gadget", "bind", "--name", "cp2112"});
  REQUIRE_MESSAGE(bound.exit_code == 0, bound.out << bound.err);
  gpiod_chip* found = nullptr;  // hid-cp2112 probes it and registers the gpiochip
  for (int i = 0; i < 100 && !found; ++i) {
    found = gpiod_chip_open_lookup("cp2112_gpio");
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE_MESSAGE(found, "no gpiochip cp2112_gpio after binding the emulated CP2112");
  gpiod_chip_close(found);

  // A plain picture of one colour, set on vivid while aisrvd streams from it (another open handle: controls are the
  // device's, not a handle's).
  auto pattern = [&](const std::string& name) {
    const int fd = ::open(node.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    set_menu(fd, "OSD Text Mode", "None");
    set_menu(fd, "Test Pattern", name);
    ::close(fd);
  };
  pattern("100% Red");
  test::TempDir dir;
  const std::string sock = dir.file("gpio-stream.sock");
  // Lines 0, 1, 2 follow the R, G, B means; line 1 rests high (idle=0,1,0), so "idle" is not just "all low".
  test::ServerProcess d({"/vmtest/bin/aisrvd", "--listen", "unix:" + sock, "--engine", "0=cpu", "--sensor",
                         "0=v4l2:" + node + ":640x480:YUYV", "--gpio", "0=cp2112_gpio:0,1,2:idle=0,1,0",
                         "--stream-fps", "5"},
                        sock);
  // Requested at start-up as outputs, at their idle levels.
  CHECK((chip.direction() & 0x07) == 0x07);
  CHECK((chip.latch() & 0x07) == 0b010);
  {
    auto c = client::Client::connect("unix:" + sock);
    REQUIRE(c.ok());
    REQUIRE(c->load_model(0, float_mean_model()).ok());
    CHECK((chip.latch() & 0x07) == 0b010);  // loading a model changes no level
    // Threshold mode, a float threshold (output 0 is float32): line i is high when channel i's mean is above 0.5.
    for (uint32_t line = 0; line < 3; ++line) {
      REQUIRE(c->set_gpio_threshold(0, line, 0.5).ok());
      REQUIRE(c->set_gpio_enabled(0, line, true).ok());
    }
    REQUIRE(*c->gpio_mode(0) == 0);
    // Waits up to `ms` for the pins to show `levels`; says how long the change took (pattern set -> pins).
    auto wait_for = [&](uint8_t levels, int ms) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < ms / 20 && (chip.latch() & 0x07) != levels; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      MESSAGE("pins " << int(levels) << " after "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)
                             .count()
                      << " ms");
      return chip.latch() & 0x07;
    };
    // Nothing infers yet: the lines stay at their idle levels.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK((chip.latch() & 0x07) == 0b010);
    REQUIRE(c->acquire_stream(0, true).ok());
    CHECK(wait_for(0b001, 10000) == 0b001);  // red: only line 0
    // The starter reads the stream's outputs; the lines are set in the round before its outputs are handed over,
    // so the first round may still be "no output yet" (ERROR_INFER_ERR, docs/sensors-gpio.md) for a moment.
    auto out = c->get_output(0, 0);
    for (int i = 0; i < 50 && !out; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      out = c->get_output(0, 0);
    }
    REQUIRE_MESSAGE(out.ok(), (out ? "" : out.error().message));
    auto means = as_floats(*out);
    REQUIRE(means.size() == 3);
    MESSAGE("red: channel means " << means[0] << " " << means[1] << " " << means[2]);
    CHECK(means[0] > 0.9f);
    CHECK(means[1] < 0.1f);
    CHECK(means[2] < 0.1f);
    pattern("100% Blue");  // the camera changes under the running stream
    CHECK(wait_for(0b100, 10000) == 0b100);
    pattern("100% White");
    CHECK(wait_for(0b111, 10000) == 0b111);
    means = as_floats(*c->get_output(0, 0));
    MESSAGE("white: channel means " << means[0] << " " << means[1] << " " << means[2]);
    pattern("100% Green");
    CHECK(wait_for(0b010, 10000) == 0b010);
    const int sets_while_green = chip.gpio_sets();
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // about 5 rounds, all green
    CHECK(chip.gpio_sets() == sets_while_green);  // unchanged levels are not sent again
    CHECK(*c->acquire_mode(0) == AISRV_ACQUIRE_MODE_STREAM);

    // Stopped: the last frame's result no longer stands for what the camera sees, so the lines go back to their
    // idle levels (line 1 high), still held; no round drives them any more — the camera turning red changes nothing.
    pattern("100% Blue");
    CHECK(wait_for(0b100, 10000) == 0b100);
    REQUIRE(c->acquire_stream(0, false).ok());
    CHECK(*c->acquire_mode(0) == 0);
    CHECK((chip.latch() & 0x07) == 0b010);
    const int sets_at_stop = chip.gpio_sets();
    pattern("100% Red");
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    CHECK((chip.latch() & 0x07) == 0b010);
    CHECK(chip.gpio_sets() == sets_at_stop);
    // Unloading leaves them at their idle levels and gives them back.
    REQUIRE(c->unload_model(0).ok());
    CHECK((chip.latch() & 0x07) == 0b010);

    // Unloading while a stream runs: the lines go to their idle levels and stay there (no later round drives them).
    REQUIRE(c->load_model(0, float_mean_model()).ok());
    for (uint32_t line = 0; line < 3; ++line) {
      REQUIRE(c->set_gpio_threshold(0, line, 0.5).ok());
      REQUIRE(c->set_gpio_enabled(0, line, true).ok());
    }
    REQUIRE(c->acquire_stream(0, true).ok());
    CHECK(wait_for(0b001, 10000) == 0b001);  // red
    REQUIRE(c->unload_model(0).ok());
    CHECK((chip.latch() & 0x07) == 0b010);
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    CHECK((chip.latch() & 0x07) == 0b010);
    // The stream's next round finds no model: the stream stops and says why.
    for (int i = 0; i < 60 && *c->acquire_mode(0) != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(*c->acquire_mode(0) == 0);
    auto log = c->debug_log(0, 3);
    REQUIRE(log.ok());
    MESSAGE("after unloading under a stream: " << *log);
    CHECK(log->find("acquire stream stopped after an error: engine 0 has no model loaded") != std::string::npos);
  }
  CHECK(d.stop() == 0);
  CHECK((chip.latch() & 0x07) == 0b010);
}
