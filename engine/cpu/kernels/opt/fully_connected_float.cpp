// aisrv CPU engine, optimised kernels — float32 FULLY_CONNECTED (float_kernels.hpp), bit-exact with the reference's
// reference_ops::FullyConnected order: per output, +0.0f, then input[d] x weight[o][d] for d = 0, 1, ..., then + bias,
// then the clamp. The fc loop vectorises over kFcOutputs outputs (their weight rows, read from the model as they
// are, transposed in registers a few depth entries at a time) and up to kFcBatches batch rows share each transposed
// block. With a worker pool, the groups of outputs are split into ranges.
#include <algorithm>

#include "float_kernels.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu::opt {

bool fully_connected_float_run(const FullyConnectedParams& p, SimdLevel level, WorkerPool& pool) {
  if (p.dtype != DType::float32 || p.filter_type != DType::float32) return false;
  if (p.batches < 0 || p.accum_depth < 0 || p.output_depth < 0) return false;
  if (p.batches == 0 || p.output_depth == 0) return true;
  const FloatKernels k = float_kernels(level);
  const auto depth = static_cast<size_t>(p.accum_depth);
  const auto outputs = static_cast<size_t>(p.output_depth);
  const size_t groups = (outputs + kFcOutputs - 1) / kFcOutputs;
  const size_t threads = pool.size();
  const size_t parts = threads == 1 ? 1 : std::min(groups, 4 * threads);
  const uint64_t macs = uint64_t{depth} * outputs * static_cast<uint64_t>(p.batches);
  pool.run(parts, [&](size_t part, size_t) {
    FloatFcBlock f;
    f.input_stride = depth;
    f.weight_stride = depth;
    f.depth = p.accum_depth;
    f.act_min = p.float_act_min;
    f.act_max = p.float_act_max;
    f.out_stride = outputs;
    for (size_t g = groups * part / parts; g < groups * (part + 1) / parts; ++g) {
      const size_t o0 = g * kFcOutputs;
      f.outputs = static_cast<int32_t>(std::min<size_t>(kFcOutputs, outputs - o0));
      f.weights = static_cast<const float*>(p.weights) + o0 * depth;
      f.bias = p.float_bias ? p.float_bias + o0 : nullptr;
      for (int32_t b = 0; b < p.batches; b += kFcBatches) {
        f.batches = std::min(kFcBatches, p.batches - b);
        f.input = static_cast<const float*>(p.input) + static_cast<size_t>(b) * depth;
        f.out = static_cast<float*>(p.output) + static_cast<size_t>(b) * outputs + o0;
        k.fc(f);
      }
    }
  }, macs);
  return true;
}

}  // namespace aisrv::engine::cpu::opt
