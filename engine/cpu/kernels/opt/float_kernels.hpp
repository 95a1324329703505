// aisrv CPU engine, optimised kernels — float32 convolutions (internal to kernels/opt): the inner loops of CONV_2D,
// DEPTHWISE_CONV_2D, TRANSPOSE_CONV and FULLY_CONNECTED at each instruction-set level (float_kernels.cpp), and the
// entry points of the float drivers (conv_2d_float.cpp, depthwise_conv_2d_float.cpp, fully_connected_float.cpp).
//
// Exactness contract of every inner loop: it vectorises ACROSS outputs (output channels, or a fully connected
// layer's outputs), never along a sum, so each lane computes one output element exactly as the reference kernel
// does — a total that starts at +0.0f and adds one rounded product at a time in the order the taps are listed (the
// drivers list them in the reference's order and leave out the taps the reference skips), then + bias (+0.0f when
// there is none), then std::min(std::max(v, act_min), act_max). Products and sums are separate instructions (no
// FMA; the engine is built with -ffp-contract=off). NaN payloads may differ from the reference's where two NaNs meet
// (the compiler orders a scalar product's operands as it likes); every other bit is the reference's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "aisrv/engine/cpu/kernel_params.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "worker_pool.hpp"

namespace aisrv::engine::cpu::opt {

// Output pixels per call of the tap and depthwise loops (the register block's height).
inline constexpr int kFloatRows = 6;

// CONV_2D / TRANSPOSE_CONV: `rows` output pixels x `width` (8 or 16) output channels. Output (r, j) is the sum over
// the taps t in list order and, within a tap, the channels c = 0 .. depth - 1 in order, of
//   input[tap_input[t] + r * input_step + c] * weights[tap_weight[t] + c * width + j],
// then + bias[j], then the clamp; stored to out[r * out_step + j] for j < cols.
struct FloatTapBlock {
  const float* input = nullptr;
  size_t input_step = 0;
  const ptrdiff_t* tap_input = nullptr;
  const ptrdiff_t* tap_weight = nullptr;
  int32_t taps = 0;
  int32_t depth = 0;
  const float* weights = nullptr;  // packed: per tap, depth rows of `width` channels
  const float* bias = nullptr;     // width values
  float act_min = 0.0f, act_max = 0.0f;
  float* out = nullptr;
  size_t out_step = 0;
  int32_t rows = 0;  // 1 .. kFloatRows
  int32_t cols = 0;  // 1 .. width
};

// DEPTHWISE_CONV_2D: `rows` output pixels x `channels` channels. Output (r, c) is the sum over the taps t in list
// order of input[tap_input[t] + r * input_step + c] * weights[tap_weight[t] + c], + (bias ? bias[c] : +0.0f), the
// clamp; stored to out[r * out_step + c].
struct FloatDepthwiseBlock {
  const float* input = nullptr;
  size_t input_step = 0;
  const ptrdiff_t* tap_input = nullptr;
  const ptrdiff_t* tap_weight = nullptr;
  int32_t taps = 0;
  const float* weights = nullptr;
  const float* bias = nullptr;  // channels values, or null
  int32_t channels = 0;
  float act_min = 0.0f, act_max = 0.0f;
  float* out = nullptr;
  size_t out_step = 0;
  int32_t rows = 0;  // 1 .. kFloatRows
};

// FULLY_CONNECTED: `batches` input rows x `outputs` weight rows. Output (b, o) is the sum over d = 0 .. depth - 1 of
// input[b * input_stride + d] * weights[o * weight_stride + d], + (bias ? bias[o] : +0.0f), the clamp; stored to
// out[b * out_stride + o].
struct FloatFcBlock {
  const float* input = nullptr;
  size_t input_stride = 0;
  int32_t batches = 0;  // 1 .. kFcBatches
  const float* weights = nullptr;
  size_t weight_stride = 0;
  int32_t outputs = 0;  // 1 .. kFcOutputs
  int32_t depth = 0;
  const float* bias = nullptr;  // outputs values, or null
  float act_min = 0.0f, act_max = 0.0f;
  float* out = nullptr;
  size_t out_stride = 0;
};
inline constexpr int kFcBatches = 4;
inline constexpr int kFcOutputs = 8;

struct FloatKernels {
  void (*taps[2])(const FloatTapBlock&) = {};  // [0]: width 8, [1]: width 16
  void (*depthwise)(const FloatDepthwiseBlock&) = nullptr;
  void (*fc)(const FloatFcBlock&) = nullptr;
};

// The loops of `level` (portable C++ for a level this build has no code for).
FloatKernels float_kernels(SimdLevel level);

// The float drivers. Each run function computes the float32 layer (dtype and filter float32) and returns true, or
// returns false without writing anything when it does not handle the parameters or the scratch is too small (the
// caller then runs the reference kernel). The scratch sizes are for `participants` threads of the pool.
size_t conv2d_float_scratch_bytes(const Conv2DParams& p, size_t participants);
bool conv2d_float_run(const Conv2DParams& p, SimdLevel level, WorkerPool& pool);
size_t depthwise_float_scratch_bytes(const DepthwiseConv2DParams& p, size_t participants);
bool depthwise_float_run(const DepthwiseConv2DParams& p, SimdLevel level, WorkerPool& pool);
bool fully_connected_float_run(const FullyConnectedParams& p, SimdLevel level, WorkerPool& pool);

// Output columns [first, end) of an output row whose taps all lie inside the input: column o reads input columns
// o * stride - pad + f * spacing for f in [0, taps). Empty (first == end) when there is none.
struct ColumnRange {
  int32_t first = 0, end = 0;
};
ColumnRange interior_columns(int32_t out_w, int32_t in_w, int32_t stride, int32_t pad, int32_t taps, int32_t spacing);

}  // namespace aisrv::engine::cpu::opt
