// aisrv — a small writer of TensorFlow Lite flatbuffers ("TFL3"), built on the same reduced schema the CPU engine
// reads (engine/cpu/schema). Used by the demo-model maker (tools/make-demo-model) and by tests that need models
// with exact, known contents — including deliberately malformed ones: the writer checks nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "aisrv/protocol/payloads.hpp"

namespace aisrv::tflite_writer {

using protocol::DType;

// Operator codes (TFLite BuiltinOperator values).
enum class Op : int32_t {
  add = 0,
  average_pool_2d = 1,
  concatenation = 2,
  conv_2d = 3,
  depthwise_conv_2d = 4,
  dequantize = 6,
  fully_connected = 9,
  logistic = 14,
  reshape = 22,
  softmax = 25,
  tanh = 28,
  custom = 32,
  pad = 34,
  transpose = 39,
  mean = 40,
  unidirectional_sequence_lstm = 44,
  padv2 = 60,
  quantize = 114,
};

enum class Padding : int8_t { same = 0, valid = 1 };
enum class Activation : int8_t { none = 0, relu = 1, relu_n1_to_1 = 2, relu6 = 3, tanh = 4 };

struct Conv2D {
  Padding padding = Padding::same;
  int32_t stride_w = 1, stride_h = 1;
  Activation activation = Activation::none;
  int32_t dilation_w = 1, dilation_h = 1;
};
struct DepthwiseConv2D {
  Padding padding = Padding::same;
  int32_t stride_w = 1, stride_h = 1, depth_multiplier = 1;
  Activation activation = Activation::none;
  int32_t dilation_w = 1, dilation_h = 1;
};
struct Pool2D {
  Padding padding = Padding::valid;
  int32_t stride_w = 1, stride_h = 1, filter_w = 1, filter_h = 1;
  Activation activation = Activation::none;
};
struct FullyConnected {
  Activation activation = Activation::none;
  bool keep_num_dims = false;
};
struct Softmax {
  float beta = 1.0f;
};
struct Concatenation {
  int32_t axis = 0;
  Activation activation = Activation::none;
};
struct Add {
  Activation activation = Activation::none;
};
struct Reshape {
  std::vector<int32_t> new_shape;
};
struct Reducer {
  bool keep_dims = false;
};
struct Lstm {
  Activation activation = Activation::tanh;
  float cell_clip = 0.0f;
  bool time_major = false;
};
using Options = std::variant<std::monostate, Conv2D, DepthwiseConv2D, Pool2D, FullyConnected, Softmax,
                             Concatenation, Add, Reshape, Reducer, Lstm>;

struct Quant {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int32_t axis = 0;
};

struct TensorDef {
  std::string name;
  DType type = DType::int8;
  std::vector<int32_t> shape;
  std::optional<Quant> quant;
  std::vector<uint8_t> data;         // constant contents (a new buffer), empty for activations
  std::optional<uint32_t> buffer;    // use this buffer index instead (e.g. one from add_buffer)
  bool is_variable = false;
};

class ModelBuilder {
 public:
  ModelBuilder();

  // A buffer with inline data, or external data at [offset, offset + size) of the file. Returns its index.
  uint32_t add_buffer(std::vector<uint8_t> data, uint64_t offset = 0, uint64_t size = 0);
  int32_t add_tensor(TensorDef tensor);
  // Convenience: a constant tensor from typed values.
  template <typename T>
  int32_t add_constant(std::string name, DType type, std::vector<int32_t> shape, const std::vector<T>& values,
                       std::optional<Quant> quant = std::nullopt) {
    TensorDef t{std::move(name), type, std::move(shape), std::move(quant), {}, std::nullopt, false};
    t.data.resize(values.size() * sizeof(T));
    for (size_t i = 0; i < values.size(); ++i)
      for (size_t b = 0; b < sizeof(T); ++b)
        t.data[i * sizeof(T) + b] = static_cast<uint8_t>(static_cast<uint64_t>(values[i]) >> (8 * b));
    return add_tensor(std::move(t));
  }
  void add_operator(Op op, std::vector<int32_t> inputs, std::vector<int32_t> outputs, Options options = {},
                    std::string custom_code = {});
  // Operator with a raw opcode index (malformed-model tests).
  void add_operator_raw(uint32_t opcode_index, std::vector<int32_t> inputs, std::vector<int32_t> outputs);
  void set_inputs(std::vector<int32_t> inputs) { inputs_ = std::move(inputs); }
  void set_outputs(std::vector<int32_t> outputs) { outputs_ = std::move(outputs); }

  // Serialises the model (schema version 3, file identifier "TFL3").
  std::vector<uint8_t> finish(const std::string& description = "aisrv") const;

 private:
  struct BufferDef {
    std::vector<uint8_t> data;
    uint64_t offset = 0, size = 0;
  };
  struct OperatorDef {
    uint32_t opcode_index = 0;
    std::vector<int32_t> inputs, outputs;
    Options options;
  };
  struct CodeDef {
    int32_t code = 0;
    std::string custom;
  };
  uint32_t opcode_index(Op op, const std::string& custom);

  std::vector<BufferDef> buffers_;
  std::vector<TensorDef> tensors_;
  std::vector<OperatorDef> operators_;
  std::vector<CodeDef> codes_;
  std::vector<int32_t> inputs_, outputs_;
};

// Bytes of a float vector (little-endian), for constant data and float inputs.
std::vector<uint8_t> float_bytes(const std::vector<float>& values);

}  // namespace aisrv::tflite_writer
