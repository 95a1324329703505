// aisrv CPU engine, optimised kernels — float32 DEPTHWISE_CONV_2D (float_kernels.hpp), bit-exact with the
// reference's reference_ops::DepthwiseConv order: per output element, +0.0f, then the taps inside the input in
// (filter row, filter column) order, then + bias, then the clamp. Vectorised over channels: the filter
// [1][fy][fx][oc] is read as it is (its channels are contiguous), and so is the input when the depth multiplier is
// 1; with a multiplier m > 1, the input rows an output row reads are first copied into scratch with each value
// repeated m times (one value per output channel), so every lane again reads its own channel.
// Per output row, the pixels whose filter columns all lie inside the input go through the depthwise loop in register
// blocks of up to kFloatRows pixels sharing one tap list; the pixels of the edge columns list only their taps inside
// the input (the reference skips the others), in register blocks of up to kFloatRows rows of one column where the
// filter rows all lie inside the input (input read in place), alone otherwise. With a worker pool, the output rows
// are split into ranges, each participant with its own tap list and copied rows.
#include <algorithm>
#include <cstring>

#include "float_kernels.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu::opt {

namespace {

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

struct FloatDepthwisePlan {
  size_t participants = 1;
  size_t taps = 0;
  bool expand = false;      // depth multiplier > 1: rows copied per output channel
  size_t row_floats = 0;    // one copied row: input width x output channels
  size_t slots = 0;         // copied rows per participant (filter_h)
  size_t rows = 0;          // output rows over all batches
  bool fits = false;

  size_t list_bytes() const { return round_up(2 * std::max<size_t>(taps, 1) * sizeof(ptrdiff_t), 64); }
  size_t slot_bytes() const { return expand ? round_up(slots * row_floats * sizeof(float), 64) : 0; }
  size_t participant_bytes() const { return list_bytes() + slot_bytes(); }
  size_t scratch_bytes() const { return fits ? participants * participant_bytes() : 0; }
};

bool is_float(const DepthwiseConv2DParams& p) {
  return p.dtype == DType::float32 && p.filter_type == DType::float32;
}

FloatDepthwisePlan plan_float_depthwise(const DepthwiseConv2DParams& p, size_t participants) {
  FloatDepthwisePlan d;
  d.participants = std::max<size_t>(participants, 1);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  if (fs.h < 1 || fs.w < 1 || fs.n != 1 || is.c < 1 || p.depth_multiplier < 1 || os.n < 0 || os.h < 0 || os.w < 0 ||
      int64_t{is.c} * p.depth_multiplier != os.c || fs.c != os.c || p.stride_w < 1 || p.stride_h < 1 ||
      p.dilation_w < 1 || p.dilation_h < 1)
    return d;
  d.taps = static_cast<size_t>(fs.h) * static_cast<size_t>(fs.w);
  d.expand = p.depth_multiplier > 1;
  d.row_floats = static_cast<size_t>(is.w) * static_cast<size_t>(os.c);
  d.slots = static_cast<size_t>(fs.h);
  d.rows = static_cast<size_t>(os.n) * static_cast<size_t>(os.h);
  const long double lists = static_cast<long double>(d.taps) * 2 * sizeof(ptrdiff_t);
  const long double slots = d.expand ? static_cast<long double>(d.slots) * d.row_floats * sizeof(float) : 0;
  d.fits = d.taps < (size_t{1} << 31) && (lists + slots) * d.participants < kMaxKernelBytes;
  return d;
}

// Output rows [r0, r1) with this participant's tap list and copied-row slots.
void compute_rows(const DepthwiseConv2DParams& p, const FloatDepthwisePlan& d, const FloatKernels& k, size_t r0,
                  size_t r1, uint8_t* scratch) {
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  auto* lists = reinterpret_cast<ptrdiff_t*>(scratch);
  ptrdiff_t* tap_in = lists;
  ptrdiff_t* tap_w = lists + d.taps;
  auto* slots = reinterpret_cast<float*>(scratch + d.list_bytes());
  const auto out_c = static_cast<size_t>(os.c);
  const auto in_c = static_cast<size_t>(is.c);
  const size_t batch_size = static_cast<size_t>(is.h) * static_cast<size_t>(is.w) * in_c;
  const auto out_h = static_cast<size_t>(os.h);
  const auto* input = static_cast<const float*>(p.input);
  auto* output = static_cast<float*>(p.output);
  // Taps read the image's input (channel stride in_c == out_c) or the copied rows (stride out_c).
  const auto channel_stride = static_cast<ptrdiff_t>(out_c);
  const auto tap_weight = [&](int32_t fy, int32_t fx) {
    return (static_cast<ptrdiff_t>(fy) * fs.w + fx) * static_cast<ptrdiff_t>(out_c);
  };
  const ColumnRange range = interior_columns(os.w, is.w, p.stride_w, p.padding.left, fs.w, p.dilation_w);

  FloatDepthwiseBlock t;
  t.weights = static_cast<const float*>(p.filter);
  t.bias = p.float_bias;
  t.channels = os.c;
  t.act_min = p.float_act_min;
  t.act_max = p.float_act_max;
  t.tap_input = tap_in;
  t.tap_weight = tap_w;

  // The taps of output pixel (oy, ox) inside the input, offsets from `source` (the image's input, or the slots).
  auto edge_list = [&](int64_t oy, int64_t ox) {
    const int64_t iy0 = oy * p.stride_h - p.padding.top, ix0 = ox * p.stride_w - p.padding.left;
    int32_t n = 0;
    size_t slot = 0;
    for (int32_t fy = 0; fy < fs.h; ++fy) {
      const int64_t iy = iy0 + int64_t{fy} * p.dilation_h;
      if (iy < 0 || iy >= is.h) continue;
      const ptrdiff_t base = d.expand ? static_cast<ptrdiff_t>(slot++ * d.row_floats)
                                      : static_cast<ptrdiff_t>(iy * is.w) * channel_stride;
      for (int32_t fx = 0; fx < fs.w; ++fx) {
        const int64_t ix = ix0 + int64_t{fx} * p.dilation_w;
        if (ix < 0 || ix >= is.w) continue;
        tap_in[n] = base + static_cast<ptrdiff_t>(ix) * channel_stride;
        tap_w[n] = tap_weight(fy, fx);
        ++n;
      }
    }
    return n;
  };

  // 1. Per row, the pixels whose filter columns all lie inside the input share one tap list (relative to the pixel's
  //    leftmost input column); with copied rows, the row's edge pixels too, alone.
  for (size_t row = r0; row < r1; ++row) {
    const auto oy = static_cast<int64_t>(row % out_h);
    const float* batch_in = input + row / out_h * batch_size;
    float* out_row = output + row * static_cast<size_t>(os.w) * out_c;
    const float* source = d.expand ? slots : batch_in;
    const int64_t iy0 = oy * p.stride_h - p.padding.top;
    int32_t n_taps = 0;
    size_t slot = 0;
    for (int32_t fy = 0; fy < fs.h; ++fy) {
      const int64_t iy = iy0 + int64_t{fy} * p.dilation_h;
      if (iy < 0 || iy >= is.h) continue;
      ptrdiff_t base = static_cast<ptrdiff_t>(iy * is.w) * channel_stride;
      if (d.expand) {  // output channel ic * m + j holds input channel ic
        const float* src = batch_in + static_cast<size_t>(iy) * static_cast<size_t>(is.w) * in_c;
        float* dst = slots + slot * d.row_floats;
        const auto m = static_cast<size_t>(p.depth_multiplier);
        for (size_t x = 0; x < static_cast<size_t>(is.w) * in_c; ++x)
          for (size_t j = 0; j < m; ++j) dst[x * m + j] = src[x];
        base = static_cast<ptrdiff_t>(slot++ * d.row_floats);
      }
      for (int32_t fx = 0; fx < fs.w; ++fx, ++n_taps) {
        tap_in[n_taps] = base + static_cast<ptrdiff_t>(fx) * p.dilation_w * channel_stride;
        tap_w[n_taps] = tap_weight(fy, fx);
      }
    }
    t.taps = n_taps;
    t.input_step = static_cast<size_t>(p.stride_w) * static_cast<size_t>(channel_stride);
    t.out_step = out_c;
    const int32_t n = range.end - range.first;
    const int32_t count = (n + kFloatRows - 1) / kFloatRows;
    int32_t ox = range.first;
    for (int32_t i = 0; i < count; ++i) {
      t.rows = n * (i + 1) / count - n * i / count;
      t.input = source + (int64_t{ox} * p.stride_w - p.padding.left) * channel_stride;
      t.out = out_row + static_cast<size_t>(ox) * out_c;
      k.depthwise(t);
      ox += t.rows;
    }
    if (!d.expand) continue;
    for (int32_t x = 0; x < os.w; ++x) {
      if (x == range.first && range.first < range.end) x = range.end;
      if (x >= os.w) break;
      t.taps = edge_list(oy, x);
      t.rows = 1;
      t.input = source;
      t.out = out_row + static_cast<size_t>(x) * out_c;
      k.depthwise(t);
    }
  }
  if (d.expand) return;

  // 2. Edge columns (input read in place): up to kFloatRows rows of one image whose filter rows all lie inside the
  //    input share the first row's list (their inputs are stride_h input rows apart); the other rows go alone.
  auto rows_inside = [&](int64_t oy) {
    const int64_t iy0 = oy * p.stride_h - p.padding.top;
    return iy0 >= 0 && iy0 + int64_t{fs.h - 1} * p.dilation_h < is.h;
  };
  t.input_step = static_cast<size_t>(p.stride_h) * static_cast<size_t>(is.w) * static_cast<size_t>(channel_stride);
  t.out_step = static_cast<size_t>(os.w) * out_c;
  for (int32_t ox = 0; ox < os.w; ++ox) {
    if (ox == range.first && range.first < range.end) ox = range.end;
    if (ox >= os.w) break;
    for (size_t row = r0; row < r1;) {
      const auto oy = static_cast<int64_t>(row % out_h);
      int32_t rows = 1;
      if (rows_inside(oy))
        while (rows < kFloatRows && row + static_cast<size_t>(rows) < r1 && oy + rows < os.h && rows_inside(oy + rows))
          ++rows;
      t.taps = edge_list(oy, ox);
      t.rows = rows;
      t.input = input + row / out_h * batch_size;
      t.out = output + (row * static_cast<size_t>(os.w) + static_cast<size_t>(ox)) * out_c;
      k.depthwise(t);
      row += static_cast<size_t>(rows);
    }
  }
}

}  // namespace

size_t depthwise_float_scratch_bytes(const DepthwiseConv2DParams& p, size_t participants) {
  return is_float(p) ? plan_float_depthwise(p, participants).scratch_bytes() : 0;
}

bool depthwise_float_run(const DepthwiseConv2DParams& p, SimdLevel level, WorkerPool& pool) {
  if (!is_float(p)) return false;
  const FloatDepthwisePlan d = plan_float_depthwise(p, pool.size());
  if (!d.fits || p.scratch.size() < d.scratch_bytes()) return false;
  if (d.rows == 0 || p.output_shape.w == 0 || p.output_shape.c == 0) return true;
  const FloatKernels k = float_kernels(level);
  // Ranges of rows, of kFloatRows rows at least where the layer has them (edge columns form register blocks).
  const size_t threads = pool.size();
  const size_t parts =
      threads == 1 ? 1 : std::clamp<size_t>(d.rows / kFloatRows, std::min(threads, d.rows), 4 * threads);
  const uint64_t macs = uint64_t{d.rows} * static_cast<uint64_t>(p.output_shape.w) *
                        static_cast<uint64_t>(p.output_shape.c) * d.taps;
  pool.run(parts, [&](size_t part, size_t participant) {
    compute_rows(p, d, k, d.rows * part / parts, d.rows * (part + 1) / parts,
                 p.scratch.data() + participant * d.participant_bytes());
  }, macs);
  return true;
}

}  // namespace aisrv::engine::cpu::opt
