// aisrv CPU engine, optimised kernels — FULLY_CONNECTED: each batch row is widened once to int16 (+ input offset,
// zero-padded to a multiple of 16) in scratch, then the row kernel takes dot products with the weight rows read
// straight from the model (each weight is used once per row, so repacking would only add memory traffic). With a
// worker pool, a large row's outputs are split into one range per participant (the widened row is shared).
// float32 layers run fully_connected_float.cpp; dynamic-range ones the reference kernel (with the reference's
// scratch).
#include <algorithm>
#include <cstring>

#include "../ref/scratch.hpp"
#include "float_kernels.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace opt {

namespace {
size_t padded_depth(const FullyConnectedParams& p) {
  return (static_cast<size_t>(std::max(p.accum_depth, 0)) + 15) / 16 * 16;
}
// The layers this file computes: 8-bit ones.
bool quantized(const FullyConnectedParams& p) { return p.dtype == DType::int8 || p.dtype == DType::uint8; }
}  // namespace

size_t fully_connected_scratch_bytes(const FullyConnectedParams& p) {
  if (!quantized(p)) return ref::scratch_bytes(p);
  return std::max(padded_depth(p) * sizeof(int16_t), ref::scratch_bytes(p));
}

}  // namespace opt

void OptimizedKernelBackend::fully_connected(const FullyConnectedParams& p) {
  if (!opt::quantized(p)) {
    if (!opt::fully_connected_float_run(p, level_, pool_)) ReferenceKernelBackend::fully_connected(p);
    return;
  }
  const size_t padded = opt::padded_depth(p);
  if (p.scratch.size() < padded * sizeof(int16_t) ||
      p.output_multiplier.size() < static_cast<size_t>(p.output_depth) ||
      p.output_shift.size() < static_cast<size_t>(p.output_depth)) {
    ReferenceKernelBackend::fully_connected(p);
    return;
  }
  const int u = p.dtype == DType::int8 ? 0 : 1;
  auto* x = reinterpret_cast<int16_t*>(p.scratch.data());
  const auto depth = static_cast<size_t>(p.accum_depth);
  std::memset(x + depth, 0, (padded - depth) * sizeof(int16_t));
  opt::FcRow row;
  row.input = x;
  row.weights = static_cast<const uint8_t*>(p.weights);
  row.depth = p.accum_depth;
  row.outputs = p.output_depth;
  row.filter_offset = p.filter_offset;
  row.bias = p.bias;
  row.multiplier = p.output_multiplier.data();
  row.shift = p.output_shift.data();
  row.output_offset = p.output_offset;
  row.act_min = p.act_min;
  row.act_max = p.act_max;
  for (size_t b = 0; b < static_cast<size_t>(p.batches); ++b) {
    kernels_.widen[u](static_cast<const uint8_t*>(p.input) + b * depth, x, depth, p.input_offset);
    row.out = static_cast<uint8_t*>(p.output) + b * static_cast<size_t>(p.output_depth);
    const auto outputs = static_cast<size_t>(p.output_depth);
    const size_t parts = std::min(pool_.size(), outputs);
    pool_.run(parts, [&](size_t part, size_t) {
      const size_t first = outputs * part / parts, end = outputs * (part + 1) / parts;
      opt::FcRow slice = row;
      slice.weights = row.weights + first * depth;
      slice.outputs = static_cast<int32_t>(end - first);
      if (row.bias) slice.bias = row.bias + first;
      slice.multiplier = row.multiplier + first;
      slice.shift = row.shift + first;
      slice.out = row.out + first;
      kernels_.fc_row[u](slice);
    }, uint64_t{depth} * outputs);
  }
}

}  // namespace aisrv::engine::cpu
