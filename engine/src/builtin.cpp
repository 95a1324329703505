// aisrv engine — the list of backends compiled into this build.
#include "aisrv/engine/builtin.hpp"

#include "aisrv/engine/cpu/cpu_backend.hpp"

namespace aisrv::engine {

void register_builtin_backends(BackendRegistry& registry) {
  cpu::register_cpu_backend(registry);  // hailo8 (engine/hailo8) adds itself here
}

}  // namespace aisrv::engine
