// aisrv interpreter — I2C register writes through i2c-dev (i2c_bus.hpp).
#include "aisrv/i2c_bus.hpp"

#include <fcntl.h>
#include <linux/i2c-dev.h>
#include <linux/i2c.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace aisrv::server {

namespace {

class LinuxI2cBus final : public I2cBus {
 public:
  LinuxI2cBus(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~LinuxI2cBus() override { ::close(fd_); }

  std::string describe() const override { return "i2c:" + path_; }

  Status write_register(uint8_t address, uint8_t reg, uint8_t value) override {
    if (address > 0x7F)
      return make_error(Errc::bad_length, "I2C address {:#04x} is not a 7-bit address", address);
    if (::ioctl(fd_, I2C_SLAVE, static_cast<unsigned long>(address)) < 0)
      return make_error(Errc::io_error, "{}: cannot address device {:#04x}: {}", describe(), address,
                        std::strerror(errno));
    // SMBus "write byte data": works on SMBus-only adapters too (the kernel emulates it on plain I2C ones).
    i2c_smbus_data data{};
    data.byte = value;
    i2c_smbus_ioctl_data args{};
    args.read_write = I2C_SMBUS_WRITE;
    args.command = reg;
    args.size = I2C_SMBUS_BYTE_DATA;
    args.data = &data;
    if (::ioctl(fd_, I2C_SMBUS, &args) < 0) {
      const int err = errno;
      // ENXIO / EREMOTEIO: no device acknowledged the address; EAGAIN: lost arbitration or a busy bus.
      return make_error(Errc::io_error, "{}: writing register {:#04x} of device {:#04x} failed: {} (errno {})",
                        describe(), reg, address, std::strerror(err), err);
    }
    return ok();
  }

 private:
  std::string path_;
  int fd_;
};

}  // namespace

Result<std::unique_ptr<I2cBus>> open_i2c_bus(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return make_error(errno == ENOENT ? Errc::not_found : Errc::io_error, "cannot open {}: {}", path,
                      std::strerror(errno));
  return std::unique_ptr<I2cBus>(std::make_unique<LinuxI2cBus>(path, fd));
}

}  // namespace aisrv::server
