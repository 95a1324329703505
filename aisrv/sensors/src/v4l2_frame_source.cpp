// aisrv sensors — a V4L2 camera as a frame source: format negotiation (the requested FOURCC or the first usable
// one the device offers; an error lists what it offers), mmap streaming buffers, poll with a timeout, the newest
// frame (older ones counted as dropped, never queued), bad frames (driver error flag, short, corrupt JPEG) refused
// and counted, conversion to RGB or grey (frame_source.cpp), then crop, resize and quantization for the input
// (engine/image). Hotplug: a device absent at start or gone later (ENODEV, EIO) is closed and opened again at the
// next grab, once the path is there; an idle unplug and replug (the path names a new device node) is noticed at the
// next grab, which opens the new device at once instead of failing on the old handle.
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <fmt/format.h>
#include <vector>

#include "aisrv/sensors/frame_source.hpp"

namespace aisrv::sensors {

namespace {

std::string fourcc_text(uint32_t f) {
  std::string s(4, ' ');
  for (int i = 0; i < 4; ++i) s[static_cast<size_t>(i)] = static_cast<char>((f >> (8 * i)) & 0xFF);
  return s;
}

uint32_t fourcc_of(const std::string& s) {
  if (s.size() != 4) return 0;
  return v4l2_fourcc(s[0], s[1], s[2], s[3]);
}

int xioctl(int fd, unsigned long request, void* arg) {
  int r;
  do {
    r = ::ioctl(fd, request, arg);
  } while (r < 0 && errno == EINTR);
  return r;
}

class V4l2FrameSource final : public FrameSource {
 public:
  explicit V4l2FrameSource(V4l2Options o) : options_(std::move(o)) {}
  ~V4l2FrameSource() override { close_device(); }

  std::string describe() const override {
    if (fd_ < 0) return "v4l2:" + options_.device;
    return fmt::format("v4l2:{} {}x{} {}", options_.device, width_, height_, fourcc_text(pixelformat_));
  }

  uint64_t dropped() const override { return dropped_.load(std::memory_order_relaxed); }

  Status open_device() {
    const int fd = ::open(options_.device.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      present_.store(false, std::memory_order_relaxed);
      if (err == ENOENT || err == ENODEV || err == ENXIO)
        return make_error(Errc::not_found, "{} is absent ({}); it is opened when it appears", options_.device,
                          std::strerror(err));
      return make_error(Errc::io_error, "cannot open {}: {}", options_.device, std::strerror(err));
    }
    fd_ = fd;
    auto st = configure();
    if (!st) close_device();
    present_.store(static_cast<bool>(st), std::memory_order_relaxed);
    return st;
  }

  bool present() const override { return present_.load(std::memory_order_relaxed); }
  uint64_t bad_frames() const override { return bad_.load(std::memory_order_relaxed); }

  Status grab(const protocol::TensorInfo&, SensorFrame& out) override {
    // An idle unplug and replug: the handle still open is the old device's; udev made a new node for the new one.
    if (fd_ >= 0 && node_replaced()) close_device();
    if (fd_ < 0) AISRV_TRY(open_device());
    return grab_open(out);
  }

 private:
  struct Buffer {
    void* start = MAP_FAILED;
    size_t length = 0;
  };

  Status configure() {
    v4l2_capability cap{};
    if (xioctl(fd_, VIDIOC_QUERYCAP, &cap) < 0)
      return make_error(Errc::io_error, "{} is not a V4L2 device: {}", options_.device, std::strerror(errno));
    const uint32_t caps = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities;
    if (!(caps & V4L2_CAP_VIDEO_CAPTURE) || !(caps & V4L2_CAP_STREAMING))
      return make_error(Errc::not_supported, "{} ({}) cannot capture video with streaming I/O", options_.device,
                        reinterpret_cast<const char*>(cap.card));

    std::vector<uint32_t> offered;
    v4l2_fmtdesc d{};
    d.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    for (; xioctl(fd_, VIDIOC_ENUM_FMT, &d) == 0; ++d.index) offered.push_back(d.pixelformat);
    const std::vector<uint32_t> usable{V4L2_PIX_FMT_YUYV, V4L2_PIX_FMT_RGB24, V4L2_PIX_FMT_BGR24, V4L2_PIX_FMT_GREY,
                                       V4L2_PIX_FMT_MJPEG};
    auto list = [&] {
      std::string s;
      for (uint32_t f : offered) s += (s.empty() ? "" : ", ") + fourcc_text(f);
      return s.empty() ? std::string("none") : s;
    };
    uint32_t chosen = 0;
    if (!options_.fourcc.empty()) {
      chosen = fourcc_of(options_.fourcc);
      if (std::find(usable.begin(), usable.end(), chosen) == usable.end())
        return make_error(Errc::invalid_argument, "format {} is not one aisrv converts (YUYV, RGB3, BGR3, GREY, MJPG)",
                          options_.fourcc);
      if (std::find(offered.begin(), offered.end(), chosen) == offered.end())
        return make_error(Errc::not_supported, "{} does not offer {}; it offers {}", options_.device, options_.fourcc,
                          list());
    } else {
      for (uint32_t f : usable)
        if (std::find(offered.begin(), offered.end(), f) != offered.end()) {
          chosen = f;
          break;
        }
      if (!chosen)
        return make_error(Errc::not_supported,
                          "{} offers no format aisrv converts (YUYV, RGB3, BGR3, GREY, MJPG); it offers {}",
                          options_.device, list());
    }

    v4l2_format fmt{};
    fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(fd_, VIDIOC_G_FMT, &fmt) < 0)
      return make_error(Errc::io_error, "{}: VIDIOC_G_FMT: {}", options_.device, std::strerror(errno));
    if (options_.width) fmt.fmt.pix.width = options_.width;
    if (options_.height) fmt.fmt.pix.height = options_.height;
    fmt.fmt.pix.pixelformat = chosen;
    fmt.fmt.pix.field = V4L2_FIELD_NONE;
    if (xioctl(fd_, VIDIOC_S_FMT, &fmt) < 0)
      return make_error(Errc::io_error, "{}: VIDIOC_S_FMT {} {}x{}: {}", options_.device, fourcc_text(chosen),
                        fmt.fmt.pix.width, fmt.fmt.pix.height, std::strerror(errno));
    if (fmt.fmt.pix.pixelformat != chosen)
      return make_error(Errc::not_supported, "{} would not take {} (it chose {})", options_.device,
                        fourcc_text(chosen), fourcc_text(fmt.fmt.pix.pixelformat));
    if ((options_.width && fmt.fmt.pix.width != options_.width) ||
        (options_.height && fmt.fmt.pix.height != options_.height))
      return make_error(Errc::not_supported, "{} cannot capture {}x{} in {} (it offers {}x{})", options_.device,
                        options_.width, options_.height, fourcc_text(chosen), fmt.fmt.pix.width, fmt.fmt.pix.height);
    width_ = fmt.fmt.pix.width;
    height_ = fmt.fmt.pix.height;
    stride_ = fmt.fmt.pix.bytesperline;
    pixelformat_ = chosen;

    v4l2_requestbuffers req{};
    req.count = 4;
    req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    req.memory = V4L2_MEMORY_MMAP;
    if (xioctl(fd_, VIDIOC_REQBUFS, &req) < 0 || req.count < 2)
      return make_error(Errc::io_error, "{}: cannot get streaming buffers: {}", options_.device, std::strerror(errno));
    buffers_.resize(req.count);
    for (uint32_t i = 0; i < req.count; ++i) {
      v4l2_buffer b{};
      b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
      b.memory = V4L2_MEMORY_MMAP;
      b.index = i;
      if (xioctl(fd_, VIDIOC_QUERYBUF, &b) < 0)
        return make_error(Errc::io_error, "{}: VIDIOC_QUERYBUF: {}", options_.device, std::strerror(errno));
      buffers_[i].length = b.length;
      buffers_[i].start = ::mmap(nullptr, b.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, b.m.offset);
      if (buffers_[i].start == MAP_FAILED)
        return make_error(Errc::io_error, "{}: mmap of buffer {}: {}", options_.device, i, std::strerror(errno));
      if (xioctl(fd_, VIDIOC_QBUF, &b) < 0)
        return make_error(Errc::io_error, "{}: VIDIOC_QBUF: {}", options_.device, std::strerror(errno));
    }
    v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(fd_, VIDIOC_STREAMON, &type) < 0)
      return make_error(Errc::io_error, "{}: VIDIOC_STREAMON: {}", options_.device, std::strerror(errno));
    streaming_ = true;
    return ok();
  }

  void close_device() {
    if (fd_ < 0) return;
    if (streaming_) {
      v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
      (void)xioctl(fd_, VIDIOC_STREAMOFF, &type);
    }
    for (auto& b : buffers_)
      if (b.start != MAP_FAILED) ::munmap(b.start, b.length);
    buffers_.clear();
    streaming_ = false;
    have_sequence_ = false;
    ::close(fd_);
    fd_ = -1;
  }

  // Device gone or broken: close it (the next capture reopens) and say so.
  Error lost(const char* what) {
    const int err = errno;
    const std::string where = describe();
    close_device();
    present_.store(false, std::memory_order_relaxed);
    return make_error(Errc::sensor_error, "{}: {}: {} (closed; the next acquisition opens it again)", where, what,
                      std::strerror(err));
  }

  // The open handle's device node is not the one the path names now (removed at an unplug, made again at a replug:
  // another inode), or the path is gone.
  bool node_replaced() const {
    struct stat open_node {}, named {};
    if (::fstat(fd_, &open_node) != 0 || ::stat(options_.device.c_str(), &named) != 0) return true;
    return open_node.st_ino != named.st_ino || open_node.st_dev != named.st_dev || open_node.st_rdev != named.st_rdev;
  }

  // The newest frame: everything already queued up is given back, then the next one is waited for, so a single
  // acquisition never returns a picture taken long before it was asked for. Dropped frames are counted from the
  // driver's sequence numbers: those given back here and those the driver itself dropped for want of a buffer.
  Status grab_open(SensorFrame& out) {
    v4l2_buffer b{};
    for (;;) {
      b = v4l2_buffer{};
      b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
      b.memory = V4L2_MEMORY_MMAP;
      if (xioctl(fd_, VIDIOC_DQBUF, &b) < 0) {
        if (errno == EAGAIN) break;
        return lost("VIDIOC_DQBUF");
      }
      if (xioctl(fd_, VIDIOC_QBUF, &b) < 0) return lost("VIDIOC_QBUF");
    }
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, options_.timeout_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return lost("poll");
      if (r == 0)
        return make_error(Errc::sensor_error, "{}: no frame within {} ms (the camera stalled)", describe(),
                          options_.timeout_ms);
      if (p.revents & (POLLERR | POLLHUP)) {
        errno = ENODEV;
        return lost("the device reported an error");
      }
      b = v4l2_buffer{};
      b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
      b.memory = V4L2_MEMORY_MMAP;
      if (xioctl(fd_, VIDIOC_DQBUF, &b) < 0) {
        if (errno == EAGAIN) continue;
        return lost("VIDIOC_DQBUF");
      }
      break;
    }
    if (have_sequence_ && b.sequence > last_sequence_)
      dropped_.fetch_add(b.sequence - last_sequence_ - 1, std::memory_order_relaxed);
    last_sequence_ = b.sequence;
    have_sequence_ = true;
    if (b.index >= buffers_.size()) {
      errno = EINVAL;
      return lost("the driver returned an unknown buffer");
    }
    const auto t0 = std::chrono::steady_clock::now();
    const size_t used = std::min<size_t>(b.bytesused, buffers_[b.index].length);
    const BufferFormat format{pixelformat_, width_, height_, stride_};
    auto st = decode_buffer(format, (b.flags & V4L2_BUF_FLAG_ERROR) != 0,
                            std::span<const uint8_t>(static_cast<const uint8_t*>(buffers_[b.index].start), used),
                            out.picture, describe());
    out.convert_ns = std::chrono::steady_clock::now() - t0;
    out.what = describe();
    out.sequence = b.sequence;
    out.captured = (b.flags & V4L2_BUF_FLAG_TIMESTAMP_MASK) == V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC
                       ? std::chrono::seconds(b.timestamp.tv_sec) + std::chrono::microseconds(b.timestamp.tv_usec)
                       : std::chrono::nanoseconds(0);
    if (!st && st.error().code == Errc::sensor_error) bad_.fetch_add(1, std::memory_order_relaxed);
    if (xioctl(fd_, VIDIOC_QBUF, &b) < 0) return lost("VIDIOC_QBUF");
    return st;
  }

  V4l2Options options_;
  std::atomic<bool> present_{false};
  std::atomic<uint64_t> bad_{0};
  int fd_ = -1;
  bool streaming_ = false;
  uint32_t width_ = 0, height_ = 0, stride_ = 0, pixelformat_ = 0;
  std::vector<Buffer> buffers_;
  std::atomic<uint64_t> dropped_{0};  // read by the stream's reports and stop without the engine's lock
  uint32_t last_sequence_ = 0;  // of the last frame used; restarts when the device is opened again
  bool have_sequence_ = false;
};

}  // namespace


// "v4l2:DEVICE[:WxH[:FOURCC]]". DEVICE may itself contain ':' (/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1:1.0-…), so
// the size and format are taken from the end: the last field is a size, or a FOURCC after a size (or an empty one).
Result<V4l2Options> parse_v4l2_spec(const std::string& spec) {
  if (spec.rfind("v4l2:", 0) != 0) return make_error(Errc::invalid_argument, "'{}' is not v4l2:DEVICE…", spec);
  const std::string rest = spec.substr(5);
  auto usage = [&] {
    return make_error(Errc::invalid_argument, "'{}': expected v4l2:/dev/videoN[:WxH[:FOURCC]] (or a /dev/v4l/by-id or "
                      "by-path name)", spec);
  };
  auto parts = AISRV_TRY(split_camera_spec(spec, rest, [](const std::string&) { return true; }));
  V4l2Options o;
  o.width = parts.width;
  o.height = parts.height;
  o.fourcc = parts.fourcc;
  const std::string& device = parts.name;
  if (device.empty() || device[0] != '/') return usage();
  // A ':' left in the device is only taken from udev's persistent names; elsewhere it is a size or format mistyped.
  if (device.find(':') != std::string::npos && device.rfind("/dev/v4l/", 0) != 0) return usage();
  o.device = device;
  return o;
}

// The device may be absent (not plugged in yet): the source is made anyway and opens it at the first grab once it
// is there. A device that is there but unusable (not a camera, no usable format or size) is an error now.
Result<std::unique_ptr<FrameSource>> open_v4l2_frame_source(const V4l2Options& options) {
  auto source = std::make_unique<V4l2FrameSource>(options);
  if (auto st = source->open_device(); !st && st.error().code != Errc::not_found) return st.error();
  return std::unique_ptr<FrameSource>(std::move(source));
}

}  // namespace aisrv::sensors
