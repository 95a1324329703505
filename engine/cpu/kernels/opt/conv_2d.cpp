// aisrv CPU engine, optimised kernels — CONV_2D as an int16 GEMM per group: output pixels (rows) x output channels
// (columns) over the depth K = filter_h * filter_w * group input channels.
//   prepare: weights + filter offset packed once into int16 blocks of 16 channels in the layout of the level's GEMM
//            block (AVX2: [K/2][16][2], pairs of depth entries; NEON: [K][16]; portable: [16][K], one row per
//            channel), with per-channel bias / multiplier / shift padded to 16; with the dot-product level, int8
//            convolutions keep their weight bytes ([K16/4][16][4]) and fold the input offset into the bias, and
//            their im2col rows are the input bytes themselves (the zero point for padding taps); the NEON level
//            does the same for deep int8 convolutions in [K16/16][16][16] (GemmLayout::pairs8); the VNNI levels
//            (x86 VPDPBUSD) keep int8 and uint8 weights as signed bytes in [K4/4][16][4] (GemmLayout::vnni) with
//            the offsets folded into the bias, their im2col rows unsigned bytes (int8 inputs + 128), and for uint8 a
//            per-row correction from each im2col row's byte sum;
//   invoke:  tiles of output pixels; each tile's im2col rows (input + input offset as int16, zero for padding taps,
//            depth padded to even) are built in scratch, then 6 x 16 GEMM blocks (opt_kernels.hpp) accumulate,
//            requantize and store. With a worker pool, the parts are (group, tile, range of channel blocks), each
//            participant with its own im2col scratch; a layer whose tiles would be one GEMM block tall (7x7) is
//            split across its channel blocks instead (plan_conv), and one with few tiles across both (the tile's
//            im2col is then built once per part). Every output is computed exactly as alone.
// Exactly the reference's sums (int32, order-independent) and requantization; a padding tap contributes 0, as the
// reference's skipped tap does. float32 convolutions run conv_2d_float.cpp (no prepared data); dynamic-range ones the
// reference kernel (the reference's scratch).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <type_traits>
#include <utility>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "../ref/scratch.hpp"
#include "float_kernels.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace opt {

namespace {

constexpr size_t kTileBytes = 64 * 1024;  // im2col tile: a few rows per GEMM block, well inside L2
constexpr size_t kMaxTileRows = 1024;

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }
// The last tile of each participant's range is halved this many times (1/2, 1/4, 1/4 for 2; plan_conv says why).
// mobilenet_v2's CONV_2D layers on two threads, summed: 2 against no cut 58 us shorter, against 1 23 us, 3 against 2
// no shorter.
constexpr size_t kGuidedCuts = 2;

// Items [first, end) of piece i when `items` are dealt out in equal ranges to `participants`, each range cut into
// k - 1 equal pieces and a last k-th cut kGuidedCuts times (k + kGuidedCuts pieces per range; the worker pool deals
// equal ranges of parts, so range p is participant p's). In units of 2^-kGuidedCuts of an equal piece the pieces start
// at 0, 4, ..., 4k - 4, 4k - 2, 4k - 1 (of 4k) for kGuidedCuts = 2.
std::pair<size_t, size_t> guided_span(size_t i, size_t items, size_t participants, size_t k) {
  const size_t per = k + kGuidedCuts, range = i / per, j = i % per, units = k << kGuidedCuts;
  const size_t first = range * items / participants, count = (range + 1) * items / participants - first;
  const auto edge = [&](size_t e) {
    return e == per ? units : e < k ? e << kGuidedCuts : units - (size_t{1} << (kGuidedCuts - 1 - (e - k)));
  };
  return {first + count * edge(j) / units, first + count * edge(j + 1) / units};
}

struct ConvPlan {
  GemmLayout layout = GemmLayout::rows;
  bool bytes = false;                  // GemmLayout::dot, pairs8, vnni: byte im2col and weights, depth padded to 16
                                       // (vnni: 4)
  size_t element = sizeof(int16_t);    // bytes per im2col / weight element
  size_t participants = 1;             // threads of the backend's pool, each with a scratch tile
  int32_t groups = 1, group_in = 0, group_out = 0;
  size_t depth = 0, depth_padded = 0;  // K, Kp (even; a multiple of 16 for dot)
  size_t blocks = 0;                   // 16-channel blocks per group
  size_t pixels = 0;                   // output pixels over all batches
  size_t row_blocks = 0;               // output pixels in blocks of kGemmRows (the last may be partial)
  size_t tile_rows = 0;                // rows of the largest tile (a multiple of kGemmRows)
  size_t tiles = 0;                    // per group; tile t holds the row blocks [t * row_blocks / tiles, ...), or
                                       // with `guided` its place in its participant's range (tile_span)
  size_t guided = 0;                   // 0, or k: each participant's range of row blocks is k - 1 equal tiles and
                                       // the last k-th of it cut in 1/2, 1/4, 1/4 (k + kGuidedCuts tiles each)
  size_t chunks = 1;                   // ranges of channel blocks a tile is split into (range i: blocks
                                       // [i * blocks / chunks, (i + 1) * blocks / chunks), none empty)
  size_t block_bytes = 0;              // packed weights + bias + multiplier + shift of one block
  bool fits = false;                   // sizes are sane (a hostile shape runs the reference kernel instead)

  size_t weights_bytes() const { return depth_padded * kGemmCols * element; }
  size_t prepared_bytes() const {
    return fits ? kPreparedHeaderBytes + static_cast<size_t>(groups) * blocks * block_bytes : 0;
  }
  // The im2col rows, then (vnni) one int32 row offset per row.
  size_t tile_bytes() const {
    return round_up(tile_rows * depth_padded * element, 64) +
           (layout == GemmLayout::vnni ? round_up(tile_rows * sizeof(int32_t), 64) : 0);
  }
  size_t scratch_bytes() const { return fits ? participants * tile_bytes() : 0; }
  // Output pixels [first, end) of tile t: whole row blocks, tiles differing by one block at most (or guided_span).
  std::pair<size_t, size_t> tile_span(size_t t) const {
    if (guided == 0)
      return {t * row_blocks / tiles * kGemmRows, std::min((t + 1) * row_blocks / tiles * kGemmRows, pixels)};
    const auto [first, end] = guided_span(t, row_blocks, participants, guided);
    return {first * kGemmRows, std::min(end * kGemmRows, pixels)};
  }
};

ConvPlan plan_conv(const Conv2DParams& p, size_t participants, GemmLayout layout) {
  ConvPlan c;
  c.layout = layout;
  c.bytes = layout == GemmLayout::dot || layout == GemmLayout::pairs8 || layout == GemmLayout::vnni;
  c.element = c.bytes ? 1 : sizeof(int16_t);
  c.participants = std::max<size_t>(participants, 1);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  c.groups = std::max(1, fs.c > 0 ? is.c / fs.c : 1);
  c.group_in = fs.c;
  c.group_out = os.c / c.groups;
  c.depth = static_cast<size_t>(fs.h) * static_cast<size_t>(fs.w) * static_cast<size_t>(fs.c);
  c.depth_padded = round_up(std::max<size_t>(c.depth, 1), layout == GemmLayout::vnni ? 4 : c.bytes ? 16 : 2);
  c.blocks = (static_cast<size_t>(c.group_out) + kGemmCols - 1) / kGemmCols;
  c.pixels = static_cast<size_t>(os.n) * static_cast<size_t>(os.h) * static_cast<size_t>(os.w);
  // Tiles: the fewest whose im2col rows fit kTileBytes (at most kMaxTileRows, at least one GEMM block). With several
  // participants the layer is split one of two ways:
  // - by tiles: at least 4 each where the layer allows, and a multiple of their number, so that equal ranges of tiles
  //   are equal work (7 tiles of a 14x14 layer split 3 : 4 left one participant idle for a seventh of the layer); the
  //   row blocks are dealt out evenly, tiles differing by one block at most. Each tile reads every weight once.
  //   Where each participant's range holds enough blocks (ungrouped layers), its last tile is cut into a half and
  //   two quarters ("guided"): the worker ran each tile about 8 % slower than the caller on the Intel Xeon (either
  //   vCPU), so the caller, done with its range, waited for the worker's last tile — 3.7-6.1 us of runs of 43 —
  //   and with small last tiles it takes over more of the worker's range and waits for a shorter one.
  // - by channel blocks, where those tiles would hold fewer than two row blocks each (mobilenet_v2's 7x7 layers: 9
  //   row blocks in 8 tiles): there each weight read from L2 served one block of 6 output pixels, and each
  //   participant read all the weights four times over; split by channels, each reads half the weights once and
  //   computes every pixel of its channels (320 -> 1280 channels on 7x7: 154 -> 132 us on two threads, 232 on one).
  //   The tiles stay the one-participant ones; the channel blocks are dealt out in ranges, a multiple of the
  //   participants in number, each part building its tile's im2col rows (small here). Where tiles hold more rows
  //   (14x14: 4 row blocks each) the tiles win: split by channels, each 14x14 expansion took 2-5 us longer (and the
  //   depthwise layer after it read half of every pixel from the other core).
  const size_t fit = kTileBytes / (c.depth_padded * c.element);
  const size_t max_rows = std::max<size_t>(std::min(fit, kMaxTileRows) / kGemmRows * kGemmRows, kGemmRows);
  c.row_blocks = (std::max<size_t>(c.pixels, 1) + kGemmRows - 1) / kGemmRows;
  c.tiles = (c.row_blocks * kGemmRows + max_rows - 1) / max_rows;
  if (c.participants > 1) {
    const size_t tiles = std::min(round_up(std::max(c.tiles, 4 * c.participants), c.participants), c.row_blocks);
    if (c.groups == 1 && c.blocks >= 2 * c.participants && c.row_blocks < 2 * tiles) {
      c.chunks = std::min(round_up((2 * c.participants + c.tiles - 1) / c.tiles, c.participants), c.blocks);
    } else {
      c.tiles = tiles;
      const size_t items = static_cast<size_t>(std::max(c.groups, 1)) * c.tiles;
      if (items < 2 * c.participants)  // few tiles: split the channel blocks as well
        c.chunks = std::min(c.blocks, (2 * c.participants + items - 1) / items);
      const size_t k = c.tiles / c.participants;
      if (k >= 1 && c.groups == 1 && c.chunks == 1 && c.row_blocks / c.participants >= (k << kGuidedCuts)) {
        c.guided = k;
        c.tiles = (k + kGuidedCuts) * c.participants;
      }
    }
  }
  c.tile_rows = (c.guided ? ((c.row_blocks + c.participants - 1) / c.participants + c.guided - 1) / c.guided
                          : (c.row_blocks + c.tiles - 1) / c.tiles) * kGemmRows;
  c.chunks = std::max<size_t>(c.chunks, 1);
  c.block_bytes = c.weights_bytes() + 3 * kGemmCols * sizeof(int32_t);
  const long double prepared = static_cast<long double>(c.groups) * c.blocks * c.block_bytes;
  const long double scratch = static_cast<long double>(c.tile_rows) * c.depth_padded * c.element;
  c.fits = c.groups >= 1 && c.group_out >= 1 && prepared < kMaxKernelBytes && scratch < kMaxKernelBytes &&
           c.row_blocks < (size_t{1} << 31);  // tile_span's products stay far from overflow
  return c;
}

// Weights, bias, multiplier and shift of every 16-channel block, in the layout's order. The int16 layouts hold
// weight + filter offset; the byte layouts (int8, filter offset 0) the weight bytes as they are — dot [Kp16/4][16][4],
// pairs8 [Kp16/16][16][16] — with
// the input offset times the sum of the channel's weights folded into the bias (wrapping, like every int32 sum here:
// the result is the reference's value).
// GemmLayout::vnni's constants (opt_kernels.hpp): x + input_offset = a + alpha, w + filter_offset = b + beta, with
// a = x + 128 (int8) or x (uint8) and b = w (int8) or w - 128 (uint8).
struct VnniTerms {
  int64_t alpha = 0, beta = 0, b_shift = 0;
};
VnniTerms vnni_terms(const Conv2DParams& p) {
  if (p.dtype == DType::uint8) return {p.input_offset, int64_t{p.filter_offset} + 128, -128};
  return {int64_t{p.input_offset} - 128, p.filter_offset, 0};
}

template <typename T>
void pack(const Conv2DParams& p, const ConvPlan& c, GemmLayout layout, std::span<uint8_t> prepared) {
  const T* filter = static_cast<const T*>(p.filter);
  const VnniTerms vt = vnni_terms(p);
  uint8_t* base = prepared.data() + kPreparedHeaderBytes;
  for (int32_t g = 0; g < c.groups; ++g) {
    for (size_t nb = 0; nb < c.blocks; ++nb) {
      uint8_t* block = base + (static_cast<size_t>(g) * c.blocks + nb) * c.block_bytes;
      auto* w16 = reinterpret_cast<int16_t*>(block);
      auto* w8 = reinterpret_cast<int8_t*>(block);
      auto* bias = reinterpret_cast<int32_t*>(block + c.weights_bytes());
      int32_t* multiplier = bias + kGemmCols;
      int32_t* shift = multiplier + kGemmCols;
      for (int j = 0; j < kGemmCols; ++j) {
        const auto col = static_cast<size_t>(j);
        const size_t local = nb * kGemmCols + col;
        const bool valid = local < static_cast<size_t>(c.group_out);
        const size_t oc = static_cast<size_t>(g) * static_cast<size_t>(c.group_out) + local;
        multiplier[j] = valid ? p.output_multiplier[oc] : 0;
        shift[j] = valid ? p.output_shift[oc] : 0;
        const T* row = filter + oc * c.depth;
        int64_t sum = 0, b_sum = 0;
        for (size_t k = 0; k < c.depth_padded; ++k) {
          const int32_t v = valid && k < c.depth ? int32_t{row[k]} + p.filter_offset : 0;
          sum += v;
          const int64_t bv = valid && k < c.depth ? int64_t{row[k]} + vt.b_shift : 0;  // in [-128, 127]
          b_sum += bv;
          switch (layout) {
            case GemmLayout::vnni: w8[(k / 4 * kGemmCols + col) * 4 + k % 4] = static_cast<int8_t>(bv); break;
            case GemmLayout::dot: w8[(k / 4 * kGemmCols + col) * 4 + k % 4] = static_cast<int8_t>(v); break;
            case GemmLayout::pairs8: w8[(k / 16 * kGemmCols + col) * 16 + k % 16] = static_cast<int8_t>(v); break;
            case GemmLayout::pairs: w16[(k / 2 * kGemmCols + col) * 2 + k % 2] = static_cast<int16_t>(v); break;
            case GemmLayout::k_major: w16[k * kGemmCols + col] = static_cast<int16_t>(v); break;
            default: w16[col * c.depth_padded + k] = static_cast<int16_t>(v); break;
          }
        }
        const int64_t b = valid && p.bias ? p.bias[oc] : 0;
        const int64_t folded =
            layout == GemmLayout::vnni
                ? b + vt.alpha * b_sum + static_cast<int64_t>(c.depth) * vt.alpha * vt.beta
                : (c.bytes ? b + int64_t{p.input_offset} * sum : b);
        bias[j] = valid ? static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(folded))) : 0;
      }
    }
  }
}

// im2col rows [m0, m0 + rows) of group g into `tile` (row stride depth_padded): `copy(src, dst, n)` converts n
// input bytes, `pad(dst, n)` writes n padding taps; the depth padding is 0.
// `Wide16` (the byte layouts, null otherwise): converts 16 bytes at once, used for a filter row of at most 16 bytes
// inside the input where the 16 bytes may be read and written — the bytes past the filter row are rewritten by the
// next filter row, the depth padding or the next im2col row (rows are built in order), so they are not wasted
// work: a first layer's 3-channel, 3-tap filter rows (9 bytes) are one load and one store each instead of two
// overlapping 8-byte moves behind a length test.
template <typename Out, typename Copy, typename Pad, typename Wide16 = std::nullptr_t>
void im2col_rows(const Conv2DParams& p, const ConvPlan& c, int32_t g, size_t m0, size_t rows, Out* tile,
                 const Copy& copy, const Pad& pad, const Wide16& wide16 = nullptr) {
  const auto* input = static_cast<const uint8_t*>(p.input);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  const uint8_t* input_end = input + static_cast<size_t>(is.elements());
  const size_t cin = static_cast<size_t>(c.group_in);
  const size_t pixel_stride = static_cast<size_t>(is.c);
  const size_t channel0 = static_cast<size_t>(g) * cin;
  const size_t per_image = static_cast<size_t>(os.h) * static_cast<size_t>(os.w);
  // Whole tile in one conversion: 1x1, stride 1, one group, no padding, no depth padding (rows are consecutive
  // pixels).
  if (fs.h == 1 && fs.w == 1 && p.stride_h == 1 && p.stride_w == 1 && c.groups == 1 && c.depth_padded == c.depth &&
      p.padding.top == 0 && p.padding.left == 0 && os.h == is.h && os.w == is.w) {
    copy(input + m0 * pixel_stride, tile, rows * c.depth);
    return;
  }
  // Output position of row m0, then advanced row by row (no divisions per row).
  size_t b = m0 / per_image;
  auto oy = static_cast<int32_t>(m0 % per_image / static_cast<size_t>(os.w));
  auto ox = static_cast<int32_t>(m0 % static_cast<size_t>(os.w));
  for (size_t i = 0; i < rows; ++i, ++ox) {
    if (ox == os.w) {
      ox = 0;
      if (++oy == os.h) {
        oy = 0;
        ++b;
      }
    }
    Out* dst = tile + i * c.depth_padded;
    const int32_t iy0 = oy * p.stride_h - p.padding.top, ix0 = ox * p.stride_w - p.padding.left;
    // Whole filter rows in one conversion when the taps of a row are adjacent input pixels, all inside.
    const bool row_contiguous = p.dilation_w == 1 && c.groups == 1 && ix0 >= 0 && ix0 + fs.w <= is.w;
    if constexpr (!std::is_same_v<Wide16, std::nullptr_t>) {
      // The pixels of this output row whose every tap is inside, each filter row one 16-byte conversion: a tight
      // run without the checks per tap. Its last 16-byte write ends `reach` bytes after its row's start, which must
      // stay inside the call's rows (the rows after are rewritten later).
      const size_t row_len = static_cast<size_t>(fs.w) * cin;
      const size_t reach = static_cast<size_t>(fs.h - 1) * row_len + 16;
      if (row_contiguous && row_len <= 16 && iy0 >= 0 && iy0 + (fs.h - 1) * p.dilation_h < is.h &&
          i * c.depth_padded + reach <= rows * c.depth_padded) {
        const int32_t ox_end = std::min(os.w, (is.w - fs.w + p.padding.left) / p.stride_w + 1);
        const size_t fit = (rows * c.depth_padded - reach) / c.depth_padded - i + 1;  // rows i .. i + fit - 1
        size_t n = std::min(static_cast<size_t>(ox_end - ox), fit);
        const size_t row_stride = static_cast<size_t>(is.w) * pixel_stride;
        const size_t dy = static_cast<size_t>(p.dilation_h) * row_stride;
        const size_t step = static_cast<size_t>(p.stride_w) * pixel_stride;
        const uint8_t* src0 = input + (b * static_cast<size_t>(is.h) + static_cast<size_t>(iy0)) * row_stride +
                              static_cast<size_t>(ix0) * pixel_stride;
        const uint8_t* last = src0 + static_cast<size_t>(fs.h - 1) * dy;  // the run's last read starts here + k step
        while (n > 0 && last + (n - 1) * step + 16 > input_end) --n;
        if (n > 0) {
          for (size_t k = 0; k < n; ++k, dst += c.depth_padded, src0 += step) {
            const uint8_t* src = src0;
            for (int32_t fy = 0; fy < fs.h; ++fy, src += dy) wide16(src, dst + static_cast<size_t>(fy) * row_len);
            std::fill(dst + c.depth, dst + c.depth_padded, Out{0});
          }
          i += n - 1;
          ox += static_cast<int32_t>(n) - 1;
          continue;
        }
      }
    }
    for (int32_t fy = 0; fy < fs.h; ++fy) {
      const int32_t iy = iy0 + fy * p.dilation_h;
      const size_t row_len = static_cast<size_t>(fs.w) * cin;
      if (iy < 0 || iy >= is.h) {
        pad(dst, row_len);
        dst += row_len;
        continue;
      }
      const uint8_t* in_row = input + ((b * static_cast<size_t>(is.h) + static_cast<size_t>(iy)) *
                                       static_cast<size_t>(is.w)) * pixel_stride;
      if (row_contiguous) {
        const uint8_t* src = in_row + static_cast<size_t>(ix0) * pixel_stride;
        if constexpr (!std::is_same_v<Wide16, std::nullptr_t>) {
          // Rows after this one are rewritten (they come later); past the call's rows nothing may be.
          const auto at = static_cast<size_t>(dst - tile);
          if (row_len <= 16 && src + 16 <= input_end && at + 16 <= rows * c.depth_padded) {
            wide16(src, dst);
            dst += row_len;
            continue;
          }
        }
        copy(src, dst, row_len);
        dst += row_len;
        continue;
      }
      for (int32_t fx = 0; fx < fs.w; ++fx, dst += cin) {
        const int32_t ix = ix0 + fx * p.dilation_w;
        if (ix < 0 || ix >= is.w) pad(dst, cin);
        else copy(in_row + static_cast<size_t>(ix) * pixel_stride + channel0, dst, cin);
      }
    }
    std::fill(dst, tile + (i + 1) * c.depth_padded, Out{0});
  }
}

// The int16 GEMMs: input + input offset, 0 for padding taps.
template <typename T>
void im2col(const Conv2DParams& p, const ConvPlan& c, const OptKernels& k, int32_t g, size_t m0, size_t rows,
            int16_t* tile) {
  constexpr int u = std::is_unsigned_v<T> ? 1 : 0;
  im2col_rows(
      p, c, g, m0, rows, tile,
      [&](const uint8_t* src, int16_t* dst, size_t n) { k.widen[u](src, dst, n, p.input_offset); },
      [](int16_t* dst, size_t n) { std::memset(dst, 0, n * sizeof(int16_t)); });
}

// The byte layouts: the input bytes as they are, the input's zero point (-input_offset, so that the tap adds 0 like
// the reference's skipped tap) for padding taps; GemmLayout::vnni with int8 input: every byte + 128 (x ^ 0x80), the
// zero point's too.
void im2col_bytes(const Conv2DParams& p, const ConvPlan& c, int32_t g, size_t m0, size_t rows, int8_t* tile) {
  if (c.layout == GemmLayout::vnni && p.dtype == DType::int8) {
    const auto zero_point = static_cast<int8_t>(static_cast<uint8_t>(-p.input_offset) ^ 0x80);
    im2col_rows(
        p, c, g, m0, rows, tile,
        [](const uint8_t* src, int8_t* dst, size_t n) {
          constexpr uint64_t kFlip = 0x8080808080808080ULL;
          size_t i = 0;
          for (; i + 8 <= n; i += 8) {
            uint64_t v;
            std::memcpy(&v, src + i, 8);
            v ^= kFlip;
            std::memcpy(dst + i, &v, 8);
          }
          for (; i < n; ++i) dst[i] = static_cast<int8_t>(src[i] ^ 0x80);
        },
        [zero_point](int8_t* dst, size_t n) { std::memset(dst, zero_point, n); },
        [](const uint8_t* src, int8_t* dst) {
          uint64_t lo, hi;
          std::memcpy(&lo, src, 8);
          std::memcpy(&hi, src + 8, 8);
          lo ^= 0x8080808080808080ULL;
          hi ^= 0x8080808080808080ULL;
          std::memcpy(dst, &lo, 8);
          std::memcpy(dst + 8, &hi, 8);
        });
    return;
  }
  const auto zero_point = static_cast<int8_t>(-p.input_offset);
  im2col_rows(
      p, c, g, m0, rows, tile,
      [](const uint8_t* src, int8_t* dst, size_t n) {
        if (n >= 8 && n <= 16) {  // e.g. a 3-tap filter row of 3 channels: two overlapping 8-byte moves, no call
          uint64_t head, tail;
          std::memcpy(&head, src, 8);
          std::memcpy(&tail, src + n - 8, 8);
          std::memcpy(dst, &head, 8);
          std::memcpy(dst + n - 8, &tail, 8);
        } else {
          std::memcpy(dst, src, n);
        }
      },
      [zero_point](int8_t* dst, size_t n) { std::memset(dst, zero_point, n); },
      [](const uint8_t* src, int8_t* dst) { std::memcpy(dst, src, 16); });
}

// The sum of n bytes (an im2col row of GemmLayout::vnni, for the uint8 row offset). On x86-64 with SSE2's psadbw
// (part of the baseline: 16 bytes summed per instruction; mobilenet_v1's 64x64 first layer spent about a tenth of
// its time in the byte-by-byte loop), elsewhere the plain loop.
uint32_t byte_sum(const uint8_t* row, size_t n) {
  size_t k = 0;
  uint32_t sum = 0;
#if defined(__x86_64__) && defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  __m128i acc = zero;
  for (; k + 16 <= n; k += 16)
    acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k)), zero));
  if (k + 8 <= n) {
    acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + k)), zero));
    k += 8;
  }
  sum = static_cast<uint32_t>(_mm_cvtsi128_si32(acc)) +
        static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_unpackhi_epi64(acc, acc)));
#endif
  for (; k < n; ++k) sum += row[k];
  return sum;
}

template <typename T>
void run(const Conv2DParams& p, const ConvPlan& c, const OptKernels& k, WorkerPool& pool) {
  constexpr int u = std::is_unsigned_v<T> ? 1 : 0;
  auto* output = static_cast<uint8_t*>(p.output);
  const size_t out_c = static_cast<size_t>(p.output_shape.c);
  const uint8_t* base = p.prepared.data() + kPreparedHeaderBytes;
  const size_t parts = static_cast<size_t>(c.groups) * c.tiles * c.chunks;
  const uint64_t macs = uint64_t{c.pixels} * static_cast<uint64_t>(p.output_shape.c) * c.depth;
  const auto vnni_beta = static_cast<uint32_t>(vnni_terms(p).beta);  // 0 for int8 (symmetric weights)
  // Passed by reference: a std::function holds a reference_wrapper without allocating (the lambda itself
  // would be copied to the heap on every call, one malloc / free per operator).
  const auto part_fn = [&](size_t part, size_t participant) {
    const size_t chunk = part % c.chunks, tile_index = part / c.chunks % c.tiles;
    const auto g = static_cast<int32_t>(part / c.chunks / c.tiles);
    uint8_t* tile_bytes = p.scratch.data() + participant * c.tile_bytes();
    auto* tile = reinterpret_cast<int16_t*>(tile_bytes);
    auto* tile8 = reinterpret_cast<int8_t*>(tile_bytes);
    GemmBlock gb;
    gb.a_stride = c.depth_padded;
    gb.pairs = static_cast<int32_t>(c.depth_padded / 2);
    gb.output_offset = p.output_offset;
    gb.act_min = p.act_min;
    gb.act_max = p.act_max;
    gb.out_stride = out_c;
    const auto [m0, m_end] = c.tile_span(tile_index);
    const size_t rows = m_end - m0;
    const size_t padded_rows = round_up(rows, kGemmRows);
    if (c.bytes) im2col_bytes(p, c, g, m0, rows, tile8);
    else im2col<T>(p, c, k, g, m0, rows, tile);
    std::memset(tile_bytes + rows * c.depth_padded * c.element, 0, (padded_rows - rows) * c.depth_padded * c.element);
    // GemmLayout::vnni, uint8: beta times each row's byte sum (wrapping; see vnni_kernels.cpp), after the rows.
    int32_t* row_offsets = nullptr;
    if (c.layout == GemmLayout::vnni && vnni_beta != 0) {
      row_offsets = reinterpret_cast<int32_t*>(tile_bytes + round_up(c.tile_rows * c.depth_padded, 64));
      for (size_t r = 0; r < padded_rows; ++r)
        row_offsets[r] = static_cast<int32_t>(
            byte_sum(reinterpret_cast<const uint8_t*>(tile8 + r * c.depth_padded), c.depth_padded) * vnni_beta);
    }
    const size_t nb_end = (chunk + 1) * c.blocks / c.chunks;
    for (size_t nb = chunk * c.blocks / c.chunks; nb < nb_end; ++nb) {
      const uint8_t* block = base + (static_cast<size_t>(g) * c.blocks + nb) * c.block_bytes;
      gb.b = reinterpret_cast<const int16_t*>(block);
      gb.b8 = reinterpret_cast<const int8_t*>(block);
      gb.bias = reinterpret_cast<const int32_t*>(block + c.weights_bytes());
      gb.multiplier = gb.bias + kGemmCols;
      gb.shift = gb.multiplier + kGemmCols;
      const size_t col0 = static_cast<size_t>(g) * static_cast<size_t>(c.group_out) + nb * kGemmCols;
      gb.cols = static_cast<int32_t>(std::min<size_t>(kGemmCols, static_cast<size_t>(c.group_out) - nb * kGemmCols));
      for (size_t r0 = 0; r0 < padded_rows; r0 += kGemmRows) {
        gb.a = tile + r0 * c.depth_padded;
        gb.a8 = tile8 + r0 * c.depth_padded;
        gb.row_offset = row_offsets ? row_offsets + r0 : nullptr;
        gb.out = output + (m0 + r0) * out_c + col0;
        gb.rows = static_cast<int32_t>(std::min<size_t>(kGemmRows, rows - r0));
        if (c.layout == GemmLayout::vnni) k.gemm_vnni[u](gb);
        else if (c.layout == GemmLayout::dot) k.gemm_dot(gb);
        else if (c.layout == GemmLayout::pairs8) k.gemm_pairs8(gb);
        else k.gemm[u](gb);
      }
    }
  };
  pool.run(parts, std::cref(part_fn), macs);
}

// The convolutions this file computes: 8-bit ones (float32 and dynamic-range ones run the reference kernel).
bool quantized(const Conv2DParams& p) { return p.dtype == DType::int8 || p.dtype == DType::uint8; }

// int8 weights (filter offset 0) and an input zero point that fits a byte: the byte layouts apply.
bool int8_bytes(const Conv2DParams& p) {
  return p.dtype == DType::int8 && p.filter_offset == 0 && p.input_offset >= -127 && p.input_offset <= 128;
}

// GemmLayout::vnni applies to 8-bit convolutions whose padding taps have a byte to stand for them: a = -alpha in
// [0, 255] (int8: input offset in [-127, 128]; uint8: in [-255, 0]), i.e. any zero point of the input's type.
bool vnni_bytes(const Conv2DParams& p) {
  const int64_t pad = -vnni_terms(p).alpha;
  return quantized(p) && pad >= 0 && pad <= 255 && p.filter != nullptr;
}

}  // namespace

GemmLayout conv2d_layout(const Conv2DParams& p, const OptKernels& k) {
  const int u = p.dtype == DType::uint8 ? 1 : 0;
  if (k.gemm_vnni[u] && vnni_bytes(p)) return GemmLayout::vnni;
  if (!int8_bytes(p)) return k.gemm_layout;
  if (k.gemm_dot) return GemmLayout::dot;
  const int64_t depth = int64_t{p.filter_shape.h} * p.filter_shape.w * p.filter_shape.c;
  if (!k.gemm_pairs8 || depth < kPairs8MinDepth || !p.filter) return k.gemm_layout;
  // Two products of a weight in [-127, 127] and an input byte fit an int16 lane; -128 (outside TFLite's symmetric
  // int8 weights, but a file may hold it) could overflow, so such a convolution keeps the int16 layout.
  const auto* w = static_cast<const int8_t*>(p.filter);
  const auto n = static_cast<size_t>(p.filter_shape.elements());
  return std::find(w, w + n, int8_t{-128}) == w + n ? GemmLayout::pairs8 : k.gemm_layout;
}

bool conv2d_runs(GemmLayout layout, const Conv2DParams& p, const OptKernels& k) {
  if (layout == GemmLayout::vnni) return k.gemm_vnni[p.dtype == DType::uint8 ? 1 : 0] && vnni_bytes(p);
  if (layout == GemmLayout::dot) return k.gemm_dot && int8_bytes(p);
  if (layout == GemmLayout::pairs8) return k.gemm_pairs8 && int8_bytes(p);
  return layout == k.gemm_layout;
}

size_t conv2d_scratch_bytes(const Conv2DParams& p, size_t participants, GemmLayout layout) {
  if (!quantized(p)) return std::max(conv2d_float_scratch_bytes(p, participants), ref::scratch_bytes(p));
  return std::max(plan_conv(p, participants, layout).scratch_bytes(), ref::scratch_bytes(p));
}
size_t conv2d_prepared_bytes(const Conv2DParams& p, GemmLayout layout) {
  return quantized(p) ? plan_conv(p, 1, layout).prepared_bytes() : 0;
}

void conv2d_prepare(const Conv2DParams& p, GemmLayout layout, std::span<uint8_t> prepared) {
  if (!quantized(p)) return;
  const ConvPlan c = plan_conv(p, 1, layout);
  if (!c.fits || prepared.size() < c.prepared_bytes()) return;
  PreparedHeader h;
  h.magic = kPreparedMagic;
  h.layout = static_cast<uint32_t>(layout);
  h.usable = requantization_in_range(p.output_multiplier, p.output_shift) &&
                     p.output_multiplier.size() == static_cast<size_t>(p.output_shape.c) &&
                     p.input_shape.c == c.groups * c.group_in && p.output_shape.c == c.groups * c.group_out
                 ? 1
                 : 0;
  if (h.usable) {
    if (p.dtype == DType::int8) pack<int8_t>(p, c, layout, prepared);
    else pack<uint8_t>(p, c, layout, prepared);
  }
  std::memcpy(prepared.data(), &h, sizeof h);
}

}  // namespace opt

void OptimizedKernelBackend::conv2d(const Conv2DParams& p) {
  if (!opt::quantized(p)) {
    if (!opt::conv2d_float_run(p, level_, pool_)) ReferenceKernelBackend::conv2d(p);
    return;
  }
  // The layout was chosen at load (conv2d_layout reads the weights) and is read back from the prepared header.
  opt::PreparedHeader h;
  if (p.prepared.size() >= sizeof h) std::memcpy(&h, p.prepared.data(), sizeof h);
  const auto layout = static_cast<opt::GemmLayout>(h.layout);
  const opt::ConvPlan c = opt::plan_conv(p, pool_.size(), layout);
  if (h.magic != opt::kPreparedMagic || !h.usable || !opt::conv2d_runs(layout, p, kernels_) || !c.fits ||
      p.prepared.size() < c.prepared_bytes() || p.scratch.size() < c.scratch_bytes() || c.pixels == 0) {
    ReferenceKernelBackend::conv2d(p);
    return;
  }
  if (p.dtype == DType::int8) opt::run<int8_t>(p, c, kernels_, pool_);
  else opt::run<uint8_t>(p, c, kernels_, pool_);
}

}  // namespace aisrv::engine::cpu
