// aisrv host — the SPI host transport: the C99 MCU client (host/mcu) over a master link, so the CLI and the C++
// library speak exactly what a microcontroller speaks. Targets:
//   spi:/dev/spidevB.C[:HZ]   Linux spidev as SPI master
//   spi-sim:PATH              the simulated wire to `aisrvd --spi sim:PATH`
#pragma once

#include <map>
#include <memory>
#include <string_view>
#include <tuple>

#include "aisrv/client/spi_master.hpp"
#include "aisrv/client/transport.hpp"

namespace aisrv::client {

class SpiTransport final : public HostTransport {
 public:
  // Parses an spi: or spi-sim: target and opens its master link.
  static Result<std::unique_ptr<SpiTransport>> open(std::string_view target, const ConnectOptions& options);
  // Over any master link (tests wrap one to inject faults). `config` may adjust the client (frame size...).
  SpiTransport(std::unique_ptr<SpiMasterLink> link, const aisrv_mcu_config_t& config);
  ~SpiTransport() override;

  Status transact(const protocol::Header& header, std::span<const uint8_t> payload,
                  protocol::Response& response) override;
  std::string describe() const override;

  const aisrv_mcu_stats_t& stats() const { return client_.stats; }
  uint16_t frame() const { return aisrv_mcu_frame(&client_); }
  // The MCU client's defaults with the per-command timeout of `options` and the link's frame limit.
  static aisrv_mcu_config_t config_for(const SpiMasterLink& link, const ConnectOptions& options);

 private:
  Error link_error(int rc, const protocol::Header& header) const;

  std::unique_ptr<SpiMasterLink> link_;
  aisrv_mcu_t client_{};
  int init_rc_ = 0;
  // Expected answer length per (cmd, engine, tensor): the first answer bytes ride on the first reply.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> hints_;
};

}  // namespace aisrv::client
