// aisrv flash — FileFlash: NOR-semantics flash image in a regular file (pread/pwrite, flock, fdatasync).
#include "aisrv/flash/file_device.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace aisrv::flash {

namespace {

constexpr size_t kFillChunk = 1024 * 1024;
constexpr size_t kWriteBehindMin = 256 * 1024;

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
  if (map_) ::munmap(const_cast<uint8_t*>(map_), geometry().size);
  if (fd_ >= 0) {
    (void)flush_pending_erases();
    ::close(fd_);
  }
}

std::span<const uint8_t> FileFlash::do_view(uint64_t offset, uint64_t length) {
  if (!map_) {
    void* p = ::mmap(nullptr, geometry().size, PROT_READ, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return {};
    map_ = static_cast<const uint8_t*>(p);
  }
  const uint32_t eb = geometry().erase_block;
  for (uint64_t b = offset / eb; b <= (offset + length - 1) / eb; ++b)
    if (pending_erase_[b]) return {};
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_size) < geometry().size) return {};
  return {map_ + offset, static_cast<size_t>(length)};
}

Status FileFlash::write_erased(uint64_t block) {
  const uint32_t eb = geometry().erase_block;
  if (ff_.size() != eb) ff_.assign(eb, 0xFF);
  AISRV_TRY(write_all(block * eb, ff_, "erase"));
  pending_erase_[block] = false;
  return ok();
}

Status FileFlash::flush_pending_erases() {
  for (uint64_t b = 0; b < pending_erase_.size(); ++b)
    if (pending_erase_[b]) AISRV_TRY(write_erased(b));
  return ok();
}

std::string FileFlash::name() const { return fmt::format("file {}", path_.string()); }

Status FileFlash::do_read(uint64_t offset, std::span<uint8_t> out) {
  const uint32_t eb = geometry().erase_block;
  size_t done = 0;
  while (done < out.size()) {
    // Pending erased blocks read as 0xFF; other runs come from the file.
    const uint64_t at = offset + done;
    uint64_t block = at / eb;
    if (!pending_erase_.empty() && pending_erase_[block]) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(eb - at % eb, out.size() - done));
      std::memset(out.data() + done, 0xFF, n);
      done += n;
      continue;
    }
    uint64_t run_end = (block + 1) * eb;
    while (run_end < offset + out.size() && !(pending_erase_.size() > run_end / eb && pending_erase_[run_end / eb]))
      run_end += eb;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(run_end, offset + out.size()) - at);
    const ssize_t n = ::pread(fd_, out.data() + done, want, static_cast<off_t>(at));
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error(Errc::io_error, "read failed on", path_);
    }
    if (n == 0)
      return make_error(Errc::flash_error, "flash image {} ends at {} (truncated while open?)", path_.string(), at);
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
  if (read_only_) return make_error(Errc::flash_error, "program of {} is refused: opened read-only", path_.string());
  // A pending erased block the data covers completely is written once, with the data; one it covers partly gets its
  // 0xFF first.
  const uint32_t eb = geometry().erase_block;
  const uint64_t end = offset + data.size();
  for (uint64_t b = offset / eb; b <= (end - 1) / eb; ++b) {
    if (!pending_erase_[b]) continue;
    if (offset <= b * eb && end >= (b + 1) * eb) pending_erase_[b] = false;
    else AISRV_TRY(write_erased(b));
  }
  AISRV_TRY(write_all(offset, data, "program"));
  // Write-behind: start writing large programs back now, so the next sync() waits for less (the store hashes and
  // programs the next piece meanwhile). Only a hint; sync() remains the barrier. Errors surface there.
  if (data.size() >= kWriteBehindMin)
    (void)::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(data.size()),
                            SYNC_FILE_RANGE_WRITE);
  return ok();
}

Status FileFlash::do_erase(uint64_t offset, uint64_t length) {
  if (read_only_) return make_error(Errc::flash_error, "erase of {} is refused: opened read-only", path_.string());
  const uint32_t eb = geometry().erase_block;
  for (uint64_t b = offset / eb; b < (offset + length) / eb; ++b) pending_erase_[b] = true;
  return ok();
}

Status FileFlash::do_sync() {
  if (read_only_) return ok();
  AISRV_TRY(flush_pending_erases());
  if (::fdatasync(fd_) != 0) return sys_error(Errc::io_error, "fdatasync failed on", path_);
  return ok();
}

}  // namespace aisrv::flash
