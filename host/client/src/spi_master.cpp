// aisrv host — the part every SPI master link shares: the HAL the C99 MCU client drives, built from the link's
// collect/select and the OS's clock and sleep.
#include "aisrv/client/spi_master.hpp"

#include <chrono>
#include <thread>

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

}  // namespace aisrv::client
