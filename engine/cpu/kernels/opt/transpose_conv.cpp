// aisrv CPU engine, optimised kernels — TRANSPOSE_CONV in gather form: instead of the reference's scatter (every
// input element adds to the outputs its window covers), each output element sums what reaches it. Output column o
// takes input column i through filter column f = o + pad - i * stride when 0 <= f < filter_w, so the columns of one
// phase (o + pad) mod stride use the filter columns f = phase, phase + stride, ... and consecutive columns of a phase
// read consecutive input columns (likewise for rows). The output rows are split across the worker pool; outputs do
// not overlap, so no participant needs accumulators of its own and the result does not depend on the split.
//   8-bit (int8 per-channel, uint8 per-tensor): prepare packs, per phase (filter row phase, filter column phase) and
//            block of 16 output channels, the phase's weights + filter offset as int16 in the AVX2 GEMM's pairs
//            layout ([K/2][16][2], K = the phase's taps x input channels) with the block's bias, multiplier and shift;
//            invoke builds, per output row and column phase, im2col rows of the phase's taps (input + input offset,
//            0 for a tap outside the input: it adds 0, as the reference's missing contribution) in scratch, then
//            runs the 6 x 16 GEMM blocks (opt_kernels.hpp; the table's AVX2 GEMM, else the plain one below). Integer
//            sums do not depend on their order: exactly the reference's int32 sums, then fp::requantize's formula.
//   float32: the scatter adds each output's contributions in input order (input row, input column, input channel),
//            so the gather lists the taps inside the input in that order (input rows ascending, i.e. filter rows
//            descending) and runs the float tap loop (float_kernels.hpp) over blocks of 8 or 16 output channels,
//            weights packed at load as [fy][fx][ic][width]; pixels of a phase whose taps all lie inside the input
//            share one tap list in register blocks, the others go alone with their own list.
#include <algorithm>
#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "float_kernels.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace opt {

namespace {

constexpr size_t kTileBytes = 64 * 1024;  // im2col rows of one phase: a few GEMM blocks' worth, inside L2

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Filter taps of phase r along an axis: r, r + stride, ... below `filter` (none when r >= filter).
int64_t phase_taps(int64_t r, int64_t filter, int64_t stride) {
  return r < filter ? (filter - r + stride - 1) / stride : 0;
}

bool quantized(const TransposeConvParams& p) { return p.dtype == DType::int8 || p.dtype == DType::uint8; }

struct TransposePlan {
  bool quantized = false;
  size_t participants = 1;
  size_t rows = 0;      // output rows over all batches
  size_t taps = 0;      // filter_h * filter_w
  int32_t width = 16;   // output channels per block (8-bit: kGemmCols; float: 8 or 16)
  size_t blocks = 0;
  // 8-bit: phases (ry, rx) for ry < phases_y, rx < phases_x, then one phase without taps.
  int64_t phases_y = 0, phases_x = 0;
  size_t phases = 0;
  size_t depth_max = 0;    // largest padded phase depth (even)
  size_t phase_bytes = 0;  // all phases' blocks
  size_t tile_rows = 0;    // multiple of kGemmRows
  bool fits = false;

  // 8-bit scratch: the phases' offsets in the prepared data (made by the caller), then a tile per participant.
  size_t table_bytes() const { return round_up(phases * sizeof(uint64_t), 64); }
  size_t float_block_floats(const TransposeConvParams& p) const {
    return taps * static_cast<size_t>(p.input_shape.c) * static_cast<size_t>(width);
  }
  size_t prepared_bytes(const TransposeConvParams& p) const {
    if (!fits) return 0;
    if (quantized) return kPreparedHeaderBytes + phase_bytes;
    return kPreparedHeaderBytes + round_up(blocks * float_block_floats(p) * sizeof(float), 64);
  }
  size_t tile_bytes() const { return round_up(tile_rows * depth_max * sizeof(int16_t), 64); }
  size_t list_bytes() const { return round_up(4 * std::max<size_t>(taps, 1) * sizeof(ptrdiff_t), 64); }
  size_t participant_bytes() const { return quantized ? tile_bytes() : list_bytes(); }
  size_t shared_bytes() const { return quantized ? table_bytes() : 0; }
  size_t scratch_bytes() const { return fits ? shared_bytes() + participants * participant_bytes() : 0; }
};

// Depth (taps x input channels) of phase (ry, rx); the last phase has none.
size_t phase_depth(const TransposeConvParams& p, const TransposePlan& c, size_t phase) {
  if (phase + 1 >= c.phases) return 0;
  const auto ry = static_cast<int64_t>(phase) / c.phases_x, rx = static_cast<int64_t>(phase) % c.phases_x;
  const int64_t taps = phase_taps(ry, p.filter_shape.h, p.stride_h) * phase_taps(rx, p.filter_shape.w, p.stride_w);
  return static_cast<size_t>(taps * p.input_shape.c);
}
size_t padded_depth(size_t depth) { return round_up(std::max<size_t>(depth, 1), 2); }
// One block of 16 output channels: int16 weights in pairs layout, then bias, multiplier and shift.
size_t block_bytes(size_t depth_padded) {
  return depth_padded * kGemmCols * sizeof(int16_t) + 3 * kGemmCols * sizeof(int32_t);
}

TransposePlan plan_transpose(const TransposeConvParams& p, size_t participants) {
  TransposePlan c;
  c.quantized = quantized(p);
  c.participants = std::max<size_t>(participants, 1);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  if (fs.h < 1 || fs.w < 1 || fs.c != is.c || fs.n != os.c || is.c < 1 || os.c < 1 || is.n != os.n || os.n < 0 ||
      os.h < 0 || os.w < 0 || is.h < 0 || is.w < 0 || p.stride_h < 1 || p.stride_w < 1 || p.padding.top < 0 ||
      p.padding.left < 0)
    return c;
  c.rows = static_cast<size_t>(os.n) * static_cast<size_t>(os.h);
  c.taps = static_cast<size_t>(fs.h) * static_cast<size_t>(fs.w);
  const long double filter_elements = static_cast<long double>(c.taps) * is.c * os.c;
  if (c.quantized) {
    c.width = kGemmCols;
    c.blocks = (static_cast<size_t>(os.c) + kGemmCols - 1) / kGemmCols;
    c.phases_y = std::min<int64_t>(p.stride_h, fs.h);
    c.phases_x = std::min<int64_t>(p.stride_w, fs.w);
    c.phases = static_cast<size_t>(c.phases_y * c.phases_x) + 1;
    // Bounded by the filter: the phases partition its taps, and there are at most taps + 1 of them.
    if (filter_elements * 4 >= kMaxKernelBytes) return c;
    for (size_t ph = 0; ph < c.phases; ++ph) {
      const size_t dp = padded_depth(phase_depth(p, c, ph));
      c.depth_max = std::max(c.depth_max, dp);
      c.phase_bytes += c.blocks * block_bytes(dp);
    }
    const size_t per_phase_row = static_cast<size_t>(ceil_div(std::max(os.w, 1), p.stride_w));
    const size_t fit = std::max<size_t>(kTileBytes / (c.depth_max * sizeof(int16_t)), kGemmRows);
    c.tile_rows = std::min(fit, round_up(per_phase_row, kGemmRows)) / kGemmRows * kGemmRows;
    c.fits = c.depth_max < (size_t{1} << 31) &&
             static_cast<long double>(c.phase_bytes) + c.table_bytes() +
                     c.participants * static_cast<long double>(c.tile_bytes()) <
                 kMaxKernelBytes;
  } else {
    c.width = os.c <= 8 ? 8 : 16;
    c.blocks = (static_cast<size_t>(os.c) + static_cast<size_t>(c.width) - 1) / static_cast<size_t>(c.width);
    c.fits = c.taps * static_cast<size_t>(is.c) < (size_t{1} << 31) &&
             static_cast<long double>(c.blocks) * c.taps * is.c * c.width * sizeof(float) < kMaxKernelBytes &&
             static_cast<long double>(c.taps) * 4 * sizeof(ptrdiff_t) * c.participants < kMaxKernelBytes;
  }
  return c;
}

// ---- 8-bit ------------------------------------------------------------------------------------------------------

// Byte offset of every phase's blocks in the prepared data (after the header), in phase order.
void phase_offsets(const TransposeConvParams& p, const TransposePlan& c, uint64_t* table) {
  uint64_t offset = 0;
  for (size_t ph = 0; ph < c.phases; ++ph) {
    table[ph] = offset;
    offset += c.blocks * block_bytes(padded_depth(phase_depth(p, c, ph)));
  }
}

template <typename T>
void pack_quantized(const TransposeConvParams& p, const TransposePlan& c, std::span<uint8_t> prepared) {
  const T* filter = static_cast<const T*>(p.filter);
  const Dims4 &fs = p.filter_shape, &os = p.output_shape;
  uint8_t* base = prepared.data() + kPreparedHeaderBytes;
  const auto in_c = static_cast<size_t>(fs.c);
  size_t offset = 0;
  for (size_t ph = 0; ph < c.phases; ++ph) {
    const size_t depth = phase_depth(p, c, ph), dp = padded_depth(depth);
    const int64_t ry = ph + 1 < c.phases ? static_cast<int64_t>(ph) / c.phases_x : 0;
    const int64_t rx = ph + 1 < c.phases ? static_cast<int64_t>(ph) % c.phases_x : 0;
    const int64_t taps_x = phase_taps(rx, fs.w, p.stride_w);
    for (size_t nb = 0; nb < c.blocks; ++nb) {
      uint8_t* block = base + offset;
      auto* w = reinterpret_cast<int16_t*>(block);
      auto* bias = reinterpret_cast<int32_t*>(block + dp * kGemmCols * sizeof(int16_t));
      int32_t* multiplier = bias + kGemmCols;
      int32_t* shift = multiplier + kGemmCols;
      for (size_t j = 0; j < static_cast<size_t>(kGemmCols); ++j) {
        const size_t oc = nb * kGemmCols + j;
        const bool valid = oc < static_cast<size_t>(os.c);
        bias[j] = valid && p.bias ? p.bias[oc] : 0;
        multiplier[j] = valid ? p.output_multiplier[oc] : 0;
        shift[j] = valid ? p.output_shift[oc] : 0;
        for (size_t k = 0; k < dp; ++k) {
          int32_t v = 0;
          if (valid && k < depth) {  // k = (ty * taps_x + tx) * in_c + ic
            const size_t tap = k / in_c, ic = k % in_c;
            const int64_t fy = ry + static_cast<int64_t>(tap) / taps_x * p.stride_h;
            const int64_t fx = rx + static_cast<int64_t>(tap) % taps_x * p.stride_w;
            v = int32_t{filter[fs.offset(static_cast<int32_t>(oc), static_cast<int32_t>(fy), static_cast<int32_t>(fx),
                                         static_cast<int32_t>(ic))]} +
                p.filter_offset;
          }
          w[(k / 2 * kGemmCols + j) * 2 + k % 2] = static_cast<int16_t>(v);
        }
      }
      offset += block_bytes(dp);
    }
  }
}

// The GEMM block on the pairs layout in plain C++ (the levels whose table GEMM reads another layout): int32 sums from
// the bias (each partial sum is bounded by the loader's accumulator check), then fp::requantize.
template <bool U>
void pairs_gemm(const GemmBlock& g) {
  int32_t acc[kGemmRows][kGemmCols];
  for (int r = 0; r < kGemmRows; ++r)
    for (int j = 0; j < kGemmCols; ++j) acc[r][j] = g.bias[j];
  for (int32_t k = 0; k < g.pairs; ++k) {
    const int16_t* b = g.b + static_cast<size_t>(k) * 2 * kGemmCols;
    for (int r = 0; r < kGemmRows; ++r) {
      const int16_t* a = g.a + static_cast<size_t>(r) * g.a_stride + 2 * static_cast<size_t>(k);
      const int32_t a0 = a[0], a1 = a[1];
      for (int j = 0; j < kGemmCols; ++j) acc[r][j] += a0 * b[2 * j] + a1 * b[2 * j + 1];
    }
  }
  for (int32_t r = 0; r < g.rows; ++r) {
    uint8_t* out = g.out + static_cast<size_t>(r) * g.out_stride;
    for (int32_t j = 0; j < g.cols; ++j) {
      const int32_t v = fp::requantize(acc[r][j], g.multiplier[j], g.shift[j], g.output_offset, g.act_min, g.act_max);
      out[j] = U ? static_cast<uint8_t>(v) : static_cast<uint8_t>(static_cast<int8_t>(v));
    }
  }
}

// Output rows [r0, r1) with this participant's im2col tile; `table`: phase_offsets.
void run_quantized_rows(const TransposeConvParams& p, const TransposePlan& c, const OptKernels& k,
                        void (*gemm)(const GemmBlock&), const uint64_t* table, size_t r0, size_t r1, int16_t* tile) {
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  const int u = p.dtype == DType::uint8 ? 1 : 0;
  const auto* input = static_cast<const uint8_t*>(p.input);
  auto* output = static_cast<uint8_t*>(p.output);
  const uint8_t* blocks_base = p.prepared.data() + kPreparedHeaderBytes;
  const auto in_c = static_cast<size_t>(is.c);
  const auto out_c = static_cast<size_t>(os.c);
  const int64_t sh = p.stride_h, sw = p.stride_w;
  GemmBlock gb;
  gb.output_offset = p.output_offset;
  gb.act_min = p.act_min;
  gb.act_max = p.act_max;
  gb.out_stride = static_cast<size_t>(sw) * out_c;
  for (size_t row = r0; row < r1; ++row) {
    const size_t b = row / static_cast<size_t>(os.h);
    const int64_t oy = static_cast<int64_t>(row % static_cast<size_t>(os.h));
    const int64_t ry = (oy + p.padding.top) % sh;
    const int64_t taps_y = phase_taps(ry, fs.h, sh);
    const uint8_t* batch_in = input + b * static_cast<size_t>(is.h) * static_cast<size_t>(is.w) * in_c;
    for (int64_t ox0 = 0; ox0 < std::min<int64_t>(sw, os.w); ++ox0) {
      const int64_t rx = (ox0 + p.padding.left) % sw;
      const int64_t taps_x = phase_taps(rx, fs.w, sw);
      const size_t phase = taps_y > 0 && taps_x > 0 ? static_cast<size_t>(ry * c.phases_x + rx) : c.phases - 1;
      const size_t depth = phase_depth(p, c, phase), dp = padded_depth(depth);
      const uint64_t phase_offset = table[phase];
      const size_t pixels = static_cast<size_t>(ceil_div(os.w - ox0, sw));
      for (size_t j0 = 0; j0 < pixels; j0 += c.tile_rows) {
        const size_t n = std::min(c.tile_rows, pixels - j0);
        for (size_t j = 0; j < n; ++j) {
          int16_t* dst = tile + j * dp;
          const int64_t ox = ox0 + static_cast<int64_t>(j0 + j) * sw;
          if (depth > 0) {
            for (int64_t ty = 0; ty < taps_y; ++ty) {
              const int64_t vy = oy + p.padding.top - (ry + ty * sh);  // iy * stride_h
              const int64_t iy = vy / sh;
              const bool row_inside = vy >= 0 && iy < is.h;
              for (int64_t tx = 0; tx < taps_x; ++tx, dst += in_c) {
                const int64_t vx = ox + p.padding.left - (rx + tx * sw);
                const int64_t ix = vx / sw;
                if (row_inside && vx >= 0 && ix < is.w) {
                  const size_t pixel = static_cast<size_t>(iy) * static_cast<size_t>(is.w) + static_cast<size_t>(ix);
                  k.widen[u](batch_in + pixel * in_c, dst, in_c, p.input_offset);
                } else {
                  std::memset(dst, 0, in_c * sizeof(int16_t));
                }
              }
            }
          }
          std::fill(dst, tile + (j + 1) * dp, int16_t{0});
        }
        const size_t padded_rows = round_up(n, kGemmRows);
        std::memset(tile + n * dp, 0, (padded_rows - n) * dp * sizeof(int16_t));
        gb.a_stride = dp;
        gb.pairs = static_cast<int32_t>(dp / 2);
        for (size_t nb = 0; nb < c.blocks; ++nb) {
          const uint8_t* block = blocks_base + phase_offset + nb * block_bytes(dp);
          gb.b = reinterpret_cast<const int16_t*>(block);
          gb.bias = reinterpret_cast<const int32_t*>(block + dp * kGemmCols * sizeof(int16_t));
          gb.multiplier = gb.bias + kGemmCols;
          gb.shift = gb.multiplier + kGemmCols;
          gb.cols = static_cast<int32_t>(std::min<size_t>(kGemmCols, out_c - nb * kGemmCols));
          for (size_t q0 = 0; q0 < padded_rows; q0 += kGemmRows) {
            const int64_t ox = ox0 + static_cast<int64_t>(j0 + q0) * sw;
            gb.a = tile + q0 * dp;
            gb.out = output + (row * static_cast<size_t>(os.w) + static_cast<size_t>(ox)) * out_c + nb * kGemmCols;
            gb.rows = static_cast<int32_t>(std::min<size_t>(kGemmRows, n - q0));
            gemm(gb);
          }
        }
      }
    }
  }
}

// ---- float32 ----------------------------------------------------------------------------------------------------

void pack_float(const TransposeConvParams& p, const TransposePlan& c, std::span<uint8_t> prepared) {
  const auto* filter = static_cast<const float*>(p.filter);
  auto* packed = reinterpret_cast<float*>(prepared.data() + kPreparedHeaderBytes);
  const size_t depth = c.taps * static_cast<size_t>(p.input_shape.c);  // [fy][fx][ic] of one output channel
  const auto width = static_cast<size_t>(c.width);
  for (size_t nb = 0; nb < c.blocks; ++nb) {
    float* block = packed + nb * c.float_block_floats(p);
    for (size_t j = 0; j < width; ++j) {
      const size_t oc = nb * width + j;
      const bool valid = oc < static_cast<size_t>(p.output_shape.c);
      for (size_t k = 0; k < depth; ++k) block[k * width + j] = valid ? filter[oc * depth + k] : 0.0f;
    }
  }
}

// Output rows [r0, r1) with this participant's tap lists.
void run_float_rows(const TransposeConvParams& p, const TransposePlan& c, const FloatKernels& k, size_t r0, size_t r1,
                    ptrdiff_t* lists) {
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  const auto* input = static_cast<const float*>(p.input);
  auto* output = static_cast<float*>(p.output);
  const auto* packed = reinterpret_cast<const float*>(p.prepared.data() + kPreparedHeaderBytes);
  const auto in_c = static_cast<ptrdiff_t>(is.c);
  const auto out_c = static_cast<size_t>(os.c);
  const auto width = static_cast<ptrdiff_t>(c.width);
  const int64_t sh = p.stride_h, sw = p.stride_w;
  ptrdiff_t* inside_in = lists;
  ptrdiff_t* inside_w = lists + c.taps;
  ptrdiff_t* edge_in = lists + 2 * c.taps;
  ptrdiff_t* edge_w = lists + 3 * c.taps;
  const auto tap_weight = [&](int64_t fy, int64_t fx) { return static_cast<ptrdiff_t>(fy * fs.w + fx) * in_c * width; };
  const auto taps_fn = k.taps[c.width == 16 ? 1 : 0];

  FloatTapBlock t;
  t.depth = is.c;
  t.act_min = p.float_act_min;
  t.act_max = p.float_act_max;
  t.out_step = static_cast<size_t>(sw) * out_c;
  alignas(32) float bias[16];

  for (size_t row = r0; row < r1; ++row) {
    const size_t b = row / static_cast<size_t>(os.h);
    const int64_t oy = static_cast<int64_t>(row % static_cast<size_t>(os.h));
    const float* batch_in =
        input + b * static_cast<size_t>(is.h) * static_cast<size_t>(is.w) * static_cast<size_t>(in_c);
    float* out_row = output + row * static_cast<size_t>(os.w) * out_c;
    // Input rows reaching this output row, ascending: filter row oy + pad - iy * stride in [0, filter_h).
    const int64_t vy = oy + p.padding.top;
    const int64_t iy_first = std::max<int64_t>(0, ceil_div(vy - fs.h + 1, sh));
    const int64_t iy_end = std::min<int64_t>(is.h, floor_div(vy, sh) + 1);
    for (int64_t ox0 = 0; ox0 < std::min<int64_t>(sw, os.w); ++ox0) {
      // Column j of this phase is ox0 + j * stride_w; it reads input columns ix_first + j .. ix_last + j (before
      // clipping to the input), through the same filter columns.
      const int64_t vx = ox0 + p.padding.left;
      const int64_t ix_first = ceil_div(vx - fs.w + 1, sw), ix_last = floor_div(vx, sw);
      const int64_t columns = ix_last - ix_first + 1;  // filter taps of the phase (<= 0: none)
      const auto pixels = static_cast<int32_t>(ceil_div(os.w - ox0, sw));
      int32_t inside = 0;
      int32_t j_first = 0, j_end = pixels;  // pixels whose taps all lie inside the input (all when the phase has none)
      if (columns > 0 && iy_first < iy_end) {
        j_first = static_cast<int32_t>(std::clamp<int64_t>(-ix_first, 0, pixels));
        j_end = static_cast<int32_t>(std::clamp<int64_t>(is.w - ix_last, j_first, pixels));
        for (int64_t iy = iy_first; iy < iy_end; ++iy)
          for (int64_t dx = 0; dx < columns; ++dx, ++inside) {  // relative to input column ix_first + j
            inside_in[inside] = static_cast<ptrdiff_t>((iy * is.w + dx) * in_c);
            inside_w[inside] = tap_weight(vy - iy * sh, vx - (ix_first + dx) * sw);
          }
      }
      for (size_t nb = 0; nb < c.blocks; ++nb) {
        const size_t oc0 = nb * static_cast<size_t>(width);
        t.cols = static_cast<int32_t>(std::min<size_t>(static_cast<size_t>(width), out_c - oc0));
        for (int32_t j = 0; j < 16; ++j)
          bias[j] = j < t.cols && p.float_bias ? p.float_bias[oc0 + static_cast<size_t>(j)] : 0.0f;
        t.weights = packed + nb * c.float_block_floats(p);
        t.bias = bias;
        auto edge_pixel = [&](int32_t j) {
          int32_t n = 0;
          for (int64_t iy = iy_first; iy < iy_end; ++iy)
            for (int64_t ix = std::max<int64_t>(0, ix_first + j); ix <= std::min<int64_t>(is.w - 1, ix_last + j);
                 ++ix, ++n) {
              edge_in[n] = static_cast<ptrdiff_t>((iy * is.w + ix) * in_c);
              edge_w[n] = tap_weight(vy - iy * sh, vx + j * sw - ix * sw);
            }
          t.input = batch_in;
          t.input_step = 0;
          t.tap_input = edge_in;
          t.tap_weight = edge_w;
          t.taps = n;
          t.rows = 1;
          t.out = out_row + static_cast<size_t>(ox0 + j * sw) * out_c + oc0;
          taps_fn(t);
        };
        for (int32_t j = 0; j < j_first; ++j) edge_pixel(j);
        const int32_t n = j_end - j_first;
        const int32_t count = (n + kFloatRows - 1) / kFloatRows;
        int32_t j = j_first;
        for (int32_t i = 0; i < count; ++i) {
          t.rows = n * (i + 1) / count - n * i / count;
          t.input = inside > 0 ? batch_in + (ix_first + j) * in_c : batch_in;
          t.input_step = inside > 0 ? static_cast<size_t>(in_c) : 0;
          t.tap_input = inside_in;
          t.tap_weight = inside_w;
          t.taps = inside;
          t.out = out_row + static_cast<size_t>(ox0 + j * sw) * out_c + oc0;
          taps_fn(t);
          j += t.rows;
        }
        for (int32_t e = j_end; e < pixels; ++e) edge_pixel(e);
      }
    }
  }
}

}  // namespace

size_t transpose_conv_scratch_bytes(const TransposeConvParams& p, size_t participants) {
  return plan_transpose(p, participants).scratch_bytes();
}

size_t transpose_conv_prepared_bytes(const TransposeConvParams& p) { return plan_transpose(p, 1).prepared_bytes(p); }

void transpose_conv_prepare(const TransposeConvParams& p, std::span<uint8_t> prepared) {
  const TransposePlan c = plan_transpose(p, 1);
  if (!c.fits || prepared.size() < c.prepared_bytes(p) || prepared.size() < kPreparedHeaderBytes) return;
  PreparedHeader h;
  h.magic = kPreparedMagic;
  if (c.quantized) {
    // Values + offsets within [-255, 255]: int16 operands whose pair products sum exactly in int32.
    h.usable = requantization_in_range(p.output_multiplier, p.output_shift) &&
               p.output_multiplier.size() == static_cast<size_t>(p.output_shape.c) && p.input_offset >= -255 &&
               p.input_offset <= 255 && p.filter_offset >= -255 && p.filter_offset <= 255;
    if (h.usable) {
      if (p.dtype == DType::int8) pack_quantized<int8_t>(p, c, prepared);
      else pack_quantized<uint8_t>(p, c, prepared);
    }
  } else {
    h.usable = p.dtype == DType::float32;
    if (h.usable) pack_float(p, c, prepared);
  }
  std::memcpy(prepared.data(), &h, sizeof h);
}

}  // namespace opt

void OptimizedKernelBackend::transpose_conv(const TransposeConvParams& p) {
  const opt::TransposePlan c = opt::plan_transpose(p, pool_.size());
  opt::PreparedHeader h;
  if (c.fits && p.prepared.size() >= c.prepared_bytes(p) && p.prepared.size() >= sizeof h)
    std::memcpy(&h, p.prepared.data(), sizeof h);
  if (h.magic != opt::kPreparedMagic || !h.usable || p.scratch.size() < c.scratch_bytes()) {
    ReferenceKernelBackend::transpose_conv(p);
    return;
  }
  if (c.rows == 0 || p.output_shape.w == 0) return;
  const size_t threads = pool_.size();
  const size_t parts = threads == 1 ? 1 : std::min(c.rows, 4 * threads);
  const uint64_t macs =
      static_cast<uint64_t>(p.input_shape.elements()) * c.taps * static_cast<uint64_t>(p.output_shape.c);
  if (c.quantized) {
    // The table's GEMM where it reads the pairs layout (AVX2), else the plain one.
    const bool u8 = p.dtype == DType::uint8;
    void (*gemm)(const opt::GemmBlock&) = u8 ? opt::pairs_gemm<true> : opt::pairs_gemm<false>;
    if (kernels_.gemm_layout == opt::GemmLayout::pairs) gemm = kernels_.gemm[u8 ? 1 : 0];
    auto* table = reinterpret_cast<uint64_t*>(p.scratch.data());
    opt::phase_offsets(p, c, table);
    pool_.run(parts, [&](size_t part, size_t participant) {
      auto* tile = reinterpret_cast<int16_t*>(p.scratch.data() + c.shared_bytes() + participant * c.tile_bytes());
      opt::run_quantized_rows(p, c, kernels_, gemm, table, c.rows * part / parts, c.rows * (part + 1) / parts, tile);
    }, macs);
  } else {
    const opt::FloatKernels k = opt::float_kernels(level_);
    pool_.run(parts, [&](size_t part, size_t participant) {
      auto* lists = reinterpret_cast<ptrdiff_t*>(p.scratch.data() + participant * c.list_bytes());
      opt::run_float_rows(p, c, k, c.rows * part / parts, c.rows * (part + 1) / parts, lists);
    }, macs);
  }
}

}  // namespace aisrv::engine::cpu
