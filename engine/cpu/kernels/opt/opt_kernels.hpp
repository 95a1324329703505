// aisrv CPU engine, optimised kernels — the inner loops that exist once per instruction-set level, as a table of
// function pointers (OptKernels), and the argument structs they take. The drivers (conv_2d.cpp, depthwise_conv_2d.cpp,
// ...) do tiling, im2col and bookkeeping in portable C++ and call these for the multiply-accumulate work.
// portable_kernels.cpp fills the table with plain C++; avx2_kernels.cpp overrides entries with AVX2 code,
// vnni_kernels.cpp (after AVX2) the int8 / uint8 GEMMs with VPDPBUSD (AVX-VNNI, AVX-512 VNNI), neon_kernels.cpp with
// NEON code.
//
// Exactness contract of every entry: integer sums in int32 (the loader proves no sum of |terms| overflows, so any
// summation order gives the reference's value) and requantization with fp::requantize's formula (x * 2^left,
// rounding doubling high multiply, rounding right shift, + offset, clamp), for multipliers in [0, 2^31) and shifts
// in [-31, 30] — the drivers check those preconditions at prepare time and use the reference kernel otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aisrv::engine::cpu::opt {

// CONV_2D as GEMM: a block of kGemmRows output pixels x kGemmCols output channels.
inline constexpr int kGemmRows = 6;
inline constexpr int kGemmCols = 16;

// How a block's weights (+ filter offset, int16, depth padded to even Kp) are laid out in the prepared data.
enum class GemmLayout : uint32_t {
  pairs = 1,  // [Kp / 2][kGemmCols][2]: a broadcast input pair multiplies 8 channels' weight pairs (AVX2)
  rows = 2,   // [kGemmCols][Kp]: one contiguous row per channel, for dot products (portable)
  k_major = 3,  // [Kp][kGemmCols]: the 16 channels' weights of one depth entry together, for SMLAL by element (NEON)
  dot = 4,      // int8 weights as they are (filter offset 0), depth padded to Kp16 = a multiple of 16:
                // [Kp16 / 4][kGemmCols][4], four depth entries of a channel together, for SDOT by element
                // (neon_dot); the input offset is folded into the bias (bias + input_offset * sum of the row)
  pairs8 = 5,   // int8 weights as they are, all in [-127, 127], depth padded to Kp16: [Kp16 / 16][kGemmCols][16],
                // sixteen depth entries of a channel together, for SMULL / SMLAL2 + SADALP (NEON, ARMv8.0); the
                // input offset folded into the bias as for dot
  vnni = 6,     // VPDPBUSD (unsigned x signed bytes, x86 AVX-VNNI / AVX512_VNNI), int8 and uint8: depth padded to Kp4 =
                // a multiple of 4, [Kp4 / 4][kGemmCols][4] signed bytes b = w (int8) or w - 128 (uint8); the im2col
                // rows hold unsigned bytes a = x + 128 (int8) or x (uint8). With w + filter_offset = b + beta and
                // x + input_offset = a + alpha, the sum over the K real taps is
                //   sum a*b + alpha * sum b + K * alpha * beta + beta * sum a,
                // the first by VPDPBUSD, the next two folded into the bias at prepare, the last (uint8 only: beta =
                // filter_offset + 128; int8: beta = filter_offset = 0) from each im2col row's byte sum (row_offset).
};

// How DEPTHWISE_CONV_2D weights are read: the model's filter as is, or repacked (+ filter offset, int16) in the
// prepared data.
enum class DepthwiseLayout : uint32_t {
  filter = 0,  // [taps][channels] int8 / uint8 bytes of the model (portable)
  pairs = 1,   // [channels_padded / 16][(taps + 1) / 2][32]: tap pairs interleaved for vpmaddwd (AVX2)
  taps = 2,    // [taps][channels_padded]: one int16 row per tap (NEON)
  pairs32 = 3,  // [channels_padded / 32][(taps + 1) / 2][64]: the same for 32 channels a zmm (avx512_vnni); a last
                // block of 16 channels as in `pairs` (the same offset)
};

struct GemmBlock {
  const int16_t* a = nullptr;  // kGemmRows im2col rows (input + input offset, zero where padded), a_stride apart
  size_t a_stride = 0;         // elements between rows (the padded depth Kp, even; the byte layouts dot and pairs8:
                               // Kp16 bytes)
  const int16_t* b = nullptr;  // the block's weights in the table's gemm_layout
  int32_t pairs = 0;           // Kp / 2 (byte layouts: Kp16 / 2)
  const int8_t* a8 = nullptr;  // byte layouts: im2col rows of the input bytes as they are (the input's zero point
                               // where a tap is padding, 0 in the depth padding)
  const int8_t* b8 = nullptr;  // byte layouts: the block's weights
  const int32_t* bias = nullptr;        // kGemmCols entries each
  const int32_t* multiplier = nullptr;
  const int32_t* shift = nullptr;
  const int32_t* row_offset = nullptr;  // vnni: null, or kGemmRows values added to every column of their row
  int32_t output_offset = 0, act_min = 0, act_max = 0;
  uint8_t* out = nullptr;  // output element of row 0, column 0 (bytes: int8 or uint8)
  size_t out_stride = 0;   // bytes between output rows
  int32_t rows = 0;        // rows to store, 1..kGemmRows (the others are zero rows of the tile)
  int32_t cols = 0;        // channels to store, 1..kGemmCols
};

// DEPTHWISE_CONV_2D: one output row, all channels. The input rows are int16 (+ input offset) with zero columns for
// the padding, each column holding `channels_padded` values (output channel order: input channel c / multiplier).
struct DepthwiseRow {
  const int16_t* const* taps = nullptr;  // per filter tap: the input column output column 0 reads
  int32_t taps_count = 0;
  int32_t column_step = 0;        // int16 elements between the inputs of consecutive output columns
  int32_t out_width = 0;
  int32_t channels = 0;           // output channels (bytes per output column)
  int32_t channels_padded = 0;    // multiple of 16
  const int16_t* packed = nullptr;  // repacked weights in the table's depthwise_layout (see depthwise_conv_2d.cpp)
  const int8_t* filter = nullptr;   // portable: the model's filter [taps][channels] (int8 or uint8 bytes)
  int32_t filter_offset = 0;
  const int32_t* bias = nullptr;  // channels_padded entries each
  const int32_t* multiplier = nullptr;
  const int32_t* shift = nullptr;
  int32_t output_offset = 0, act_min = 0, act_max = 0;
  uint8_t* out = nullptr;
  int32_t* accumulators = nullptr;  // portable: channels_padded int32 of scratch
};

// FULLY_CONNECTED: one batch row against all weight rows.
struct FcRow {
  const int16_t* input = nullptr;  // depth values (+ input offset), zero up to a multiple of 16
  const uint8_t* weights = nullptr;  // [outputs][depth] int8 or uint8 bytes
  int32_t depth = 0, outputs = 0;
  int32_t filter_offset = 0;
  const int32_t* bias = nullptr;   // outputs entries, or null
  const int32_t* multiplier = nullptr;
  const int32_t* shift = nullptr;
  int32_t output_offset = 0, act_min = 0, act_max = 0;
  uint8_t* out = nullptr;
};

// FULLY_CONNECTED on VPDPBUSD (x86 VNNI levels; fully_connected.cpp prepares, vnni_kernels.cpp computes). The
// weights are packed at load in blocks of kFcVnniBlock outputs, [blocks][k4 / 4][16][4] signed bytes b (w for int8,
// w - 128 for uint8), zero in the depth padding and in the padding outputs; the row's input as unsigned bytes a
// (x + 128 for int8, x for uint8), zero from the real depth to k4. With x + input_offset = a + alpha and
// w + filter_offset = b + beta, the reference's sum is sum a*b + alpha * sum b + K * alpha * beta + beta * sum a:
// VPDPBUSD the first, the next two folded into `bias` at load (int64, wrapped once), the last `row_offset` (wrapping).
inline constexpr int kFcVnniBlock = 16;
struct FcVnniRow {
  const uint8_t* input = nullptr;  // k4 unsigned bytes
  const int8_t* weights = nullptr;  // `blocks` packed blocks of k4 * 16 bytes
  int32_t k4 = 0;                   // depth padded to a multiple of 4
  int32_t blocks = 0;               // blocks of 16 outputs to compute
  int32_t outputs = 0;              // outputs to store, (blocks - 1) * 16 < outputs <= blocks * 16
  const int32_t* bias = nullptr;    // folded, blocks * 16 entries each (so are multiplier and shift)
  const int32_t* multiplier = nullptr;
  const int32_t* shift = nullptr;
  int32_t row_offset = 0;  // beta * sum a, added to every output
  int32_t output_offset = 0, act_min = 0, act_max = 0;
  uint8_t* out = nullptr;
};

// ADD without broadcasting (TFLite's rescale of both inputs with `left_shift` headroom, sum, rescale).
struct AddSpan {
  const uint8_t* a = nullptr;
  const uint8_t* b = nullptr;
  uint8_t* out = nullptr;
  int64_t count = 0;
  int32_t a_offset = 0, b_offset = 0, output_offset = 0, left_shift = 0;
  int32_t a_multiplier = 0, a_shift = 0, b_multiplier = 0, b_shift = 0, output_multiplier = 0, output_shift = 0;
  int32_t act_min = 0, act_max = 0;
};

// LSTM gate FCs for one batch row (UNIDIRECTIONAL_SEQUENCE_LSTM), all four gates stacked: out[o] =
// requantize(sum_k weights[o][k] * input[k] + bias[o], multiplier[o], shift[o]) clamped to int16 (Q3.12
// pre-activations), for o < outputs. Inputs and weights are int16 with zero padding, so no tail handling is needed.
struct GateRow {
  const int16_t* input = nullptr;    // kp values, zero from the real depth on
  const int16_t* weights = nullptr;  // [outputs][kp], zero padded
  int32_t kp = 0;                    // multiple of 8
  int32_t outputs = 0;               // multiple of 8
  const int32_t* bias = nullptr;     // outputs entries each
  const int32_t* multiplier = nullptr;
  const int32_t* shift = nullptr;
  int16_t* out = nullptr;            // outputs entries
};

// LSTM element-wise product of two int16 vectors, requantized: out[i] = clamp(offset + multiply_by_quantized_
// multiplier(a[i] * b[i], multiplier, shift), act_min, act_max), stored as int16 (out16) or int8 (out8).
struct MulSpan {
  const int16_t* a = nullptr;
  const int16_t* b = nullptr;
  int64_t count = 0;
  int32_t multiplier = 0, shift = 0, offset = 0, act_min = 0, act_max = 0;
  int16_t* out16 = nullptr;  // one of the two is set
  int8_t* out8 = nullptr;
};

struct OptKernels {
  // Element type is part of the entry: [0] int8, [1] uint8.
  void (*gemm[2])(const GemmBlock&) = {};
  void (*gemm_dot)(const GemmBlock&) = nullptr;     // int8, GemmLayout::dot (neon_dot only)
  void (*gemm_pairs8)(const GemmBlock&) = nullptr;  // int8, GemmLayout::pairs8 (neon)
  void (*gemm_vnni[2])(const GemmBlock&) = {};      // [0] int8, [1] uint8, GemmLayout::vnni (avx_vnni, avx512_vnni)
  void (*depthwise_row[2])(const DepthwiseRow&) = {};
  void (*fc_row[2])(const FcRow&) = {};
  void (*fc_vnni[2])(const FcVnniRow&) = {};  // [0] int8, [1] uint8 (the VNNI levels only)
  void (*add[2])(const AddSpan&) = {};
  void (*gate_row)(const GateRow&) = nullptr;
  void (*mul)(const MulSpan&) = nullptr;
  // dst[i] = src[i] + offset as int16 (int8 or uint8 source bytes).
  void (*widen[2])(const uint8_t* src, int16_t* dst, size_t count, int32_t offset) = {};
  // Three byte planes `plane` bytes apart interleaved into `count` pixels of 3 bytes: out[3 i + c] = in[c plane + i]
  // (TRANSPOSE of an image from NCHW to NHWC).
  void (*interleave3)(const uint8_t* in, size_t plane, uint8_t* out, size_t count) = nullptr;
  GemmLayout gemm_layout = GemmLayout::rows;  // what gemm reads
  DepthwiseLayout depthwise_layout = DepthwiseLayout::filter;  // what depthwise_row reads
};

// The plain C++ table (every entry set).
void fill_portable_kernels(OptKernels& k);
// Overrides entries with AVX2 code; does nothing on a non-x86-64 build. Call only when the CPU has AVX2.
void fill_avx2_kernels(OptKernels& k);
// Add the VPDPBUSD GEMMs (after fill_avx2_kernels); do nothing on a non-x86-64 build. Call only when the CPU and OS
// have AVX-VNNI, respectively AVX-512 F/BW/VL + AVX512_VNNI.
void fill_avx_vnni_kernels(OptKernels& k);
void fill_avx512_vnni_kernels(OptKernels& k);
// Overrides entries with NEON code; does nothing on a non-aarch64 build.
void fill_neon_kernels(OptKernels& k);
// Adds the dot-product GEMM (after fill_neon_kernels). Call only when the CPU has the ARMv8.2 dot product.
void fill_neon_dot_kernels(OptKernels& k);

}  // namespace aisrv::engine::cpu::opt
