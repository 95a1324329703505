// aisrv CPU engine — the parameter structs of the kernels: everything an operator's invoke phase needs, computed
// once at load time (shapes, data pointers into the arena or the model's constants, quantization multipliers and
// shifts, padding, activation range, scratch memory). A KernelBackend receives one of these per operator call and
// does no parsing, validation or allocation: the loader guarantees that every pointer covers its shape, that
// accumulators cannot overflow 32 bits, and that every requantization shift is within [-31, 30] (the SOFTMAX input
// left shift within [1, 31]).
//
// Conventions (those of TensorFlow Lite):
//   - activations are NHWC; CONV_2D filters are OHWI, DEPTHWISE_CONV_2D filters are 1HW(C*multiplier),
//     FULLY_CONNECTED weights are [output depth, accumulation depth];
//   - quantized value q stands for scale * (q - zero_point); "offsets" are the negated input/filter zero points and
//     the output zero point, as the integer kernels add them;
//   - a requantization (multiplier, shift) pair means x * multiplier * 2^(shift - 31), rounded as TFLite does
//     (see fixed_point.hpp: multiply_by_quantized_multiplier);
//   - per-channel arrays always have one entry per output channel (a per-tensor scale is broadcast at load).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "aisrv/protocol/payloads.hpp"

namespace aisrv::engine::cpu {

using protocol::DType;

inline constexpr int kMaxRank = 6;

// A tensor shape of rank 0..kMaxRank.
struct Shape {
  int rank = 0;
  std::array<int32_t, kMaxRank> dims{};

  int32_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t elements() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
    return n;
  }
  bool operator==(const Shape& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (dims[static_cast<size_t>(i)] != o.dims[static_cast<size_t>(i)]) return false;
    return true;
  }
};

// A 4-D activation or filter shape, NHWC (or OHWI / 1HWC for filters).
struct Dims4 {
  int32_t n = 0, h = 0, w = 0, c = 0;
  int64_t elements() const { return int64_t{n} * h * w * c; }
  // Element index of (b, y, x, ch).
  int64_t offset(int32_t b, int32_t y, int32_t x, int32_t ch) const {
    return ((int64_t{b} * h + y) * w + x) * c + ch;
  }
};

// Leading (top/left) and trailing (bottom/right) padding of a 2-D window operator; the reference kernels use only
// the leading values, an im2col implementation may want both.
struct Padding2D {
  int32_t top = 0, left = 0, bottom = 0, right = 0;
};

// CONV_2D, int8 (per-channel weights) or uint8 (per-tensor, asymmetric weights). Groups = input.c / filter.c.
struct Conv2DParams {
  DType dtype = DType::int8;  // of input, filter and output
  Dims4 input_shape, filter_shape, output_shape;
  const void* input = nullptr;
  const void* filter = nullptr;
  const int32_t* bias = nullptr;  // output_shape.c entries, or null
  void* output = nullptr;
  int32_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  Padding2D padding;
  int32_t input_offset = 0, filter_offset = 0, output_offset = 0;
  std::vector<int32_t> output_multiplier, output_shift;  // per output channel
  int32_t act_min = 0, act_max = 0;
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;  // this backend's load-time data (KernelBackend::prepare), or empty
};

// DEPTHWISE_CONV_2D: output channel (ic * depth_multiplier + m) reads input channel ic.
struct DepthwiseConv2DParams {
  DType dtype = DType::int8;
  Dims4 input_shape, filter_shape, output_shape;  // filter_shape.n == 1, filter_shape.c == output_shape.c
  const void* input = nullptr;
  const void* filter = nullptr;
  const int32_t* bias = nullptr;
  void* output = nullptr;
  int32_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int32_t depth_multiplier = 1;
  Padding2D padding;
  int32_t input_offset = 0, filter_offset = 0, output_offset = 0;
  std::vector<int32_t> output_multiplier, output_shift;  // per output channel
  int32_t act_min = 0, act_max = 0;
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;  // this backend's load-time data (KernelBackend::prepare), or empty
};

// FULLY_CONNECTED: output[b][o] = requant(sum_d (w[o][d] + filter_offset) * (in[b][d] + input_offset) + bias[o]).
struct FullyConnectedParams {
  DType dtype = DType::int8;  // of input, weights and output
  int32_t batches = 0, accum_depth = 0, output_depth = 0;
  const void* input = nullptr;    // [batches, accum_depth]
  const void* weights = nullptr;  // [output_depth, accum_depth]
  const int32_t* bias = nullptr;  // output_depth entries, or null
  void* output = nullptr;         // [batches, output_depth]
  int32_t input_offset = 0, filter_offset = 0, output_offset = 0;
  std::vector<int32_t> output_multiplier, output_shift;  // per output channel
  int32_t act_min = 0, act_max = 0;
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;  // this backend's load-time data (KernelBackend::prepare), or empty
};

// AVERAGE_POOL_2D (padding cells are left out of the average, as in TFLite).
struct AveragePool2DParams {
  DType dtype = DType::int8;
  Dims4 input_shape, output_shape;
  const void* input = nullptr;
  void* output = nullptr;
  int32_t filter_h = 1, filter_w = 1, stride_h = 1, stride_w = 1;
  Padding2D padding;
  int32_t act_min = 0, act_max = 0;
  std::span<uint8_t> scratch;
};

// ADD of two quantized tensors with broadcasting. Shapes are extended to kMaxRank with leading 1s; a dimension of
// an input is either equal to the output's or 1.
struct AddParams {
  DType dtype = DType::int8;
  Shape input1_shape, input2_shape, output_shape;  // all of rank kMaxRank
  const void* input1 = nullptr;
  const void* input2 = nullptr;
  void* output = nullptr;
  int32_t input1_offset = 0, input2_offset = 0, output_offset = 0;
  int32_t left_shift = 20;
  int32_t input1_multiplier = 0, input1_shift = 0;
  int32_t input2_multiplier = 0, input2_shift = 0;
  int32_t output_multiplier = 0, output_shift = 0;
  int32_t act_min = 0, act_max = 0;
  std::span<uint8_t> scratch;
};

// SOFTMAX over the last dimension, TFLite's fixed-point reference algorithm (output scale 1/256, zero point =
// lowest value of the type).
struct SoftmaxParams {
  DType dtype = DType::int8;  // input and output
  int32_t outer_size = 0, depth = 0;
  const void* input = nullptr;
  void* output = nullptr;
  int32_t input_multiplier = 0, input_left_shift = 0;
  int32_t diff_min = 0;
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;  // backend-specific data made once at load (KernelBackend::prepare)
};

// RESHAPE (and any other operator that only relabels the shape): a byte copy.
struct CopyParams {
  const void* input = nullptr;
  void* output = nullptr;
  size_t bytes = 0;
  std::span<uint8_t> scratch;
};

// MEAN over a set of axes (int8/uint8 with requantization, or float32).
struct MeanParams {
  DType dtype = DType::int8;
  Shape input_shape;                       // rank >= 1
  std::array<bool, kMaxRank> reduced{};    // per input dimension
  int64_t output_elements = 0;             // product of the kept dimensions
  int64_t reduced_elements = 0;            // product of the reduced dimensions (>= 1)
  const void* input = nullptr;
  void* output = nullptr;                  // kept dimensions in input order (keep_dims only adds 1s)
  int32_t input_zero_point = 0, output_zero_point = 0;
  int32_t multiplier = 0, shift = 0;       // input_scale / output_scale / reduced_elements, quantized
  std::span<uint8_t> scratch;
};

// PAD / PADV2: any element type, padded with one element value.
struct PadParams {
  size_t element_size = 1;
  Shape input_shape, output_shape;  // same rank
  std::array<int32_t, kMaxRank> before{}, after{};
  std::array<uint8_t, 8> pad_value{};  // element_size bytes
  const void* input = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

// TRANSPOSE: output dimension i is input dimension perm[i].
struct TransposeParams {
  size_t element_size = 1;
  Shape input_shape, output_shape;
  std::array<int32_t, kMaxRank> perm{};
  const void* input = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

// QUANTIZE: float32 -> int8/uint8/int16 (affine, round half away from zero), or int8/uint8/int16 -> int8/uint8/
// int16 requantization (multiplier/shift).
struct QuantizeParams {
  DType input_type = DType::float32, output_type = DType::int8;
  int64_t elements = 0;
  const void* input = nullptr;
  void* output = nullptr;
  float output_scale = 1.0f;  // float input
  int32_t input_zero_point = 0, output_zero_point = 0;
  int32_t multiplier = 0, shift = 0;  // integer input
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;  // backend-specific data made once at load (KernelBackend::prepare)
};

// DEQUANTIZE: int8/uint8/int16 -> float32, out = (float)(scale * (q - zero_point)) with scale in double.
struct DequantizeParams {
  DType input_type = DType::int8;
  int64_t elements = 0;
  const void* input = nullptr;
  float* output = nullptr;
  double scale = 1.0;
  int32_t zero_point = 0;
  std::span<uint8_t> scratch;
};

// CONCATENATION along one axis. Quantized inputs whose scale/zero point differ from the output's are rescaled
// (TFLite's reference rescale in float); others are copied.
struct ConcatenationParams {
  DType dtype = DType::int8;
  size_t element_size = 1;
  int64_t outer_size = 0;   // product of the dimensions before the axis
  int64_t inner_size = 0;   // product of the dimensions after the axis
  struct Input {
    const void* data = nullptr;
    int32_t axis_size = 0;
    bool rescale = false;
    float scale = 1.0f;      // input scale (quantized types)
    int32_t zero_point = 0;
  };
  std::vector<Input> inputs;
  void* output = nullptr;
  float output_scale = 1.0f;
  int32_t output_zero_point = 0;
  std::span<uint8_t> scratch;
};

// UNIDIRECTIONAL_SEQUENCE_LSTM, full-integer: int8 activations and weights, int32 gate biases, int16 cell state,
// no peephole / projection / layer norm, tanh cell activation (the TFLite Micro integer LSTM). Gate FCs produce
// Q3.12 int16, gates are Q0.15 after sigmoid / tanh. Gate order: input, forget, cell, output.
struct LstmGateParams {
  const int8_t* input_weights = nullptr;      // [state_dim, input_dim]
  const int8_t* recurrent_weights = nullptr;  // [state_dim, state_dim]
  const int32_t* bias = nullptr;              // [state_dim] (added in the input FC), may be null
  int32_t input_offset = 0, input_filter_offset = 0, input_multiplier = 0, input_shift = 0;
  int32_t recurrent_offset = 0, recurrent_filter_offset = 0, recurrent_multiplier = 0, recurrent_shift = 0;
};
struct LstmMulParams {  // element-wise product of two Q0.15 (or Q0.15 x cell) vectors, requantized
  int32_t multiplier = 0, shift = 0, output_offset = 0, act_min = 0, act_max = 0;
};
struct LstmParams {
  int32_t batches = 0, time_steps = 0, input_dim = 0, state_dim = 0;
  bool time_major = false;
  const int8_t* input = nullptr;  // [batch, time, input] or [time, batch, input]
  int8_t* output = nullptr;       // same layout, state_dim wide
  int8_t* hidden_state = nullptr;   // [batch, state_dim], variable tensor (read and updated)
  int16_t* cell_state = nullptr;    // [batch, state_dim], variable tensor (read and updated)
  std::array<LstmGateParams, 4> gates;  // input, forget, cell, output
  LstmMulParams forget_cell_mul, input_cell_mul, output_hidden_mul;
  int32_t cell_state_scale_power = 0;   // cell scale = 2^power
  bool clip_cell = false;               // clamp the cell state to [-quantized_cell_clip, quantized_cell_clip]
  int16_t quantized_cell_clip = 0;
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;  // backend-specific data made once at load (KernelBackend::prepare)
};

enum class LstmGate { input = 0, forget = 1, cell = 2, output = 3 };

// One operator's parameters. Index order is part of the KernelBackend dispatch (run_kernel).
using OpParams = std::variant<Conv2DParams, DepthwiseConv2DParams, FullyConnectedParams, AveragePool2DParams,
                              AddParams, SoftmaxParams, CopyParams, MeanParams, PadParams, TransposeParams,
                              QuantizeParams, DequantizeParams, ConcatenationParams, LstmParams>;

// The output buffer of an operator (every supported operator has exactly one output).
void* output_of(const OpParams& p);
// The same parameters writing to a different output buffer (verify mode runs the checking backend there).
OpParams with_output(const OpParams& p, void* output);
// Sets the `prepared` span of the structs that have one (no effect on the others).
void set_prepared(OpParams& p, std::span<const uint8_t> prepared);

}  // namespace aisrv::engine::cpu
