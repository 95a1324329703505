// aisrv CPU engine — the model as the engine sees it after reading: tensors (type, shape, quantization, constant
// data), operators in execution order with their options decoded into plain structs (tflite_ops.hpp), graph inputs
// and outputs, the model's metadata entries.
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
#include "aisrv/engine/cpu/tflite_ops.hpp"

namespace aisrv::engine::cpu {

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

inline constexpr int32_t kNoTensor = -1;  // an optional operand that is absent

struct OperatorSpec {
  int32_t code = 0;           // BuiltinOperator value
  std::string custom_code;    // for CUSTOM
  std::vector<int32_t> inputs, outputs;  // tensor indices, kNoTensor for absent optional inputs
  OpOptions options;          // builtin options, or the decoded custom options of a custom operator we implement
  // Never in a model: fold_pads() sets it on a VALID CONV_2D / DEPTHWISE_CONV_2D when it folds the PAD before it
  // into it (the window then runs VALID over the input padded by these amounts, with the input's zero point).
  std::optional<Padding2D> folded_pad;
};

// A named metadata entry of the model (Model.metadata: name and the bytes of its buffer).
struct MetadataEntry {
  std::string name;
  std::span<const uint8_t> bytes;
};

struct Graph {
  std::string description;
  std::vector<MetadataEntry> metadata;
  std::vector<TensorSpec> tensors;
  std::vector<OperatorSpec> operators;
  std::vector<int32_t> inputs, outputs;
};

}  // namespace aisrv::engine::cpu
