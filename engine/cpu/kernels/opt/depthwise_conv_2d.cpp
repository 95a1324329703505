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
// A padding tap multiplies 0, which is what the reference's skipped tap adds. float32 depthwise convolutions run
// depthwise_conv_2d_float.cpp (no prepared data); dynamic-range ones the reference kernel (the reference's scratch).
#include <algorithm>
#include <cstring>

#include "../ref/scratch.hpp"
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

template <typename T>
// Output rows [first, end) of all batches (row index b * out_h + oy) with the scratch at `scratch`.
void run_rows(const DepthwiseConv2DParams& p, const DepthwisePlan& d, const OptKernels& k, uint8_t* scratch,
              size_t first, size_t end) {
  constexpr int u = std::is_unsigned_v<T> ? 1 : 0;
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  auto* rows = reinterpret_cast<int16_t*>(scratch);
  int16_t* zero_row = rows + d.slots * d.row_elements();
  auto* accumulators = reinterpret_cast<int32_t*>(zero_row + d.row_elements());
  auto* taps = reinterpret_cast<const int16_t**>(accumulators + d.channels_padded);
  auto* tags = reinterpret_cast<int64_t*>(taps + d.taps);
  std::memset(zero_row, 0, d.row_elements() * sizeof(int16_t));

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
    if (index == first || oy == 0) std::fill(tags, tags + d.slots, int64_t{-1});  // a new image: nothing cached
    // The rows this output row reads: rows outside the input read the zero row, cached rows their slot; the
    // others are converted into slots no row of this output row uses (there are filter_h slots).
    const int16_t* row_of[kMaxFilterRows];
    bool locked[kMaxFilterRows] = {};
    auto input_row = [&](size_t fy) { return oy * p.stride_h - p.padding.top + static_cast<int32_t>(fy) * p.dilation_h; };
    for (size_t fy = 0; fy < fh; ++fy) {
      const int32_t iy = input_row(fy);
      row_of[fy] = iy < 0 || iy >= is.h ? zero_row : nullptr;
      for (size_t s = 0; s < d.slots && !row_of[fy]; ++s)
        if (tags[s] == iy) {
          row_of[fy] = rows + s * d.row_elements();
          locked[s] = true;
        }
    }
    for (size_t fy = 0; fy < fh; ++fy) {
      if (row_of[fy]) continue;
      size_t s = 0;
      while (locked[s]) ++s;
      convert_row<T>(p, d, k, b, input_row(fy), rows + s * d.row_elements());
      tags[s] = input_row(fy);
      locked[s] = true;
      row_of[fy] = rows + s * d.row_elements();
    }
    for (size_t fy = 0; fy < fh; ++fy)
      for (size_t fx = 0; fx < static_cast<size_t>(fs.w); ++fx)
        taps[fy * static_cast<size_t>(fs.w) + fx] =
            row_of[fy] + fx * static_cast<size_t>(p.dilation_w) * d.channels_padded;
    r.out = static_cast<uint8_t*>(p.output) +
            ((b * static_cast<size_t>(os.h) + static_cast<size_t>(oy)) * static_cast<size_t>(os.w)) * d.channels;
    k.depthwise_row[u](r);
  }
}

template <typename T>
void run(const DepthwiseConv2DParams& p, const DepthwisePlan& d, const OptKernels& k, WorkerPool& pool) {
  const size_t rows = static_cast<size_t>(p.output_shape.n) * static_cast<size_t>(p.output_shape.h);
  // Up to four ranges of rows per participant, taken as they come, so a participant held up (another process, a
  // slower core) does not hold up the layer; but each range starts with an empty row cache (its first filter_h rows
  // converted again), so a range has at least 8 rows where the layer has them (a 14-row layer: one per participant).
  const size_t per_participant = std::clamp<size_t>(rows / (pool.size() * 8), 1, 4);
  const size_t parts = std::min(rows, pool.size() == 1 ? size_t{1} : per_participant * pool.size());
  const uint64_t macs = uint64_t{rows} * static_cast<uint64_t>(p.output_shape.w) * d.channels * d.taps;
  pool.run(parts, [&](size_t part, size_t participant) {
    run_rows<T>(p, d, k, p.scratch.data() + participant * d.participant_bytes(), rows * part / parts,
                rows * (part + 1) / parts);
  }, macs);
}

}  // namespace

size_t depthwise_scratch_bytes(const DepthwiseConv2DParams& p, size_t participants) {
  if (!quantized(p)) return std::max(depthwise_float_scratch_bytes(p, participants), ref::scratch_bytes(p));
  return std::max(plan_depthwise(p, participants).scratch_bytes(), ref::scratch_bytes(p));
}
size_t depthwise_prepared_bytes(const DepthwiseConv2DParams& p) {
  return quantized(p) ? plan_depthwise(p, 1).prepared_bytes() : 0;
}

void depthwise_prepare(const DepthwiseConv2DParams& p, DepthwiseLayout layout, std::span<uint8_t> prepared) {
  if (!quantized(p)) return;
  const DepthwisePlan d = plan_depthwise(p, 1);
  if (!d.fits || prepared.size() < d.prepared_bytes()) return;
  PreparedHeader h;
  h.magic = kPreparedMagic;
  h.layout = static_cast<uint32_t>(layout);
  h.usable = requantization_in_range(p.output_multiplier, p.output_shift) &&
             p.output_multiplier.size() == d.channels && p.depth_multiplier >= 1 &&
             static_cast<size_t>(p.input_shape.c) * static_cast<size_t>(p.depth_multiplier) == d.channels &&
             p.padding.left >= 0 && p.padding.top >= 0 && p.stride_w >= 1 && p.dilation_w >= 1 && p.dilation_h >= 1 &&
             static_cast<size_t>(p.filter_shape.h) <= kMaxFilterRows;
  if (h.usable) {
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
  const opt::DepthwisePlan d = opt::plan_depthwise(p, pool_.size());
  opt::PreparedHeader h;
  if (d.fits && p.prepared.size() >= d.prepared_bytes()) std::memcpy(&h, p.prepared.data(), sizeof h);
  const bool layout_ok = kernels_.depthwise_layout == opt::DepthwiseLayout::filter ||
                         h.layout == static_cast<uint32_t>(kernels_.depthwise_layout);
  if (!d.fits || h.magic != opt::kPreparedMagic || !h.usable || !layout_ok || p.scratch.size() < d.scratch_bytes()) {
    ReferenceKernelBackend::depthwise_conv2d(p);
    return;
  }
  if (p.dtype == DType::int8) opt::run<int8_t>(p, d, kernels_, pool_);
  else opt::run<uint8_t>(p, d, kernels_, pool_);
}

}  // namespace aisrv::engine::cpu
