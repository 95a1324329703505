// aisrv CPU engine, optimised kernels — the NEON level (aarch64, ARMv8.0 Advanced SIMD, which every aarch64
// processor has) and, for int8 CONV_2D, the neon_dot level's SDOT GEMM (ARMv8.2 dot product; only that function is
// compiled for armv8.2-a+dotprod). Compiled only for aarch64; elsewhere the fill functions do nothing.
//
// Multiply-accumulate in int16 x int16 -> int32 (SMLAL), or int8 pairs summed by SADALP for deep int8 GEMMs: exact,
// since every operand is a value plus an offset within [-255, 255]. Requantization is fp::requantize lane by lane
// (SSHL, SQRDMULH, SRSHL with a -1 fix-up for ties away from zero); requantize4 says why each step matches it.
#include "opt_kernels.hpp"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "scalar_ops.hpp"

namespace aisrv::engine::cpu::opt {

namespace {

struct OutputRange {
  int32x4_t low, high, offset;
};

inline OutputRange output_range(int32_t offset, int32_t act_min, int32_t act_max) {
  return {vdupq_n_s32(act_min - offset), vdupq_n_s32(act_max - offset), vdupq_n_s32(offset)};
}

// fp::rounding_divide_by_pot lane-wise; `right` holds -e (e in [0, 31]).
inline int32x4_t rdbpot(int32x4_t x, int32x4_t right) {
  const int32x4_t fixup = vshrq_n_s32(vandq_s32(x, right), 31);  // -1 where x < 0 and e > 0
  return vrshlq_s32(vqaddq_s32(x, fixup), right);
}

// Per-lane multiplier and shift, prepared once per block: left = max(shift, 0), right = -max(-shift, 0).
struct Requant {
  int32x4_t multiplier, left, right;
};

inline Requant requant_of(const int32_t* multiplier, const int32_t* shift) {
  const int32x4_t s = vld1q_s32(shift);
  const int32x4_t zero = vdupq_n_s32(0);
  return {vld1q_s32(multiplier), vmaxq_s32(s, zero), vminq_s32(s, zero)};
}

// fp::requantize on 4 lanes: SSHL wraps as shift_left_wrapping; SQRDMULH's (2ab + 2^31) >> 32 rounds ties upwards
// as the reference's nudge-and-truncate (it saturates only for INT32_MIN^2, which a multiplier >= 0 never gives);
// rdbpot's -1 on negative lanes turns SRSHL's ties-upwards into ties away from zero; then clamp and + offset.
inline int32x4_t requantize4(int32x4_t acc, const Requant& q, const OutputRange& r) {
  int32x4_t x = vqrdmulhq_s32(vshlq_s32(acc, q.left), q.multiplier);
  x = rdbpot(x, q.right);
  x = vminq_s32(vmaxq_s32(x, r.low), r.high);
  return vaddq_s32(x, r.offset);
}

// The 8-bit output stage on 8 lanes (requantize8 / to_bytes): saturating narrow to int16 (SQXTN), + offset
// (SQADD), clamp to [act_min, act_max] in int16, narrow to bytes — the bytes of clamping in int32 to
// [act_min - offset, act_max - offset] and adding the offset, since the offset and the clamp bounds are 8-bit
// quantities far inside int16: saturation only moves values the clamp moves to the same bound anyway.
struct ByteRange {
  int16x8_t offset, low, high;
};

inline ByteRange byte_range(int32_t offset, int32_t act_min, int32_t act_max) {
  return {vdupq_n_s16(static_cast<int16_t>(offset)), vdupq_n_s16(static_cast<int16_t>(act_min)),
          vdupq_n_s16(static_cast<int16_t>(act_max))};
}

template <bool U>
inline uint8x8_t to_bytes(int32x4_t lo, int32x4_t hi, const ByteRange& r) {
  int16x8_t w = vqmovn_high_s32(vqmovn_s32(lo), hi);
  w = vminq_s16(vmaxq_s16(vqaddq_s16(w, r.offset), r.low), r.high);
  if constexpr (U) return vqmovun_s16(w);
  else return vreinterpret_u8_s8(vqmovn_s16(w));
}

// fp::requantize of 4 accumulators up to the rounding shift (the output stage is to_bytes). RightOnly: every lane's
// shift is < 0 (the usual case, a multiplier below one half), checked by right_only(): no left shift, and rdbpot's
// fixup of negative values is x + (x >> 31) (SSRA) — SQRDMULH with a multiplier below 2^31 never returns INT32_MIN,
// so the subtraction cannot wrap and equals rdbpot's saturating one.
template <bool RightOnly>
inline int32x4_t scale4(int32x4_t acc, const Requant& q) {
  if constexpr (RightOnly) {
    const int32x4_t x = vqrdmulhq_s32(acc, q.multiplier);
    return vrshlq_s32(vsraq_n_s32(x, x, 31), q.right);
  } else {
    return rdbpot(vqrdmulhq_s32(vshlq_s32(acc, q.left), q.multiplier), q.right);
  }
}

inline bool right_only(const Requant& a, const Requant& b) {
  return vmaxvq_s32(vorrq_s32(a.left, b.left)) == 0 && vmaxvq_s32(vmaxq_s32(a.right, b.right)) < 0;
}

template <bool U, bool RightOnly>
inline uint8x8_t requantize8(int32x4_t lo, int32x4_t hi, const Requant& ql, const Requant& qh, const ByteRange& r) {
  return to_bytes<U>(scale4<RightOnly>(lo, ql), scale4<RightOnly>(hi, qh), r);
}

inline void store_bytes(uint8_t* out, uint8x8_t v, int32_t count) {
  if (count >= 8) {
    vst1_u8(out, v);
    return;
  }
  uint8_t tmp[8];
  vst1_u8(tmp, v);
  std::memcpy(out, tmp, static_cast<size_t>(count));
}

// 8 source bytes -> 8 int16 with the offset added, in one widening add (SADDW / UADDW; the unsigned sum wraps
// modulo 2^16 to the same bits as the signed one, which fits int16).
template <bool U>
inline int16x8_t add_widened(int16x8_t offset, uint8x8_t v) {
  if constexpr (U) return vreinterpretq_s16_u16(vaddw_u8(vreinterpretq_u16_s16(offset), v));
  else return vaddw_s8(offset, vreinterpret_s8_u8(v));
}

template <bool U>
inline int16x8_t widen8(const uint8_t* src, int16x8_t offset) {
  return add_widened<U>(offset, vld1_u8(src));
}

// ---- CONV_2D: 6 x 16 GEMM block, weights in GemmLayout::k_major ([Kp][16]) ------------------------------------
// Two passes of 6 rows x 8 channels (12 accumulators, so everything stays in the 32 registers): for each depth
// entry k, one 8-channel weight vector times each row's a[k] taken by element (SMLAL / SMLAL2 by lane).

// The epilogue of a GEMM pass: requantizes the 6 rows x 8 channels of pass `half` (two int32x4 per row) and stores
// the block's rows and the pass's `cols` channels.
template <bool U>
inline void store_half(const GemmBlock& g, int half, int32_t cols, const int32x4_t (&rows)[kGemmRows][2],
                       const ByteRange& range) {
  const Requant ql = requant_of(g.multiplier + half * 8, g.shift + half * 8);
  const Requant qh = requant_of(g.multiplier + half * 8 + 4, g.shift + half * 8 + 4);
  // Locals: a byte store may alias the block's fields, which the loop would otherwise load again every row.
  uint8_t* out = g.out + half * 8;
  const size_t stride = g.out_stride;
  const int32_t count = g.rows;
  if (right_only(ql, qh)) {
    for (int32_t r = 0; r < count; ++r, out += stride)
      store_bytes(out, requantize8<U, true>(rows[r][0], rows[r][1], ql, qh, range), cols);
  } else {
    for (int32_t r = 0; r < count; ++r, out += stride)
      store_bytes(out, requantize8<U, false>(rows[r][0], rows[r][1], ql, qh, range), cols);
  }
}

#define AISRV_NEON_STEP(L)                                                    \
  {                                                                           \
    const int16x8_t b = vld1q_s16(bp + (k + (L)) * kGemmCols);                \
    c0l = vmlal_laneq_s16(c0l, vget_low_s16(b), a0, L);                       \
    c0h = vmlal_high_laneq_s16(c0h, b, a0, L);                                \
    c1l = vmlal_laneq_s16(c1l, vget_low_s16(b), a1, L);                       \
    c1h = vmlal_high_laneq_s16(c1h, b, a1, L);                                \
    c2l = vmlal_laneq_s16(c2l, vget_low_s16(b), a2, L);                       \
    c2h = vmlal_high_laneq_s16(c2h, b, a2, L);                                \
    c3l = vmlal_laneq_s16(c3l, vget_low_s16(b), a3, L);                       \
    c3h = vmlal_high_laneq_s16(c3h, b, a3, L);                                \
    c4l = vmlal_laneq_s16(c4l, vget_low_s16(b), a4, L);                       \
    c4h = vmlal_high_laneq_s16(c4h, b, a4, L);                                \
    c5l = vmlal_laneq_s16(c5l, vget_low_s16(b), a5, L);                       \
    c5h = vmlal_high_laneq_s16(c5h, b, a5, L);                                \
  }

template <bool U>
void gemm(const GemmBlock& g) {
  const int32_t depth = 2 * g.pairs;
  const ByteRange range = byte_range(g.output_offset, g.act_min, g.act_max);
  const int16_t* ar[kGemmRows];
  for (int r = 0; r < kGemmRows; ++r) ar[r] = g.a + static_cast<size_t>(r) * g.a_stride;
  for (int half = 0; half < 2; ++half) {
    const int32_t cols = g.cols - half * 8;
    if (cols <= 0) break;
    const int16_t* bp = g.b + half * 8;
    const int32x4_t bias_l = vld1q_s32(g.bias + half * 8), bias_h = vld1q_s32(g.bias + half * 8 + 4);
    int32x4_t c0l = bias_l, c0h = bias_h, c1l = bias_l, c1h = bias_h, c2l = bias_l, c2h = bias_h;
    int32x4_t c3l = bias_l, c3h = bias_h, c4l = bias_l, c4h = bias_h, c5l = bias_l, c5h = bias_h;
    int32_t k = 0;
    for (; k + 8 <= depth; k += 8) {
      const int16x8_t a0 = vld1q_s16(ar[0] + k), a1 = vld1q_s16(ar[1] + k), a2 = vld1q_s16(ar[2] + k);
      const int16x8_t a3 = vld1q_s16(ar[3] + k), a4 = vld1q_s16(ar[4] + k), a5 = vld1q_s16(ar[5] + k);
      AISRV_NEON_STEP(0)
      AISRV_NEON_STEP(1)
      AISRV_NEON_STEP(2)
      AISRV_NEON_STEP(3)
      AISRV_NEON_STEP(4)
      AISRV_NEON_STEP(5)
      AISRV_NEON_STEP(6)
      AISRV_NEON_STEP(7)
    }
    for (; k < depth; ++k) {  // depth is even: at most 3 pairs remain
      const int16x8_t b = vld1q_s16(bp + k * kGemmCols);
      const int16x4_t bl = vget_low_s16(b), bh = vget_high_s16(b);
      c0l = vmlal_n_s16(c0l, bl, ar[0][k]);
      c0h = vmlal_n_s16(c0h, bh, ar[0][k]);
      c1l = vmlal_n_s16(c1l, bl, ar[1][k]);
      c1h = vmlal_n_s16(c1h, bh, ar[1][k]);
      c2l = vmlal_n_s16(c2l, bl, ar[2][k]);
      c2h = vmlal_n_s16(c2h, bh, ar[2][k]);
      c3l = vmlal_n_s16(c3l, bl, ar[3][k]);
      c3h = vmlal_n_s16(c3h, bh, ar[3][k]);
      c4l = vmlal_n_s16(c4l, bl, ar[4][k]);
      c4h = vmlal_n_s16(c4h, bh, ar[4][k]);
      c5l = vmlal_n_s16(c5l, bl, ar[5][k]);
      c5h = vmlal_n_s16(c5h, bh, ar[5][k]);
    }
    const int32x4_t rows[kGemmRows][2] = {{c0l, c0h}, {c1l, c1h}, {c2l, c2h}, {c3l, c3h}, {c4l, c4h}, {c5l, c5h}};
    store_half<U>(g, half, cols, rows, range);
  }
}

#undef AISRV_NEON_STEP

// ---- CONV_2D, int8 on ARMv8.0: 6 x 16 GEMM block, weights in GemmLayout::pairs8 ([Kp16/16][16][16]) -----------
// Sub-blocks of 2 rows x 8 channels, 16 accumulators of 4 partial sums each: per 16 depth entries, SMULL multiplies
// a row's low 8 input bytes with a channel's 8 weight bytes into int16 lanes and SMLAL2 adds the high 8 products —
// two products of an input byte and a weight in [-127, 127] per lane, |sum| <= 2 * 128 * 127 = 32512, exact —
// then SADALP adds the 8 lanes pairwise into the 4 int32 partial sums (SADDLP starts them at the first step): 16
// multiply-accumulates in 3 instructions (SMLAL by element: 4 in one). Pairwise additions (ADDP) then give each
// channel's sum, plus the bias (the input offset folded in, as for dot); each row's 8 channels are requantized
// and stored straight from the registers. Only the block's rows (g.rows, rounded up to even) are computed.
void gemm_pairs8(const GemmBlock& g) {
  const size_t depth = 2 * static_cast<size_t>(g.pairs);  // a multiple of 16, at least 16
  const ByteRange range = byte_range(g.output_offset, g.act_min, g.act_max);
  for (int half = 0; half < 2; ++half) {
    const int32_t cols = g.cols - half * 8;
    if (cols <= 0) break;
    const Requant ql = requant_of(g.multiplier + half * 8, g.shift + half * 8);
    const Requant qh = requant_of(g.multiplier + half * 8 + 4, g.shift + half * 8 + 4);
    const bool fast = right_only(ql, qh);
    const int32x4_t bias_l = vld1q_s32(g.bias + half * 8), bias_h = vld1q_s32(g.bias + half * 8 + 4);
    const int8_t* const b0 = g.b8 + static_cast<size_t>(half) * 8 * 16;
    // Locals: a byte store may alias the block's fields, which the loop would otherwise load again.
    const int32_t rows = g.rows;
    const size_t a_stride = g.a_stride, out_stride = g.out_stride;
    uint8_t* const out0 = g.out + half * 8;
    const int8_t* const a8 = g.a8;
    for (int32_t r0 = 0; r0 < rows; r0 += 2) {
      const int8_t* x0 = a8 + static_cast<size_t>(r0) * a_stride;
      const int8_t* x1 = x0 + a_stride;
      int32x4_t acc[2][8];
      {
        const int8x16_t a[2] = {vld1q_s8(x0), vld1q_s8(x1)};
        for (int c = 0; c < 8; ++c) {
          const int8x16_t w = vld1q_s8(b0 + c * 16);
          for (int r = 0; r < 2; ++r)
            acc[r][c] = vpaddlq_s16(vmlal_high_s8(vmull_s8(vget_low_s8(a[r]), vget_low_s8(w)), a[r], w));
        }
      }
      const int8_t* b = b0 + kGemmCols * 16;
      for (size_t k = 16; k < depth; k += 16, b += kGemmCols * 16) {
        const int8x16_t a[2] = {vld1q_s8(x0 + k), vld1q_s8(x1 + k)};
        for (int c = 0; c < 8; ++c) {
          const int8x16_t w = vld1q_s8(b + c * 16);
          for (int r = 0; r < 2; ++r)
            acc[r][c] = vpadalq_s16(acc[r][c], vmlal_high_s8(vmull_s8(vget_low_s8(a[r]), vget_low_s8(w)), a[r], w));
        }
      }
      int32x4_t lo[2], hi[2];
      for (int r = 0; r < 2; ++r) {
        lo[r] = vaddq_s32(bias_l, vpaddq_s32(vpaddq_s32(acc[r][0], acc[r][1]), vpaddq_s32(acc[r][2], acc[r][3])));
        hi[r] = vaddq_s32(bias_h, vpaddq_s32(vpaddq_s32(acc[r][4], acc[r][5]), vpaddq_s32(acc[r][6], acc[r][7])));
      }
      uint8_t* out = out0 + static_cast<size_t>(r0) * out_stride;
      const uint8x8_t row0 = fast ? requantize8<false, true>(lo[0], hi[0], ql, qh, range)
                                  : requantize8<false, false>(lo[0], hi[0], ql, qh, range);
      const uint8x8_t row1 = fast ? requantize8<false, true>(lo[1], hi[1], ql, qh, range)
                                  : requantize8<false, false>(lo[1], hi[1], ql, qh, range);
      store_bytes(out, row0, cols);
      if (r0 + 1 < rows) store_bytes(out + out_stride, row1, cols);
    }
  }
}

// ---- DEPTHWISE_CONV_2D: one output row, 16 channels at a time, weights in DepthwiseLayout::taps -----------------
// ([taps][channels_padded] int16 with the filter offset added; channels_padded is a multiple of 16, so the last
// block reads padding weights of 0 and stores only the real channels).

// 3x3 (9 taps): blocks of 8 channels outside (depthwise_row_9), output columns inside (depthwise_block_9), so the
// block's 9 weight vectors, its requantization and the output range stay in registers (24 of the 32) across the
// row; per output column and block: 9 loads, 18 SMLAL, the requantization of 8 lanes and one 8-byte store.
template <bool U, bool RightOnly>
void depthwise_block_9(const DepthwiseRow& d, int32_t c0, const Requant& ql, const Requant& qh,
                       const ByteRange& range) {
  const auto stride = static_cast<size_t>(d.channels_padded);
  const auto step = static_cast<size_t>(d.column_step);
  const auto c = static_cast<size_t>(c0);
  int16x8_t w[9];
  for (size_t t = 0; t < 9; ++t) w[t] = vld1q_s16(d.packed + t * stride + c);
  const int32x4_t bl = vld1q_s32(d.bias + c0), bh = vld1q_s32(d.bias + c0 + 4);
  const int16_t* x[9];
  for (size_t t = 0; t < 9; ++t) x[t] = d.taps[t] + c;
  const int32_t count = std::min(8, d.channels - c0);
  uint8_t* out = d.out + c;
  // Locals: a byte store may alias the row's fields, which the loop would otherwise load again every column.
  const auto out_step = static_cast<size_t>(d.channels);
  const int32_t width = d.out_width;
  size_t at = 0;  // offset of the current column in every tap row
  for (int32_t ox = 0; ox < width; ++ox, out += out_step, at += step) {
    int32x4_t lo = bl, hi = bh;
    for (size_t t = 0; t < 9; ++t) {
      const int16x8_t v = vld1q_s16(x[t] + at);
      lo = vmlal_s16(lo, vget_low_s16(v), vget_low_s16(w[t]));
      hi = vmlal_high_s16(hi, v, w[t]);
    }
    store_bytes(out, requantize8<U, RightOnly>(lo, hi, ql, qh, range), count);
  }
}

template <bool U>
void depthwise_row_9(const DepthwiseRow& d, const ByteRange& range) {
  for (int32_t c0 = 0; c0 < d.channels; c0 += 8) {
    const Requant ql = requant_of(d.multiplier + c0, d.shift + c0);
    const Requant qh = requant_of(d.multiplier + c0 + 4, d.shift + c0 + 4);
    if (right_only(ql, qh)) depthwise_block_9<U, true>(d, c0, ql, qh, range);
    else depthwise_block_9<U, false>(d, c0, ql, qh, range);
  }
}

template <bool U>
void depthwise_row(const DepthwiseRow& d) {
  const ByteRange range = byte_range(d.output_offset, d.act_min, d.act_max);
  if (d.taps_count == 9) {
    depthwise_row_9<U>(d, range);
    return;
  }
  const auto channels = static_cast<size_t>(d.channels);
  const auto stride = static_cast<size_t>(d.channels_padded);
  for (int32_t ox = 0; ox < d.out_width; ++ox) {
    const size_t column = static_cast<size_t>(ox) * static_cast<size_t>(d.column_step);
    uint8_t* out = d.out + static_cast<size_t>(ox) * channels;
    for (int32_t c0 = 0; c0 < d.channels; c0 += 16) {
      int32x4_t acc[4] = {vld1q_s32(d.bias + c0), vld1q_s32(d.bias + c0 + 4), vld1q_s32(d.bias + c0 + 8),
                          vld1q_s32(d.bias + c0 + 12)};
      const int16_t* w = d.packed + c0;
      for (int32_t t = 0; t < d.taps_count; ++t, w += stride) {
        const int16_t* x = d.taps[t] + column + c0;
        const int16x8_t x0 = vld1q_s16(x), x1 = vld1q_s16(x + 8);
        const int16x8_t w0 = vld1q_s16(w), w1 = vld1q_s16(w + 8);
        acc[0] = vmlal_s16(acc[0], vget_low_s16(x0), vget_low_s16(w0));
        acc[1] = vmlal_high_s16(acc[1], x0, w0);
        acc[2] = vmlal_s16(acc[2], vget_low_s16(x1), vget_low_s16(w1));
        acc[3] = vmlal_high_s16(acc[3], x1, w1);
      }
      const Requant q[4] = {requant_of(d.multiplier + c0, d.shift + c0),
                            requant_of(d.multiplier + c0 + 4, d.shift + c0 + 4),
                            requant_of(d.multiplier + c0 + 8, d.shift + c0 + 8),
                            requant_of(d.multiplier + c0 + 12, d.shift + c0 + 12)};
      const int32_t left = d.channels - c0;
      store_bytes(out + c0, requantize8<U, false>(acc[0], acc[1], q[0], q[1], range), left);
      if (left > 8) store_bytes(out + c0 + 8, requantize8<U, false>(acc[2], acc[3], q[2], q[3], range), left - 8);
    }
  }
}

// ---- FULLY_CONNECTED: dot products, four weight rows at a time -------------------------------------------------

template <bool U>
void fc_row(const FcRow& f) {
  const int32_t full = f.depth & ~7;
  const int16x8_t filter_offset = vdupq_n_s16(static_cast<int16_t>(f.filter_offset));
  const size_t depth = static_cast<size_t>(f.depth);
  auto finish = [&](int32_t o, int32_t acc) { fc_element<U>(f, o, acc, full); };
  int32_t o = 0;
  for (; o + 4 <= f.outputs; o += 4) {
    const uint8_t* w0 = f.weights + static_cast<size_t>(o) * depth;
    const uint8_t* w1 = w0 + depth;
    const uint8_t* w2 = w1 + depth;
    const uint8_t* w3 = w2 + depth;
    int32x4_t acc0 = vdupq_n_s32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int32_t k = 0; k < full; k += 8) {
      const int16x8_t x = vld1q_s16(f.input + k);
      int16x8_t w = widen8<U>(w0 + k, filter_offset);
      acc0 = vmlal_high_s16(vmlal_s16(acc0, vget_low_s16(w), vget_low_s16(x)), w, x);
      w = widen8<U>(w1 + k, filter_offset);
      acc1 = vmlal_high_s16(vmlal_s16(acc1, vget_low_s16(w), vget_low_s16(x)), w, x);
      w = widen8<U>(w2 + k, filter_offset);
      acc2 = vmlal_high_s16(vmlal_s16(acc2, vget_low_s16(w), vget_low_s16(x)), w, x);
      w = widen8<U>(w3 + k, filter_offset);
      acc3 = vmlal_high_s16(vmlal_s16(acc3, vget_low_s16(w), vget_low_s16(x)), w, x);
    }
    finish(o, vaddvq_s32(acc0));
    finish(o + 1, vaddvq_s32(acc1));
    finish(o + 2, vaddvq_s32(acc2));
    finish(o + 3, vaddvq_s32(acc3));
  }
  for (; o < f.outputs; ++o) {
    const uint8_t* w = f.weights + static_cast<size_t>(o) * depth;
    int32x4_t acc = vdupq_n_s32(0);
    for (int32_t k = 0; k < full; k += 8) {
      const int16x8_t x = vld1q_s16(f.input + k);
      const int16x8_t wv = widen8<U>(w + k, filter_offset);
      acc = vmlal_high_s16(vmlal_s16(acc, vget_low_s16(wv), vget_low_s16(x)), wv, x);
    }
    finish(o, vaddvq_s32(acc));
  }
}

// ---- ADD without broadcasting ------------------------------------------------------------------------------------

// fp::multiply_by_quantized_multiplier_smaller_than_one_exp lane-wise (shift <= 0); RightOnly: shift < 0, the
// rounding fixup as in scale4.
template <bool RightOnly>
inline int32x4_t scale_down(int32x4_t x, int32x4_t multiplier, int32x4_t right) {
  const int32x4_t m = vqrdmulhq_s32(x, multiplier);
  if constexpr (RightOnly) return vrshlq_s32(vsraq_n_s32(m, m, 31), right);
  else return rdbpot(m, right);
}

// ADD's parameters as vectors, made once per call (a byte store may alias the span's fields, so they are not read
// again inside the loop).
struct AddVectors {
  int16x8_t a_offset, b_offset;
  int32x4_t left, a_mul, a_right, b_mul, b_right, o_mul, o_right;
  ByteRange range;
};

// 8 elements: the inputs widened with their offsets added (both fit int16), shifted left into int32, rescaled,
// summed, rescaled.
template <bool U, bool RightOnly>
void add_loop(const uint8_t* a_in, const uint8_t* b_in, uint8_t* out, int64_t count, const AddVectors& v) {
  for (int64_t i = 0; i + 8 <= count; i += 8) {
    const int16x8_t a16 = widen8<U>(a_in + i, v.a_offset), b16 = widen8<U>(b_in + i, v.b_offset);
    int32x4_t r[2];
    for (int h = 0; h < 2; ++h) {
      const int32x4_t a = vshlq_s32(h ? vmovl_high_s16(a16) : vmovl_s16(vget_low_s16(a16)), v.left);
      const int32x4_t b = vshlq_s32(h ? vmovl_high_s16(b16) : vmovl_s16(vget_low_s16(b16)), v.left);
      const int32x4_t sum = vaddq_s32(scale_down<RightOnly>(a, v.a_mul, v.a_right),
                                      scale_down<RightOnly>(b, v.b_mul, v.b_right));
      r[h] = scale_down<RightOnly>(sum, v.o_mul, v.o_right);
    }
    vst1_u8(out + i, to_bytes<U>(r[0], r[1], v.range));
  }
}

template <bool U>
void add(const AddSpan& s) {
  // The shifts of ADD are <= 0 (the loader's multipliers are smaller than one) and the offsets 8-bit zero points;
  // others take the scalar loop.
  const bool vector = s.a_shift <= 0 && s.b_shift <= 0 && s.output_shift <= 0 && s.a_shift >= -31 &&
                      s.b_shift >= -31 && s.output_shift >= -31 && s.left_shift >= 0 && s.left_shift < 31 &&
                      s.a_offset >= -255 && s.a_offset <= 255 && s.b_offset >= -255 && s.b_offset <= 255;
  const int64_t vectorised = vector ? s.count / 8 * 8 : 0;
  if (vectorised > 0) {
    const AddVectors v{vdupq_n_s16(static_cast<int16_t>(s.a_offset)), vdupq_n_s16(static_cast<int16_t>(s.b_offset)),
                       vdupq_n_s32(s.left_shift), vdupq_n_s32(s.a_multiplier), vdupq_n_s32(s.a_shift),
                       vdupq_n_s32(s.b_multiplier), vdupq_n_s32(s.b_shift), vdupq_n_s32(s.output_multiplier),
                       vdupq_n_s32(s.output_shift), byte_range(s.output_offset, s.act_min, s.act_max)};
    if (s.a_shift < 0 && s.b_shift < 0 && s.output_shift < 0) add_loop<U, true>(s.a, s.b, s.out, vectorised, v);
    else add_loop<U, false>(s.a, s.b, s.out, vectorised, v);
  }
  for (int64_t i = vectorised; i < s.count; ++i)
    s.out[i] = static_cast<uint8_t>(add_element(element<U>(s.a[i]), element<U>(s.b[i]), s));
}

// ---- int8/uint8 -> int16 + offset ------------------------------------------------------------------------------

template <bool U>
void widen(const uint8_t* src, int16_t* dst, size_t count, int32_t offset) {
  const int16x8_t off = vdupq_n_s16(static_cast<int16_t>(offset));
  size_t i = 0;
  for (; i + 32 <= count; i += 32) {  // one 32-byte load, four widening adds, one 64-byte store
    const uint8x16x2_t v = vld1q_u8_x2(src + i);
    const int16x8x4_t w = {{add_widened<U>(off, vget_low_u8(v.val[0])), add_widened<U>(off, vget_high_u8(v.val[0])),
                            add_widened<U>(off, vget_low_u8(v.val[1])), add_widened<U>(off, vget_high_u8(v.val[1]))}};
    vst1q_s16_x4(dst + i, w);
  }
  for (; i + 8 <= count; i += 8) vst1q_s16(dst + i, widen8<U>(src + i, off));
  for (; i < count; ++i) dst[i] = static_cast<int16_t>(element<U>(src[i]) + offset);
}

// ---- LSTM: gate FCs four rows at a time, element-wise products --------------------------------------------------

void gate_row(const GateRow& g) {
  const size_t kp = static_cast<size_t>(g.kp);
  const OutputRange range = output_range(0, -32768, 32767);
  for (int32_t o = 0; o < g.outputs; o += 4) {
    const int16_t* w = g.weights + static_cast<size_t>(o) * kp;
    int32x4_t acc0 = vdupq_n_s32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (size_t k = 0; k < kp; k += 8) {
      const int16x8_t x = vld1q_s16(g.input + k);
      int16x8_t v = vld1q_s16(w + k);
      acc0 = vmlal_high_s16(vmlal_s16(acc0, vget_low_s16(v), vget_low_s16(x)), v, x);
      v = vld1q_s16(w + kp + k);
      acc1 = vmlal_high_s16(vmlal_s16(acc1, vget_low_s16(v), vget_low_s16(x)), v, x);
      v = vld1q_s16(w + 2 * kp + k);
      acc2 = vmlal_high_s16(vmlal_s16(acc2, vget_low_s16(v), vget_low_s16(x)), v, x);
      v = vld1q_s16(w + 3 * kp + k);
      acc3 = vmlal_high_s16(vmlal_s16(acc3, vget_low_s16(v), vget_low_s16(x)), v, x);
    }
    const int32x4_t sum = vaddq_s32(vpaddq_s32(vpaddq_s32(acc0, acc1), vpaddq_s32(acc2, acc3)), vld1q_s32(g.bias + o));
    vst1_s16(g.out + o, vmovn_s32(requantize4(sum, requant_of(g.multiplier + o, g.shift + o), range)));
  }
}

void mul(const MulSpan& m) {
  const int32x4_t zero = vdupq_n_s32(0);
  const Requant q{vdupq_n_s32(m.multiplier), vmaxq_s32(vdupq_n_s32(m.shift), zero),
                  vminq_s32(vdupq_n_s32(m.shift), zero)};
  const OutputRange range = output_range(m.offset, m.act_min, m.act_max);
  int64_t i = 0;
  for (; i + 8 <= m.count; i += 8) {
    const int16x8_t a = vld1q_s16(m.a + i), b = vld1q_s16(m.b + i);
    const int32x4_t lo = requantize4(vmull_s16(vget_low_s16(a), vget_low_s16(b)), q, range);
    const int32x4_t hi = requantize4(vmull_high_s16(a, b), q, range);
    const int16x8_t words = vcombine_s16(vmovn_s32(lo), vmovn_s32(hi));
    if (m.out16) vst1q_s16(m.out16 + i, words);
    else vst1_s8(m.out8 + i, vmovn_s16(words));
  }
  for (; i < m.count; ++i) mul_element(m, i);
}

// ---- CONV_2D with the ARMv8.2 dot product: 6 x 16 GEMM block, int8, weights in GemmLayout::dot ----------------
// ([Kp16/4][16][4]). Two passes of 6 rows x 8 channels (12 accumulators): per 16 depth entries each row's 16 input
// bytes are loaded once and SDOT by element multiplies four of them (lane q) with four depth entries of 4 channels
// (one weight vector), summing 4 products into each int32 lane — 16 MACs per instruction. Products of int8 values
// are exact in the 32-bit lanes; the sums wrap like every int32 sum here. Compiled for armv8.2-a+dotprod, called only when
// the kernel reports HWCAP_ASIMDDP.

#define AISRV_DOT_STEP(Q)                                                \
  {                                                                      \
    const int8x16_t bl = vld1q_s8(bp + (k / 4 + (Q)) * 64);              \
    const int8x16_t bh = vld1q_s8(bp + (k / 4 + (Q)) * 64 + 16);         \
    c0l = vdotq_laneq_s32(c0l, bl, a0, Q);                               \
    c0h = vdotq_laneq_s32(c0h, bh, a0, Q);                               \
    c1l = vdotq_laneq_s32(c1l, bl, a1, Q);                               \
    c1h = vdotq_laneq_s32(c1h, bh, a1, Q);                               \
    c2l = vdotq_laneq_s32(c2l, bl, a2, Q);                               \
    c2h = vdotq_laneq_s32(c2h, bh, a2, Q);                               \
    c3l = vdotq_laneq_s32(c3l, bl, a3, Q);                               \
    c3h = vdotq_laneq_s32(c3h, bh, a3, Q);                               \
    c4l = vdotq_laneq_s32(c4l, bl, a4, Q);                               \
    c4h = vdotq_laneq_s32(c4h, bh, a4, Q);                               \
    c5l = vdotq_laneq_s32(c5l, bl, a5, Q);                               \
    c5h = vdotq_laneq_s32(c5h, bh, a5, Q);                               \
  }

__attribute__((target("arch=armv8.2-a+dotprod"))) void gemm_dot(const GemmBlock& g) {
  const size_t depth = 2 * static_cast<size_t>(g.pairs);  // a multiple of 16
  const ByteRange range = byte_range(g.output_offset, g.act_min, g.act_max);
  const int8_t* ar[kGemmRows];
  for (int r = 0; r < kGemmRows; ++r) ar[r] = g.a8 + static_cast<size_t>(r) * g.a_stride;
  for (int half = 0; half < 2; ++half) {
    const int32_t cols = g.cols - half * 8;
    if (cols <= 0) break;
    const int8_t* bp = g.b8 + half * 8 * 4;
    const int32x4_t bias_l = vld1q_s32(g.bias + half * 8), bias_h = vld1q_s32(g.bias + half * 8 + 4);
    int32x4_t c0l = bias_l, c0h = bias_h, c1l = bias_l, c1h = bias_h, c2l = bias_l, c2h = bias_h;
    int32x4_t c3l = bias_l, c3h = bias_h, c4l = bias_l, c4h = bias_h, c5l = bias_l, c5h = bias_h;
    for (size_t k = 0; k < depth; k += 16) {
      const int8x16_t a0 = vld1q_s8(ar[0] + k), a1 = vld1q_s8(ar[1] + k), a2 = vld1q_s8(ar[2] + k);
      const int8x16_t a3 = vld1q_s8(ar[3] + k), a4 = vld1q_s8(ar[4] + k), a5 = vld1q_s8(ar[5] + k);
      AISRV_DOT_STEP(0)
      AISRV_DOT_STEP(1)
      AISRV_DOT_STEP(2)
      AISRV_DOT_STEP(3)
    }
    const int32x4_t rows[kGemmRows][2] = {{c0l, c0h}, {c1l, c1h}, {c2l, c2h}, {c3l, c3h}, {c4l, c4h}, {c5l, c5h}};
    store_half<false>(g, half, cols, rows, range);
  }
}

#undef AISRV_DOT_STEP

}  // namespace

void fill_neon_dot_kernels(OptKernels& k) { k.gemm_dot = gemm_dot; }

void fill_neon_kernels(OptKernels& k) {
  k.gate_row = gate_row;
  k.mul = mul;
  k.gemm[0] = gemm<false>;
  k.gemm[1] = gemm<true>;
  k.gemm_pairs8 = gemm_pairs8;
  k.depthwise_row[0] = depthwise_row<false>;
  k.depthwise_row[1] = depthwise_row<true>;
  k.fc_row[0] = fc_row<false>;
  k.fc_row[1] = fc_row<true>;
  k.add[0] = add<false>;
  k.add[1] = add<true>;
  k.widen[0] = widen<false>;
  k.widen[1] = widen<true>;
  k.gemm_layout = GemmLayout::k_major;
  k.depthwise_layout = DepthwiseLayout::taps;
}

}  // namespace aisrv::engine::cpu::opt

#else  // not aarch64: no NEON level

namespace aisrv::engine::cpu::opt {
void fill_neon_kernels(OptKernels&) {}
void fill_neon_dot_kernels(OptKernels&) {}
}  // namespace aisrv::engine::cpu::opt

#endif
