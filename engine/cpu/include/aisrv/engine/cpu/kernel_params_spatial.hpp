// aisrv CPU engine — kernel parameter structs: pooling, resizing, normalisation and reductions (AVERAGE_POOL_2D,
// MAX_POOL_2D, L2_POOL_2D, RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR, SOFTMAX, L2_NORMALIZATION, MEAN, SUM,
// REDUCE_MAX, ARG_MAX, ARG_MIN).
// Included by kernel_params.hpp (which states the conventions every struct follows); not meant to be included alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace aisrv::engine::cpu {

// AVERAGE_POOL_2D (padding cells are left out of the average, as in TFLite).
struct AveragePool2DParams {
  DType dtype = DType::int8;
  Dims4 input_shape, output_shape;
  const void* input = nullptr;
  void* output = nullptr;
  int32_t filter_h = 1, filter_w = 1, stride_h = 1, stride_w = 1;
  Padding2D padding;
  int32_t act_min = 0, act_max = 0;
  float float_act_min = 0.0f, float_act_max = 0.0f;  // float32
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
  float beta = 1.0f;  // float32
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;  // backend-specific data made once at load (KernelBackend::prepare)
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

// MAX_POOL_2D (int8, uint8, int16, float32) and L2_POOL_2D (float32). Fields are filled by ops/pool_2d.cpp.
enum class PoolKind : uint8_t { max, l2 };
struct Pool2DParams {
  PoolKind kind = PoolKind::max;
  DType dtype = DType::int8;
  Dims4 input_shape, output_shape;
  const void* input = nullptr;
  void* output = nullptr;
  int32_t filter_h = 1, filter_w = 1, stride_h = 1, stride_w = 1;
  Padding2D padding;
  int32_t act_min = 0, act_max = 0;
  float float_act_min = 0.0f, float_act_max = 0.0f;
  std::span<uint8_t> scratch;
};

// RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (NHWC; align_corners, half_pixel_centers). Fields are filled by
// ops/resize.cpp.
struct ResizeParams {
  bool bilinear = true;
  bool align_corners = false, half_pixel_centers = false;
  DType dtype = DType::int8;
  Dims4 input_shape, output_shape;
  const void* input = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

// SUM and REDUCE_MAX over a set of axes (kept dimensions in input order, as MEAN). Fields are filled by
// ops/reduce.cpp.
enum class ReduceOp : uint8_t { sum, max };
struct ReduceParams {
  ReduceOp op = ReduceOp::sum;
  DType dtype = DType::int8;
  Shape input_shape;
  std::array<bool, kMaxRank> reduced{};
  int64_t output_elements = 0, reduced_elements = 0;
  const void* input = nullptr;
  void* output = nullptr;
  int32_t input_zero_point = 0, output_zero_point = 0;
  float input_scale = 1.0f, output_scale = 1.0f;
  int32_t multiplier = 0, shift = 0;
  std::span<uint8_t> scratch;
};

// ARG_MAX and ARG_MIN along one axis (output int32 or int64; the first of equal values wins, as in TensorFlow
// Lite). Fields are filled by ops/arg_min_max.cpp.
struct ArgMinMaxParams {
  bool is_max = true;
  DType input_type = DType::int8, output_type = DType::int32;
  int64_t outer_size = 0, inner_size = 0;
  int32_t axis_size = 0;
  const void* input = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

// L2_NORMALIZATION over the last dimension (int8, uint8, float32). Fields are filled by ops/l2_normalization.cpp.
struct L2NormParams {
  DType dtype = DType::int8;
  int64_t outer_size = 0;
  int32_t depth = 0;
  const void* input = nullptr;
  void* output = nullptr;
  int32_t input_zero_point = 0, output_zero_point = 0;
  std::span<uint8_t> scratch;
};

}  // namespace aisrv::engine::cpu
