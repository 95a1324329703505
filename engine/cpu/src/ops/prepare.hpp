// aisrv CPU engine — operator preparation: for one operator of the graph, validate its operands against what the
// kernels support (types, ranks, shapes, quantization, options) and compute its kernel parameter struct. One file
// per operator (ops/<name>.cpp) implements a PrepareFn; ops/registry.cpp maps operator codes to them. Preparation
// runs at load only. It is run twice: first without arena pointers (to size scratch memory and plan the arena),
// then with them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "aisrv/engine/cpu/kernel_params.hpp"
#include "aisrv/protocol/result.hpp"
#include "../graph.hpp"
#include "../op_names.hpp"

namespace aisrv::engine::cpu {

// Where each tensor's bytes are: constant data (16-byte aligned copy if the model's was misaligned) or an arena
// slot (null in the sizing pass).
struct TensorMemory {
  std::vector<const uint8_t*> constant;
  std::vector<uint8_t*> arena;

  const void* read(int32_t t) const {
    const auto i = static_cast<size_t>(t);
    return constant[i] ? static_cast<const void*>(constant[i]) : static_cast<const void*>(arena[i]);
  }
  void* write(int32_t t) const { return arena[static_cast<size_t>(t)]; }
};

class PrepareContext {
 public:
  PrepareContext(const Graph& graph, size_t index, const TensorMemory& memory)
      : graph_(graph), op_(graph.operators[index]), index_(index), memory_(memory),
        where_(fmt::format("operator {} ({})", index, builtin_op_name(op_.code))) {}

  const Graph& graph() const { return graph_; }
  const OperatorSpec& op() const { return op_; }
  size_t index() const { return index_; }
  const std::string& where() const { return where_; }

  // Errc::model_error, prefixed with "operator N (NAME): ".
  template <typename... Args>
  Error error(fmt::format_string<Args...> f, Args&&... args) const {
    return Error{Errc::model_error, where_ + ": " + fmt::format(f, std::forward<Args>(args)...)};
  }

  // Operand counts within [min_inputs, max_inputs] and exactly `outputs`.
  Result<void> check_counts(size_t min_inputs, size_t max_inputs, size_t outputs) const;

  size_t input_count() const { return op_.inputs.size(); }
  // Tensor index of input i, kNoTensor when absent (optional and left out, or beyond the list).
  int32_t input_index(size_t i) const { return i < op_.inputs.size() ? op_.inputs[i] : kNoTensor; }
  // A required input.
  Result<const TensorSpec*> input(size_t i, std::string_view what) const;
  // An optional input, null when absent.
  const TensorSpec* optional_input(size_t i) const;
  int32_t output_index(size_t i = 0) const { return op_.outputs[i]; }
  const TensorSpec& output(size_t i = 0) const { return tensor(op_.outputs[i]); }
  const TensorSpec& tensor(int32_t t) const { return graph_.tensors[static_cast<size_t>(t)]; }

  const void* read(int32_t t) const { return memory_.read(t); }
  void* write(int32_t t) const { return memory_.write(t); }
  const void* read_input(size_t i) const { return memory_.read(input_index(i)); }
  void* write_output(size_t i = 0) const { return memory_.write(output_index(i)); }

  // Checks.
  Result<void> expect_type(const TensorSpec& t, std::initializer_list<DType> allowed, std::string_view what) const;
  Result<void> expect_same_type(const TensorSpec& a, const TensorSpec& b, std::string_view what) const;
  Result<void> expect_constant(const TensorSpec& t, std::string_view what) const;
  Result<Dims4> dims4(const TensorSpec& t, std::string_view what) const;
  // Per-tensor quantization (one scale, finite and > 0; zero point within the element type's range).
  Result<float> scale(const TensorSpec& t, std::string_view what) const;
  Result<int32_t> zero_point(const TensorSpec& t, std::string_view what) const;
  // Elements of a constant int32 tensor (aligned copy).
  Result<std::vector<int32_t>> int32_values(const TensorSpec& t, std::string_view what) const;

 private:
  const Graph& graph_;
  const OperatorSpec& op_;
  size_t index_;
  const TensorMemory& memory_;
  std::string where_;
};

using PrepareFn = Result<OpParams> (*)(const PrepareContext&);

// The preparation of an operator (by builtin code, or by custom code for CUSTOM), or null when the engine does not
// implement that operator.
PrepareFn find_prepare(const OperatorSpec& op);
// Names of the implemented operators (for messages and docs).
std::vector<std::string> supported_operator_names();

// One PrepareFn per operator (ops/<name>.cpp).
Result<OpParams> prepare_conv_2d(const PrepareContext& ctx);
Result<OpParams> prepare_depthwise_conv_2d(const PrepareContext& ctx);
Result<OpParams> prepare_fully_connected(const PrepareContext& ctx);
Result<OpParams> prepare_average_pool_2d(const PrepareContext& ctx);
Result<OpParams> prepare_add(const PrepareContext& ctx);
Result<OpParams> prepare_softmax(const PrepareContext& ctx);
Result<OpParams> prepare_reshape(const PrepareContext& ctx);
Result<OpParams> prepare_mean(const PrepareContext& ctx);
Result<OpParams> prepare_pad(const PrepareContext& ctx);
Result<OpParams> prepare_transpose(const PrepareContext& ctx);
Result<OpParams> prepare_quantize(const PrepareContext& ctx);
Result<OpParams> prepare_dequantize(const PrepareContext& ctx);
Result<OpParams> prepare_concatenation(const PrepareContext& ctx);
Result<OpParams> prepare_unidirectional_sequence_lstm(const PrepareContext& ctx);
Result<OpParams> prepare_unary(const PrepareContext& ctx);    // LOGISTIC, TANH, HARD_SWISH, RELU*, LEAKY_RELU, FLOOR,
                                                              // SQRT, RSQRT, EXP
Result<OpParams> prepare_binary(const PrepareContext& ctx);   // SUB, MUL, DIV, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM,
                                                              // FLOOR_DIV, PRELU
Result<OpParams> prepare_cast(const PrepareContext& ctx);
Result<OpParams> prepare_strided_slice(const PrepareContext& ctx);
Result<OpParams> prepare_slice(const PrepareContext& ctx);
Result<OpParams> prepare_split(const PrepareContext& ctx);    // SPLIT, SPLIT_V
Result<OpParams> prepare_unpack(const PrepareContext& ctx);
Result<OpParams> prepare_pack(const PrepareContext& ctx);
Result<OpParams> prepare_squeeze(const PrepareContext& ctx);
Result<OpParams> prepare_expand_dims(const PrepareContext& ctx);
Result<OpParams> prepare_gather(const PrepareContext& ctx);
Result<OpParams> prepare_gather_nd(const PrepareContext& ctx);
Result<OpParams> prepare_space_depth(const PrepareContext& ctx);  // DEPTH_TO_SPACE, SPACE_TO_DEPTH
Result<OpParams> prepare_pool_2d(const PrepareContext& ctx);      // MAX_POOL_2D, L2_POOL_2D
Result<OpParams> prepare_resize(const PrepareContext& ctx);       // RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR
Result<OpParams> prepare_reduce(const PrepareContext& ctx);       // SUM, REDUCE_MAX
Result<OpParams> prepare_arg_min_max(const PrepareContext& ctx);  // ARG_MAX, ARG_MIN
Result<OpParams> prepare_l2_normalization(const PrepareContext& ctx);
Result<OpParams> prepare_transpose_conv(const PrepareContext& ctx);
Result<OpParams> prepare_detection_postprocess(const PrepareContext& ctx);  // CUSTOM TFLite_Detection_PostProcess

}  // namespace aisrv::engine::cpu
