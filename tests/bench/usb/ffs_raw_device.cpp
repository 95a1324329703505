// aisrv benchmarks — the device side of the raw USB baseline (tools/bench usb, inside the QEMU guest): a FunctionFS
// function with the same endpoints as aisrv but a plain vendor interface, served the simplest way, with blocking
// read()/write() on the endpoint files and no protocol. Bulk OUT is a sink (read in requests of 1 MiB + 4 KiB, a
// 1 MiB transfer and its terminating packet in one, and dropped); bulk IN is a source (transfers of --size bytes
// written in requests of up to 1 MiB, each transfer ended by a zero-length packet when it is a multiple of the packet
// size, as FunctionFS never adds one).
//   ffs_raw_device FFS_DIR [--size BYTES]
#include <endian.h>
#include <fcntl.h>
#include <linux/usb/ch9.h>
#include <linux/usb/functionfs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "aisrv/phy/ffs_descriptors.hpp"

namespace {

int open_or_die(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    std::fprintf(stderr, "ffs_raw_device: open %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

void write_or_die(int fd, const std::vector<uint8_t>& blob, const char* what) {
  if (::write(fd, blob.data(), blob.size()) != static_cast<ssize_t>(blob.size())) {
    std::fprintf(stderr, "ffs_raw_device: writing %s: %s\n", what, std::strerror(errno));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ffs_raw_device FFS_DIR [--size BYTES]\n");
    return 2;
  }
  const std::string dir = argv[1];
  size_t size = 1u << 20;
  if (argc >= 4 && std::string(argv[2]) == "--size") size = std::strtoul(argv[3], nullptr, 0);

  const int ep0 = open_or_die(dir + "/ep0", O_RDWR);
  write_or_die(ep0, aisrv::phy::usb::ffs_descriptors(0x00, 0x00), "descriptors");
  write_or_die(ep0, aisrv::phy::usb::ffs_strings("raw"), "strings");
  const int out = open_or_die(dir + "/ep1", O_RDWR);
  const int in = open_or_die(dir + "/ep2", O_RDWR);
  std::fprintf(stderr, "ffs_raw_device: ready (transfers of %zu bytes)\n", size);

  std::thread control([ep0] {
    usb_functionfs_event ev[4];
    while (true) {
      const ssize_t n = ::read(ep0, ev, sizeof ev);
      if (n < 0) {
        if (errno == EINTR) continue;
        return;
      }
      for (size_t i = 0; i < static_cast<size_t>(n) / sizeof ev[0]; ++i)
        if (ev[i].type == FUNCTIONFS_SETUP) {  // no control requests: stall
          if (ev[i].u.setup.bRequestType & USB_DIR_IN) (void)!::read(ep0, nullptr, 0);
          else (void)!::write(ep0, nullptr, 0);
        }
    }
  });
  constexpr size_t kRequest = 1u << 20;
  std::thread sink([out] {
    std::vector<uint8_t> buf(kRequest + 4096);
    while (true) {
      if (::read(out, buf.data(), buf.size()) < 0 && errno != EINTR) usleep(10000);  // disabled: wait
    }
  });
  std::vector<uint8_t> data(std::min(size, kRequest), 0x5A);
  size_t mps = 0;
  while (true) {
    size_t sent = 0;
    while (sent < size) {
      const size_t len = std::min(kRequest, size - sent);
      if (::write(in, data.data(), len) < 0) {
        if (errno != EINTR) usleep(10000);
        continue;
      }
      sent += len;
    }
    if (!mps) {
      usb_endpoint_descriptor d{};
      if (ioctl(in, FUNCTIONFS_ENDPOINT_DESC, &d) == 0) mps = le16toh(d.wMaxPacketSize);
      if (!mps) mps = 512;
    }
    if (size % mps == 0) (void)!::write(in, data.data(), 0);
  }
}
