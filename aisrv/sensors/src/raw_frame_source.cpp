// aisrv sensors — raw frame source: frames from a regular file (looped), a FIFO or a character device, read as
// bytes of the input's size (no conversion).
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "aisrv/sensors/frame_source.hpp"

namespace aisrv::sensors {

namespace {

constexpr int kFrameTimeoutMs = 2000;

class RawFrameSource final : public FrameSource {
 public:
  RawFrameSource(std::string path, int fd, bool regular) : path_(std::move(path)), fd_(fd), regular_(regular) {}
  ~RawFrameSource() override { ::close(fd_); }

  std::string describe() const override { return "file:" + path_; }

  // Reads one frame of the input's size; fit() refuses a crop window and checks the size again (the model may have
  // changed between the grab and the engine's turn).
  Status grab(const protocol::TensorInfo& input, SensorFrame& out) override {
    out.what = describe();
    out.bytes.resize(input.bytes);
    std::span<uint8_t> frame(out.bytes);
    size_t have = 0;
    bool rewound = false;
    while (have < frame.size()) {
      const ssize_t n = ::read(fd_, frame.data() + have, frame.size() - have);
      if (n > 0) {
        have += static_cast<size_t>(n);
        continue;
      }
      if (n == 0) {
        if (!regular_) return make_error(Errc::sensor_error, "{}: the writer closed the stream", describe());
        // End of a recorded file: play it again from the start (a partial frame at the end is discarded).
        if (rewound || ::lseek(fd_, 0, SEEK_SET) != 0)
          return make_error(Errc::sensor_error, "{}: file holds no complete {}-byte frame", describe(), frame.size());
        rewound = true;
        have = 0;
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd_, POLLIN, 0};
        const int r = ::poll(&p, 1, kFrameTimeoutMs);
        if (r == 0)
          return make_error(Errc::sensor_error, "{}: no frame within {} ms ({} of {} bytes)", describe(),
                            kFrameTimeoutMs, have, frame.size());
        continue;
      }
      return make_error(Errc::sensor_error, "{}: read failed: {}", describe(), std::strerror(errno));
    }
    return ok();
  }

 private:
  std::string path_;
  int fd_;
  bool regular_;
};

}  // namespace

Result<std::unique_ptr<FrameSource>> open_raw_frame_source(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; reads poll with a timeout instead.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return make_error(Errc::not_found, "cannot open frame source {}: {}", path, std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  return std::unique_ptr<FrameSource>(new RawFrameSource(path, fd, S_ISREG(st.st_mode)));
}

}  // namespace aisrv::sensors
