// aisrv phy/spi — the slave side of an SPI bus, as the link layer sees it: arm one transaction with the bytes to
// shift out, block until the master has clocked it, get the bytes it shifted in. Implementations:
//   sim:PATH          a simulated wire: whole full-duplex transactions from a master process over a Unix socket
//   /dev/spidevB.C    Linux spidev on a controller in slave (target) mode
// docs/transport-spi.md has the semantics of each (what the master decides, what unprepared bytes read as, limits).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "aisrv/protocol/result.hpp"
#include "aisrv/protocol/spi_link.h"

namespace aisrv::phy::spi {

class SpiSlavePort {
 public:
  virtual ~SpiSlavePort() = default;

  // Arms one transaction: `tx` is shifted out on MISO (bytes past its end read as AISRV_SPI_FILLER), MOSI bytes are
  // stored in `rx` (bytes past rx.size() are dropped). Blocks until the master has ended the transaction and returns
  // how many bytes it clocked; a port that cannot tell returns rx.size(). Errc::timeout when no transaction began
  // within `idle` (only ports that can wake up; others keep blocking), Errc::cancelled after stop(), io_error when
  // the device failed.
  virtual Result<size_t> transfer(std::span<const uint8_t> tx, std::span<uint8_t> rx,
                                  std::chrono::milliseconds idle) = 0;
  // Makes a blocked transfer() return Errc::cancelled as soon as the hardware lets it (any thread).
  virtual void stop() = 0;
  // What the port is, e.g. "sim:/run/aisrv-spi.sock" or "/dev/spidev1.0 (mode 0, fixed 4092-byte frames)".
  virtual std::string describe() const = 0;
};

struct SpiPortOptions {
  uint16_t frame = AISRV_SPI_DEFAULT_FRAME;  // largest transaction (fixed: every transaction's size)
  bool fixed = false;                        // the controller needs the transfer length in advance
  uint8_t mode = 0;                          // spidev: SPI mode 0..3 (CPOL/CPHA)
};

// The simulated wire's framing on its Unix stream socket (one master connected at a time):
//   master -> slave   u32 n (little-endian) | n MOSI bytes        one transaction: CS low, n clocks, CS high
//   slave  -> master  n MISO bytes                               the armed bytes, then filler
// The slave reads a transaction only while it is armed, so the master waits as it would for a ready line.
inline constexpr uint32_t kSimMaxTransaction = 1u << 20;

// "sim:PATH" or a spidev device path ("/dev/spidevB.C"). Errc::invalid_argument for anything else.
Result<std::unique_ptr<SpiSlavePort>> open_slave_port(std::string_view target, const SpiPortOptions& options);

}  // namespace aisrv::phy::spi
