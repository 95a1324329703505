// aisrv CPU engine — kernel parameter structs: convolutions and fully connected layers (CONV_2D, DEPTHWISE_CONV_2D,
// FULLY_CONNECTED, TRANSPOSE_CONV).
// Included by kernel_params.hpp (which states the conventions every struct follows); not meant to be included alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace aisrv::engine::cpu {

// CONV_2D, int8 (per-channel weights), uint8 (per-tensor, asymmetric weights), float32, or dynamic-range (float32
// activations, int8 weights). Groups = input.c / filter.c.
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
  // float32 models (dtype float32, filter float32) and dynamic-range ones (TensorFlow Lite's hybrid kernels:
  // dtype float32, filter_type int8, the input quantized per batch at run time).
  DType filter_type = DType::int8;
  const float* float_bias = nullptr;  // output channels entries, or null
  float float_act_min = 0.0f, float_act_max = 0.0f;
  std::vector<float> filter_scales;   // hybrid: per output channel
  bool asymmetric_quantize_inputs = false;  // hybrid
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
  // float32 models (dtype float32, filter float32) and dynamic-range ones (TensorFlow Lite's hybrid kernels:
  // dtype float32, filter_type int8, the input quantized per batch at run time).
  DType filter_type = DType::int8;
  const float* float_bias = nullptr;  // output channels entries, or null
  float float_act_min = 0.0f, float_act_max = 0.0f;
  std::vector<float> filter_scales;   // hybrid: per output channel
  bool asymmetric_quantize_inputs = false;  // hybrid
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
  // float32 models (dtype float32, filter float32) and dynamic-range ones (TensorFlow Lite's hybrid kernels:
  // dtype float32, filter_type int8, the input quantized per batch at run time).
  DType filter_type = DType::int8;
  const float* float_bias = nullptr;  // output channels entries, or null
  float float_act_min = 0.0f, float_act_max = 0.0f;
  std::vector<float> filter_scales;   // hybrid: per output channel
  bool asymmetric_quantize_inputs = false;  // hybrid
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;  // this backend's load-time data (KernelBackend::prepare), or empty
};

// TRANSPOSE_CONV: int8 (per-channel weights) or float32; the output shape comes from the constant output-shape
// input. Fields are filled by ops/transpose_conv.cpp.
struct TransposeConvParams {
  DType dtype = DType::int8;
  Dims4 input_shape, filter_shape, output_shape;  // filter OHWI
  const void* input = nullptr;
  const void* filter = nullptr;
  const int32_t* bias = nullptr;      // quantized: output_shape.c entries, or null
  const float* float_bias = nullptr;  // float32: output_shape.c entries, or null
  void* output = nullptr;
  int32_t stride_h = 1, stride_w = 1;
  Padding2D padding;
  int32_t input_offset = 0, filter_offset = 0, output_offset = 0;
  std::vector<int32_t> output_multiplier, output_shift;  // per output channel
  int32_t act_min = 0, act_max = 0;
  float float_act_min = 0.0f, float_act_max = 0.0f;
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;
};

}  // namespace aisrv::engine::cpu
