// aisrv host — SPI master links: the HAL (aisrv_mcu_hal_t) the C99 MCU client drives, for a Linux host.
//   Linux spidev as master (e.g. a Raspberry Pi driving a board): each CS window is one SPI_IOC_MESSAGE(1)
//   the simulated wire's master end (phy/spi sim port): each CS window is one whole transaction over a Unix socket
// The base collects the bytes of a CS window and has the link clock them as one transaction when CS is released
// (allowed by the HAL contract: the client reads received bytes only after release).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

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
  // One transaction (a CS window) on this link: clocks out `mosi` and fills `miso`, which comes in with
  // mosi.size() filler bytes. 0 = ok, as aisrv_mcu_hal_t says. A link that wraps another clocks through this.
  int transaction(std::span<const uint8_t> mosi, std::vector<uint8_t>& miso) { return transact(mosi, miso); }

 protected:
  virtual int transact(std::span<const uint8_t> mosi, std::vector<uint8_t>& miso) = 0;

 private:
  // The HAL's transfer and chip select: the bytes of a CS window are collected, clocked by transact() when CS is
  // released, and the received bytes copied to where the client asked for them.
  int collect(const uint8_t* tx, uint8_t* rx, size_t len);
  int select(int active);

  std::vector<uint8_t> mosi_, miso_;
  std::vector<std::pair<uint8_t*, size_t>> pieces_;  // the client's receive buffers of this window, in order
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
