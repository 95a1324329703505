// aisrv host — the part every SPI master link shares: the HAL the C99 MCU client drives (CS windows collected and
// clocked as one transaction by the link, the OS's clock and sleep).
#include "aisrv/client/spi_master.hpp"

#include <chrono>
#include <cstring>
#include <thread>

#include "aisrv/protocol/spi_link.h"

namespace aisrv::client {

aisrv_mcu_hal_t SpiMasterLink::hal() {
  aisrv_mcu_hal_t h{};
  h.ctx = this;
  h.transfer = [](void* ctx, const uint8_t* tx, uint8_t* rx, size_t len) {
    return static_cast<SpiMasterLink*>(ctx)->collect(tx, rx, len);
  };
  h.select = [](void* ctx, int active) { return static_cast<SpiMasterLink*>(ctx)->select(active); };
  h.delay_us = [](void*, uint32_t us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); };
  h.now_us = [](void*) {
    return static_cast<uint32_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  };
  return h;
}

int SpiMasterLink::collect(const uint8_t* tx, uint8_t* rx, size_t len) {
  const size_t at = mosi_.size();
  mosi_.resize(at + len, static_cast<uint8_t>(AISRV_SPI_FILLER));
  if (tx) std::memcpy(mosi_.data() + at, tx, len);
  pieces_.emplace_back(rx, len);
  return 0;
}

int SpiMasterLink::select(int active) {
  if (active) {
    mosi_.clear();
    pieces_.clear();
    return 0;
  }
  miso_.assign(mosi_.size(), static_cast<uint8_t>(AISRV_SPI_FILLER));
  if (const int rc = transact(mosi_, miso_); rc != 0) return rc;
  miso_.resize(mosi_.size(), static_cast<uint8_t>(AISRV_SPI_FILLER));  // what the link did not deliver reads as filler
  size_t at = 0;
  for (const auto& [rx, len] : pieces_) {
    if (rx) std::memcpy(rx, miso_.data() + at, len);
    at += len;
  }
  return 0;
}

}  // namespace aisrv::client
