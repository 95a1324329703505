// aisrv CPU engine — the arena memory planner (in the spirit of TFLite Micro's greedy memory planner and TIDL's
// memory records): given every buffer's size and lifetime (first and last operator that touches it), place all of
// them at offsets in one arena so that buffers alive at the same time never overlap. Greedy by size: largest buffer
// first, each at the lowest offset that fits between the already placed buffers whose lifetimes overlap its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace aisrv::engine::cpu {

struct BufferRequest {
  size_t bytes = 0;
  int32_t first = 0;  // first operator index that uses the buffer (inclusive)
  int32_t last = 0;   // last operator index that uses the buffer (inclusive)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per request, aligned
  size_t arena_bytes = 0;       // end of the highest placed buffer, aligned
  size_t naive_bytes = 0;       // sum of all (aligned) sizes: what one buffer per tensor would take
  size_t peak_live_bytes = 0;   // largest total of buffers alive at one time: no plan can use less

  // peak_live / arena in [0, 1]; 1 means the plan reaches the lower bound.
  double efficiency() const {
    return arena_bytes == 0 ? 1.0 : static_cast<double>(peak_live_bytes) / static_cast<double>(arena_bytes);
  }
};

inline constexpr size_t kArenaAlignment = 64;  // cache line: also suits every SIMD load an optimised kernel makes

MemoryPlan plan_memory(std::span<const BufferRequest> requests, size_t alignment = kArenaAlignment);

}  // namespace aisrv::engine::cpu
