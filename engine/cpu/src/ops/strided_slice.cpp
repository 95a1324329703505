// aisrv CPU engine — STRIDED_SLICE and SLICE preparation: the constant index tensors and the options are resolved
// here, once, into a start / stop / step per dimension of the input (StridedSliceParams); the kernel only walks them.
// STRIDED_SLICE follows TensorFlow Lite (tensorflow/lite/kernels/strided_slice.cc with strided_slice_logic.h), which
// is a superset of TFLite Micro's: ellipsis and new-axis masks, the offset option, fewer slice specifications than
// input dimensions. What TFLite would compute wrongly (inconsistent masks, a shrunk axis it leaves unwritten) is
// refused with a message instead.
#include <algorithm>
#include <bit>
#include <cstring>
#include <span>

#include <fmt/ranges.h>

#include "prepare.hpp"

namespace aisrv::engine::cpu {

namespace {

std::string dims_text(const Shape& s) {
  return fmt::format("[{}]", fmt::join(std::span(s.dims.data(), static_cast<size_t>(s.rank)), ","));
}

bool mask_bit(int32_t mask, int i) { return i >= 0 && i < 32 && ((static_cast<uint32_t>(mask) >> i) & 1u) != 0; }

// Elements visited from start towards stop (exclusive) in steps of `step` (non-zero).
int64_t steps_between(int64_t start, int64_t stop, int64_t step) {
  if (step > 0) return start < stop ? (stop - start + step - 1) / step : 0;
  return start > stop ? (start - stop - step - 1) / -step : 0;
}

// One dimension of the "effective" input: the input with the new axes inserted.
struct EffectiveAxis {
  int32_t size = 1;
  int64_t begin = 0, end = 0;
  int64_t stride = 1;
  bool begin_mask = false, end_mask = false, shrink = false;
};

// The slice of one effective dimension: first index, one-past-last bound and count of the visited elements.
struct AxisRange {
  int64_t start = 0, stop = 0, count = 0;
};

// TFLite's resolution of one dimension (StridedSliceStartForAxis / StridedSliceEndForAxis): negative indices count
// from the end, then clamp to [0, size] going forward or [-1, size - 1] going backward, then the masks override.
// With `offset`, the end is relative to the resolved start. A shrunk dimension keeps one element.
AxisRange resolve_axis(const EffectiveAxis& a, bool offset) {
  const int64_t size = a.size;
  const bool forward = a.stride > 0;
  const auto clamp_index = [&](int64_t v) {
    if (v < 0) v += size;
    return forward ? std::clamp<int64_t>(v, 0, size) : std::clamp<int64_t>(v, -1, size - 1);
  };
  AxisRange r;
  r.start = clamp_index(a.begin);
  if (a.begin_mask) r.start = forward ? 0 : size - 1;
  if (a.shrink) {
    r.stop = r.start >= size ? r.start : r.start + 1;
  } else {
    r.stop = clamp_index(offset ? a.end + r.start : a.end);
    if (a.end_mask) r.stop = forward ? size : -1;
  }
  r.count = steps_between(r.start, r.stop, a.stride);
  return r;
}

// Values of a constant rank-1 int32 tensor.
Result<std::vector<int32_t>> index_vector(const PrepareContext& ctx, size_t input, std::string_view what) {
  const TensorSpec& t = *AISRV_TRY(ctx.input(input, what));
  if (t.shape.rank != 1) return ctx.error("{} '{}' has rank {}, expected 1", what, t.name, t.shape.rank);
  return ctx.int32_values(t, what);
}

// The input's data type checks shared by both operators (any element type: the operators move bytes).
Result<void> check_data(const PrepareContext& ctx, const TensorSpec& in, const TensorSpec& out) {
  AISRV_TRY(ctx.expect_type(in,
                            {DType::int8, DType::uint8, DType::int16, DType::int32, DType::int64, DType::float32,
                             DType::boolean},
                            "input"));
  return ctx.expect_same_type(in, out, "input and output");
}

// Fills the kernel parameters from per-dimension ranges of an (effective) input shape of `rank` dimensions, the
// leading dimensions up to kMaxRank being 1.
StridedSliceParams make_params(const PrepareContext& ctx, const TensorSpec& in, std::span<const int32_t> sizes,
                               std::span<const AxisRange> ranges, std::span<const int64_t> steps) {
  StridedSliceParams p;
  p.element_size = protocol::dtype_size(in.type);
  p.input_shape.rank = kMaxRank;
  const size_t pad = kMaxRank - sizes.size();
  p.output_elements = 1;
  for (size_t d = 0; d < static_cast<size_t>(kMaxRank); ++d) {
    if (d < pad) {
      p.input_shape.dims[d] = 1;
      p.start[d] = 0;
      p.stop[d] = 1;
      p.step[d] = 1;
      continue;
    }
    const size_t k = d - pad;
    p.input_shape.dims[d] = sizes[k];
    p.start[d] = static_cast<int32_t>(ranges[k].start);
    p.stop[d] = static_cast<int32_t>(ranges[k].stop);
    p.step[d] = static_cast<int32_t>(steps[k]);
    p.output_elements *= ranges[k].count;
  }
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return p;
}

}  // namespace

Result<OpParams> prepare_strided_slice(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(4, 4, 1));
  const auto& opt = std::get<StridedSliceOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(check_data(ctx, in, out));
  const std::vector<int32_t> begin = AISRV_TRY(index_vector(ctx, 1, "begin"));
  const std::vector<int32_t> end = AISRV_TRY(index_vector(ctx, 2, "end"));
  const std::vector<int32_t> strides = AISRV_TRY(index_vector(ctx, 3, "strides"));
  if (end.size() != begin.size() || strides.size() != begin.size())
    return ctx.error("begin, end and strides hold {}, {} and {} values; they must be as many", begin.size(),
                     end.size(), strides.size());
  const int specs = static_cast<int>(begin.size());
  if (specs > 32) return ctx.error("{} slice specifications; the masks describe at most 32", specs);
  if (std::popcount(static_cast<uint32_t>(opt.ellipsis_mask)) > 1)
    return ctx.error("ellipsis_mask {:#x} has more than one ellipsis", opt.ellipsis_mask);
  // An ellipsis or new axis beyond the specifications makes TFLite read past them or drop input dimensions.
  const uint64_t beyond_specs = ~((uint64_t{1} << specs) - 1);
  if (((static_cast<uint32_t>(opt.ellipsis_mask) | static_cast<uint32_t>(opt.new_axis_mask)) & beyond_specs) != 0)
    return ctx.error("ellipsis_mask {:#x} / new_axis_mask {:#x} name a specification beyond the {} given",
                     opt.ellipsis_mask, opt.new_axis_mask, specs);

  // Expand the specification into one entry per dimension of the effective input (TFLite's
  // BuildStridedSliceParams): an ellipsis stands for as many full dimensions as the specification leaves
  // unnamed, a new axis adds a dimension of size 1 (an ellipsis bit wins over a new-axis bit), dimensions beyond
  // the specification are taken whole.
  const int rank = in.shape.rank;
  int new_axes = 0;
  for (int i = 0; i < specs; ++i)
    if (mask_bit(opt.new_axis_mask, i) && !mask_bit(opt.ellipsis_mask, i)) ++new_axes;
  const int effective_rank = rank + new_axes;
  if (effective_rank > kMaxRank)
    return ctx.error("input rank {} with {} new axes exceeds the supported rank {}", rank, new_axes, kMaxRank);

  enum class Kind { spec, full, new_axis };
  std::array<Kind, kMaxRank> kind{};
  int ellipsis_start = effective_rank, ellipsis_extra = 0;  // extra: dimensions the ellipsis adds beyond its own
  for (int i = 0; i < effective_rank;) {
    if (mask_bit(opt.ellipsis_mask, i)) {
      const int stop = std::max(i + 1, std::min(i + 1 + new_axes + rank - specs, effective_rank));
      ellipsis_start = i;
      ellipsis_extra = stop - i - 1;
      for (; i < stop; ++i) kind[static_cast<size_t>(i)] = Kind::full;
      continue;
    }
    const int spec = i - ellipsis_extra;
    if (mask_bit(opt.new_axis_mask, spec)) kind[static_cast<size_t>(i)] = Kind::new_axis;
    else kind[static_cast<size_t>(i)] = spec < specs ? Kind::spec : Kind::full;
    ++i;
  }

  // Each input dimension must land on exactly one non-new effective dimension (TFLite would otherwise index past
  // the input's shape or drop dimensions).
  const auto masks_mismatch = [&] {
    return ctx.error("new_axis_mask {:#x} and ellipsis_mask {:#x} with {} specifications do not describe the "
                     "input's {} dimensions",
                     opt.new_axis_mask, opt.ellipsis_mask, specs, rank);
  };
  std::array<EffectiveAxis, kMaxRank> axes{};
  int input_dim = 0;  // next input dimension to place
  for (int i = 0; i < effective_rank; ++i) {
    EffectiveAxis& a = axes[static_cast<size_t>(i)];
    if (kind[static_cast<size_t>(i)] == Kind::new_axis) {
      a.size = 1;
      a.begin = 0;
      a.end = 1;
      continue;
    }
    if (input_dim >= rank) return masks_mismatch();
    a.size = in.shape[input_dim++];
    if (kind[static_cast<size_t>(i)] == Kind::full) {
      a.begin_mask = a.end_mask = true;
      continue;
    }
    const int spec = i < ellipsis_start ? i : i - ellipsis_extra;
    const auto s = static_cast<size_t>(spec);
    a.begin = begin[s];
    a.end = end[s];
    a.stride = strides[s];
    a.begin_mask = mask_bit(opt.begin_mask, spec);
    a.end_mask = mask_bit(opt.end_mask, spec);
    a.shrink = mask_bit(opt.shrink_axis_mask, spec);
    if (a.stride == 0) return ctx.error("specification {} has stride 0", spec);
  }
  if (input_dim != rank) return masks_mismatch();

  std::array<int32_t, kMaxRank> sizes{};
  std::array<AxisRange, kMaxRank> ranges{};
  std::array<int64_t, kMaxRank> steps{};
  Shape expected;
  for (int i = 0; i < effective_rank; ++i) {
    const auto k = static_cast<size_t>(i);
    const EffectiveAxis& a = axes[k];
    AxisRange r = resolve_axis(a, opt.offset);
    if (a.shrink) {
      // TFLite visits nothing on a shrunk dimension whose index is past the end or whose stride is negative, and
      // leaves the output unwritten: refused.
      if (a.stride < 0)
        return ctx.error("dimension {} is shrunk with stride {}; only a positive stride is valid", i, a.stride);
      if (r.count != 1)
        return ctx.error("dimension {} is shrunk at index {}, outside its size {}", i, a.begin, a.size);
      steps[k] = 1;
    } else {
      expected.dims[static_cast<size_t>(expected.rank++)] = static_cast<int32_t>(r.count);
      steps[k] = a.stride;
    }
    sizes[k] = a.size;
    ranges[k] = r;
  }
  if (!(expected == out.shape))
    return ctx.error("output '{}' has shape {}, but the slice of the input {} has shape {}", out.name,
                     dims_text(out.shape), dims_text(in.shape), dims_text(expected));
  const auto n = static_cast<size_t>(effective_rank);
  return OpParams{make_params(ctx, in, std::span(sizes.data(), n), std::span(ranges.data(), n),
                              std::span(steps.data(), n))};
}

Result<OpParams> prepare_slice(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(3, 3, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& begin_t = *AISRV_TRY(ctx.input(1, "begin"));
  const TensorSpec& size_tensor = *AISRV_TRY(ctx.input(2, "size"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(check_data(ctx, in, out));
  // begin and size: constant int32 or int64 vectors with one entry per input dimension.
  const auto read = [&](const TensorSpec& t, std::string_view what) -> Result<std::vector<int64_t>> {
    AISRV_TRY(ctx.expect_type(t, {DType::int32, DType::int64}, what));
    AISRV_TRY(ctx.expect_constant(t, what));
    if (t.shape.rank != 1 || t.shape[0] != in.shape.rank)
      return ctx.error("{} '{}' has shape {}, expected [{}] (one entry per input dimension)", what, t.name,
                       dims_text(t.shape), in.shape.rank);
    std::vector<int64_t> v(static_cast<size_t>(in.shape.rank));
    for (size_t i = 0; i < v.size(); ++i) {
      if (t.type == DType::int32) {
        int32_t x;
        std::memcpy(&x, t.data + i * sizeof x, sizeof x);
        v[i] = x;
      } else {
        std::memcpy(&v[i], t.data + i * sizeof(int64_t), sizeof(int64_t));
      }
    }
    return v;
  };
  const std::vector<int64_t> begin = AISRV_TRY(read(begin_t, "begin"));
  const std::vector<int64_t> size = AISRV_TRY(read(size_tensor, "size"));

  const auto n = static_cast<size_t>(in.shape.rank);
  std::array<int32_t, kMaxRank> sizes{};
  std::array<AxisRange, kMaxRank> ranges{};
  std::array<int64_t, kMaxRank> steps{};
  Shape expected;
  expected.rank = in.shape.rank;
  for (size_t d = 0; d < n; ++d) {
    const int64_t dim = in.shape[static_cast<int>(d)];
    // TFLite: a size of -1 takes the rest of the dimension; other sizes must fit after begin.
    if (begin[d] < 0 || begin[d] > dim)
      return ctx.error("begin {} of dimension {} is outside [0, {}]", begin[d], d, dim);
    const int64_t count = size[d] == -1 ? dim - begin[d] : size[d];
    if (count < 0 || begin[d] + count > dim)
      return ctx.error("dimension {}: begin {} and size {} do not fit in {}", d, begin[d], size[d], dim);
    sizes[d] = static_cast<int32_t>(dim);
    ranges[d] = AxisRange{begin[d], begin[d] + count, count};
    steps[d] = 1;
    expected.dims[d] = static_cast<int32_t>(count);
  }
  if (!(expected == out.shape))
    return ctx.error("output '{}' has shape {}, but the slice has shape {}", out.name, dims_text(out.shape),
                     dims_text(expected));
  return OpParams{make_params(ctx, in, std::span(sizes.data(), n), std::span(ranges.data(), n),
                              std::span(steps.data(), n))};
}

}  // namespace aisrv::engine::cpu
