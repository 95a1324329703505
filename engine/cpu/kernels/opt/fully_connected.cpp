// aisrv CPU engine, optimised kernels — FULLY_CONNECTED: each batch row is widened once to int16 (+ input offset,
// zero-padded to a multiple of 16) in scratch, then the row kernel takes dot products with the weight rows read
// straight from the model (each weight is used once per row, so repacking would only add memory traffic). With a
// worker pool, a large row's outputs are split into one range per participant (the widened row is shared).
// At the VNNI levels (a table with fc_vnni) the weights are instead packed at load into blocks of 16 outputs of
// signed bytes with the input offset folded into the bias (FcVnniRow in opt_kernels.hpp): each batch row becomes
// unsigned bytes once, and VPDPBUSD streams the packed weights (batch 1 is a GEMV; the weights are read once).
// float32 layers run fully_connected_float.cpp; dynamic-range ones the reference kernel (with the reference's
// scratch).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>

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
  // The VNNI path's byte row (k4 <= padded depth bytes) fits in the int16 row.
  return std::max(padded_depth(p) * sizeof(int16_t), ref::scratch_bytes(p));
}

namespace {
// Prepared data of the VNNI path: header | bias' | multiplier | shift (int32, blocks * 16 each) | weights
// (blocks * k4 * 16 bytes); every part starts 64-byte aligned (16 int32 = 64 bytes).
struct FcVnniPlan {
  size_t k4 = 0, blocks = 0;
  bool fits = false;
  size_t padded_outputs() const { return blocks * kFcVnniBlock; }
  size_t bias_at() const { return kPreparedHeaderBytes; }
  size_t multiplier_at() const { return bias_at() + padded_outputs() * sizeof(int32_t); }
  size_t shift_at() const { return multiplier_at() + padded_outputs() * sizeof(int32_t); }
  size_t weights_at() const { return shift_at() + padded_outputs() * sizeof(int32_t); }
  size_t bytes() const { return weights_at() + blocks * k4 * kFcVnniBlock; }
};

FcVnniPlan plan_fc_vnni(const FullyConnectedParams& p) {
  FcVnniPlan c;
  if (!quantized(p) || p.accum_depth < 1 || p.output_depth < 1) return c;
  c.k4 = (static_cast<size_t>(p.accum_depth) + 3) / 4 * 4;
  c.blocks = (static_cast<size_t>(p.output_depth) + kFcVnniBlock - 1) / kFcVnniBlock;
  const long double bytes = static_cast<long double>(c.blocks) * kFcVnniBlock * (static_cast<long double>(c.k4) + 12);
  c.fits = bytes < kMaxKernelBytes && c.k4 <= static_cast<size_t>(INT32_MAX / 2);
  return c;
}

// alpha and beta of FcVnniRow: x + input_offset = a + alpha, w + filter_offset = b + beta.
int64_t fc_alpha(const FullyConnectedParams& p) { return p.dtype == DType::int8 ? p.input_offset - 128 : p.input_offset; }
int64_t fc_beta(const FullyConnectedParams& p) { return p.dtype == DType::int8 ? p.filter_offset : p.filter_offset + 128; }
}  // namespace

size_t fully_connected_prepared_bytes(const FullyConnectedParams& p, const OptKernels& k) {
  const int u = p.dtype == DType::int8 ? 0 : 1;
  if (!quantized(p) || !k.fc_vnni[u]) return 0;
  const FcVnniPlan c = plan_fc_vnni(p);
  return c.fits ? c.bytes() : 0;
}

void fully_connected_prepare(const FullyConnectedParams& p, std::span<uint8_t> prepared) {
  PreparedHeader h;
  h.magic = kPreparedMagic;
  h.layout = static_cast<uint32_t>(GemmLayout::vnni);
  const FcVnniPlan c = plan_fc_vnni(p);
  if (!c.fits || prepared.size() < c.bytes()) return;
  const auto outputs = static_cast<size_t>(p.output_depth);
  h.usable = p.weights && p.output_multiplier.size() >= outputs && p.output_shift.size() >= outputs &&
             requantization_in_range(p.output_multiplier, p.output_shift);
  if (h.usable) {
    const auto depth = static_cast<size_t>(p.accum_depth);
    const auto* w = static_cast<const uint8_t*>(p.weights);
    auto* bias = reinterpret_cast<int32_t*>(prepared.data() + c.bias_at());
    auto* multiplier = reinterpret_cast<int32_t*>(prepared.data() + c.multiplier_at());
    auto* shift = reinterpret_cast<int32_t*>(prepared.data() + c.shift_at());
    auto* packed = reinterpret_cast<int8_t*>(prepared.data() + c.weights_at());
    std::memset(prepared.data() + c.bias_at(), 0, c.bytes() - c.bias_at());
    const int64_t alpha = fc_alpha(p), beta = fc_beta(p);
    const bool u8 = p.dtype == DType::uint8;
    for (size_t o = 0; o < outputs; ++o) {
      int64_t sum_b = 0;
      int8_t* block = packed + (o / kFcVnniBlock) * c.k4 * kFcVnniBlock + (o % kFcVnniBlock) * 4;
      for (size_t k = 0; k < depth; ++k) {
        const int32_t b = u8 ? int32_t{w[o * depth + k]} - 128 : int32_t{static_cast<int8_t>(w[o * depth + k])};
        block[(k / 4) * 4 * kFcVnniBlock + k % 4] = static_cast<int8_t>(b);
        sum_b += b;
      }
      // bias + alpha * sum b + K * alpha * beta, wrapped to int32 once (exact modulo 2^32).
      const int64_t folded = (p.bias ? p.bias[o] : 0) + alpha * sum_b + static_cast<int64_t>(depth) * alpha * beta;
      bias[o] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(folded)));
      multiplier[o] = p.output_multiplier[o];
      shift[o] = p.output_shift[o];
    }
  }
  std::memcpy(prepared.data(), &h, sizeof h);
}

namespace {
// The VNNI path; false (nothing written) when the prepared data or scratch is not usable.
bool fully_connected_vnni(const FullyConnectedParams& p, const OptKernels& kernels, WorkerPool& pool) {
  PreparedHeader h;
  if (p.prepared.size() >= sizeof h) std::memcpy(&h, p.prepared.data(), sizeof h);
  const FcVnniPlan c = plan_fc_vnni(p);
  if (h.magic != kPreparedMagic || !h.usable || h.layout != static_cast<uint32_t>(GemmLayout::vnni) ||
      !c.fits || p.prepared.size() < c.bytes() || p.scratch.size() < c.k4)
    return false;
  const int u = p.dtype == DType::int8 ? 0 : 1;
  const auto depth = static_cast<size_t>(p.accum_depth);
  const auto outputs = static_cast<size_t>(p.output_depth);
  uint8_t* a = p.scratch.data();
  std::memset(a + depth, 0, c.k4 - depth);
  const uint8_t* base = p.prepared.data();
  FcVnniRow row;
  row.input = a;
  row.k4 = static_cast<int32_t>(c.k4);
  row.output_offset = p.output_offset;
  row.act_min = p.act_min;
  row.act_max = p.act_max;
  const auto beta = static_cast<uint32_t>(fc_beta(p));
  const size_t block_bytes = c.k4 * kFcVnniBlock;
  for (size_t b = 0; b < static_cast<size_t>(p.batches); ++b) {
    const uint8_t* x = static_cast<const uint8_t*>(p.input) + b * depth;
    // a = x + 128 (int8: the sign bit flipped) or x; and beta * sum a when beta is not 0.
    uint32_t sum_a = 0;
    if (u == 0) {
      for (size_t k = 0; k < depth; ++k) a[k] = static_cast<uint8_t>(x[k] ^ 0x80u);
    } else {
      std::memcpy(a, x, depth);
    }
    if (beta != 0)
      for (size_t k = 0; k < depth; ++k) sum_a += a[k];
    row.row_offset = static_cast<int32_t>(beta * sum_a);
    uint8_t* out = static_cast<uint8_t*>(p.output) + b * outputs;
    const size_t parts = std::min(pool.size(), c.blocks);
    // Passed by reference: a std::function holds a reference_wrapper without allocating (the lambda itself
    // would be copied to the heap on every call, one malloc / free per operator).
    const auto part_fn = [&](size_t part, size_t) {
      const size_t first = c.blocks * part / parts, end = c.blocks * (part + 1) / parts;
      if (first == end) return;
      FcVnniRow slice = row;
      const size_t o0 = first * kFcVnniBlock;
      slice.weights = reinterpret_cast<const int8_t*>(base + c.weights_at() + first * block_bytes);
      slice.blocks = static_cast<int32_t>(end - first);
      slice.outputs = static_cast<int32_t>(std::min(outputs, end * kFcVnniBlock) - o0);
      slice.bias = reinterpret_cast<const int32_t*>(base + c.bias_at()) + o0;
      slice.multiplier = reinterpret_cast<const int32_t*>(base + c.multiplier_at()) + o0;
      slice.shift = reinterpret_cast<const int32_t*>(base + c.shift_at()) + o0;
      slice.out = out + o0;
      kernels.fc_vnni[u](slice);
    };
    pool.run(parts, std::cref(part_fn), uint64_t{depth} * outputs);
  }
  return true;
}
}  // namespace
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
  if (kernels_.fc_vnni[u] && opt::fully_connected_vnni(p, kernels_, pool_)) return;
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
    // Passed by reference: a std::function holds a reference_wrapper without allocating (the lambda itself
    // would be copied to the heap on every call, one malloc / free per operator).
    const auto part_fn = [&](size_t part, size_t) {
      const size_t first = outputs * part / parts, end = outputs * (part + 1) / parts;
      opt::FcRow slice = row;
      slice.weights = row.weights + first * depth;
      slice.outputs = static_cast<int32_t>(end - first);
      if (row.bias) slice.bias = row.bias + first;
      slice.multiplier = row.multiplier + first;
      slice.shift = row.shift + first;
      slice.out = row.out + first;
      kernels_.fc_row[u](slice);
    };
    pool_.run(parts, std::cref(part_fn), uint64_t{depth} * outputs);
  }
}

}  // namespace aisrv::engine::cpu
