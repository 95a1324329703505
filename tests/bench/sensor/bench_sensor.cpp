// aisrv benchmark (runs in the QEMU guest; tools/bench sensor) — the camera path through aisrvd against the camera
// alone, measured in the same run on vivid's 640x480 YUYV stream:
//   * capture alone: this program's own V4L2 mmap capture of the newest frame (give back what is queued, wait for the
//     next frame), after a random pause so the camera's phase is as random as it is for the server;
//   * START_ACQUIRE_SINGLE answered, minus the inference's own compute time (GET_TIMING_RECORD): capture +
//     conversion + crop/resize/quantization into the 224x224 input + the protocol round trip;
//   * a stream at the engine's pace (a small model) in frames per second vs the camera's own rate.
// Every figure is printed as `bench NAME: VALUE UNIT vs BASELINE VALUE UNIT = RATIO x`.
// The camera belongs to one program at a time: the baseline runs first, then this program starts aisrvd on it.
//   bench_sensor --device /dev/videoN --aisrvd PATH --model224 M.tflite --model-small M.tflite [--rounds N]
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "aisrv/client/client.hpp"
#include "bench_report.hpp"

using namespace aisrv;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_sensor: %s\n", what.c_str());
  std::exit(1);
}

int xioctl(int fd, unsigned long req, void* arg) {
  int r;
  do r = ::ioctl(fd, req, arg);
  while (r < 0 && errno == EINTR);
  return r;
}

// Plain V4L2 streaming capture, the baseline.
struct Camera {
  int fd = -1;
  std::vector<std::pair<void*, size_t>> maps;
  explicit Camera(const std::string& dev) {
    fd = ::open(dev.c_str(), O_RDWR | O_NONBLOCK);
    if (fd < 0) die("cannot open " + dev);
    v4l2_format f{};
    f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    f.fmt.pix.width = 640;
    f.fmt.pix.height = 480;
    f.fmt.pix.pixelformat = V4L2_PIX_FMT_YUYV;
    f.fmt.pix.field = V4L2_FIELD_NONE;
    if (xioctl(fd, VIDIOC_S_FMT, &f) < 0) die("VIDIOC_S_FMT");
    v4l2_requestbuffers rb{};
    rb.count = 4;
    rb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    rb.memory = V4L2_MEMORY_MMAP;
    if (xioctl(fd, VIDIOC_REQBUFS, &rb) < 0) die("VIDIOC_REQBUFS");
    for (uint32_t i = 0; i < rb.count; ++i) {
      v4l2_buffer b{};
      b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
      b.memory = V4L2_MEMORY_MMAP;
      b.index = i;
      if (xioctl(fd, VIDIOC_QUERYBUF, &b) < 0) die("VIDIOC_QUERYBUF");
      void* p = ::mmap(nullptr, b.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, b.m.offset);
      if (p == MAP_FAILED) die("mmap");
      maps.emplace_back(p, b.length);
      if (xioctl(fd, VIDIOC_QBUF, &b) < 0) die("VIDIOC_QBUF");
    }
    v4l2_buf_type t = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(fd, VIDIOC_STREAMON, &t) < 0) die("VIDIOC_STREAMON");
  }
  ~Camera() {
    v4l2_buf_type t = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    xioctl(fd, VIDIOC_STREAMOFF, &t);
    for (auto& [p, n] : maps) ::munmap(p, n);
    ::close(fd);
  }
  // The newest frame, as a frame source must take it; returns its sequence number. `touch` reads the pixels once.
  uint32_t newest(bool touch) {
    v4l2_buffer b{};
    for (;;) {
      b = v4l2_buffer{};
      b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
      b.memory = V4L2_MEMORY_MMAP;
      if (xioctl(fd, VIDIOC_DQBUF, &b) < 0) break;
      xioctl(fd, VIDIOC_QBUF, &b);
    }
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) die("no frame in 2 s");
      b = v4l2_buffer{};
      b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
      b.memory = V4L2_MEMORY_MMAP;
      if (xioctl(fd, VIDIOC_DQBUF, &b) == 0) break;
    }
    volatile uint8_t sink = 0;
    if (touch) {
      const auto* px = static_cast<const uint8_t*>(maps[b.index].first);
      for (size_t i = 0; i < b.bytesused; i += 64) sink = sink + px[i];
    }
    const uint32_t sequence = b.sequence;  // QBUF rewrites the struct
    xioctl(fd, VIDIOC_QBUF, &b);
    return sequence;
  }
};

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) die("cannot read " + path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::string device, aisrvd, model224, model_small;
  unsigned rounds = 20, stream_seconds = 8;
  CLI::App app{"aisrv sensor benchmark (QEMU guest, vivid)"};
  app.add_option("--device", device)->required();
  app.add_option("--aisrvd", aisrvd)->required();
  app.add_option("--model224", model224)->required();
  app.add_option("--model-small", model_small)->required();
  app.add_option("--rounds", rounds);
  app.add_option("--stream-seconds", stream_seconds);
  CLI11_PARSE(app, argc, argv);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pause_ms(0, 60);

  // 1. Capture alone (the camera is the server's once this block ends).
  std::vector<double> capture;
  double camera_fps = 0;
  {
    Camera cam(device);
    cam.newest(true);
    for (unsigned i = 0; i < rounds; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
      const auto t0 = Clock::now();
      cam.newest(true);
      capture.push_back(ms_since(t0));
    }
    // The camera's own rate: sequence numbers over a few seconds.
    const auto t0 = Clock::now();
    const uint32_t s0 = cam.newest(false);
    uint32_t s1 = s0;
    while (ms_since(t0) < 3000) s1 = cam.newest(false);
    camera_fps = (s1 - s0) / (ms_since(t0) / 1000.0);
  }

  // aisrvd on the camera, streams as fast as the engine goes.
  const std::string sock = "/tmp/bench-sensor.sock";
  const std::string sensor = "0=v4l2:" + device + ":640x480:YUYV";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(aisrvd.c_str(), aisrvd.c_str(), "--listen", ("unix:" + sock).c_str(), "--engine", "0=cpu", "--sensor",
            sensor.c_str(), "--stream-fps", "1000", "--log-level", "warn", static_cast<char*>(nullptr));
    _exit(127);
  }
  struct stat st_sock{};
  for (int i = 0; i < 200 && ::stat(sock.c_str(), &st_sock) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto c = client::Client::connect("unix:" + sock);
  if (!c) die("connect: " + c.error().message);
  // 2. START_ACQUIRE_SINGLE into a 224x224 input, minus the inference's compute.
  if (auto st = c->load_model(0, read_file(model224)); !st) die("load: " + st.error().message);
  std::vector<double> acquire, compute;
  (void)c->acquire_single(0);  // opens and starts the camera
  for (unsigned i = 0; i < rounds; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    const auto t0 = Clock::now();
    if (auto st = c->acquire_single(0); !st) die("acquire: " + st.error().message);
    const double total = ms_since(t0);
    auto rec = c->timing_record(0);
    if (!rec) die("timing record: " + rec.error().message);
    compute.push_back(double(rec->compute_ns) / 1e6);
    acquire.push_back(total - compute.back());
  }
  const double cap = mean(capture), acq = mean(acquire);
  bench::report("sensor acquire_single_640x480_to_224x224_without_inference", acq, "ms", "capture_alone", cap, "ms",
                acq / cap);
  std::fprintf(stderr, "bench_sensor: inference compute %.1f ms per frame (subtracted), %u rounds\n", mean(compute),
               rounds);

  // 3. A stream as fast as the engine goes (a small model) vs the camera's own rate.
  if (auto st = c->load_model(0, read_file(model_small)); !st) die("load: " + st.error().message);
  const auto before = c->engine_info(0);
  if (!before) die("engine info");
  if (auto st = c->acquire_stream(0, true); !st) die("stream: " + st.error().message);
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(stream_seconds));
  const auto after = c->engine_info(0);
  const double secs = ms_since(t0) / 1000.0;
  (void)c->acquire_stream(0, false);
  if (!after) die("engine info");
  const double stream_fps = double(after->inferences - before->inferences) / secs;
  bench::report("sensor stream_fps_mobilenet_v1_0.25_128", stream_fps, "fps", "camera", camera_fps, "fps",
                stream_fps / camera_fps);
  c = client::Client::connect("unix:" + sock);  // the first connection closes here
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return 0;
}
