// aisrv engine — the list of backends compiled into this build.
#include "aisrv/engine/builtin.hpp"

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "aisrv/engine/hailo8/backend.hpp"

namespace aisrv::engine {

void register_builtin_backends(BackendRegistry& registry) {
  cpu::register_cpu_backend(registry);
  hailo8::register_hailo8_backend(registry);
}

}  // namespace aisrv::engine
