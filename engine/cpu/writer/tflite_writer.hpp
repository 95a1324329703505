// aisrv — a small writer of TensorFlow Lite flatbuffers ("TFL3"), built on the same reduced schema the CPU engine
// reads (engine/cpu/schema) and its operator declarations (tflite_ops.hpp). Used by the demo-model maker (tools/make-demo-model) and by tests that need models
// with exact, known contents — including deliberately malformed ones: the writer checks nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "aisrv/engine/cpu/tflite_ops.hpp"
#include "aisrv/protocol/payloads.hpp"

namespace aisrv::tflite_writer {

using protocol::DType;

// Operator codes, enumerations and options are the CPU engine's (tflite_ops.hpp): one declaration for reading and
// writing. Each options struct is written as its own table (its union type follows from the struct), so a test can
// attach a table of the wrong kind to an operator on purpose.
using Op = engine::cpu::BuiltinOp;
using Padding = engine::cpu::PaddingKind;
using Activation = engine::cpu::Activation;
using Options = engine::cpu::OpOptions;
using Conv2D = engine::cpu::Conv2DOptions;
using DepthwiseConv2D = engine::cpu::DepthwiseConv2DOptions;
using Pool2D = engine::cpu::Pool2DOptions;
using FullyConnected = engine::cpu::FullyConnectedOptions;
using Softmax = engine::cpu::SoftmaxOptions;
using Concatenation = engine::cpu::ConcatenationOptions;
using Add = engine::cpu::AddOptions;
using Reshape = engine::cpu::ReshapeOptions;
using Reducer = engine::cpu::ReducerOptions;
using Lstm = engine::cpu::LstmOptions;

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
  // A custom operator; DetectionPostProcessOptions are written as its flexbuffer custom options, other options
  // structs as builtin options (for malformed-model tests), `raw_custom_options` (if not empty) as they are.
  void add_custom_operator(std::string custom_code, std::vector<int32_t> inputs, std::vector<int32_t> outputs,
                           Options options = {}, std::vector<uint8_t> raw_custom_options = {});
  // A metadata entry (Model.metadata) whose bytes get a buffer of their own.
  void add_metadata(std::string name, std::vector<uint8_t> bytes);
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
    std::vector<uint8_t> custom_options;
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
  std::vector<std::pair<std::string, uint32_t>> metadata_;  // name, buffer
};

// Bytes of a float vector (little-endian), for constant data and float inputs.
std::vector<uint8_t> float_bytes(const std::vector<float>& values);

}  // namespace aisrv::tflite_writer
