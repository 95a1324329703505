// aisrv interpreter — a V4L2 camera as a frame source: format negotiation (the requested FOURCC or the first usable
// one the device offers; an error lists what it offers), mmap streaming buffers, poll with a timeout, the newest
// frame (older ones counted as dropped, never queued), conversion to RGB or grey (YUYV with BT.601 limited range,
// RGB24, BGR24, GREY; MJPEG through engine/image's JPEG decoder), then crop, resize and quantization for the input
// (engine/image). A device that goes away (ENODEV, EIO) is closed; the next capture opens it again.
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <vector>

#include "aisrv/frame_source.hpp"
#include "aisrv/image/image.hpp"
#include "aisrv/image/tensor_image.hpp"

namespace aisrv::server {

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

uint8_t clamp8(int v) { return static_cast<uint8_t>(std::clamp(v, 0, 255)); }

// YUYV (Y0 U Y1 V per two pixels), ITU-R BT.601 limited range, integer arithmetic (8-bit fixed point).
void yuyv_to_rgb(const uint8_t* src, uint32_t width, uint32_t height, uint32_t stride, image::Image& out) {
  out.width = width;
  out.height = height;
  out.channels = 3;
  out.pixels.resize(static_cast<size_t>(width) * height * 3);
  for (uint32_t y = 0; y < height; ++y) {
    const uint8_t* row = src + static_cast<size_t>(y) * stride;
    uint8_t* o = out.pixels.data() + static_cast<size_t>(y) * width * 3;
    for (uint32_t x = 0; x < width; ++x) {
      const uint8_t* pair = row + (x & ~1u) * 2;
      const int c = 298 * (pair[(x & 1) * 2] - 16);
      const int d = pair[1] - 128, e = pair[3] - 128;
      *o++ = clamp8((c + 409 * e + 128) >> 8);
      *o++ = clamp8((c - 100 * d - 208 * e + 128) >> 8);
      *o++ = clamp8((c + 516 * d + 128) >> 8);
    }
  }
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
    if (fd < 0)
      return make_error(errno == ENOENT ? Errc::not_found : Errc::io_error, "cannot open {}: {}", options_.device,
                        std::strerror(errno));
    fd_ = fd;
    auto st = configure();
    if (!st) close_device();
    return st;
  }

  Status capture(const protocol::TensorInfo& input, const std::optional<AcquireWindow>& window,
                 std::span<uint8_t> frame) override {
    if (fd_ < 0) AISRV_TRY(open_device());
    image::Image picture;
    auto st = grab(picture);
    if (!st) return st;
    image::Preprocess pre;
    if (window) {
      pre.crop = image::Crop{window->x0, window->y0, window->x1 - window->x0, window->y1 - window->y0};
      if (auto c = image::check_crop(picture, *pre.crop); !c)
        return make_error(Errc::bad_length, "{}: {}", describe(), c.error().message);
    }
    auto tensor = image::image_to_tensor(picture, input, pre);
    if (!tensor) return make_error(tensor.error().code, "{}: {}", describe(), tensor.error().message);
    if (tensor->size() != frame.size())
      return make_error(Errc::internal, "{}: converted frame is {} bytes, the input takes {}", describe(),
                        tensor->size(), frame.size());
    std::memcpy(frame.data(), tensor->data(), frame.size());
    return ok();
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
    return make_error(Errc::io_error, "{}: {}: {} (closed; the next acquisition opens it again)", where, what,
                      std::strerror(err));
  }

  // The newest frame: everything already queued up is given back, then the next one is waited for, so a single
  // acquisition never returns a picture taken long before it was asked for. Dropped frames are counted from the
  // driver's sequence numbers: those given back here and those the driver itself dropped for want of a buffer.
  Status grab(image::Image& out) {
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
        return make_error(Errc::infer_error, "{}: no frame within {} ms (the camera stalled)", describe(),
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
    auto st = convert(static_cast<const uint8_t*>(buffers_[b.index].start), b.bytesused, out);
    if (xioctl(fd_, VIDIOC_QBUF, &b) < 0) return lost("VIDIOC_QBUF");
    return st;
  }

  Status convert(const uint8_t* data, size_t size, image::Image& out) {
    const size_t need = static_cast<size_t>(stride_) * height_;
    if (pixelformat_ != V4L2_PIX_FMT_MJPEG && size < need)
      return make_error(Errc::infer_error, "{}: a frame of {} bytes, {} expected", describe(), size, need);
    switch (pixelformat_) {
      case V4L2_PIX_FMT_YUYV: yuyv_to_rgb(data, width_, height_, stride_, out); return ok();
      case V4L2_PIX_FMT_RGB24:
      case V4L2_PIX_FMT_BGR24:
      case V4L2_PIX_FMT_GREY: {
        const uint32_t ch = pixelformat_ == V4L2_PIX_FMT_GREY ? 1 : 3;
        out.width = width_;
        out.height = height_;
        out.channels = ch;
        out.pixels.resize(static_cast<size_t>(width_) * height_ * ch);
        for (uint32_t y = 0; y < height_; ++y) {
          const uint8_t* row = data + static_cast<size_t>(y) * stride_;
          uint8_t* o = out.pixels.data() + static_cast<size_t>(y) * width_ * ch;
          if (pixelformat_ == V4L2_PIX_FMT_BGR24) {
            for (uint32_t x = 0; x < width_; ++x) {
              o[x * 3] = row[x * 3 + 2];
              o[x * 3 + 1] = row[x * 3 + 1];
              o[x * 3 + 2] = row[x * 3];
            }
          } else {
            std::memcpy(o, row, static_cast<size_t>(width_) * ch);
          }
        }
        return ok();
      }
      case V4L2_PIX_FMT_MJPEG: {
        auto picture = image::decode_image(std::span<const uint8_t>(data, size), describe());
        if (!picture) return picture.error();
        out = std::move(*picture);
        return ok();
      }
      default: return make_error(Errc::internal, "{}: unexpected format", describe());
    }
  }

  V4l2Options options_;
  int fd_ = -1;
  bool streaming_ = false;
  uint32_t width_ = 0, height_ = 0, stride_ = 0, pixelformat_ = 0;
  std::vector<Buffer> buffers_;
  std::atomic<uint64_t> dropped_{0};  // read by the stream's reports and stop without the engine's lock
  uint32_t last_sequence_ = 0;  // of the last frame used; restarts when the device is opened again
  bool have_sequence_ = false;
};

}  // namespace

Result<V4l2Options> parse_v4l2_spec(const std::string& spec) {
  if (spec.rfind("v4l2:", 0) != 0) return make_error(Errc::invalid_argument, "'{}' is not v4l2:DEVICE…", spec);
  V4l2Options o;
  std::vector<std::string> parts;
  size_t at = 5;
  for (;;) {
    const size_t colon = spec.find(':', at);
    parts.push_back(spec.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
    if (colon == std::string::npos) break;
    at = colon + 1;
  }
  if (parts.empty() || parts[0].empty() || parts[0][0] != '/' || parts.size() > 3)
    return make_error(Errc::invalid_argument, "'{}': expected v4l2:/dev/videoN[:WxH[:FOURCC]]", spec);
  o.device = parts[0];
  if (parts.size() >= 2 && !parts[1].empty()) {
    unsigned w = 0, h = 0;
    char x = 0;
    if (std::sscanf(parts[1].c_str(), "%u%c%u", &w, &x, &h) != 3 || x != 'x' || w == 0 || h == 0 || w > 16384 ||
        h > 16384)
      return make_error(Errc::invalid_argument, "'{}': size '{}' is not WxH", spec, parts[1]);
    o.width = w;
    o.height = h;
  }
  if (parts.size() == 3) {
    if (parts[2].size() != 4) return make_error(Errc::invalid_argument, "'{}': FOURCC '{}' is not 4 characters", spec,
                                                parts[2]);
    o.fourcc = parts[2];
  }
  return o;
}

Result<std::unique_ptr<FrameSource>> open_v4l2_frame_source(const V4l2Options& options) {
  auto source = std::make_unique<V4l2FrameSource>(options);
  AISRV_TRY(source->open_device());  // fail at start-up for a missing device or an unusable format
  return std::unique_ptr<FrameSource>(std::move(source));
}

}  // namespace aisrv::server
