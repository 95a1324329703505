// aisrv CPU engine, optimised kernels — ADD: inputs of the output's shape (no broadcasting) go through the
// vectorised element loop (split across the worker pool when large); broadcasting and parameters outside the vector
// preconditions use the reference kernel.
#include <algorithm>
#include <functional>

#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace {
// An element of ADD (three requantizations) costs about as much as 32 multiply-accumulates of a convolution, the
// pool's measure of work: layers of a few thousand elements are worth splitting.
constexpr uint64_t kAddWorkPerElement = 32;
}  // namespace

void OptimizedKernelBackend::add(const AddParams& p) {
  auto rescale_ok = [](int32_t multiplier, int32_t shift) { return multiplier >= 0 && shift <= 0 && shift >= -31; };
  const bool same_shape = p.input1_shape == p.output_shape && p.input2_shape == p.output_shape;
  if (!same_shape || p.left_shift < 0 || p.left_shift > 30 || !rescale_ok(p.input1_multiplier, p.input1_shift) ||
      !rescale_ok(p.input2_multiplier, p.input2_shift) || !rescale_ok(p.output_multiplier, p.output_shift)) {
    ReferenceKernelBackend::add(p);
    return;
  }
  opt::AddSpan s;
  s.a = static_cast<const uint8_t*>(p.input1);
  s.b = static_cast<const uint8_t*>(p.input2);
  s.out = static_cast<uint8_t*>(p.output);
  s.count = p.output_shape.elements();
  s.a_offset = p.input1_offset;
  s.b_offset = p.input2_offset;
  s.output_offset = p.output_offset;
  s.left_shift = p.left_shift;
  s.a_multiplier = p.input1_multiplier;
  s.a_shift = p.input1_shift;
  s.b_multiplier = p.input2_multiplier;
  s.b_shift = p.input2_shift;
  s.output_multiplier = p.output_multiplier;
  s.output_shift = p.output_shift;
  s.act_min = p.act_min;
  s.act_max = p.act_max;
  // Split across the worker pool in spans of whole 64-element blocks (the vector loop's steps stay aligned).
  const auto add = kernels_.add[p.dtype == DType::int8 ? 0 : 1];
  const uint64_t work = static_cast<uint64_t>(s.count) * kAddWorkPerElement;
  if (!pool_.may_hand_out(work)) {  // one participant, or too little to hand out: one call
    add(s);
    return;
  }
  const auto blocks = static_cast<size_t>((s.count + 63) / 64);
  const size_t parts = std::max<size_t>(std::min(blocks, 2 * pool_.size()), 1);
  // Passed by reference: a std::function holds a reference_wrapper without allocating (the lambda itself
  // would be copied to the heap on every call, one malloc / free per operator).
  const auto part_fn = [&](size_t part, size_t) {
    const auto first = static_cast<int64_t>(blocks * part / parts * 64);
    const auto end = std::min(static_cast<int64_t>(blocks * (part + 1) / parts * 64), s.count);
    if (first >= end) return;
    opt::AddSpan mine = s;
    mine.a += first;
    mine.b += first;
    mine.out += first;
    mine.count = end - first;
    add(mine);
  };
  pool_.run(parts, std::cref(part_fn), work);
}

}  // namespace aisrv::engine::cpu
