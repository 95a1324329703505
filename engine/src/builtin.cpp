// aisrv engine — the list of backends compiled into this build.
#include "aisrv/engine/builtin.hpp"

namespace aisrv::engine {

void register_builtin_backends(BackendRegistry& registry) {
  (void)registry;  // backends add themselves here: cpu (engine/cpu), hailo8 (engine/hailo8)
}

}  // namespace aisrv::engine
