// aisrv host — Linux spidev as SPI master: a CS window (a transaction) becomes one full-duplex SPI_IOC_MESSAGE(1) (CS asserted for
// the whole message, released after it). Transfers are limited by the driver's bufsiz (module parameter, 4096 by
// default), so the largest frame is min(4092, bufsiz) unless bufsiz was raised.
#include <fcntl.h>
#include <linux/spi/spidev.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "aisrv/client/spi_master.hpp"

namespace aisrv::client {

namespace {

// spidev's per-transfer limit, from the module parameter (default 4096 when it cannot be read).
uint32_t spidev_bufsiz() {
  std::ifstream f("/sys/module/spidev/parameters/bufsiz");
  uint32_t v = 0;
  if (f >> v && v > 0) return v;
  return 4096;
}

class SpidevMaster final : public SpiMasterLink {
 public:
  SpidevMaster(std::string device, uint32_t hz) : device_(std::move(device)), hz_(hz) {}
  ~SpidevMaster() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status open(uint8_t mode) {
    fd_ = ::open(device_.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      return make_error(err == ENOENT ? Errc::not_found : Errc::io_error, "{}: cannot open: {}", device_,
                        std::strerror(err));
    }
    if (::ioctl(fd_, SPI_IOC_WR_MODE, &mode) < 0)
      return make_error(Errc::io_error, "{}: not an SPI device or mode {} refused (SPI_IOC_WR_MODE: {})", device_,
                        mode, std::strerror(errno));
    uint8_t bits = 8;
    if (::ioctl(fd_, SPI_IOC_WR_BITS_PER_WORD, &bits) < 0)
      return make_error(Errc::io_error, "{}: 8 bits per word refused: {}", device_, std::strerror(errno));
    if (::ioctl(fd_, SPI_IOC_WR_MAX_SPEED_HZ, &hz_) < 0)
      return make_error(Errc::io_error, "{}: clock {} Hz refused: {}", device_, hz_, std::strerror(errno));
    const uint32_t bufsiz = spidev_bufsiz();
    max_frame_ = static_cast<uint16_t>(std::min<uint32_t>({bufsiz >= 4096 ? bufsiz - 4 : bufsiz, AISRV_SPI_MAX_FRAME}));
    if (max_frame_ < AISRV_SPI_MIN_FRAME)
      return make_error(Errc::io_error, "{}: spidev bufsiz {} is below the smallest frame ({})", device_, bufsiz,
                        AISRV_SPI_MIN_FRAME);
    return ok();
  }

  uint16_t max_frame() const override { return max_frame_; }
  std::string describe() const override { return fmt::format("spi:{}:{}", device_, hz_); }

 private:
  int transact(std::span<const uint8_t> mosi, std::vector<uint8_t>& miso) override {
    if (mosi.empty()) return 0;
    spi_ioc_transfer x{};
    x.tx_buf = reinterpret_cast<uintptr_t>(mosi.data());
    x.rx_buf = reinterpret_cast<uintptr_t>(miso.data());
    x.len = static_cast<uint32_t>(mosi.size());
    x.speed_hz = hz_;
    x.bits_per_word = 8;
    return ::ioctl(fd_, SPI_IOC_MESSAGE(1), &x) < 0 ? -1 : 0;
  }

  std::string device_;
  uint32_t hz_;
  int fd_ = -1;
  uint16_t max_frame_ = AISRV_SPI_DEFAULT_FRAME;
};

}  // namespace

Result<std::unique_ptr<SpiMasterLink>> open_spidev_master(const std::string& device, uint32_t hz, uint8_t mode) {
  if (hz == 0) return make_error(Errc::invalid_argument, "{}: SPI clock must be above 0 Hz", device);
  if (mode > 3) return make_error(Errc::invalid_argument, "{}: SPI mode {} is not 0..3", device, mode);
  auto m = std::make_unique<SpidevMaster>(device, hz);
  AISRV_TRY(m->open(mode));
  return std::unique_ptr<SpiMasterLink>(std::move(m));
}

}  // namespace aisrv::client
