// aisrv CPU engine, reference kernels — DEPTH_TO_SPACE and SPACE_TO_DEPTH (NHWC): the depth of the deep side splits
// into block × block runs of the shallow side's depth, ordered by (row within the block, column within the block),
// as TensorFlow Lite's reference DepthToSpace / SpaceToDepth place them. Any element type (bytes are moved).
#include <cstring>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

void ReferenceKernelBackend::space_depth(const SpaceDepthParams& p) {
  // Walk the pixels of the spatially large side; each one owns a contiguous run of `run` channels there and a
  // contiguous run at a block-dependent channel offset of the deep side's pixel.
  const Dims4& large = p.to_space ? p.output_shape : p.input_shape;
  const Dims4& deep = p.to_space ? p.input_shape : p.output_shape;
  const int32_t bs = p.block_size;
  const auto run = static_cast<size_t>(large.c) * p.element_size;
  const auto* in = static_cast<const uint8_t*>(p.input);
  auto* out = static_cast<uint8_t*>(p.output);
  for (int32_t n = 0; n < large.n; ++n)
    for (int32_t y = 0; y < large.h; ++y)
      for (int32_t x = 0; x < large.w; ++x) {
        const int32_t channel = ((y % bs) * bs + x % bs) * large.c;
        const auto large_at = static_cast<size_t>(large.offset(n, y, x, 0)) * p.element_size;
        const auto deep_at = static_cast<size_t>(deep.offset(n, y / bs, x / bs, channel)) * p.element_size;
        if (p.to_space) std::memcpy(out + large_at, in + deep_at, run);
        else std::memcpy(out + deep_at, in + large_at, run);
      }
}

}  // namespace aisrv::engine::cpu
