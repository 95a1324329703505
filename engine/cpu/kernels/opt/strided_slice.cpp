// aisrv CPU engine, optimised kernels — STRIDED_SLICE and SLICE: the slice reduced at the start of the call to as
// few dimensions as it really has (dimensions visited once dropped, neighbours that the slice walks as one
// arithmetic progression merged — a slice of whole rows is one run), then the output written row by row of the
// innermost remaining dimension, with the input offset kept by an odometer of additions (no division per element
// or row): a row with step 1 is one copy (inline for short runs, memcpy for long ones), other rows a strided gather
// typed by element size. Large slices are cut into equal pieces of the output across the worker pool (a piece may
// start or end inside a row). Parameters the loader never produces (a step of 0, a shape not kMaxRank-extended) go
// to the reference kernel.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

// Elements visited from start towards stop in steps of `step` (the reference's count).
int64_t visited_count(int32_t start, int32_t stop, int32_t step) {
  const int64_t a = start, b = stop, s = step;
  if (s > 0) return a < b ? (b - a + s - 1) / s : 0;
  if (s < 0) return a > b ? (a - b - s - 1) / -s : 0;
  return -1;  // step 0: not a slice this kernel walks
}

// Copies n bytes: runs up to 256 bytes as fixed-size moves the compiler inlines (chunks of 32 or 16, the last one
// ending at n and overlapping the previous one, harmless as source and destination do not overlap), longer runs
// through memcpy.
inline void copy_run(uint8_t* dst, const uint8_t* src, size_t n) {
  if (n > 256) {
    std::memcpy(dst, src, n);
  } else if (n >= 32) {
    for (size_t i = 0; i + 32 < n; i += 32) std::memcpy(dst + i, src + i, 32);
    std::memcpy(dst + n - 32, src + n - 32, 32);
  } else if (n >= 16) {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else if (n >= 2) {
    std::memcpy(dst, src, 2);
    std::memcpy(dst + n - 2, src + n - 2, 2);
  } else if (n == 1) {
    *dst = *src;
  }
}

// n elements of N bytes, `step` elements apart in the input (step may be negative), to consecutive outputs.
template <size_t N>
void gather_typed(uint8_t* dst, const uint8_t* src, size_t n, ptrdiff_t step) {
  for (size_t i = 0; i < n; ++i) std::memcpy(dst + i * N, src + static_cast<ptrdiff_t>(i) * step * ptrdiff_t{N}, N);
}

void gather_any(uint8_t* dst, const uint8_t* src, size_t n, ptrdiff_t step, size_t es) {
  for (size_t i = 0; i < n; ++i)
    std::memcpy(dst + i * es, src + static_cast<ptrdiff_t>(i) * step * static_cast<ptrdiff_t>(es), es);
}

// A row of n elements `step` input elements apart (step 1: one contiguous run).
void put_row(uint8_t* dst, const uint8_t* src, int64_t n, int64_t step, size_t es) {
  const auto count = static_cast<size_t>(n);
  if (step == 1) {
    copy_run(dst, src, count * es);
    return;
  }
  switch (es) {
    case 1: gather_typed<1>(dst, src, count, step); break;
    case 2: gather_typed<2>(dst, src, count, step); break;
    case 4: gather_typed<4>(dst, src, count, step); break;
    case 8: gather_typed<8>(dst, src, count, step); break;
    default: gather_any(dst, src, count, step, es); break;
  }
}

// The slice reduced to `rank` dimensions (outermost first): count[d] elements visited `step[d]` input elements
// apart, from input element `base`. The last dimension is the row the inner loop writes.
struct SliceWalk {
  int rank = 0;
  std::array<int64_t, kMaxRank> count{};
  std::array<int64_t, kMaxRank> step{};  // in input elements
  int64_t base = 0;
  size_t es = 1;
  const uint8_t* input = nullptr;
  uint8_t* output = nullptr;

  // Writes output elements [first, end). Works on local copies of the walk (the output stores then cannot be
  // mistaken for changes to it).
  void write(int64_t first, int64_t end) const {
    const auto inner = static_cast<size_t>(rank - 1);
    const std::array<int64_t, kMaxRank> counts = count, steps = step;
    const auto element = static_cast<int64_t>(es);
    const int64_t row_length = counts[inner], row_step = steps[inner];
    const uint8_t* in = input;
    // The odometer's position at `first` (one division per outer dimension, once per call).
    std::array<int64_t, kMaxRank> at{};
    int64_t r = first / row_length, offset = base;
    for (size_t d = inner; d-- > 0;) {
      at[d] = r % counts[d];
      r /= counts[d];
      offset += at[d] * steps[d];
    }
    int64_t j = first % row_length;  // element within the current row
    uint8_t* out = output + first * element;
    int64_t left = end - first;
    for (;;) {
      const int64_t n = std::min(row_length - j, left);
      put_row(out, in + (offset + j * row_step) * element, n, row_step, es);
      out += n * element;
      left -= n;
      if (left == 0) return;
      j = 0;
      for (size_t d = inner; d-- > 0;) {  // next row
        offset += steps[d];
        if (++at[d] < counts[d]) break;
        offset -= counts[d] * steps[d];
        at[d] = 0;
      }
    }
  }
};

// The pool's measure of work (multiply-accumulates of a convolution, about 1/16 ns each with AVX2). Runs copy at
// cache bandwidth, which a second core adds little to, while a hand-over costs a microsecond on idle cores and up to
// a scheduler time slice on busy ones: a byte copied in runs counts 1/32, so such slices stay on the caller below
// about 2 MiB (every slice of YOLOv8n); an element gathered counts 1 (gathers split from 64 K elements).
uint64_t slice_work(int64_t elements, const SliceWalk& w) {
  const auto n = static_cast<uint64_t>(elements);
  return w.step[static_cast<size_t>(w.rank - 1)] == 1 ? n * w.es / 32 : n;
}

}  // namespace

void OptimizedKernelBackend::strided_slice(const StridedSliceParams& p) {
  SliceWalk w;
  w.es = p.element_size;
  w.input = static_cast<const uint8_t*>(p.input);
  w.output = static_cast<uint8_t*>(p.output);
  if (w.es == 0 || p.input_shape.rank != kMaxRank) {
    ReferenceKernelBackend::strided_slice(p);
    return;
  }
  // Element strides of the input, then the visited dimensions (count > 1), merged where the outer one steps by
  // exactly the inner one's extent.
  std::array<int64_t, kMaxRank> stride{};
  stride[kMaxRank - 1] = 1;
  for (size_t d = kMaxRank - 1; d-- > 0;) stride[d] = stride[d + 1] * p.input_shape.dims[d + 1];
  int64_t total = 1;
  for (size_t d = 0; d < static_cast<size_t>(kMaxRank); ++d) {
    const int64_t c = visited_count(p.start[d], p.stop[d], p.step[d]);
    if (c < 0) {
      ReferenceKernelBackend::strided_slice(p);
      return;
    }
    total *= c;
    w.base += int64_t{p.start[d]} * stride[d];
    if (c == 1) continue;
    const int64_t s = int64_t{p.step[d]} * stride[d];
    const auto last = static_cast<size_t>(w.rank - 1);
    if (w.rank > 0 && w.step[last] == s * c) {  // the previous (outer) dimension continues this one
      w.count[last] *= c;
      w.step[last] = s;
    } else {
      w.count[static_cast<size_t>(w.rank)] = c;
      w.step[static_cast<size_t>(w.rank)] = s;
      ++w.rank;
    }
  }
  if (total == 0) return;
  if (w.rank == 0) {  // a single element
    w.rank = 1;
    w.count[0] = 1;
    w.step[0] = 1;
  }
  const uint64_t work = slice_work(total, w);
  if (!pool_.may_hand_out(work)) {  // one participant, or too little to hand out: one walk
    w.write(0, total);
    return;
  }
  // Equal pieces of the output, cut at multiples of 64 bytes (participants rarely share a cache line).
  const auto align = static_cast<int64_t>(std::max<size_t>(64 / w.es, 1));
  const int64_t blocks = (total + align - 1) / align;
  const auto parts = static_cast<size_t>(std::min<int64_t>(blocks, static_cast<int64_t>(2 * pool_.size())));
  const auto n = static_cast<int64_t>(parts);
  pool_.run(parts, [&](size_t part, size_t) {
    const auto k = static_cast<int64_t>(part);
    const int64_t first = blocks * k / n * align, end = std::min(blocks * (k + 1) / n * align, total);
    if (first < end) w.write(first, end);
  }, work);
}

}  // namespace aisrv::engine::cpu
