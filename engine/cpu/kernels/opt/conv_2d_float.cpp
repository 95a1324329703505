// aisrv CPU engine, optimised kernels — float32 CONV_2D (float_kernels.hpp), bit-exact with the reference's
// reference_ops::Conv order: per output element, +0.0f, then the taps inside the input in (filter row, filter column,
// input channel) order, then + bias, then the clamp.
//   pack:    at every run (a float model's filter may be computed at run time, so nothing is prepared at load) the
//            filter [oc][fy][fx][ic] is copied into scratch as blocks of 8 or 16 output channels of one group,
//            [fy][fx][ic][width] per block (lanes past the group's channels 0, never stored);
//   compute: per output row and block of channels, the pixels whose filter columns all lie inside the input go
//            through the tap loop in register blocks of up to kFloatRows pixels of the row sharing one tap list; the
//            pixels of the left and right edge columns list only their taps inside the input (the reference skips
//            the others; a zero tap instead would add 0 x w, which is NaN for an infinite weight), in register blocks
//            of up to kFloatRows rows of one column where the filter rows all lie inside the input (one list serves
//            them: their inputs are stride_h input rows apart), alone otherwise. A 1x1, stride-1 convolution without
//            padding runs its pixels as one long row, or, with few pixels, as a fully connected layer (no packing).
// With a worker pool, the packing is split by blocks, then the output rows (and, for layers of few rows, the channel
// blocks) into parts; each participant has its own tap list. Every output is computed the same way whatever the
// split.
#include <algorithm>
#include <cstring>

#include "float_kernels.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu::opt {

namespace {

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

// floor(a / b) for b > 0.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

constexpr size_t kFlatRowPixels = 16 * kFloatRows;  // pixels per "row" of a flattened 1x1 convolution
constexpr size_t kFewPixels = 32;  // a flattened 1x1 convolution of at most this many pixels runs as FULLY_CONNECTED

struct FloatConvPlan {
  size_t participants = 1;
  int32_t groups = 1, group_in = 0, group_out = 0;
  int32_t width = 16;   // channels per block: 8 when a group has at most 8
  size_t blocks = 0;    // per group
  size_t taps = 0;      // filter_h * filter_w
  size_t depth = 0;     // taps * group_in
  bool flat = false;    // 1x1, stride 1, no padding, one group: all pixels in one sequence
  bool as_fc = false;   // flat with at most kFewPixels pixels: runs as FULLY_CONNECTED (no scratch)
  size_t rows = 0;      // output rows over all batches (flat: runs of kFlatRowPixels pixels)
  size_t pixels = 0;    // output pixels over all batches
  bool fits = false;

  size_t block_floats() const { return depth * static_cast<size_t>(width); }
  size_t total_blocks() const { return static_cast<size_t>(groups) * blocks; }
  size_t packed_bytes() const { return round_up(total_blocks() * block_floats() * sizeof(float), 64); }
  // A tap list: input and weight offsets.
  size_t list_bytes() const { return round_up(2 * std::max<size_t>(taps, 1) * sizeof(ptrdiff_t), 64); }
  size_t scratch_bytes() const { return fits && !as_fc ? packed_bytes() + participants * list_bytes() : 0; }
};

bool is_float(const Conv2DParams& p) { return p.dtype == DType::float32 && p.filter_type == DType::float32; }

FloatConvPlan plan_float_conv(const Conv2DParams& p, size_t participants) {
  FloatConvPlan c;
  c.participants = std::max<size_t>(participants, 1);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  if (fs.c < 1 || fs.h < 1 || fs.w < 1 || is.c < fs.c || is.c % fs.c != 0 || os.n < 0 || os.h < 0 || os.w < 0)
    return c;
  c.groups = is.c / fs.c;
  if (os.c < c.groups || os.c % c.groups != 0 || p.stride_w < 1 || p.stride_h < 1 || p.dilation_w < 1 ||
      p.dilation_h < 1)
    return c;
  c.group_in = fs.c;
  c.group_out = os.c / c.groups;
  c.width = c.group_out <= 8 ? 8 : 16;
  c.blocks = (static_cast<size_t>(c.group_out) + static_cast<size_t>(c.width) - 1) / static_cast<size_t>(c.width);
  c.taps = static_cast<size_t>(fs.h) * static_cast<size_t>(fs.w);
  c.depth = c.taps * static_cast<size_t>(fs.c);
  c.pixels = static_cast<size_t>(os.n) * static_cast<size_t>(os.h) * static_cast<size_t>(os.w);
  c.flat = fs.h == 1 && fs.w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.padding.top == 0 &&
           p.padding.left == 0 && os.h == is.h && os.w == is.w && c.groups == 1;
  c.as_fc = c.flat && c.pixels <= kFewPixels;
  c.rows = c.flat ? (c.pixels + kFlatRowPixels - 1) / kFlatRowPixels
                  : static_cast<size_t>(os.n) * static_cast<size_t>(os.h);
  const long double packed = static_cast<long double>(c.total_blocks()) * c.depth * c.width * sizeof(float);
  const long double lists = static_cast<long double>(c.taps) * 2 * sizeof(ptrdiff_t) * c.participants;
  c.fits = c.depth < (size_t{1} << 31) && packed < kMaxKernelBytes && lists < kMaxKernelBytes;
  return c;
}

// Block gb (group gb / blocks) of the filter in [fy][fx][ic][width] order.
void pack_block(const Conv2DParams& p, const FloatConvPlan& c, size_t gb, float* packed) {
  const auto* filter = static_cast<const float*>(p.filter);
  const size_t g = gb / c.blocks, nb = gb % c.blocks;
  const auto width = static_cast<size_t>(c.width);
  float* block = packed + gb * c.block_floats();
  for (size_t j = 0; j < width; ++j) {
    const size_t local = nb * width + j;
    if (local >= static_cast<size_t>(c.group_out)) {
      for (size_t k = 0; k < c.depth; ++k) block[k * width + j] = 0.0f;
      continue;
    }
    const float* row = filter + (g * static_cast<size_t>(c.group_out) + local) * c.depth;
    for (size_t k = 0; k < c.depth; ++k) block[k * width + j] = row[k];
  }
}

// Sizes of `n` pixels split into register blocks of at most kFloatRows, as even as possible: block i of `count`.
int32_t block_rows(int32_t n, int32_t count, int32_t i) { return n * (i + 1) / count - n * i / count; }

// Output channel block gb into `t`: its packed weights, its bias padded to 16 with zeros, cols; returns its first
// output channel and sets `channel0` to its group's first input channel.
size_t set_block(const Conv2DParams& p, const FloatConvPlan& c, const float* packed, size_t gb, FloatTapBlock& t,
                 float* bias, ptrdiff_t& channel0) {
  const size_t g = gb / c.blocks, nb = gb % c.blocks;
  const auto width = static_cast<size_t>(c.width);
  const size_t oc0 = g * static_cast<size_t>(c.group_out) + nb * width;
  channel0 = static_cast<ptrdiff_t>(g) * c.group_in;
  t.cols = static_cast<int32_t>(std::min(width, static_cast<size_t>(c.group_out) - nb * width));
  for (int32_t j = 0; j < 16; ++j)
    bias[j] = j < t.cols && p.float_bias ? p.float_bias[oc0 + static_cast<size_t>(j)] : 0.0f;
  t.weights = packed + gb * c.block_floats();
  t.bias = bias;
  return oc0;
}

// Output rows [r0, r1) (flat: runs of pixels), channel blocks [gb0, gb1).
void compute_rows(const Conv2DParams& p, const FloatConvPlan& c, const FloatKernels& k, const float* packed,
                  size_t r0, size_t r1, size_t gb0, size_t gb1, ptrdiff_t* lists) {
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  const auto* input = static_cast<const float*>(p.input);
  auto* output = static_cast<float*>(p.output);
  const auto in_c = static_cast<ptrdiff_t>(is.c);
  const auto out_c = static_cast<size_t>(os.c);
  ptrdiff_t* tap_in = lists;
  ptrdiff_t* tap_w = lists + c.taps;
  const auto width = static_cast<ptrdiff_t>(c.width);
  const auto depth = static_cast<ptrdiff_t>(c.group_in);
  const auto taps_fn = k.taps[c.width == 16 ? 1 : 0];
  FloatTapBlock t;
  t.depth = c.group_in;
  t.act_min = p.float_act_min;
  t.act_max = p.float_act_max;
  alignas(32) float bias[16];
  ptrdiff_t channel0 = 0;

  if (c.flat) {  // pixels [first, end) of the whole output, one tap
    tap_in[0] = 0;
    tap_w[0] = 0;
    t.tap_input = tap_in;
    t.tap_weight = tap_w;
    t.taps = 1;
    t.input_step = static_cast<size_t>(in_c);
    t.out_step = out_c;
    const size_t first = r0 * kFlatRowPixels, end = std::min(c.pixels, r1 * kFlatRowPixels);
    for (size_t gb = gb0; gb < gb1; ++gb) {
      const size_t oc0 = set_block(p, c, packed, gb, t, bias, channel0);
      for (size_t px = first; px < end; px += kFlatRowPixels) {
        const auto n = static_cast<int32_t>(std::min(kFlatRowPixels, end - px));
        const int32_t count = (n + kFloatRows - 1) / kFloatRows;
        size_t at = px;
        for (int32_t i = 0; i < count; ++i) {
          t.rows = block_rows(n, count, i);
          t.input = input + at * static_cast<size_t>(in_c);
          t.out = output + at * out_c + oc0;
          taps_fn(t);
          at += static_cast<size_t>(t.rows);
        }
      }
    }
    return;
  }

  const size_t batch_size = static_cast<size_t>(is.h) * static_cast<size_t>(is.w) * static_cast<size_t>(in_c);
  const auto out_h = static_cast<size_t>(os.h);
  const ColumnRange range = interior_columns(os.w, is.w, p.stride_w, p.padding.left, fs.w, p.dilation_w);

  // 1. Per row, the pixels whose filter columns all lie inside the input: one list of the taps inside the input,
  //    relative to the pixel's leftmost input column; consecutive pixels read stride_w columns further.
  t.input_step = static_cast<size_t>(p.stride_w) * static_cast<size_t>(in_c);
  t.out_step = out_c;
  t.tap_input = tap_in;
  t.tap_weight = tap_w;
  for (size_t row = r0; row < r1 && range.first < range.end; ++row) {
    const int64_t iy0 = int64_t{static_cast<int32_t>(row % out_h)} * p.stride_h - p.padding.top;
    const float* batch_in = input + row / out_h * batch_size;
    int32_t n_taps = 0;
    for (int32_t fy = 0; fy < fs.h; ++fy) {
      const int64_t iy = iy0 + int64_t{fy} * p.dilation_h;
      if (iy < 0 || iy >= is.h) continue;
      for (int32_t fx = 0; fx < fs.w; ++fx, ++n_taps) {
        tap_in[n_taps] = static_cast<ptrdiff_t>((iy * is.w + int64_t{fx} * p.dilation_w) * in_c);
        tap_w[n_taps] = (static_cast<ptrdiff_t>(fy) * fs.w + fx) * depth * width;
      }
    }
    t.taps = n_taps;
    const int32_t n = range.end - range.first;
    const int32_t count = (n + kFloatRows - 1) / kFloatRows;
    for (size_t gb = gb0; gb < gb1; ++gb) {
      const size_t oc0 = set_block(p, c, packed, gb, t, bias, channel0);
      int32_t ox = range.first;
      for (int32_t i = 0; i < count; ++i) {
        t.rows = block_rows(n, count, i);
        t.input = batch_in + (int64_t{ox} * p.stride_w - p.padding.left) * in_c + channel0;
        t.out = output + (row * static_cast<size_t>(os.w) + static_cast<size_t>(ox)) * out_c + oc0;
        taps_fn(t);
        ox += t.rows;
      }
    }
  }

  // 2. The edge columns: a pixel's list holds its taps inside the input (offsets from its image's first element).
  //    Up to kFloatRows rows of one image whose filter rows all lie inside the input share the list of the first
  //    (their inputs are stride_h input rows apart); the other rows go alone.
  auto rows_inside = [&](int64_t oy) {
    const int64_t iy0 = oy * p.stride_h - p.padding.top;
    return iy0 >= 0 && iy0 + int64_t{fs.h - 1} * p.dilation_h < is.h;
  };
  t.input_step = static_cast<size_t>(p.stride_h) * static_cast<size_t>(is.w) * static_cast<size_t>(in_c);
  t.out_step = static_cast<size_t>(os.w) * out_c;
  for (int32_t ox = 0; ox < os.w; ++ox) {
    if (ox == range.first && range.first < range.end) ox = range.end;
    if (ox >= os.w) break;
    const int64_t ix0 = int64_t{ox} * p.stride_w - p.padding.left;
    for (size_t row = r0; row < r1;) {
      const auto oy = static_cast<int64_t>(row % out_h);
      int32_t rows = 1;
      if (rows_inside(oy))
        while (rows < kFloatRows && row + static_cast<size_t>(rows) < r1 && oy + rows < os.h && rows_inside(oy + rows))
          ++rows;
      const int64_t iy0 = oy * p.stride_h - p.padding.top;
      int32_t n_taps = 0;
      for (int32_t fy = 0; fy < fs.h; ++fy) {
        const int64_t iy = iy0 + int64_t{fy} * p.dilation_h;
        if (iy < 0 || iy >= is.h) continue;
        for (int32_t fx = 0; fx < fs.w; ++fx) {
          const int64_t ix = ix0 + int64_t{fx} * p.dilation_w;
          if (ix < 0 || ix >= is.w) continue;
          tap_in[n_taps] = static_cast<ptrdiff_t>((iy * is.w + ix) * in_c);
          tap_w[n_taps] = (static_cast<ptrdiff_t>(fy) * fs.w + fx) * depth * width;
          ++n_taps;
        }
      }
      t.taps = n_taps;
      t.rows = rows;
      for (size_t gb = gb0; gb < gb1; ++gb) {
        const size_t oc0 = set_block(p, c, packed, gb, t, bias, channel0);
        t.input = input + row / out_h * batch_size + channel0;
        t.out = output + (row * static_cast<size_t>(os.w) + static_cast<size_t>(ox)) * out_c + oc0;
        taps_fn(t);
      }
      row += static_cast<size_t>(rows);
    }
  }
}

}  // namespace

ColumnRange interior_columns(int32_t out_w, int32_t in_w, int32_t stride, int32_t pad, int32_t taps,
                             int32_t spacing) {
  // o * stride - pad >= 0 and o * stride - pad + (taps - 1) * spacing <= in_w - 1.
  const int64_t first = std::max<int64_t>(0, -floor_div(-int64_t{pad}, stride));
  const int64_t last_numerator = int64_t{in_w} - 1 + pad - (int64_t{taps} - 1) * spacing;
  if (last_numerator < 0) return {};
  const int64_t end = std::min<int64_t>(out_w, floor_div(last_numerator, stride) + 1);
  if (first >= end) return {};
  return {static_cast<int32_t>(first), static_cast<int32_t>(end)};
}

size_t conv2d_float_scratch_bytes(const Conv2DParams& p, size_t participants) {
  return is_float(p) ? plan_float_conv(p, participants).scratch_bytes() : 0;
}

bool conv2d_float_run(const Conv2DParams& p, SimdLevel level, WorkerPool& pool) {
  if (!is_float(p)) return false;
  const FloatConvPlan c = plan_float_conv(p, pool.size());
  if (!c.fits || p.scratch.size() < c.scratch_bytes()) return false;
  if (c.pixels == 0 || p.output_shape.c == 0) return true;
  if (c.as_fc) {
    // A pointwise convolution of a few pixels (a classifier head, say) is a fully connected layer with the pixels as
    // batch rows: the same sum over the input channels, + bias (+0.0f when there is none), the clamp. Packing weights
    // that so few pixels use would cost more than the products.
    FullyConnectedParams f;
    f.dtype = DType::float32;
    f.filter_type = DType::float32;
    f.batches = static_cast<int32_t>(c.pixels);
    f.accum_depth = p.input_shape.c;
    f.output_depth = p.output_shape.c;
    f.input = p.input;
    f.weights = p.filter;
    f.float_bias = p.float_bias;
    f.output = p.output;
    f.float_act_min = p.float_act_min;
    f.float_act_max = p.float_act_max;
    return fully_connected_float_run(f, level, pool);
  }
  const FloatKernels k = float_kernels(level);
  auto* packed = reinterpret_cast<float*>(p.scratch.data());
  const size_t blocks = c.total_blocks();
  pool.run(blocks, [&](size_t gb, size_t) { pack_block(p, c, gb, packed); }, uint64_t{blocks} * c.block_floats());

  // Parts: ranges of rows (of kFloatRows rows at least where the layer has them, so that edge columns form register
  // blocks), each over all channel blocks; a layer of few rows also splits its channel blocks.
  const size_t threads = pool.size();
  const size_t row_parts =
      threads == 1 ? 1 : std::clamp<size_t>(c.rows / kFloatRows, std::min(threads, c.rows), 4 * threads);
  const size_t block_parts =
      threads > 1 && c.rows < 2 * threads ? std::min(blocks, (2 * threads + c.rows - 1) / c.rows) : 1;
  const uint64_t macs = uint64_t{c.pixels} * static_cast<uint64_t>(p.output_shape.c) * c.depth;
  uint8_t* lists_base = p.scratch.data() + c.packed_bytes();
  pool.run(row_parts * block_parts, [&](size_t part, size_t participant) {
    const size_t rp = part / block_parts, bp = part % block_parts;
    auto* lists = reinterpret_cast<ptrdiff_t*>(lists_base + participant * c.list_bytes());
    compute_rows(p, c, k, packed, c.rows * rp / row_parts, c.rows * (rp + 1) / row_parts, blocks * bp / block_parts,
                 blocks * (bp + 1) / block_parts, lists);
  }, macs);
  return true;
}

}  // namespace aisrv::engine::cpu::opt
