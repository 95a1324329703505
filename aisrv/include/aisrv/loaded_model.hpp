// aisrv interpreter — a loaded model as the rest of the interpreter sees it: an immutable snapshot (tensor
// descriptions, size, source) stamped with the engine's model generation. Sessions check their tensors against the
// snapshot without taking the engine's lock; a model change publishes a new snapshot with a new generation, which is
// how a session notices that its inputs or outputs belong to a model that is gone.
#pragma once

#include <cstdint>
#include <string>

#include "aisrv/engine/backend.hpp"

namespace aisrv::server {

struct LoadedModel {
  uint32_t engine = 0;
  uint64_t generation = 0;  // counts the engine's model changes (loads and unloads), from 1; never reused
  engine::ModelInfo info;
  uint32_t bytes = 0;       // model size
  std::string source;       // "wire (arena)", "flash", ...
};

}  // namespace aisrv::server
