// aisrv CPU engine — the model as the engine sees it after reading: tensors (type, shape, quantization, constant
// data), operators in execution order with their options decoded into plain structs, graph inputs and outputs.
// Produced by the model reader (the only code that touches the flatbuffer), consumed by the operator preparation
// and the memory planner. Every index in here has been range-checked by the reader.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
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
  dequantize = 6,
  fully_connected = 9,
  reshape = 22,
  softmax = 25,
  custom = 32,
  pad = 34,
  transpose = 39,
  mean = 40,
  unidirectional_sequence_lstm = 44,
  padv2 = 60,
  quantize = 114,
};

// Fused activation functions (values fixed by the format).
enum class Activation : int8_t { none = 0, relu = 1, relu_n1_to_1 = 2, relu6 = 3, tanh = 4, sign_bit = 5 };
enum class PaddingKind : int8_t { same = 0, valid = 1 };

struct QuantInfo {
  std::vector<float> scale;         // empty: not quantized
  std::vector<int64_t> zero_point;  // as stored (the reader checks the count)
  int32_t axis = 0;                 // quantized dimension (meaningful when scale.size() > 1)

  bool present() const { return !scale.empty(); }
  bool per_channel() const { return scale.size() > 1; }
};

struct TensorSpec {
  std::string name;
  DType type = DType::unknown;
  Shape shape;
  size_t bytes = 0;                 // elements * element size
  QuantInfo quant;
  const uint8_t* data = nullptr;    // constant data (inside the engine's copy of the model), or null
  bool is_variable = false;

  bool is_constant() const { return data != nullptr; }
};

// Decoded builtin options (absent options table = the format's defaults).
// `folded_pad` is never in a model: fold_pads() sets it when it folds the PAD before a VALID convolution into it
// (the window then runs VALID over the input padded by these amounts, with the input's zero point).
struct Conv2DOptions {
  PaddingKind padding = PaddingKind::same;
  int32_t stride_w = 0, stride_h = 0, dilation_w = 1, dilation_h = 1;
  Activation activation = Activation::none;
  std::optional<Padding2D> folded_pad;
};
struct DepthwiseConv2DOptions {
  PaddingKind padding = PaddingKind::same;
  int32_t stride_w = 0, stride_h = 0, depth_multiplier = 0, dilation_w = 1, dilation_h = 1;
  Activation activation = Activation::none;
  std::optional<Padding2D> folded_pad;
};
struct Pool2DOptions {
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
};
struct ReducerOptions {
  bool keep_dims = false;
};
struct LstmOptions {
  Activation activation = Activation::none;
  float cell_clip = 0.0f, proj_clip = 0.0f;
  bool time_major = false;
  bool asymmetric_quantize_inputs = false;
};
using OpOptions = std::variant<std::monostate, Conv2DOptions, DepthwiseConv2DOptions, Pool2DOptions,
                               FullyConnectedOptions, SoftmaxOptions, ConcatenationOptions, AddOptions,
                               ReducerOptions, LstmOptions>;

inline constexpr int32_t kNoTensor = -1;  // an optional operand that is absent

struct OperatorSpec {
  int32_t code = 0;           // BuiltinOperator value
  std::string custom_code;    // for CUSTOM
  std::vector<int32_t> inputs, outputs;  // tensor indices, kNoTensor for absent optional inputs
  OpOptions options;
};

struct Graph {
  std::string description;
  std::vector<TensorSpec> tensors;
  std::vector<OperatorSpec> operators;
  std::vector<int32_t> inputs, outputs;
};

}  // namespace aisrv::engine::cpu
