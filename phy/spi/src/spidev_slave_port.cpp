// aisrv phy/spi — Linux spidev on a controller in slave (target) mode. Respects what the kernel offers a target:
//   * one SPI_IOC_MESSAGE(1) full-duplex transfer per transaction, armed with the reply before the master clocks;
//   * it blocks until the master has clocked the whole armed length (no timeout); there is no abort ioctl, so
//     stop() interrupts the blocked ioctl with a signal (works when the transfer runs in the caller's context) and
//     otherwise waits for the master's next transaction;
//   * the ioctl reports the armed length, not what was clocked: the frame's own length field and CRC decide;
//   * "fixed" arms exactly one frame per transaction (controllers that need the length in advance: i.MX, Cadence,
//     Renesas MSIOF...); otherwise the controller must end a transfer when CS is released (Rockchip with
//     CS-inactive abort) — see docs/transport-spi.md.
#include <fcntl.h>
#include <linux/spi/spidev.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>
#include <vector>

#include "spi_ports.hpp"

namespace aisrv::phy::spi {

namespace {

// The signal that interrupts a blocked transfer: a handler that does nothing, installed without SA_RESTART so the
// ioctl returns EINTR.
constexpr int kWakeSignal = SIGUSR2;

void install_wake_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(kWakeSignal, &sa, nullptr);
  });
}

class SpidevSlavePort final : public SpiSlavePort {
 public:
  SpidevSlavePort(std::string path, SpiPortOptions options) : path_(std::move(path)), options_(options) {}
  ~SpidevSlavePort() override {
    if (fd_ >= 0) ::close(fd_);  // spidev's release() calls spi_target_abort(): the controller is reset
  }

  Status open() {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      return make_error(err == ENOENT ? Errc::not_found : Errc::io_error, "{}: cannot open: {}", path_,
                        std::strerror(err));
    }
    uint8_t mode = options_.mode & 3u;
    if (::ioctl(fd_, SPI_IOC_WR_MODE, &mode) < 0)
      return make_error(Errc::io_error, "{}: not an SPI device or mode {} refused (SPI_IOC_WR_MODE: {})", path_,
                        options_.mode, std::strerror(errno));
    uint8_t bits = 8;
    if (::ioctl(fd_, SPI_IOC_WR_BITS_PER_WORD, &bits) < 0)
      return make_error(Errc::io_error, "{}: 8 bits per word refused: {}", path_, std::strerror(errno));
    uint8_t actual = 0;
    if (::ioctl(fd_, SPI_IOC_RD_MODE, &actual) == 0 && (actual & 3u) != mode)
      return make_error(Errc::io_error, "{}: the driver set mode {} instead of {}", path_, actual & 3u, mode);
    install_wake_handler();
    tx_.resize(options_.frame);
    return ok();
  }

  Result<size_t> transfer(std::span<const uint8_t> tx, std::span<uint8_t> rx, std::chrono::milliseconds) override {
    const size_t len = options_.fixed ? options_.frame : std::min<size_t>(rx.size(), options_.frame);
    if (rx.size() < len) return make_error(Errc::invalid_argument, "receive buffer below the frame size");
    std::memset(tx_.data(), AISRV_SPI_FILLER, len);
    std::memcpy(tx_.data(), tx.data(), std::min(tx.size(), len));
    spi_ioc_transfer x{};
    x.tx_buf = reinterpret_cast<uintptr_t>(tx_.data());
    x.rx_buf = reinterpret_cast<uintptr_t>(rx.data());
    x.len = static_cast<uint32_t>(len);
    x.bits_per_word = 8;
    thread_ = pthread_self();
    blocked_ = true;
    for (;;) {
      if (stopped_) {
        blocked_ = false;
        return make_error(Errc::cancelled, "{}: stopped", path_);
      }
      if (::ioctl(fd_, SPI_IOC_MESSAGE(1), &x) >= 0) break;
      const int err = errno;
      if (err == EINTR) continue;
      blocked_ = false;
      return make_error(Errc::io_error, "{}: SPI_IOC_MESSAGE of {} bytes failed: {}{}", path_, len,
                        std::strerror(err), err == EMSGSIZE ? " (raise spidev.bufsiz)" : "");
    }
    blocked_ = false;
    return len;
  }

  void stop() override {
    stopped_ = true;
    if (blocked_) pthread_kill(thread_, kWakeSignal);
  }

  std::string describe() const override {
    return fmt::format("{} (spidev slave, mode {}, {} {}-byte frames)", path_, options_.mode,
                       options_.fixed ? "fixed" : "up to", options_.frame);
  }

 private:
  std::string path_;
  SpiPortOptions options_;
  int fd_ = -1;
  std::vector<uint8_t> tx_;
  pthread_t thread_{};
  std::atomic<bool> blocked_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace

Result<std::unique_ptr<SpiSlavePort>> open_spidev_slave_port(const std::string& path, const SpiPortOptions& options) {
  auto port = std::make_unique<SpidevSlavePort>(path, options);
  AISRV_TRY(port->open());
  return std::unique_ptr<SpiSlavePort>(std::move(port));
}

Result<std::unique_ptr<SpiSlavePort>> open_slave_port(std::string_view target, const SpiPortOptions& options) {
  if (options.frame < AISRV_SPI_MIN_FRAME)
    return make_error(Errc::invalid_argument, "SPI frame size {} is below the minimum of {}", options.frame,
                      AISRV_SPI_MIN_FRAME);
  if (options.mode > 3) return make_error(Errc::invalid_argument, "SPI mode {} is not 0..3", options.mode);
  if (target.rfind("sim:", 0) == 0) return open_sim_slave_port(std::string(target.substr(4)), options);
  if (target.rfind("/dev/", 0) == 0) return open_spidev_slave_port(std::string(target), options);
  return make_error(Errc::invalid_argument, "SPI slave '{}': expected sim:PATH or /dev/spidevB.C", target);
}

}  // namespace aisrv::phy::spi
