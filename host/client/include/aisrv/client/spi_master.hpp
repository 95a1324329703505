// aisrv host — SPI master links: the HAL (aisrv_mcu_hal_t) the C99 MCU client drives, for a Linux host.
//   Linux spidev as master (e.g. a Raspberry Pi driving a board): each CS window is one SPI_IOC_MESSAGE(1)
//   the simulated wire's master end (phy/spi sim port): each CS window is one whole transaction over a Unix socket
// Both collect the bytes of a CS window and clock them when CS is released (allowed by the HAL contract: the client
// reads received bytes only after release).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "aisrv/mcu/aisrv_mcu.h"
#include "aisrv/protocol/result.hpp"

namespace aisrv::client {

class SpiMasterLink {
 public:
  virtual ~SpiMasterLink() = default;
  // The HAL for aisrv_mcu_init() (transfer → collect, select → select, delays and time from the OS); valid while
  // this object lives.
  aisrv_mcu_hal_t hal();
  // Largest transaction this master can clock (spidev: the driver's bufsiz).
  virtual uint16_t max_frame() const = 0;
  virtual std::string describe() const = 0;

 protected:
  // The HAL's transfer and chip select (0 = ok, as aisrv_mcu_hal_t says): bytes of a CS window are collected and
  // clocked when CS is released.
  virtual int collect(const uint8_t* tx, uint8_t* rx, size_t len) = 0;
  virtual int select(int active) = 0;
};

// spi:/dev/spidevB.C[:HZ] — HZ defaults to 1 MHz; mode 0, 8 bits. Errc::not_found when the device is missing,
// io_error when it is not an SPI device or refuses the settings.
Result<std::unique_ptr<SpiMasterLink>> open_spidev_master(const std::string& device, uint32_t hz, uint8_t mode = 0);

// spi-sim:PATH — connects when a transaction needs it (a missing slave reads as filler, like an empty bus).
// `reply_timeout`: how long to wait for the slave to take a transaction before treating it as absent.
// With `must_exist`, Errc::not_found at once when nothing listens at PATH.
Result<std::unique_ptr<SpiMasterLink>> open_sim_master(const std::string& path, bool must_exist = true,
                                                       std::chrono::milliseconds reply_timeout =
                                                           std::chrono::milliseconds(5000));

}  // namespace aisrv::client
