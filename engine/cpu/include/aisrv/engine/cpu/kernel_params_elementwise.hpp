// aisrv CPU engine — kernel parameter structs: element-wise operators (ADD and the other binary operators, the
// unary activations and math functions, CAST, QUANTIZE, DEQUANTIZE).
// Included by kernel_params.hpp (which states the conventions every struct follows); not meant to be included alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace aisrv::engine::cpu {

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

// Unary element-wise operators: LOGISTIC, TANH, HARD_SWISH, RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, FLOOR, SQRT,
// RSQRT, EXP (float32 as the reference computes them; the integer types as TensorFlow Lite (Micro) does). Which of
// the quantization fields an operator uses is stated where ops/unary.cpp fills them; an 8-bit operator whose
// reference is a table lookup (uint8 LOGISTIC / TANH in TensorFlow Lite) carries the table.
enum class UnaryOp : uint8_t {
  logistic, tanh, hard_swish, relu, relu6, relu_n1_to_1, leaky_relu, floor, sqrt, rsqrt, exp
};
struct UnaryParams {
  UnaryOp op = UnaryOp::relu;
  DType dtype = DType::float32;  // of input and output
  int64_t elements = 0;
  const void* input = nullptr;
  void* output = nullptr;
  int32_t input_zero_point = 0, output_zero_point = 0;
  int32_t input_range_radius = 0;            // LOGISTIC / TANH: inputs beyond zero point +- radius saturate
  int32_t input_multiplier = 0, input_shift = 0;
  int32_t output_multiplier = 0, output_shift = 0;      // RELU*, LEAKY_RELU (identity part)
  int32_t output_multiplier_2 = 0, output_shift_2 = 0;  // LEAKY_RELU (alpha part)
  int16_t reluish_multiplier_q15 = 0, output_multiplier_q15 = 0;  // HARD_SWISH (Q0.15 multipliers)
  int32_t reluish_exponent = 0, output_exponent = 0;                // HARD_SWISH
  int32_t act_min = 0, act_max = 0;          // quantized clamp (RELU*)
  float alpha = 0.0f;                        // LEAKY_RELU (float32)
  bool use_table = false;                    // 8-bit: output = table[input byte]
  std::array<uint8_t, 256> table{};
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;
};

// Binary element-wise operators with broadcasting: SUB, MUL, DIV, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, FLOOR_DIV,
// PRELU (input 2 = alpha), and ADD of the types AddParams does not cover. Shapes are extended to kMaxRank with
// leading 1s; a dimension of an input is either the output's or 1. The quantized fields follow TensorFlow Lite's
// parameter names (ArithmeticParams); which of them an operator uses is stated where ops/binary.cpp fills them.
enum class BinaryOp : uint8_t { add, sub, mul, div, squared_difference, maximum, minimum, floor_div, prelu };
struct BinaryParams {
  BinaryOp op = BinaryOp::mul;
  DType dtype = DType::float32;  // of the inputs and the output
  Shape input1_shape, input2_shape, output_shape;  // all of rank kMaxRank
  const void* input1 = nullptr;
  const void* input2 = nullptr;
  void* output = nullptr;
  int32_t input1_offset = 0, input2_offset = 0, output_offset = 0;
  int32_t left_shift = 0;
  int32_t input1_multiplier = 0, input1_shift = 0;
  int32_t input2_multiplier = 0, input2_shift = 0;
  int32_t output_multiplier = 0, output_shift = 0;
  int32_t output_multiplier_2 = 0, output_shift_2 = 0;  // PRELU: the alpha (negative input) part
  int32_t act_min = 0, act_max = 0;
  float float_act_min = 0.0f, float_act_max = 0.0f;
  std::span<uint8_t> scratch;
};

// CAST between element types (as static_cast in TensorFlow Lite; bool is 0/1).
struct CastParams {
  DType input_type = DType::float32, output_type = DType::int32;
  int64_t elements = 0;
  const void* input = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

}  // namespace aisrv::engine::cpu
