// aisrv tests — helpers for calling the CPU engine's kernels directly with hand-built parameter structs.
#pragma once

#include <cstdint>
#include <vector>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::test {

using engine::cpu::Dims4;
using engine::cpu::Shape;

inline Shape shape_of(std::initializer_list<int32_t> dims) {
  Shape s;
  s.rank = static_cast<int>(dims.size());
  int i = 0;
  for (int32_t d : dims) s.dims[static_cast<size_t>(i++)] = d;
  return s;
}

// (multiplier, shift) of a real multiplier that is an exact power of two: 2^e.
inline std::pair<int32_t, int32_t> pow2_multiplier(int e) { return {1 << 30, e + 1}; }

}  // namespace aisrv::test
