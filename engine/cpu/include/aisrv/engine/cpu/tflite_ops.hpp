// aisrv CPU engine — the TensorFlow Lite operators this engine knows, as plain C++: the BuiltinOperator codes, the
// fused-activation and padding enumerations, and one options struct per builtin-options table of the format (plus
// the options of the custom operator TFLite_Detection_PostProcess). Values and field meanings are fixed by the
// format. The model reader decodes a flatbuffer into these structs and the model writer (tests, the demo-model
// maker) encodes them, so an operator's options are declared once.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "aisrv/engine/cpu/kernel_params.hpp"

namespace aisrv::engine::cpu {

// TFLite BuiltinOperator codes of the operators this engine implements (values fixed by the format).
enum class BuiltinOp : int32_t {
  add = 0,
  average_pool_2d = 1,
  concatenation = 2,
  conv_2d = 3,
  depthwise_conv_2d = 4,
  depth_to_space = 5,
  dequantize = 6,
  floor = 8,
  fully_connected = 9,
  l2_normalization = 11,
  l2_pool_2d = 12,
  logistic = 14,
  max_pool_2d = 17,
  mul = 18,
  relu = 19,
  relu_n1_to_1 = 20,
  relu6 = 21,
  reshape = 22,
  resize_bilinear = 23,
  softmax = 25,
  space_to_depth = 26,
  tanh = 28,
  custom = 32,
  pad = 34,
  gather = 36,
  transpose = 39,
  mean = 40,
  sub = 41,
  div = 42,
  squeeze = 43,
  unidirectional_sequence_lstm = 44,
  strided_slice = 45,
  exp = 47,
  split = 49,
  cast = 53,
  prelu = 54,
  maximum = 55,
  arg_max = 56,
  minimum = 57,
  padv2 = 60,
  slice = 65,
  transpose_conv = 67,
  expand_dims = 70,
  sum = 74,
  sqrt = 75,
  rsqrt = 76,
  arg_min = 79,
  reduce_max = 82,
  pack = 83,
  unpack = 88,
  floor_div = 90,
  resize_nearest_neighbor = 97,
  leaky_relu = 98,
  squared_difference = 99,
  split_v = 102,
  gather_nd = 107,
  quantize = 114,
  hard_swish = 117,
};

// The custom operators this engine implements (OperatorCode.custom_code).
inline constexpr const char* kDetectionPostProcessCode = "TFLite_Detection_PostProcess";

// Fused activation functions (values fixed by the format).
enum class Activation : int8_t { none = 0, relu = 1, relu_n1_to_1 = 2, relu6 = 3, tanh = 4, sign_bit = 5 };
enum class PaddingKind : int8_t { same = 0, valid = 1 };

// One struct per options table, fields in the table's order, defaults as the format's (an absent table = the
// defaults).
struct Conv2DOptions {
  PaddingKind padding = PaddingKind::same;
  int32_t stride_w = 0, stride_h = 0;
  Activation activation = Activation::none;
  int32_t dilation_w = 1, dilation_h = 1;
};
struct DepthwiseConv2DOptions {
  PaddingKind padding = PaddingKind::same;
  int32_t stride_w = 0, stride_h = 0, depth_multiplier = 0;
  Activation activation = Activation::none;
  int32_t dilation_w = 1, dilation_h = 1;
};
struct Pool2DOptions {  // AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D
  PaddingKind padding = PaddingKind::same;
  int32_t stride_w = 0, stride_h = 0, filter_w = 0, filter_h = 0;
  Activation activation = Activation::none;
};
struct FullyConnectedOptions {
  Activation activation = Activation::none;
  int8_t weights_format = 0;  // 0 = DEFAULT
  bool keep_num_dims = false;
  bool asymmetric_quantize_inputs = false;
};
struct SoftmaxOptions {
  float beta = 0.0f;
};
struct ConcatenationOptions {
  int32_t axis = 0;
  Activation activation = Activation::none;
};
struct AddOptions {
  Activation activation = Activation::none;
  bool pot_scale_int16 = true;
};
struct SubOptions {
  Activation activation = Activation::none;
  bool pot_scale_int16 = true;
};
struct MulOptions {
  Activation activation = Activation::none;
};
struct DivOptions {
  Activation activation = Activation::none;
};
struct L2NormOptions {
  Activation activation = Activation::none;
};
struct ReshapeOptions {
  std::vector<int32_t> new_shape;
};
struct ReducerOptions {  // MEAN, SUM, REDUCE_MAX
  bool keep_dims = false;
};
struct LstmOptions {
  Activation activation = Activation::none;
  float cell_clip = 0.0f, proj_clip = 0.0f;
  bool time_major = false;
  bool asymmetric_quantize_inputs = false;
};
struct ResizeBilinearOptions {
  bool align_corners = false;
  bool half_pixel_centers = false;
};
struct ResizeNearestNeighborOptions {
  bool align_corners = false;
  bool half_pixel_centers = false;
};
struct StridedSliceOptions {
  int32_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
  bool offset = false;  // the end tensor is an offset from begin
};
struct SplitOptions {
  int32_t num_splits = 0;
};
struct SplitVOptions {
  int32_t num_splits = 0;
};
struct PackOptions {
  int32_t values_count = 0;
  int32_t axis = 0;
};
struct UnpackOptions {
  int32_t num = 0;
  int32_t axis = 0;
};
struct SqueezeOptions {
  std::vector<int32_t> squeeze_dims;
};
struct GatherOptions {
  int32_t axis = 0;
  int32_t batch_dims = 0;
};
struct CastOptions {
  DType in_data_type = DType::unknown, out_data_type = DType::unknown;  // informational; the tensors decide
};
struct ArgMaxOptions {
  DType output_type = DType::int64;
};
struct ArgMinOptions {
  DType output_type = DType::int64;
};
struct SpaceToDepthOptions {
  int32_t block_size = 0;
};
struct DepthToSpaceOptions {
  int32_t block_size = 0;
};
struct TransposeConvOptions {
  PaddingKind padding = PaddingKind::same;
  int32_t stride_w = 0, stride_h = 0;
  Activation activation = Activation::none;
};
struct LeakyReluOptions {
  float alpha = 0.0f;
};

// TFLite_Detection_PostProcess (custom options, a flexbuffer map; defaults as TensorFlow Lite's kernel).
struct DetectionPostProcessOptions {
  int32_t max_detections = 0;
  int32_t max_classes_per_detection = 1;
  int32_t detections_per_class = 100;
  bool use_regular_nms = false;
  float nms_score_threshold = 0.0f;
  float nms_iou_threshold = 0.0f;
  int32_t num_classes = 0;
  float y_scale = 0.0f, x_scale = 0.0f, h_scale = 0.0f, w_scale = 0.0f;
};

// Tables with no fields (their presence is all the format says).
struct PadOptions {};
struct PadV2Options {};
struct TransposeOptions {};
struct QuantizeOptions {};
struct DequantizeOptions {};
struct ExpOptions {};
struct MaximumMinimumOptions {};
struct SliceOptions {};
struct ExpandDimsOptions {};
struct FloorDivOptions {};
struct SquaredDifferenceOptions {};
struct GatherNdOptions {};
struct HardSwishOptions {};

using OpOptions =
    std::variant<std::monostate, Conv2DOptions, DepthwiseConv2DOptions, Pool2DOptions, FullyConnectedOptions,
                 SoftmaxOptions, ConcatenationOptions, AddOptions, SubOptions, MulOptions, DivOptions, L2NormOptions,
                 ReshapeOptions, ReducerOptions, LstmOptions, ResizeBilinearOptions, ResizeNearestNeighborOptions,
                 StridedSliceOptions, SplitOptions, SplitVOptions, PackOptions, UnpackOptions, SqueezeOptions,
                 GatherOptions, CastOptions, ArgMaxOptions, ArgMinOptions, SpaceToDepthOptions, DepthToSpaceOptions,
                 TransposeConvOptions, LeakyReluOptions, DetectionPostProcessOptions, PadOptions, PadV2Options,
                 TransposeOptions, QuantizeOptions, DequantizeOptions, ExpOptions, MaximumMinimumOptions,
                 SliceOptions, ExpandDimsOptions, FloorDivOptions, SquaredDifferenceOptions, GatherNdOptions,
                 HardSwishOptions>;

}  // namespace aisrv::engine::cpu
