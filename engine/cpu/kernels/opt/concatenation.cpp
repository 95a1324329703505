// aisrv CPU engine, optimised kernels — CONCATENATION (and PACK, which runs as one): each outer row of the output is
// the inputs' slabs in turn. Whole rows go through a loop over a local slab list with source pointers advanced row
// by row; a slab is copied with inlined fixed-size moves when short (the channel slabs of NHWC concatenations),
// memcpy when long. An 8-bit slab that needs rescaling goes through a 256-entry table built at the start of the call
// from the reference's own float formula, entry by entry, so every byte maps exactly as the reference maps it.
// Large concatenations are cut into equal byte ranges of the output across the worker pool (a range may start or end
// inside a row or a slab). The reference kernel runs PACKs of more than kMaxInputs inputs, more than kMaxTables
// rescaled inputs, and rescaled inputs too small for tables to pay.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

// Rescaled inputs whose tables live on the stack (2 KiB); YOLO-style models rescale at most a few per operator.
constexpr size_t kMaxTables = 8;
// Inputs of the operators this kernel runs (their slab list lives on the stack); PACKs of more run on the reference.
constexpr size_t kMaxInputs = 64;
using ByteTable = std::array<uint8_t, 256>;

// The reference's rescale of one value (kernels/ref/concatenation.cpp, TFLite's float formula): the same float
// operations in the same order, so a table of it matches the reference bit for bit.
template <typename T>
T rescaled_value(T q, float input_scale, int32_t input_zero_point, const ConcatenationParams& p) {
  const float inverse_output_scale = 1.0f / p.output_scale;
  const float scale = input_scale * inverse_output_scale;
  const float bias = static_cast<float>(-input_zero_point) * scale;
  const int64_t v =
      int64_t{fp::saturating_float_to_int32(std::round(static_cast<float>(q) * scale + bias))} + p.output_zero_point;
  return static_cast<T>(
      std::clamp<int64_t>(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
}

// table[b]: the output byte for the input byte b.
void build_table(ByteTable& table, const ConcatenationParams::Input& e, const ConcatenationParams& p) {
  for (int b = 0; b < 256; ++b) {
    const auto byte = static_cast<uint8_t>(b);
    if (p.dtype == DType::int8) {
      const int8_t r = rescaled_value(static_cast<int8_t>(byte), e.scale, e.zero_point, p);
      std::memcpy(&table[static_cast<size_t>(b)], &r, 1);
    } else {
      table[static_cast<size_t>(b)] = rescaled_value(byte, e.scale, e.zero_point, p);
    }
  }
}

// Copies n bytes. Runs up to 256 bytes (the channel slabs of NHWC concatenations) as fixed-size moves the compiler
// inlines: chunks of 32 or 16, the last one ending at n and overlapping the previous one (harmless: source and
// destination do not overlap); longer runs through memcpy.
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

// dst[i] = table[src[i]], eight bytes per load and store (one store per eight lookups keeps the table loads from
// waiting on stores the compiler cannot prove apart).
void map_run(uint8_t* dst, const uint8_t* src, size_t n, const ByteTable& table) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t in, out = 0;
    std::memcpy(&in, src + i, 8);
    for (unsigned b = 0; b < 64; b += 8) out |= uint64_t{table[(in >> b) & 0xFF]} << b;
    std::memcpy(dst + i, &out, 8);
  }
  for (; i < n; ++i) dst[i] = table[src[i]];
}

// One input's slab of every outer row.
struct Slab {
  const uint8_t* data = nullptr;
  size_t bytes = 0;                  // per outer row
  const ByteTable* table = nullptr;  // rescaled inputs: the byte map; others are copied
};

void put_slab(uint8_t* out, const uint8_t* in, size_t bytes, const ByteTable* table) {
  if (table != nullptr) map_run(out, in, bytes, *table);  // 8-bit types only: bytes are elements
  else copy_run(out, in, bytes);
}

// The pool's measure of work (multiply-accumulates of a convolution, about 1/16 ns each with AVX2). Copies run at
// cache bandwidth, which a second core adds little to, while a hand-over costs a microsecond on idle cores and up to
// a scheduler time slice on busy ones: a copied byte counts 1/32, so copies stay on the caller below about 2 MiB
// (every concatenation of YOLOv8n); a byte through the table counts 1 (64 KiB of lookups, about 25 us, split).
uint64_t concat_work(size_t bytes, size_t mapped_bytes) {
  return (bytes - mapped_bytes) / 32 + uint64_t{mapped_bytes};
}

// Inputs whose slabs a part keeps in a local array for its loop over whole rows.
constexpr size_t kMaxLocalSlabs = 16;

// The operator's layout: writes any byte range of the flat output.
struct ConcatWalk {
  std::span<const Slab> slabs;
  size_t row_bytes;  // of the output
  uint8_t* output;

  // Bytes [lo, hi) of outer row k (0 <= lo < hi <= row_bytes): the slabs that overlap them, in part.
  void row_part(int64_t k, size_t lo, size_t hi) const {
    size_t start = 0;
    for (const Slab& s : slabs) {
      const size_t a = std::max(lo, start), b = std::min(hi, start + s.bytes);
      if (a < b)
        put_slab(output + static_cast<size_t>(k) * row_bytes + a,
                 s.data + static_cast<size_t>(k) * s.bytes + (a - start), b - a, s.table);
      start += s.bytes;
      if (start >= hi) return;
    }
  }

  // Whole outer rows [k0, k1): every slab in turn, source pointers advanced row by row.
  void rows(int64_t k0, int64_t k1) const {
    if (k0 >= k1) return;
    if (slabs.size() > kMaxLocalSlabs) {
      for (int64_t k = k0; k < k1; ++k) row_part(k, 0, row_bytes);
      return;
    }
    // A local copy: the compiler then knows the output stores leave the slab pointers alone.
    std::array<Slab, kMaxLocalSlabs> at;
    const size_t n = slabs.size();
    for (size_t j = 0; j < n; ++j) {
      at[j] = slabs[j];
      at[j].data += static_cast<size_t>(k0) * at[j].bytes;
    }
    uint8_t* out = output + static_cast<size_t>(k0) * row_bytes;
    for (int64_t k = k0; k < k1; ++k) {
      for (size_t j = 0; j < n; ++j) {
        put_slab(out, at[j].data, at[j].bytes, at[j].table);
        out += at[j].bytes;
        at[j].data += at[j].bytes;
      }
    }
  }

  // Bytes [first, end) of the output.
  void write(size_t first, size_t end) const {
    auto k = static_cast<int64_t>(first / row_bytes);
    const size_t lo = first % row_bytes;
    if (lo != 0) {  // a part of the first row
      const size_t hi = std::min(row_bytes, lo + (end - first));
      row_part(k, lo, hi);
      first += hi - lo;
      ++k;
    }
    const auto whole = static_cast<int64_t>((end - first) / row_bytes);
    rows(k, k + whole);
    const size_t rest = (end - first) % row_bytes;
    if (rest != 0) row_part(k + whole, 0, rest);
  }
};

}  // namespace

void OptimizedKernelBackend::concatenation(const ConcatenationParams& p) {
  const size_t es = p.element_size;
  const bool bytes = p.dtype == DType::int8 || p.dtype == DType::uint8;
  size_t rescaled = 0;
  bool expected = es >= 1 && es <= 8 && p.outer_size >= 0 && p.inner_size >= 0 && !p.inputs.empty() &&
                  p.inputs.size() <= kMaxInputs;
  for (const auto& e : p.inputs) {
    expected = expected && e.axis_size >= 0 && (!e.rescale || (bytes && es == 1));
    if (e.rescale) ++rescaled;
  }
  if (!expected || rescaled > kMaxTables) {
    ReferenceKernelBackend::concatenation(p);
    return;
  }
  // A table costs 256 evaluations of the formula: worth it from as many rescaled values on.
  if (rescaled > 0) {
    const size_t per_axis_step = static_cast<size_t>(p.outer_size) * static_cast<size_t>(p.inner_size);
    size_t mapped = 0;
    for (const auto& e : p.inputs)
      if (e.rescale) mapped += per_axis_step * static_cast<size_t>(e.axis_size);
    if (mapped < 256 * rescaled) {
      ReferenceKernelBackend::concatenation(p);
      return;
    }
  }
  std::array<ByteTable, kMaxTables> tables;
  std::array<Slab, kMaxInputs> slabs;
  size_t row_bytes = 0, mapped_row_bytes = 0;
  for (size_t i = 0, t = 0; i < p.inputs.size(); ++i) {
    const ConcatenationParams::Input& e = p.inputs[i];
    Slab& s = slabs[i];
    s.data = static_cast<const uint8_t*>(e.data);
    s.bytes = static_cast<size_t>(e.axis_size) * static_cast<size_t>(p.inner_size) * es;
    if (e.rescale) {
      build_table(tables[t], e, p);
      s.table = &tables[t++];
      mapped_row_bytes += s.bytes;
    }
    row_bytes += s.bytes;
  }
  const size_t total = static_cast<size_t>(p.outer_size) * row_bytes;
  if (total == 0) return;
  const ConcatWalk walk{std::span<const Slab>(slabs.data(), p.inputs.size()), row_bytes,
                        static_cast<uint8_t*>(p.output)};
  const uint64_t work = concat_work(total, static_cast<size_t>(p.outer_size) * mapped_row_bytes);
  if (!pool_.may_hand_out(work)) {  // one participant, or too little to hand out: the plain walk
    walk.rows(0, p.outer_size);
    return;
  }
  // Equal pieces of the output, cut at multiples of 64 bytes (no two participants write one cache line; a cut
  // inside an element is harmless as copies move bytes and rescaled slabs have 1-byte elements).
  constexpr size_t kAlign = 64;
  const size_t blocks = (total + kAlign - 1) / kAlign;
  const size_t parts = std::min(blocks, 2 * pool_.size());
  pool_.run(parts, [&](size_t part, size_t) {
    const size_t first = blocks * part / parts * kAlign, end = std::min(blocks * (part + 1) / parts * kAlign, total);
    if (first < end) walk.write(first, end);
  }, work);
}

}  // namespace aisrv::engine::cpu
