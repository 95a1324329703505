// aisrv CPU engine, optimised kernels — DEPTHWISE_CONV_2D, vectorised over output channels.
//   prepare: the weights (+ filter offset) as int16 in the layout of the level's row kernel — AVX2: per block of 16
//            output channels and pair of filter taps, pairs in the order the row kernel interleaves its inputs (see
//            avx2_kernels.cpp); AVX-512: the same per block of 32 channels (vnni_kernels.cpp); NEON: one row of
//            channels_padded per tap — and bias / multiplier / shift padded to a
//            multiple of 16 channels (the portable kernel reads the model's filter);
//   invoke:  each input row an output row needs is converted once into a scratch row of int16 (input + input
//            offset), one value per *output* channel (input channel oc / depth_multiplier, so any multiplier becomes
//            an element-wise product), with zero columns for the left/right padding; rows above or below the input
//            read a zero row. A small cache of filter_h converted rows serves consecutive output rows. Then one row
//            kernel call (opt_kernels.hpp) per output row. With a worker pool, the output rows are split into
//            contiguous ranges (run() says how many), each participant with its own scratch (row cache, accumulators).
// At the avx512_vnni level (DepthwiseLayout::pairs32) the layer runs on flat rows instead where it can (FlatPlan:
// channels / gcd(channels, 32) <= 32 weight patterns, horizontal stride <= 8; depthwise_avx512.hpp): rows with no
// channel padding, columns split into stride phases, and a kernel over blocks of 32 (pixel, channel) lanes, so few
// channels fill the vectors too. Where it cannot, the pairs32 packing and vnni_kernels.cpp's row kernel run.
// A padding tap multiplies 0, which is what the reference's skipped tap adds. float32 depthwise convolutions run
// depthwise_conv_2d_float.cpp (no prepared data); dynamic-range ones the reference kernel (the reference's scratch).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "../ref/scratch.hpp"
#include "depthwise_avx512.hpp"
#include "float_kernels.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace opt {

namespace {

struct DepthwisePlan {
  size_t participants = 1;
  size_t channels = 0, channels_padded = 0;  // output channels, rounded up to 16
  size_t taps = 0, pairs = 0;
  size_t width_padded = 0;  // input columns plus left and right padding columns
  size_t slots = 0;         // cached converted rows (filter_h)
  bool fits = false;        // sizes are sane (a hostile shape runs the reference kernel instead)

  size_t packed_bytes() const { return channels_padded / 16 * pairs * 32 * sizeof(int16_t); }
  size_t params_bytes() const { return 3 * channels_padded * sizeof(int32_t); }
  size_t prepared_bytes() const { return fits ? kPreparedHeaderBytes + packed_bytes() + params_bytes() : 0; }
  size_t row_elements() const { return width_padded * channels_padded; }
  // Converted row slots + one zero row, then the accumulators, the tap pointers and the slot tags.
  size_t participant_bytes() const {
    return (((slots + 1) * row_elements() * sizeof(int16_t) + channels_padded * sizeof(int32_t) +
             taps * sizeof(const int16_t*) + slots * sizeof(int64_t)) + 63) / 64 * 64;
  }
  size_t scratch_bytes() const { return fits ? participants * participant_bytes() : 0; }
};

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

// The convolutions this file computes: 8-bit ones (float32 and dynamic-range ones run the reference kernel).
bool quantized(const DepthwiseConv2DParams& p) { return p.dtype == DType::int8 || p.dtype == DType::uint8; }

constexpr size_t kMaxFilterRows = 64;  // taller filters run on the reference kernel

DepthwisePlan plan_depthwise(const DepthwiseConv2DParams& p, size_t participants) {
  DepthwisePlan d;
  d.participants = std::max<size_t>(participants, 1);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  d.channels = static_cast<size_t>(os.c);
  d.channels_padded = round_up(std::max<size_t>(d.channels, 1), 16);
  d.taps = static_cast<size_t>(fs.h) * static_cast<size_t>(fs.w);
  d.pairs = (d.taps + 1) / 2;
  // Columns read: from -left to (out_w - 1) * stride - left + (filter_w - 1) * dilation.
  const int64_t last = int64_t{os.w - 1} * p.stride_w - p.padding.left + int64_t{fs.w - 1} * p.dilation_w;
  const int64_t right = std::max<int64_t>(0, last - (is.w - 1));
  d.width_padded = static_cast<size_t>(int64_t{std::max(0, p.padding.left)} + is.w + right);
  d.slots = static_cast<size_t>(std::max(1, fs.h));
  const long double rows = static_cast<long double>(d.slots + 1) * d.width_padded * d.channels_padded * 2;
  const long double packed = static_cast<long double>(d.channels_padded) * (d.pairs + 1) * 4;
  d.fits = d.slots <= kMaxFilterRows && rows * d.participants < kMaxKernelBytes && packed < kMaxKernelBytes;
  return d;
}

template <typename T>
void pack(const DepthwiseConv2DParams& p, const DepthwisePlan& d, DepthwiseLayout layout, std::span<uint8_t> prepared) {
  const T* filter = static_cast<const T*>(p.filter);
  auto* w = reinterpret_cast<int16_t*>(prepared.data() + kPreparedHeaderBytes);
  auto* bias = reinterpret_cast<int32_t*>(prepared.data() + kPreparedHeaderBytes + d.packed_bytes());
  int32_t* multiplier = bias + d.channels_padded;
  int32_t* shift = multiplier + d.channels_padded;
  auto weight = [&](size_t tap, size_t c) -> int16_t {
    if (tap >= d.taps || c >= d.channels) return 0;
    return static_cast<int16_t>(int32_t{filter[tap * d.channels + c]} + p.filter_offset);
  };
  if (layout == DepthwiseLayout::taps) {  // fits: taps <= 2 * pairs
    for (size_t t = 0; t < d.taps; ++t)
      for (size_t c = 0; c < d.channels_padded; ++c) w[t * d.channels_padded + c] = weight(t, c);
  }
  // Lane l of half A holds channel (l / 4) * 8 + l % 4, of half B that channel + 4; 8 lanes a half in blocks of 16
  // channels (pairs), 16 in blocks of 32 (pairs32, whose last block of 16 channels, if any, is laid out as in pairs).
  const size_t blocks32 = layout == DepthwiseLayout::pairs32 ? d.channels_padded / 32 : 0;
  for (size_t cb = 0; cb < blocks32; ++cb)
    for (size_t tp = 0; tp < d.pairs; ++tp)
      for (size_t half = 0; half < 2; ++half)
        for (size_t l = 0; l < 16; ++l) {
          const size_t c = cb * 32 + (l / 4) * 8 + l % 4 + half * 4;
          int16_t* pair = w + ((cb * d.pairs + tp) * 64 + half * 32 + l * 2);
          pair[0] = weight(2 * tp, c);
          pair[1] = weight(2 * tp + 1, c);
        }
  const bool pairs16 = layout == DepthwiseLayout::pairs || layout == DepthwiseLayout::pairs32;
  for (size_t cb = blocks32 * 2; pairs16 && cb < d.channels_padded / 16; ++cb)
    for (size_t tp = 0; tp < d.pairs; ++tp)
      for (size_t half = 0; half < 2; ++half)
        for (size_t l = 0; l < 8; ++l) {
          const size_t c = cb * 16 + (l / 4) * 8 + l % 4 + half * 4;
          int16_t* pair = w + ((cb * d.pairs + tp) * 32 + half * 16 + l * 2);
          pair[0] = weight(2 * tp, c);
          pair[1] = weight(2 * tp + 1, c);
        }
  for (size_t c = 0; c < d.channels_padded; ++c) {
    const bool valid = c < d.channels;
    bias[c] = valid && p.bias ? p.bias[c] : 0;
    multiplier[c] = valid ? p.output_multiplier[c] : 0;
    shift[c] = valid ? p.output_shift[c] : 0;
  }
}

// Converts input row iy of batch b into `dst` (width_padded columns of channels_padded int16).
template <typename T>
void convert_row(const DepthwiseConv2DParams& p, const DepthwisePlan& d, const OptKernels& k, size_t b, int32_t iy,
                 int16_t* dst) {
  constexpr int u = std::is_unsigned_v<T> ? 1 : 0;
  const Dims4& is = p.input_shape;
  const size_t left = static_cast<size_t>(std::max(0, p.padding.left));
  const size_t cp = d.channels_padded;
  const auto* in_row = static_cast<const T*>(p.input) +
                       (b * static_cast<size_t>(is.h) + static_cast<size_t>(iy)) * static_cast<size_t>(is.w) *
                           static_cast<size_t>(is.c);
  std::memset(dst, 0, left * cp * sizeof(int16_t));
  const size_t width = static_cast<size_t>(is.w);
  if (p.depth_multiplier == 1 && cp == d.channels) {
    k.widen[u](reinterpret_cast<const uint8_t*>(in_row), dst + left * cp, width * cp, p.input_offset);
  } else {
    const auto mult = static_cast<size_t>(p.depth_multiplier);
    for (size_t x = 0; x < width; ++x) {
      const T* src = in_row + x * static_cast<size_t>(is.c);
      int16_t* out = dst + (left + x) * cp;
      if (mult == 1) {
        k.widen[u](reinterpret_cast<const uint8_t*>(src), out, d.channels, p.input_offset);
        std::memset(out + d.channels, 0, (cp - d.channels) * sizeof(int16_t));
      } else if (is.c == 1) {  // one input channel feeds every output channel (e.g. a first layer)
        const auto v = static_cast<int16_t>(int32_t{src[0]} + p.input_offset);
        for (size_t c = 0; c < cp; ++c) out[c] = c < d.channels ? v : int16_t{0};
      } else {
        for (size_t ic = 0; ic < static_cast<size_t>(is.c); ++ic) {
          const auto v = static_cast<int16_t>(int32_t{src[ic]} + p.input_offset);
          for (size_t m = 0; m < mult; ++m) out[ic * mult + m] = v;
        }
        std::memset(out + d.channels, 0, (cp - d.channels) * sizeof(int16_t));
      }
    }
  }
  std::memset(dst + (left + width) * cp, 0, (d.width_padded - left - width) * cp * sizeof(int16_t));
}

// ---- flat rows (avx512_vnni) ------------------------------------------------------------------------------------

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
constexpr bool kFlatBuild = true;
#else
constexpr bool kFlatBuild = false;
#endif
constexpr size_t kMaxFlatPatterns = 32;
constexpr int32_t kMaxFlatStride = 8;
// The flat packing repeats a channel's weights in every lane that holds it (32 P / channels = 32 / gcd(channels, 32)
// copies: 32 for one channel, 4 for 8, 1 for multiples of 32); beyond this size (huge filters) pairs32 runs instead.
constexpr long double kMaxFlatPackedBytes = 1 << 20;

struct FlatPlan {
  size_t participants = 1;
  size_t channels = 0, taps = 0, pairs = 0, patterns = 0;
  size_t stride = 1, left = 0, width_padded = 0, phase_width = 0;
  size_t row_elements = 0;  // stride phases of phase_width columns of `channels`, kDepthwiseFlatSlack, to 32
  size_t slots = 0;
  bool fits = false;  // the flat kernel takes this layer (shape-only: prepare and invoke decide alike)

  size_t pattern_bytes() const { return depthwise_flat_pattern_bytes(pairs); }
  size_t prepared_bytes() const { return fits ? kPreparedHeaderBytes + patterns * pattern_bytes() : 0; }
  size_t participant_bytes() const {
    return ((slots + 1) * row_elements * sizeof(int16_t) + taps * sizeof(const int16_t*) + slots * sizeof(int64_t) +
            63) / 64 * 64;
  }
  size_t scratch_bytes() const { return fits ? participants * participant_bytes() : 0; }
};

FlatPlan plan_flat(const DepthwiseConv2DParams& p, size_t participants) {
  FlatPlan f;
  f.participants = std::max<size_t>(participants, 1);
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  if (!kFlatBuild || os.c < 1 || os.w < 1 || is.w < 1 || fs.h < 1 || fs.w < 1 || p.stride_w < 1 ||
      p.stride_w > kMaxFlatStride || p.dilation_w < 1 || p.padding.left < 0)
    return f;
  f.channels = static_cast<size_t>(os.c);
  f.taps = static_cast<size_t>(fs.h) * static_cast<size_t>(fs.w);
  f.pairs = (f.taps + 1) / 2;
  f.patterns = f.channels / std::gcd(f.channels, size_t{32});
  f.stride = static_cast<size_t>(p.stride_w);
  f.left = static_cast<size_t>(p.padding.left);
  const int64_t last = int64_t{os.w - 1} * p.stride_w - p.padding.left + int64_t{fs.w - 1} * p.dilation_w;
  const int64_t right = std::max<int64_t>(0, last - (is.w - 1));
  f.width_padded = static_cast<size_t>(int64_t{p.padding.left} + is.w + right);
  f.phase_width = (f.width_padded + f.stride - 1) / f.stride;
  f.slots = static_cast<size_t>(fs.h);
  const long double row = static_cast<long double>(f.stride) * f.phase_width * f.channels + kDepthwiseFlatSlack;
  const long double rows = row * 2 * (f.slots + 1) * f.participants;
  const long double packed =
      static_cast<long double>(f.patterns) * (static_cast<long double>(f.pairs) * 128 + kDepthwiseFlatConstants * 64);
  const long double length = static_cast<long double>(os.w) * f.channels;
  f.fits = f.patterns <= kMaxFlatPatterns && f.slots <= kMaxFilterRows && rows < kMaxKernelBytes &&
           packed <= kMaxFlatPackedBytes && length < 2147483647.0L && row < 2147483647.0L &&
           p.output_offset >= -256 && p.output_offset <= 256 && p.act_min >= -128 && p.act_max <= 255 &&
           p.act_min <= p.act_max;
  if (f.fits) f.row_elements = round_up(static_cast<size_t>(row), 32);  // rows 64-byte aligned, pointers after them
  return f;
}

// The flat packing (depthwise_avx512.hpp): per pattern j the weight pairs, then the bias and the requantization
// constants in the A / B lane orders; lane l of half h is flat lane (l / 4) * 8 + l % 4 + 4 h of block j, channel
// (32 j + that) mod C.
template <typename T>
void pack_flat(const DepthwiseConv2DParams& p, const FlatPlan& f, std::span<uint8_t> prepared) {
  const T* filter = static_cast<const T*>(p.filter);
  auto weight = [&](size_t tap, size_t c) -> int16_t {
    if (tap >= f.taps) return 0;
    return static_cast<int16_t>(int32_t{filter[tap * f.channels + c]} + p.filter_offset);
  };
  for (size_t j = 0; j < f.patterns; ++j) {
    uint8_t* pattern = prepared.data() + kPreparedHeaderBytes + j * f.pattern_bytes();
    auto* w = reinterpret_cast<int16_t*>(pattern);
    auto* consts = reinterpret_cast<int32_t*>(pattern + f.pairs * 128);
    auto channel = [&](size_t half, size_t l) { return (32 * j + (l / 4) * 8 + l % 4 + half * 4) % f.channels; };
    for (size_t half = 0; half < 2; ++half)
      for (size_t l = 0; l < 16; ++l) {
        const size_t c = channel(half, l);
        for (size_t tp = 0; tp < f.pairs; ++tp) {
          int16_t* pair = w + tp * 64 + half * 32 + l * 2;
          pair[0] = weight(2 * tp, c);
          pair[1] = weight(2 * tp + 1, c);
        }
        const int32_t shift = p.output_shift[c];
        const int32_t right = std::max(-shift, 0);
        const auto mask = static_cast<int32_t>((int64_t{1} << right) - 1);
        int32_t* q = consts + 32 + half * 96;  // multiplier, odd multiplier, left, right, mask, threshold
        consts[half * 16 + l] = p.bias ? p.bias[c] : 0;
        q[l] = p.output_multiplier[c];
        q[16 + l] = l % 2 == 0 ? p.output_multiplier[channel(half, l + 1)] : 0;
        q[32 + l] = std::max(shift, 0);
        q[48 + l] = right;
        q[64 + l] = mask;
        q[80 + l] = mask >> 1;
      }
  }
}

// The input rows output row `oy` reads, one per filter row, into row_of: a row outside the input reads `zero_row`,
// a row cached in a slot (tags[s] = the input row slot s holds) that slot, and the others are converted
// (convert(iy, slot)) into slots no row of this output row uses — there are filter_h slots, so one is always free.
// Shared by the flat and the blocked drivers, whose rows differ only in layout.
template <typename Convert>
void cached_input_rows(const DepthwiseConv2DParams& p, int16_t* rows, size_t row_elements, size_t slots,
                       const int16_t* zero_row, int64_t* tags, int32_t oy, const int16_t** row_of,
                       const Convert& convert) {
  const auto fh = static_cast<size_t>(p.filter_shape.h);
  bool locked[kMaxFilterRows] = {};
  auto input_row = [&](size_t fy) { return oy * p.stride_h - p.padding.top + static_cast<int32_t>(fy) * p.dilation_h; };
  for (size_t fy = 0; fy < fh; ++fy) {
    const int32_t iy = input_row(fy);
    row_of[fy] = iy < 0 || iy >= p.input_shape.h ? zero_row : nullptr;
    for (size_t s = 0; s < slots && !row_of[fy]; ++s)
      if (tags[s] == iy) {
        row_of[fy] = rows + s * row_elements;
        locked[s] = true;
      }
  }
  for (size_t fy = 0; fy < fh; ++fy) {
    if (row_of[fy]) continue;
    size_t s = 0;
    while (locked[s]) ++s;
    int16_t* slot = rows + s * row_elements;
    convert(input_row(fy), slot);
    tags[s] = input_row(fy);
    locked[s] = true;
    row_of[fy] = slot;
  }
}

template <typename T>
void run_flat_rows(const DepthwiseConv2DParams& p, const FlatPlan& f, uint8_t* scratch, size_t first, size_t end,
                   RowCursor& cursor, uint64_t invocation) {
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  auto* rows = reinterpret_cast<int16_t*>(scratch);
  int16_t* zero_row = rows + f.slots * f.row_elements;
  auto* taps = reinterpret_cast<const int16_t**>(zero_row + f.row_elements);
  auto* tags = reinterpret_cast<int64_t*>(taps + f.taps);
  const bool resume = cursor.resumes(invocation, first);
  if (!resume) std::memset(zero_row, 0, f.row_elements * sizeof(int16_t));

  DepthwiseFlatRow r;
  r.taps = taps;
  r.taps_count = static_cast<int32_t>(f.taps);
  r.length = static_cast<int32_t>(static_cast<size_t>(os.w) * f.channels);
  r.patterns = static_cast<int32_t>(f.patterns);
  // About 16 KiB of converted input per chunk (filter_h rows, min(stride, filter_w) phase runs each, 2 bytes a
  // lane), but at least 4 blocks per pattern, so reloading a pattern's weights and constants stays cheap.
  const size_t runs = f.slots * std::min(f.stride, static_cast<size_t>(fs.w));
  r.chunk_blocks = static_cast<int32_t>(std::max<size_t>(4, 8192 / runs / 32 / f.patterns) * f.patterns);
  r.packed = p.prepared.data() + kPreparedHeaderBytes;
  r.output_offset = p.output_offset;
  r.act_min = p.act_min;
  r.act_max = p.act_max;

  const size_t C = f.channels, width = static_cast<size_t>(is.w);
  auto column = [&](auto* row, size_t X) { return row + (X % f.stride * f.phase_width + X / f.stride) * C; };
  auto convert = [&](size_t b, int32_t iy, int16_t* dst) {
    const size_t in_row = (b * static_cast<size_t>(is.h) + static_cast<size_t>(iy)) * width * static_cast<size_t>(is.c);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))  // kFlatBuild: only x86-64 plans fit
    depthwise_flat_convert_avx512(static_cast<const uint8_t*>(p.input) + in_row, std::is_unsigned_v<T>, is.w, is.c,
                                  p.depth_multiplier, p.input_offset, static_cast<int32_t>(f.left),
                                  static_cast<int32_t>(f.stride), static_cast<int32_t>(f.phase_width), dst);
#else
    (void)in_row;
#endif
  };
  // The padding columns of every slot: zero once per operator and participant (a conversion writes only the
  // input's columns).
  for (size_t s = 0; s < f.slots && !resume; ++s) {
    int16_t* slot = rows + s * f.row_elements;
    for (size_t X = 0; X < f.left; ++X) std::memset(column(slot, X), 0, C * sizeof(int16_t));
    for (size_t X = f.left + width; X < f.width_padded; ++X) std::memset(column(slot, X), 0, C * sizeof(int16_t));
  }

  const size_t fh = static_cast<size_t>(fs.h), fw = static_cast<size_t>(fs.w);
  const auto out_h = static_cast<size_t>(os.h);
  for (size_t index = first; index < end; ++index) {
    const size_t b = index / out_h;
    const auto oy = static_cast<int32_t>(index % out_h);
    if ((index == first && !resume) || oy == 0) std::fill(tags, tags + f.slots, int64_t{-1});  // nothing cached
    const int16_t* row_of[kMaxFilterRows];
    cached_input_rows(p, rows, f.row_elements, f.slots, zero_row, tags, oy, row_of,
                      [&](int32_t iy, int16_t* slot) { convert(b, iy, slot); });
    for (size_t fy = 0; fy < fh; ++fy)
      for (size_t fx = 0; fx < fw; ++fx)
        taps[fy * fw + fx] = column(row_of[fy], fx * static_cast<size_t>(p.dilation_w));
    r.out = static_cast<uint8_t*>(p.output) + (b * out_h + static_cast<size_t>(oy)) * static_cast<size_t>(os.w) * C;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    depthwise_flat_row_avx512(r);
#endif
  }
  cursor.stop(invocation, end);
}

template <typename T>
// Output rows [first, end) of all batches (row index b * out_h + oy) with the scratch at `scratch`.
void run_rows(const DepthwiseConv2DParams& p, const DepthwisePlan& d, const OptKernels& k, uint8_t* scratch,
              size_t first, size_t end, RowCursor& cursor, uint64_t invocation) {
  constexpr int u = std::is_unsigned_v<T> ? 1 : 0;
  const Dims4 &fs = p.filter_shape, &os = p.output_shape;
  auto* rows = reinterpret_cast<int16_t*>(scratch);
  int16_t* zero_row = rows + d.slots * d.row_elements();
  auto* accumulators = reinterpret_cast<int32_t*>(zero_row + d.row_elements());
  auto* taps = reinterpret_cast<const int16_t**>(accumulators + d.channels_padded);
  auto* tags = reinterpret_cast<int64_t*>(taps + d.taps);
  const bool resume = cursor.resumes(invocation, first);
  if (!resume) std::memset(zero_row, 0, d.row_elements() * sizeof(int16_t));

  const uint8_t* prepared = p.prepared.data() + kPreparedHeaderBytes;
  DepthwiseRow r;
  r.taps = taps;
  r.taps_count = static_cast<int32_t>(d.taps);
  r.column_step = static_cast<int32_t>(static_cast<size_t>(p.stride_w) * d.channels_padded);
  r.out_width = os.w;
  r.channels = static_cast<int32_t>(d.channels);
  r.channels_padded = static_cast<int32_t>(d.channels_padded);
  r.packed = reinterpret_cast<const int16_t*>(prepared);
  r.filter = static_cast<const int8_t*>(p.filter);
  r.filter_offset = p.filter_offset;
  r.bias = reinterpret_cast<const int32_t*>(prepared + d.packed_bytes());
  r.multiplier = r.bias + d.channels_padded;
  r.shift = r.multiplier + d.channels_padded;
  r.output_offset = p.output_offset;
  r.act_min = p.act_min;
  r.act_max = p.act_max;
  r.accumulators = accumulators;

  const size_t fh = static_cast<size_t>(fs.h);
  const auto out_h = static_cast<size_t>(os.h);
  for (size_t index = first; index < end; ++index) {
    const size_t b = index / out_h;
    const auto oy = static_cast<int32_t>(index % out_h);
    if ((index == first && !resume) || oy == 0) std::fill(tags, tags + d.slots, int64_t{-1});  // nothing cached
    const int16_t* row_of[kMaxFilterRows];
    cached_input_rows(p, rows, d.row_elements(), d.slots, zero_row, tags, oy, row_of,
                      [&](int32_t iy, int16_t* slot) { convert_row<T>(p, d, k, b, iy, slot); });
    for (size_t fy = 0; fy < fh; ++fy)
      for (size_t fx = 0; fx < static_cast<size_t>(fs.w); ++fx)
        taps[fy * static_cast<size_t>(fs.w) + fx] =
            row_of[fy] + fx * static_cast<size_t>(p.dilation_w) * d.channels_padded;
    r.out = static_cast<uint8_t*>(p.output) +
            ((b * static_cast<size_t>(os.h) + static_cast<size_t>(oy)) * static_cast<size_t>(os.w)) * d.channels;
    k.depthwise_row[u](r);
  }
  cursor.stop(invocation, end);
}

// Splits the layer's output rows among the pool's participants; rows(first, end, participant) computes a range.
// One part per output row: the pool gives each participant a contiguous range of them, so a participant runs its
// rows in order and keeps its converted input rows from one part to the next (RowCursor); a participant that is
// done takes single rows from the end of another's range, so a participant held up (another process, a slower or
// preempted core) holds up the layer by one row at most, and a 7-row layer is not split 3 : 4.
template <typename Rows>
void run(const DepthwiseConv2DParams& p, size_t channels, size_t taps, WorkerPool& pool, const Rows& rows_of) {
  const size_t rows = static_cast<size_t>(p.output_shape.n) * static_cast<size_t>(p.output_shape.h);
  const size_t parts = pool.size() == 1 ? std::min<size_t>(rows, 1) : rows;
  const uint64_t macs = uint64_t{rows} * static_cast<uint64_t>(p.output_shape.w) * channels * taps;
  pool.run(parts, [&](size_t part, size_t participant) {
    rows_of(rows * part / parts, rows * (part + 1) / parts, participant);
  }, macs);
}

}  // namespace

// The sizes do not know the level: enough for both the blocked and (where it fits) the flat layout.
size_t depthwise_scratch_bytes(const DepthwiseConv2DParams& p, size_t participants) {
  if (!quantized(p)) return std::max(depthwise_float_scratch_bytes(p, participants), ref::scratch_bytes(p));
  return std::max({plan_depthwise(p, participants).scratch_bytes(), plan_flat(p, participants).scratch_bytes(),
                   ref::scratch_bytes(p)});
}
size_t depthwise_prepared_bytes(const DepthwiseConv2DParams& p) {
  return quantized(p) ? std::max(plan_depthwise(p, 1).prepared_bytes(), plan_flat(p, 1).prepared_bytes()) : 0;
}

void depthwise_prepare(const DepthwiseConv2DParams& p, DepthwiseLayout layout, std::span<uint8_t> prepared) {
  if (!quantized(p)) return;
  const DepthwisePlan d = plan_depthwise(p, 1);
  const FlatPlan f = plan_flat(p, 1);
  const bool flat = layout == DepthwiseLayout::pairs32 && f.fits;
  if (flat ? prepared.size() < f.prepared_bytes() : !d.fits || prepared.size() < d.prepared_bytes()) return;
  PreparedHeader h;
  h.magic = kPreparedMagic;
  h.layout = static_cast<uint32_t>(layout);
  h.usable = requantization_in_range(p.output_multiplier, p.output_shift) &&
             p.output_multiplier.size() == d.channels && p.depth_multiplier >= 1 &&
             static_cast<size_t>(p.input_shape.c) * static_cast<size_t>(p.depth_multiplier) == d.channels &&
             p.padding.left >= 0 && p.padding.top >= 0 && p.stride_w >= 1 && p.dilation_w >= 1 && p.dilation_h >= 1 &&
             static_cast<size_t>(p.filter_shape.h) <= kMaxFilterRows;
  if (h.usable && flat) {
    if (p.dtype == DType::int8) pack_flat<int8_t>(p, f, prepared);
    else pack_flat<uint8_t>(p, f, prepared);
  } else if (h.usable) {
    if (p.dtype == DType::int8) pack<int8_t>(p, d, layout, prepared);
    else pack<uint8_t>(p, d, layout, prepared);
  }
  std::memcpy(prepared.data(), &h, sizeof h);
}

}  // namespace opt

void OptimizedKernelBackend::depthwise_conv2d(const DepthwiseConv2DParams& p) {
  if (!opt::quantized(p)) {
    if (!opt::depthwise_float_run(p, level_, pool_)) ReferenceKernelBackend::depthwise_conv2d(p);
    return;
  }
  if (kernels_.depthwise_layout == opt::DepthwiseLayout::pairs32) {
    const opt::FlatPlan f = opt::plan_flat(p, pool_.size());
    if (f.fits) {
      opt::PreparedHeader h;
      if (p.prepared.size() >= f.prepared_bytes()) std::memcpy(&h, p.prepared.data(), sizeof h);
      if (h.magic != opt::kPreparedMagic || !h.usable || h.layout != static_cast<uint32_t>(kernels_.depthwise_layout) ||
          p.scratch.size() < f.scratch_bytes()) {
        ReferenceKernelBackend::depthwise_conv2d(p);
        return;
      }
      const uint64_t invocation = ++row_invocations_;
      opt::run(p, f.channels, f.taps, pool_, [&](size_t first, size_t end, size_t participant) {
        uint8_t* scratch = p.scratch.data() + participant * f.participant_bytes();
        opt::RowCursor& cursor = row_cursors_[participant];
        if (p.dtype == DType::int8) opt::run_flat_rows<int8_t>(p, f, scratch, first, end, cursor, invocation);
        else opt::run_flat_rows<uint8_t>(p, f, scratch, first, end, cursor, invocation);
      });
      return;
    }
  }
  const opt::DepthwisePlan d = opt::plan_depthwise(p, pool_.size());
  opt::PreparedHeader h;
  if (d.fits && p.prepared.size() >= d.prepared_bytes()) std::memcpy(&h, p.prepared.data(), sizeof h);
  const bool layout_ok = kernels_.depthwise_layout == opt::DepthwiseLayout::filter ||
                         h.layout == static_cast<uint32_t>(kernels_.depthwise_layout);
  if (!d.fits || h.magic != opt::kPreparedMagic || !h.usable || !layout_ok || p.scratch.size() < d.scratch_bytes()) {
    ReferenceKernelBackend::depthwise_conv2d(p);
    return;
  }
  const uint64_t invocation = ++row_invocations_;
  opt::run(p, d.channels, d.taps, pool_, [&](size_t first, size_t end, size_t participant) {
    uint8_t* scratch = p.scratch.data() + participant * d.participant_bytes();
    opt::RowCursor& cursor = row_cursors_[participant];
    if (p.dtype == DType::int8) opt::run_rows<int8_t>(p, d, kernels_, scratch, first, end, cursor, invocation);
    else opt::run_rows<uint8_t>(p, d, kernels_, scratch, first, end, cursor, invocation);
  });
}

}  // namespace aisrv::engine::cpu
