// aisrv host — SPI host transport: one command = one aisrv_mcu_exchange() of the C99 client over a master link.
#include "aisrv/client/spi_transport.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace aisrv::client {

namespace {
constexpr uint32_t kDefaultHz = 1000000;
constexpr uint32_t kDefaultGetHint = 64;  // first answer bytes asked for when a GET's answer length is not known yet
}  // namespace

aisrv_mcu_config_t SpiTransport::config_for(const SpiMasterLink& link, const ConnectOptions& options) {
  aisrv_mcu_config_t cfg;
  aisrv_mcu_default_config(&cfg);
  cfg.max_frame = std::min<uint16_t>(cfg.max_frame, link.max_frame());
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(options.timeout).count();
  cfg.timeout_us = static_cast<uint32_t>(std::clamp<int64_t>(us, 1, 0xFFFFFFFF));
  return cfg;
}

Result<std::unique_ptr<SpiTransport>> SpiTransport::open(std::string_view target, const ConnectOptions& options) {
  std::unique_ptr<SpiMasterLink> link;
  if (target.rfind("spi-sim:", 0) == 0) {
    link = AISRV_TRY(open_sim_master(std::string(target.substr(8))));
  } else if (target.rfind("spi:", 0) == 0) {
    std::string device(target.substr(4));
    uint32_t hz = kDefaultHz;
    if (const size_t colon = device.rfind(':'); colon != std::string::npos) {
      const std::string_view digits = std::string_view(device).substr(colon + 1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), hz);
      if (ec != std::errc() || end != digits.data() + digits.size() || hz == 0)
        return make_error(Errc::invalid_argument, "'{}': the clock after the device must be a number of Hz", target);
      device.resize(colon);
    }
    if (device.empty()) return make_error(Errc::invalid_argument, "'{}': expected spi:/dev/spidevB.C[:HZ]", target);
    link = AISRV_TRY(open_spidev_master(device, hz));
  } else {
    return make_error(Errc::invalid_argument, "'{}': expected spi:/dev/spidevB.C[:HZ] or spi-sim:PATH", target);
  }
  const auto cfg = config_for(*link, options);
  return std::make_unique<SpiTransport>(std::move(link), cfg);
}

SpiTransport::SpiTransport(std::unique_ptr<SpiMasterLink> link, const aisrv_mcu_config_t& config)
    : link_(std::move(link)) {
  const aisrv_mcu_hal_t hal = link_->hal();
  init_rc_ = aisrv_mcu_init(&client_, &hal, &config);
}

SpiTransport::~SpiTransport() = default;

std::string SpiTransport::describe() const { return link_->describe(); }

Error SpiTransport::link_error(int rc, const protocol::Header& header) const {
  Errc code = Errc::io_error;
  switch (rc) {
    case AISRV_MCU_E_TIMEOUT: code = Errc::timeout; break;
    case AISRV_MCU_E_PROTOCOL: code = Errc::protocol_error; break;
    case AISRV_MCU_E_INCOMPATIBLE: code = Errc::incompatible; break;
    case AISRV_MCU_E_ARG: code = Errc::invalid_argument; break;
    default: break;
  }
  std::string detail;
  if (client_.stats.last_link_error)
    detail = fmt::format("; last frame rejected: {}", aisrv_spi_error_name(client_.stats.last_link_error));
  return make_error(code, "SPI link {} during {}: {} ({} transactions, {} bad replies, {} rejected frames{})",
                    link_->describe(), protocol::command_name(header.cmd), aisrv_mcu_strerror(rc),
                    client_.stats.transactions, client_.stats.bad_replies, client_.stats.rejected, detail);
}

Status SpiTransport::transact(const protocol::Header& header, std::span<const uint8_t> payload,
                              protocol::Response& response) {
  response.clear();
  if (init_rc_ != AISRV_MCU_OK) return link_error(init_rc_, header);
  if (payload.size() > AISRV_MAX_PAYLOAD)
    return make_error(Errc::bad_length, "payload of {} bytes is above the protocol limit of {}", payload.size(),
                      AISRV_MAX_PAYLOAD);
  aisrv_mcu_source_t src{};
  src.data = payload.data();
  src.length = static_cast<uint32_t>(payload.size());
  const auto key = std::make_tuple(header.cmd, header.engine, header.tensor);
  uint32_t hint = protocol::server_returns(header.cmd) ? kDefaultGetHint : 0;
  if (auto it = hints_.find(key); it != hints_.end()) hint = it->second;
  response.payload.resize(hint);
  uint32_t len = 0, status = 0;
  int rc = aisrv_mcu_exchange(&client_, header.cmd, header.engine, header.tensor, payload.empty() ? nullptr : &src,
                              hint ? response.payload.data() : nullptr, hint, &len, &status);
  if (rc == AISRV_MCU_E_TOO_SMALL) {
    // The answer stays on the server until the next command: read it again into a buffer of its size.
    response.payload.resize(len);
    rc = aisrv_mcu_read_answer(&client_, len ? response.payload.data() : nullptr, len, &len);
  }
  if (rc != AISRV_MCU_OK) {
    response.clear();
    return link_error(rc, header);
  }
  response.status = status;
  response.payload.resize(len);
  if (hints_.size() >= 256) hints_.clear();  // bounded: one entry per command shape in use
  hints_[key] = len;
  return ok();
}

}  // namespace aisrv::client
