// aisrv sensors — I2C register writes through i2c-dev (i2c_bus.hpp).
#include "aisrv/sensors/i2c_bus.hpp"

#include <fcntl.h>
#include <linux/i2c-dev.h>
#include <linux/i2c.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace aisrv::sensors {

namespace {

class LinuxI2cBus final : public I2cBus {
 public:
  LinuxI2cBus(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~LinuxI2cBus() override { ::close(fd_); }

  std::string describe() const override { return "i2c:" + path_; }

  Status write_register(uint8_t address, uint8_t reg, uint8_t value) override {
    AISRV_TRY(select(address));
    // SMBus "write byte data": works on SMBus-only adapters too (the kernel emulates it on plain I2C ones).
    i2c_smbus_data data{};
    data.byte = value;
    return transfer(address, reg, reg, I2C_SMBUS_BYTE_DATA, data, 2);
  }

  Status write_register16(uint8_t address, uint16_t reg, uint8_t value) override {
    AISRV_TRY(select(address));
    // SMBus "I2C block write": command = the register's high byte, then [low byte, value] with no count byte on the
    // bus, i.e. exactly the bytes a 16-bit-register device expects.
    i2c_smbus_data data{};
    data.block[0] = 2;
    data.block[1] = static_cast<uint8_t>(reg & 0xFF);
    data.block[2] = value;
    return transfer(address, reg, static_cast<uint8_t>(reg >> 8), I2C_SMBUS_I2C_BLOCK_DATA, data, 4);
  }

 private:
  Status select(uint8_t address) {
    if (address > 0x7F)
      return make_error(Errc::bad_length, "I2C address {:#04x} is not a 7-bit address", address);
    if (::ioctl(fd_, I2C_SLAVE, static_cast<unsigned long>(address)) < 0)
      return make_error(Errc::io_error, "{}: cannot address device {:#04x}: {}", describe(), address,
                        std::strerror(errno));
    return ok();
  }

  // `digits`: how the register is printed (2 or 4 hex digits).
  Status transfer(uint8_t address, uint16_t reg, uint8_t command, uint32_t size, i2c_smbus_data& data, int digits) {
    i2c_smbus_ioctl_data args{};
    args.read_write = I2C_SMBUS_WRITE;
    args.command = command;
    args.size = size;
    args.data = &data;
    if (::ioctl(fd_, I2C_SMBUS, &args) < 0) {
      const int err = errno;
      // ENXIO / EREMOTEIO: no device acknowledged the address; EAGAIN: lost arbitration or a busy bus; EOPNOTSUPP:
      // the adapter cannot do this kind of transfer.
      return make_error(Errc::io_error, "{}: writing register {:#0{}x} of device {:#04x} failed: {} (errno {})",
                        describe(), reg, digits + 2, address, std::strerror(err), err);
    }
    return ok();
  }

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

}  // namespace aisrv::sensors
