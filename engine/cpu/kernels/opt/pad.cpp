// aisrv CPU engine, optimised kernels — PAD / PADV2: walks the output dimension by dimension; a slab that lies
// wholly in the padding is filled in one go (memset when the pad value's bytes are all equal, which includes every
// 1-byte type), the innermost row is padding + one memcpy of the input row + padding. Large pads are split across
// the worker pool along their first dimension longer than 1.
#include <algorithm>
#include <cstring>

#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

struct PadWalk {
  const PadParams& p;
  size_t es;
  bool uniform;  // every byte of the pad value is the same
  std::array<size_t, kMaxRank> out_stride{}, in_stride{};  // in elements

  void fill(uint8_t* out, size_t elements) const {
    if (elements == 0) return;
    if (uniform) {
      std::memset(out, p.pad_value[0], elements * es);
      return;
    }
    std::memcpy(out, p.pad_value.data(), es);
    size_t done = 1;
    while (done < elements) {  // doubling copies of the pattern
      const size_t n = std::min(done, elements - done);
      std::memcpy(out + done * es, out, n * es);
      done += n;
    }
  }

  void walk(int d, const uint8_t* in, uint8_t* out) const {
    const Shape &os = p.output_shape, &is = p.input_shape;
    const auto k = static_cast<size_t>(d);
    const auto before = static_cast<size_t>(p.before[k]);
    const auto inside = static_cast<size_t>(is[d]);
    const auto total = static_cast<size_t>(os[d]);
    if (d == os.rank - 1) {
      fill(out, before);
      std::memcpy(out + before * es, in, inside * es);
      fill(out + (before + inside) * es, total - before - inside);
      return;
    }
    fill(out, before * out_stride[k]);
    for (size_t i = 0; i < inside; ++i)
      walk(d + 1, in + i * in_stride[k] * es, out + (before + i) * out_stride[k] * es);
    fill(out + (before + inside) * out_stride[k] * es, (total - before - inside) * out_stride[k]);
  }
};

}  // namespace

void OptimizedKernelBackend::pad(const PadParams& p) {
  const Shape &os = p.output_shape, &is = p.input_shape;
  bool consistent = os.rank == is.rank && p.element_size >= 1 && p.element_size <= p.pad_value.size();
  for (int d = 0; consistent && d < os.rank; ++d) {
    const auto k = static_cast<size_t>(d);
    consistent = p.before[k] >= 0 && p.after[k] >= 0 && int64_t{p.before[k]} + is[d] + p.after[k] == os[d];
  }
  if (!consistent || os.rank == 0) {
    ReferenceKernelBackend::pad(p);
    return;
  }
  PadWalk w{p, p.element_size, true, {}, {}};
  for (size_t i = 1; i < p.element_size; ++i) w.uniform = w.uniform && p.pad_value[i] == p.pad_value[0];
  size_t so = 1, si = 1;
  for (int d = os.rank - 1; d >= 0; --d) {
    w.out_stride[static_cast<size_t>(d)] = so;
    w.in_stride[static_cast<size_t>(d)] = si;
    so *= static_cast<size_t>(os[d]);
    si *= static_cast<size_t>(is[d]);
  }
  // The first dimension longer than 1 is split across the worker pool (the ones before it hold one position); each
  // part fills or copies whole slabs of it, exactly what the walk would do for those indices.
  const uint64_t bytes = static_cast<uint64_t>(so) * w.es;
  if (!pool_.may_hand_out(bytes)) {  // one participant or too little to hand out: the plain walk (fewer calls)
    w.walk(0, static_cast<const uint8_t*>(p.input), static_cast<uint8_t*>(p.output));
    return;
  }
  int split = 0;
  while (split < os.rank - 1 && os[split] == 1) ++split;
  const auto k = static_cast<size_t>(split);
  const auto total = static_cast<size_t>(os[split]);
  const auto before = static_cast<size_t>(p.before[k]), inside = static_cast<size_t>(is[split]);
  const auto* in = static_cast<const uint8_t*>(p.input);
  auto* out = static_cast<uint8_t*>(p.output);
  const size_t parts = std::min(total, 4 * pool_.size());
  pool_.run(parts, [&](size_t part, size_t) {
    for (size_t i = total * part / parts; i < total * (part + 1) / parts; ++i) {
      uint8_t* slab = out + i * w.out_stride[k] * w.es;
      if (i < before || i >= before + inside) {
        w.fill(slab, w.out_stride[k]);
      } else if (split == os.rank - 1) {
        std::memcpy(slab, in + (i - before) * w.es, w.es);  // one element of the innermost row
      } else {
        w.walk(split + 1, in + (i - before) * w.in_stride[k] * w.es, slab);
      }
    }
  }, bytes);
}

}  // namespace aisrv::engine::cpu
