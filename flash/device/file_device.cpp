// aisrv flash — FileFlash: NOR-semantics flash image in a regular file (pread/pwrite, flock, fdatasync).
#include "aisrv/flash/file_device.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace aisrv::flash {

namespace {

constexpr size_t kFillChunk = 1024 * 1024;

Error sys_error(Errc code, const char* what, const std::filesystem::path& path) {
  return make_error(code, "{} {}: {}", what, path.string(), std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<FileFlash>> FileFlash::create(const std::filesystem::path& path, const Geometry& geometry) {
  AISRV_TRY(validate(geometry));
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return sys_error(errno == EEXIST ? Errc::invalid_argument : Errc::io_error, "cannot create", path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return sys_error(Errc::io_error, "cannot lock", path);
  }
  std::unique_ptr<FileFlash> dev(new FileFlash(geometry, fd, path, false));
  const std::vector<uint8_t> ff(static_cast<size_t>(std::min<uint64_t>(kFillChunk, geometry.size)), 0xFF);
  for (uint64_t done = 0; done < geometry.size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(ff.size(), geometry.size - done));
    AISRV_TRY(dev->write_all(done, std::span(ff.data(), n), "fill"));
    done += n;
  }
  AISRV_TRY(dev->do_sync());
  return dev;
}

Result<std::unique_ptr<FileFlash>> FileFlash::open(const std::filesystem::path& path, uint32_t erase_block,
                                                   uint32_t write_size, bool read_only) {
  const int fd = ::open(path.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) return sys_error(errno == ENOENT ? Errc::not_found : Errc::io_error, "cannot open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return sys_error(Errc::io_error, "cannot stat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(Errc::invalid_argument, "{} is not a regular file (use mtd:/dev/mtdN for MTD devices)",
                      path.string());
  }
  if (::flock(fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    if (e == EWOULDBLOCK)
      return make_error(Errc::io_error, "flash image {} is in use by another process", path.string());
    return sys_error(Errc::io_error, "cannot lock", path);
  }
  const Geometry g{static_cast<uint64_t>(st.st_size), erase_block, write_size};
  if (auto v = validate(g); !v) {
    ::close(fd);
    return make_error(Errc::flash_error, "flash image {} ({} bytes) does not fit the geometry: {}", path.string(),
                      st.st_size, v.error().message);
  }
  return std::unique_ptr<FileFlash>(new FileFlash(g, fd, path, read_only));
}

FileFlash::~FileFlash() {
  if (fd_ >= 0) ::close(fd_);
}

std::string FileFlash::name() const { return fmt::format("file {}", path_.string()); }

Status FileFlash::do_read(uint64_t offset, std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error(Errc::io_error, "read failed on", path_);
    }
    if (n == 0)
      return make_error(Errc::flash_error, "flash image {} ends at {} (truncated while open?)", path_.string(),
                        offset + done);
    done += static_cast<size_t>(n);
  }
  return ok();
}

Status FileFlash::write_all(uint64_t offset, std::span<const uint8_t> data, const char* op) {
  if (read_only_) return make_error(Errc::flash_error, "{} of {} is refused: opened read-only", op, path_.string());
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error(Errc::io_error, "write failed on", path_);
    }
    done += static_cast<size_t>(n);
  }
  return ok();
}

Status FileFlash::do_program(uint64_t offset, std::span<const uint8_t> data) {
  return write_all(offset, data, "program");
}

Status FileFlash::do_erase(uint64_t offset, uint64_t length) {
  const std::vector<uint8_t> ff(static_cast<size_t>(std::min<uint64_t>(kFillChunk, length)), 0xFF);
  for (uint64_t done = 0; done < length;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(ff.size(), length - done));
    AISRV_TRY(write_all(offset + done, std::span(ff.data(), n), "erase"));
    done += n;
  }
  return ok();
}

Status FileFlash::do_sync() {
  if (read_only_) return ok();
  if (::fdatasync(fd_) != 0) return sys_error(Errc::io_error, "fdatasync failed on", path_);
  return ok();
}

}  // namespace aisrv::flash
