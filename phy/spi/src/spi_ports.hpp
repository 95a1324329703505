// aisrv phy/spi — constructors of the concrete slave ports (internal; open_slave_port() picks one by target).
#pragma once

#include <fmt/format.h>

#include <memory>
#include <string>

#include "aisrv/phy/spi_slave_port.hpp"

namespace aisrv::phy::spi {

Result<std::unique_ptr<SpiSlavePort>> open_sim_slave_port(const std::string& path, const SpiPortOptions& options);
Result<std::unique_ptr<SpiSlavePort>> open_spidev_slave_port(const std::string& path, const SpiPortOptions& options);

}  // namespace aisrv::phy::spi
