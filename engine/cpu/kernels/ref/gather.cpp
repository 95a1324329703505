// aisrv CPU engine, reference kernels — GATHER and GATHER_ND: slices of the input copied to the output in index
// order (TFLite Micro's Gather / GatherNd loops). Indices are run-time data: one outside its dimension fails the
// inference with Errc::infer_error before anything is read out of bounds. Any element type (bytes are moved).
#include <cstring>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

int64_t index_at(const void* indices, DType type, int64_t i) {
  if (type == DType::int32) {
    int32_t v;
    std::memcpy(&v, static_cast<const uint8_t*>(indices) + i * 4, sizeof v);
    return v;
  }
  int64_t v;
  std::memcpy(&v, static_cast<const uint8_t*>(indices) + i * 8, sizeof v);
  return v;
}

}  // namespace

Result<void> ReferenceKernelBackend::gather(const GatherParams& p) {
  const auto es = static_cast<int64_t>(p.element_size);
  const int64_t slice_bytes = p.inner_size * es;
  const auto* in = static_cast<const uint8_t*>(p.input);
  auto* out = static_cast<uint8_t*>(p.output);
  for (int64_t b = 0; b < p.batch_size; ++b) {
    for (int64_t o = 0; o < p.outer_size; ++o) {
      const int64_t block = b * p.outer_size + o;  // which [axis, inner] block of the input
      for (int64_t c = 0; c < p.index_count; ++c) {
        const int64_t at = b * p.index_count + c;
        const int64_t index = index_at(p.indices, p.index_type, at);
        if (index < 0 || index >= p.axis_size)
          return make_error(Errc::infer_error, "GATHER index {} (entry {}) is outside [0, {})", index, at,
                            p.axis_size);
        std::memcpy(out, in + (block * p.axis_size + index) * slice_bytes, static_cast<size_t>(slice_bytes));
        out += slice_bytes;
      }
    }
  }
  return {};
}

Result<void> ReferenceKernelBackend::gather_nd(const GatherNdParams& p) {
  const auto es = static_cast<int64_t>(p.element_size);
  const int64_t slice_bytes = p.slice_elements * es;
  const auto* in = static_cast<const uint8_t*>(p.input);
  auto* out = static_cast<uint8_t*>(p.output);
  for (int64_t t = 0; t < p.tuple_count; ++t) {
    int64_t slice = 0;  // index of the slice among the input's slices of slice_elements
    for (int32_t j = 0; j < p.index_depth; ++j) {
      const int64_t at = t * p.index_depth + j;
      const int64_t index = index_at(p.indices, p.index_type, at);
      const int32_t dim = p.input_shape.dims[static_cast<size_t>(j)];
      if (index < 0 || index >= dim)
        return make_error(Errc::infer_error, "GATHER_ND index {} (entry {}) is outside [0, {})", index, at, dim);
      slice = slice * dim + index;
    }
    std::memcpy(out, in + slice * slice_bytes, static_cast<size_t>(slice_bytes));
    out += slice_bytes;
  }
  return {};
}

size_t ref::scratch_bytes(const GatherParams&) { return 0; }

}  // namespace aisrv::engine::cpu
