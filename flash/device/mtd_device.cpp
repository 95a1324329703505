// aisrv flash — MtdFlash: Linux mtdchar device (MEMGETINFO / MEMERASE ioctls, pread / pwrite).
#include "aisrv/flash/mtd_device.hpp"

#include <fcntl.h>
#include <mtd/mtd-user.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace aisrv::flash {

namespace {

const char* mtd_type_name(unsigned type) {
  switch (type) {
    case MTD_ABSENT: return "absent";
    case MTD_RAM: return "RAM";
    case MTD_ROM: return "ROM";
    case MTD_NORFLASH: return "NOR";
    case MTD_NANDFLASH: return "NAND";
    case MTD_DATAFLASH: return "DataFlash";
    case MTD_UBIVOLUME: return "UBI volume";
    case MTD_MLCNANDFLASH: return "MLC NAND";
    default: return "unknown";
  }
}

Error sys_error(const char* what, const std::string& node) {
  return make_error(Errc::io_error, "{} {}: {}", what, node, std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<MtdFlash>> MtdFlash::open(const std::string& node, bool read_only) {
  const int fd = ::open(node.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) {
    const Errc code = errno == ENOENT ? Errc::not_found : Errc::io_error;
    return make_error(code, "cannot open MTD device {}: {}", node, std::strerror(errno));
  }
  auto fail = [fd](Error e) -> Error {
    ::close(fd);
    return e;
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(sys_error("cannot stat", node));
  if (!S_ISCHR(st.st_mode))
    return fail(make_error(Errc::invalid_argument, "{} is not a character device (an MTD node is /dev/mtdN)", node));
  mtd_info_user mi{};
  if (::ioctl(fd, MEMGETINFO, &mi) != 0)
    return fail(make_error(Errc::invalid_argument, "{} is not an MTD character device (MEMGETINFO: {})", node,
                           std::strerror(errno)));
  const char* type = mtd_type_name(mi.type);
  switch (mi.type) {
    case MTD_RAM:
    case MTD_NORFLASH:
    case MTD_DATAFLASH: break;
    case MTD_ROM:
      if (read_only) break;
      return fail(make_error(Errc::not_supported, "{} is a ROM MTD device: it cannot hold a writable store", node));
    default:
      return fail(make_error(Errc::not_supported,
                             "{} is a {} MTD device: the store needs NOR-like flash (NAND needs bad-block handling; "
                             "use a UBI volume on top of it)",
                             node, type));
  }
  if (!read_only && !(mi.flags & MTD_WRITEABLE))
    return fail(make_error(Errc::not_supported, "{} ({}) is not writeable (MTD flags 0x{:x})", node, type, mi.flags));
  int regions = 0;
  if (::ioctl(fd, MEMGETREGIONCOUNT, &regions) == 0 && regions > 1)
    return fail(make_error(Errc::not_supported, "{} has {} erase regions of different sizes: not supported", node,
                           regions));
  const Geometry g{mi.size, mi.erasesize, mi.writesize ? mi.writesize : 1};
  if (auto v = validate(g); !v)
    return fail(make_error(Errc::not_supported, "{} geometry unusable: {}", node, v.error().message));
  return std::unique_ptr<MtdFlash>(new MtdFlash(g, fd, node, type, read_only));
}

MtdFlash::~MtdFlash() {
  if (fd_ >= 0) ::close(fd_);
}

std::string MtdFlash::name() const { return fmt::format("mtd {} ({})", node_, type_); }

Status MtdFlash::do_read(uint64_t offset, std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(Errc::io_error, "read of {} bytes at 0x{:x} from {} failed: {}", out.size() - done,
                        offset + done, node_, std::strerror(errno));
    }
    if (n == 0) return make_error(Errc::flash_error, "{} ended at 0x{:x}", node_, offset + done);
    done += static_cast<size_t>(n);
  }
  return ok();
}

Status MtdFlash::do_program(uint64_t offset, std::span<const uint8_t> data) {
  if (read_only_) return make_error(Errc::flash_error, "program of {} is refused: opened read-only", node_);
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(Errc::io_error, "program of {} bytes at 0x{:x} on {} failed: {}", data.size() - done,
                        offset + done, node_, std::strerror(errno));
    }
    if (n == 0) return make_error(Errc::flash_error, "{} accepted no bytes at 0x{:x}", node_, offset + done);
    done += static_cast<size_t>(n);
  }
  return ok();
}

Status MtdFlash::do_erase(uint64_t offset, uint64_t length) {
  if (read_only_) return make_error(Errc::flash_error, "erase of {} is refused: opened read-only", node_);
  // The device size fits in 32 bits (mtd_info_user.size), so MEMERASE's 32-bit fields suffice.
  erase_info_user ei{};
  ei.start = static_cast<uint32_t>(offset);
  ei.length = static_cast<uint32_t>(length);
  if (::ioctl(fd_, MEMERASE, &ei) != 0)
    return make_error(Errc::io_error, "MEMERASE of {} bytes at 0x{:x} on {} failed: {}", length, offset, node_,
                      std::strerror(errno));
  return ok();
}

Status MtdFlash::do_sync() {
  // mtdchar writes and erases complete on the chip before the call returns; there is no cache to flush.
  return ok();
}

}  // namespace aisrv::flash
