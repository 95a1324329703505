// aisrv benchmark (runs in the QEMU guest; tools/bench sensor) — the camera path, measured on vivid's 640x480 YUYV
// stream from the camera's own clock: every V4L2 buffer carries the CLOCK_MONOTONIC time the driver finished it.
//   * a frame's age at the reply: START_ACQUIRE_SINGLE (tensor 0: acquire only, as XMOS) answered by the interpreter
//     in this process, with the real V4L2 frame source, into a 224x224 input — the reply's time minus the buffer's
//     timestamp; baseline: the age of the newest frame when a plain V4L2 capture (this program's own) dequeues it.
//     (vivid stamps buffers from its frame schedule, not a measured moment; under QEMU its stamps run ahead of the
//     clock. The time from the dequeue to the reply does not depend on the driver's stamps: it is printed too);
//   * the conversion, timed in the process around the frame source's own steps: YUYV → RGB (decode) and RGB 640x480 →
//     the 224x224 input (fit: resize, layout, quantization, written into the session's input tensor); baseline: a
//     memcpy of the 614,400-byte YUYV frame;
//   * a stream through aisrvd at the engine's pace (a small model), frames per second vs the camera's own rate.
// Every figure is printed as `bench NAME: VALUE UNIT vs BASELINE VALUE UNIT = RATIO x`. The camera belongs to one
// program at a time: the baseline capture runs first, then the in-process server, then aisrvd.
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

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "aisrv/client/client.hpp"
#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "aisrv/protocol/protocol.hpp"
#include "aisrv/sensors/frame_source.hpp"
#include "aisrv/server.hpp"
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
  // The newest frame, as a frame source must take it; returns its sequence number. `touch` reads the pixels once;
  // `age_ms`, when given, receives how old the frame was when it was dequeued (now minus the buffer's timestamp).
  uint32_t newest(bool touch, double* age_ms = nullptr) {
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
    if (age_ms) {
      if ((b.flags & V4L2_BUF_FLAG_TIMESTAMP_MASK) != V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
        die("the camera's timestamps are not CLOCK_MONOTONIC");
      *age_ms = std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch() -
                                                          (std::chrono::seconds(b.timestamp.tv_sec) +
                                                           std::chrono::microseconds(b.timestamp.tv_usec)))
                    .count();
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

// The V4L2 source with a stopwatch: what it grabbed last (the buffer's timestamp, the decode time it measured) and
// how long its fit into the input took.
class TimedSource final : public sensors::FrameSource {
 public:
  explicit TimedSource(std::unique_ptr<sensors::FrameSource> inner) : inner_(std::move(inner)) {}
  std::string describe() const override { return inner_->describe(); }
  Status grab(const protocol::TensorInfo& input, sensors::SensorFrame& out) override {
    auto st = inner_->grab(input, out);
    // The source converts right after VIDIOC_DQBUF: the buffer was dequeued the conversion's time before now.
    dequeued = Clock::now() - out.convert_ns;
    captured = out.captured;
    convert_ms = std::chrono::duration<double, std::milli>(out.convert_ns).count();
    return st;
  }
  Status fit(const sensors::SensorFrame& grabbed, const protocol::TensorInfo& input,
             const std::optional<sensors::AcquireWindow>& window, std::span<uint8_t> frame) const override {
    const auto t0 = Clock::now();
    auto st = inner_->fit(grabbed, input, window, frame);
    fit_ms = ms_since(t0);
    return st;
  }
  uint64_t dropped() const override { return inner_->dropped(); }
  uint64_t bad_frames() const override { return inner_->bad_frames(); }
  bool present() const override { return inner_->present(); }

  std::chrono::nanoseconds captured{0};
  Clock::time_point dequeued{};
  double convert_ms = 0;
  mutable double fit_ms = 0;

 private:
  std::unique_ptr<sensors::FrameSource> inner_;
};

// A memcpy of `bytes` (the baseline of the conversion), the mean of many.
double memcpy_ms(size_t bytes) {
  std::vector<uint8_t> a(bytes, 1), b(bytes);
  constexpr int kRuns = 200;
  const auto t0 = Clock::now();
  for (int i = 0; i < kRuns; ++i) {
    a[static_cast<size_t>(i) % bytes] = static_cast<uint8_t>(i);
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
  }
  return ms_since(t0) / kRuns;
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

  // 1. Capture alone: the newest frame's age when a plain capture dequeues it (the camera is the interpreter's once
  // this block ends).
  std::vector<double> capture_age;
  double camera_fps = 0;
  {
    Camera cam(device);
    cam.newest(true);
    for (unsigned i = 0; i < rounds; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
      double age = 0;
      cam.newest(true, &age);
      capture_age.push_back(age);
    }
    // The camera's own rate: sequence numbers over a few seconds.
    const auto t0 = Clock::now();
    const uint32_t s0 = cam.newest(false);
    uint32_t s1 = s0;
    while (ms_since(t0) < 3000) s1 = cam.newest(false);
    camera_fps = (s1 - s0) / (ms_since(t0) / 1000.0);
  }

  // 2. The interpreter in this process with the real V4L2 source: START_ACQUIRE_SINGLE (tensor 0, no inference) into
  // the 224x224 input; the frame's age at the reply, and the source's own conversion steps.
  {
    auto spec = sensors::parse_v4l2_spec("v4l2:" + device + ":640x480:YUYV");
    if (!spec) die(spec.error().message);
    auto v4l2 = sensors::open_v4l2_frame_source(*spec);
    if (!v4l2) die("camera: " + v4l2.error().message);
    auto timed = std::make_unique<TimedSource>(std::move(v4l2).value());
    TimedSource* clock = timed.get();
    server::ServerOptions o;
    o.sensors.emplace_back(0, server::SensorConfig{std::move(timed), std::chrono::milliseconds(100), nullptr});
    std::vector<std::unique_ptr<engine::InferenceBackend>> engines;
    auto cpu = engine::cpu::CpuBackend::create({});
    if (!cpu) die("cpu engine: " + cpu.error().message);
    engines.push_back(std::move(cpu).value());
    auto srv = server::Server::create(std::move(o), std::move(engines));
    if (!srv) die("server: " + srv.error().message);
    auto session = (*srv)->open_session(server::Peer::of(server::Trust::process, "local", "bench"));
    auto send = [&](protocol::Command cmd, uint32_t tensor, std::span<const uint8_t> payload) {
      protocol::Response r;
      (*srv)->handle(*session, protocol::Request{protocol::Header{static_cast<uint32_t>(cmd), 0, tensor}, payload}, r);
      return r;
    };
    const auto model = read_file(model224);
    if (auto r = send(protocol::Command::SET_MODEL_SECONDARY, 0, model); r.status != 0)
      die("load " + model224 + ": status " + std::to_string(r.status));
    const auto input = (*srv)->engine(0)->model()->info.inputs[0];
    std::vector<double> age, after_dequeue, convert, fit;
    (void)send(protocol::Command::START_ACQUIRE_SINGLE, 0, {});  // the camera starts streaming
    for (unsigned i = 0; i < rounds; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
      if (auto r = send(protocol::Command::START_ACQUIRE_SINGLE, 0, {}); r.status != 0)
        die("acquire: status " + std::to_string(r.status));
      const auto replied = Clock::now();
      if (clock->captured.count() == 0) die("the V4L2 source recorded no CLOCK_MONOTONIC timestamp");
      age.push_back(std::chrono::duration<double, std::milli>(replied.time_since_epoch() - clock->captured).count());
      after_dequeue.push_back(std::chrono::duration<double, std::milli>(replied - clock->dequeued).count());
      convert.push_back(clock->convert_ms);
      fit.push_back(clock->fit_ms);
    }
    const double base_age = mean(capture_age), copy = memcpy_ms(640 * 480 * 2);
    bench::report("sensor frame_age_at_reply_640x480_yuyv_to_224x224", mean(age), "ms", "capture_alone_age",
                  base_age, "ms", mean(age) / base_age);
    // Everything the interpreter does with a frame once the driver handed it over (decode, fit into the session's
    // input, the reply), against copying the frame once.
    bench::report("sensor reply_after_dequeue_640x480_yuyv_to_224x224", mean(after_dequeue), "ms",
                  "memcpy_640x480_yuyv", copy, "ms", mean(after_dequeue) / copy);
    bench::report("sensor convert_yuyv_640x480_to_rgb", mean(convert), "ms", "memcpy_640x480_yuyv", copy, "ms",
                  mean(convert) / copy);
    std::string fit_name = "sensor fit_rgb_640x480_to_224x224_" + std::string(protocol::dtype_name(input.dtype));
    std::transform(fit_name.begin(), fit_name.end(), fit_name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    bench::report(fit_name, mean(fit), "ms", "memcpy_640x480_yuyv", copy, "ms", mean(fit) / copy);
    std::fprintf(stderr, "bench_sensor: %u rounds; frame age at the reply p50 %.2f ms p95 %.2f ms (capture alone p50 "
                 "%.2f ms)\n", rounds, bench::percentile(age, 0.5), bench::percentile(age, 0.95),
                 bench::percentile(capture_age, 0.5));
  }  // the in-process server closes the camera here

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
