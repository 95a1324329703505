// aisrv hailo8/driver — the real device node: open(2) with O_RDWR | O_CLOEXEC (as libhailort does) and
// ioctl(2), restarted on EINTR only for requests the caller marks restartable.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "aisrv/engine/hailo8/driver/driver_file.hpp"

namespace aisrv::engine::hailo8::driver {
namespace {

class LinuxDriverFile final : public DriverFile {
 public:
  explicit LinuxDriverFile(int fd) : fd_(fd) {}
  ~LinuxDriverFile() override { ::close(fd_); }
  LinuxDriverFile(const LinuxDriverFile&) = delete;
  LinuxDriverFile& operator=(const LinuxDriverFile&) = delete;

  int ioctl(uint32_t request, void* arg, Restart restart) override {
    for (;;) {
      if (::ioctl(fd_, static_cast<unsigned long>(request), arg) >= 0) return 0;
      if (errno != EINTR || restart == Restart::never) return errno;
    }
  }

 private:
  int fd_;
};

}  // namespace

Result<std::unique_ptr<DriverFile>> LinuxDriverOpener::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return make_error(err == ENOENT ? Errc::not_found : Errc::io_error, "cannot open {}: {}", path,
                      std::strerror(err));
  }
  return std::unique_ptr<DriverFile>(std::make_unique<LinuxDriverFile>(fd));
}

}  // namespace aisrv::engine::hailo8::driver
