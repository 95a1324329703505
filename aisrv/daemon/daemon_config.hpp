// aisrvd — parsing of the daemon's engine and chain arguments ("N=KIND[:options]", "A:B") into a checked plan.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <utility>
#include <vector>

#include "aisrv/engine/registry.hpp"

namespace aisrv::daemon {

// "--engine N=SPEC" values, in any order; engines must end up numbered 0..N-1 without gaps or duplicates.
Result<std::vector<engine::EngineSpec>> parse_engine_args(const std::vector<std::string>& args);
// "--sensor N=PATH" values.
Result<std::vector<std::pair<uint32_t, std::string>>> parse_sensor_args(const std::vector<std::string>& args);
// "--chain A:B" values.
Result<std::vector<std::pair<uint32_t, uint32_t>>> parse_chain_args(const std::vector<std::string>& args);

}  // namespace aisrv::daemon
