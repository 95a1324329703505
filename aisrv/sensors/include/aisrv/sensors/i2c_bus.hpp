// aisrv sensors — a sensor's I2C bus through the kernel's i2c-dev (/dev/i2c-N): START_ACQUIRE_SET_I2C writes one
// register of a device on it (I2C_SLAVE for the address, then an SMBus "write byte data" of register and value, which
// SMBus-only adapters handle and the kernel emulates on plain I2C ones); 16-bit register addresses (an aisrv extension)
// go as an SMBus "I2C block write". A device that does not acknowledge, a busy bus or any other failure comes back
// with the errno's text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "aisrv/protocol/result.hpp"

namespace aisrv::sensors {

class I2cBus {
 public:
  virtual ~I2cBus() = default;
  virtual std::string describe() const = 0;  // "i2c:/dev/i2c-1"
  virtual Status write_register(uint8_t address, uint8_t reg, uint8_t value) = 0;
  // A register of a device with 16-bit register addresses (camera sensors such as the IMX219): the bus carries the
  // register's high byte, its low byte, then the value (an SMBus "I2C block write" of [low, value] at command high).
  virtual Status write_register16(uint8_t address, uint16_t reg, uint8_t value) = 0;
};

// Opens /dev/i2c-N (Errc::not_found when missing, Errc::io_error otherwise).
Result<std::unique_ptr<I2cBus>> open_i2c_bus(const std::string& path);

}  // namespace aisrv::sensors
