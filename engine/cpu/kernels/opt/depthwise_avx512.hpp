// aisrv CPU engine, optimised kernels — the avx512_vnni level's DEPTHWISE_CONV_2D row kernel on "flat" rows
// (depthwise_avx512.cpp) and its input-row conversion. depthwise_conv_2d.cpp drives them.
//
// Flat rows: an input row is converted to int16 (+ input offset) with exactly `channels` values per column (one per
// output channel, no channel padding) and, for a horizontal stride s > 1, its columns split into s phases (padded
// column X at phase X % s, position X / s). Then output column ox, channel c of tap (fy, fx) reads element
// ox * channels + c after that tap's base pointer, for every stride: the output row is one contiguous run of
// out_w * channels lanes, cut into blocks of 32 (a zmm of int16) whatever the channel count — an 8-channel layer
// fills 4 output pixels a zmm, a 3-channel one 10 2/3. Block b's lanes belong to channels (32 b + lane) mod
// channels, which repeat every P = channels / gcd(channels, 32) blocks: the prepared data holds P "patterns" of
// weights and requantization constants, and the kernel runs pattern by pattern, its weights in registers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aisrv::engine::cpu::opt {

// Prepared data of one pattern (depthwise_conv_2d.cpp packs it): per pair of taps (t0, t1) 64 int16 = [A | B], lane
// l (0-15) of A holding (w[t0][c], w[t1][c]) + filter offset for the channel of flat lane (l / 4) * 8 + l % 4 of the
// block, B that lane + 4 (the order vpunpcklwd / vpunpckhwd interleave two zmm per 128-bit lane); then vectors of
// 16 int32 in the same lane orders: bias A, bias B, and per half (A, then B) the requantization constants
// multiplier, multiplier of the odd lanes (lane 2k: multiplier[2k + 1], lane 2k + 1: 0), left shift max(shift, 0),
// right shift max(-shift, 0), mask 2^right - 1, threshold mask >> 1.
inline constexpr size_t kDepthwiseFlatConstants = 14;  // vectors of 16 int32 after the weights
inline constexpr size_t depthwise_flat_pattern_bytes(size_t pairs) { return pairs * 128 + kDepthwiseFlatConstants * 64; }
inline constexpr size_t kDepthwiseFlatSlack = 64;  // int16 after every converted row: a block reads up to 31 past

struct DepthwiseFlatRow {
  const int16_t* const* taps = nullptr;  // per filter tap: the element output lane 0 reads
  int32_t taps_count = 0;
  int32_t length = 0;    // out_w * channels: lanes of the row = bytes of the output row
  int32_t patterns = 0;  // P
  int32_t chunk_blocks = 0;  // a multiple of P: blocks run pattern by pattern within chunks of this many, so the
                             // input a chunk reads stays in the L1 cache while the patterns sweep it
  const uint8_t* packed = nullptr;  // P patterns, depthwise_flat_pattern_bytes(pairs) apart
  int32_t output_offset = 0, act_min = 0, act_max = 0;  // offset in [-256, 256], clamp inside [-128, 255]
  uint8_t* out = nullptr;
};

// One output row. Call only where the CPU has AVX-512 F/BW/VL (x86-64 builds only).
void depthwise_flat_row_avx512(const DepthwiseFlatRow& r);

// Converts one input row (int8 or uint8 bytes `src`, `width` columns of `in_channels`) into flat int16 values +
// `offset`, output channel oc = ic * multiplier + m taking input channel ic: column x goes to
// dst + ((left + x) % stride * phase_width + (left + x) / stride) * in_channels * multiplier. Padding columns are
// not written.
void depthwise_flat_convert_avx512(const uint8_t* src, bool is_unsigned, int32_t width, int32_t in_channels,
                                   int32_t multiplier, int32_t offset, int32_t left, int32_t stride,
                                   int32_t phase_width, int16_t* dst);

}  // namespace aisrv::engine::cpu::opt
