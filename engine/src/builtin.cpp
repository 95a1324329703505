// aisrv engine — the list of backends compiled into this build.
#include "aisrv/engine/builtin.hpp"

#include "aisrv/engine/hailo8/backend.hpp"

namespace aisrv::engine {

void register_builtin_backends(BackendRegistry& registry) {
  // backends add themselves here: cpu (engine/cpu), hailo8 (engine/hailo8)
  hailo8::register_hailo8_backend(registry);
}

}  // namespace aisrv::engine
