// aisrv engine — registers every backend this build contains (cpu, hailo8, ...) with a registry.
#pragma once

#include "aisrv/engine/registry.hpp"

namespace aisrv::engine {

void register_builtin_backends(BackendRegistry& registry);

}  // namespace aisrv::engine
