// aisrv — TFLite flatbuffer writer (see tflite_writer.hpp).
#include "tflite_writer.hpp"

#include <cstring>

#include <flatbuffers/flatbuffers.h>

#include "aisrv/engine/cpu/tflite_subset_generated.h"

namespace aisrv::tflite_writer {

namespace fb = aisrv::tflite_fb;

namespace {

fb::TensorType tensor_type(DType t) {
  switch (t) {
    case DType::float32: return fb::TensorType::FLOAT32;
    case DType::float16: return fb::TensorType::FLOAT16;
    case DType::int32: return fb::TensorType::INT32;
    case DType::uint8: return fb::TensorType::UINT8;
    case DType::int64: return fb::TensorType::INT64;
    case DType::boolean: return fb::TensorType::BOOL;
    case DType::int16: return fb::TensorType::INT16;
    case DType::int8: return fb::TensorType::INT8;
    case DType::uint16: return fb::TensorType::UINT16;
    default: return fb::TensorType::STRING;  // no TFLite equivalent: a type readers refuse
  }
}

fb::ActivationFunctionType act(Activation a) { return static_cast<fb::ActivationFunctionType>(static_cast<int8_t>(a)); }
fb::Padding pad(Padding p) { return static_cast<fb::Padding>(static_cast<int8_t>(p)); }

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

ModelBuilder::ModelBuilder() { buffers_.push_back(BufferDef{}); }  // buffer 0: the empty sentinel

uint32_t ModelBuilder::add_buffer(std::vector<uint8_t> data, uint64_t offset, uint64_t size) {
  buffers_.push_back(BufferDef{std::move(data), offset, size});
  return static_cast<uint32_t>(buffers_.size() - 1);
}

int32_t ModelBuilder::add_tensor(TensorDef tensor) {
  if (!tensor.buffer) tensor.buffer = tensor.data.empty() ? 0u : add_buffer(tensor.data);
  tensors_.push_back(std::move(tensor));
  return static_cast<int32_t>(tensors_.size() - 1);
}

uint32_t ModelBuilder::opcode_index(Op op, const std::string& custom) {
  for (size_t i = 0; i < codes_.size(); ++i)
    if (codes_[i].code == static_cast<int32_t>(op) && codes_[i].custom == custom) return static_cast<uint32_t>(i);
  codes_.push_back(CodeDef{static_cast<int32_t>(op), custom});
  return static_cast<uint32_t>(codes_.size() - 1);
}

void ModelBuilder::add_operator(Op op, std::vector<int32_t> inputs, std::vector<int32_t> outputs, Options options,
                                std::string custom_code) {
  operators_.push_back(OperatorDef{opcode_index(op, custom_code), std::move(inputs), std::move(outputs),
                                   std::move(options)});
}

void ModelBuilder::add_operator_raw(uint32_t opcode_index, std::vector<int32_t> inputs,
                                    std::vector<int32_t> outputs) {
  operators_.push_back(OperatorDef{opcode_index, std::move(inputs), std::move(outputs), {}});
}

std::vector<uint8_t> ModelBuilder::finish(const std::string& description) const {
  flatbuffers::FlatBufferBuilder b(1 << 16);

  std::vector<flatbuffers::Offset<fb::OperatorCode>> codes;
  for (const CodeDef& c : codes_) {
    const auto custom = c.custom.empty() ? 0 : b.CreateString(c.custom).o;
    const auto deprecated = static_cast<int8_t>(c.code < 127 ? c.code : 127);
    codes.push_back(fb::CreateOperatorCode(b, deprecated, flatbuffers::Offset<flatbuffers::String>(custom), 1,
                                           c.code));
  }

  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const BufferDef& d : buffers_) {
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> data = 0;
    if (!d.data.empty()) {
      b.ForceVectorAlignment(d.data.size(), sizeof(uint8_t), 16);
      data = b.CreateVector(d.data);
    }
    buffers.push_back(fb::CreateBuffer(b, data, d.offset, d.size));
  }

  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const TensorDef& t : tensors_) {
    flatbuffers::Offset<fb::QuantizationParameters> q = 0;
    if (t.quant) q = fb::CreateQuantizationParameters(b, 0, 0, b.CreateVector(t.quant->scale),
                                                      b.CreateVector(t.quant->zero_point),
                                                      fb::QuantizationDetails::NONE, 0, t.quant->axis);
    tensors.push_back(fb::CreateTensor(b, b.CreateVector(t.shape), tensor_type(t.type), t.buffer.value_or(0),
                                       b.CreateString(t.name), q, t.is_variable));
  }

  std::vector<flatbuffers::Offset<fb::Operator>> ops;
  for (const OperatorDef& o : operators_) {
    fb::BuiltinOptions type = fb::BuiltinOptions::NONE;
    flatbuffers::Offset<void> options = 0;
    std::visit(Overloaded{
                   [&](const std::monostate&) {},
                   [&](const Conv2D& c) {
                     type = fb::BuiltinOptions::Conv2DOptions;
                     options = fb::CreateConv2DOptions(b, pad(c.padding), c.stride_w, c.stride_h, act(c.activation),
                                                       c.dilation_w, c.dilation_h).Union();
                   },
                   [&](const DepthwiseConv2D& c) {
                     type = fb::BuiltinOptions::DepthwiseConv2DOptions;
                     options = fb::CreateDepthwiseConv2DOptions(b, pad(c.padding), c.stride_w, c.stride_h,
                                                                c.depth_multiplier, act(c.activation), c.dilation_w,
                                                                c.dilation_h).Union();
                   },
                   [&](const Pool2D& c) {
                     type = fb::BuiltinOptions::Pool2DOptions;
                     options = fb::CreatePool2DOptions(b, pad(c.padding), c.stride_w, c.stride_h, c.filter_w,
                                                       c.filter_h, act(c.activation)).Union();
                   },
                   [&](const FullyConnected& c) {
                     type = fb::BuiltinOptions::FullyConnectedOptions;
                     options = fb::CreateFullyConnectedOptions(b, act(c.activation),
                                                               fb::FullyConnectedOptionsWeightsFormat::DEFAULT,
                                                               c.keep_num_dims).Union();
                   },
                   [&](const Softmax& c) {
                     type = fb::BuiltinOptions::SoftmaxOptions;
                     options = fb::CreateSoftmaxOptions(b, c.beta).Union();
                   },
                   [&](const Concatenation& c) {
                     type = fb::BuiltinOptions::ConcatenationOptions;
                     options = fb::CreateConcatenationOptions(b, c.axis, act(c.activation)).Union();
                   },
                   [&](const Add& c) {
                     type = fb::BuiltinOptions::AddOptions;
                     options = fb::CreateAddOptions(b, act(c.activation)).Union();
                   },
                   [&](const Reshape& c) {
                     type = fb::BuiltinOptions::ReshapeOptions;
                     options = fb::CreateReshapeOptions(b, b.CreateVector(c.new_shape)).Union();
                   },
                   [&](const Reducer& c) {
                     type = fb::BuiltinOptions::ReducerOptions;
                     options = fb::CreateReducerOptions(b, c.keep_dims).Union();
                   },
                   [&](const Lstm& c) {
                     type = fb::BuiltinOptions::UnidirectionalSequenceLSTMOptions;
                     options = fb::CreateUnidirectionalSequenceLSTMOptions(b, act(c.activation), c.cell_clip, 0.0f,
                                                                           c.time_major).Union();
                   },
               },
               o.options);
    ops.push_back(fb::CreateOperator(b, o.opcode_index, b.CreateVector(o.inputs), b.CreateVector(o.outputs), type,
                                     options));
  }

  const auto subgraph = fb::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(inputs_),
                                           b.CreateVector(outputs_), b.CreateVector(ops), b.CreateString("main"));
  const auto model = fb::CreateModel(b, 3, b.CreateVector(codes), b.CreateVector(&subgraph, 1),
                                     b.CreateString(description), b.CreateVector(buffers));
  fb::FinishModelBuffer(b, model);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

std::vector<uint8_t> float_bytes(const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace aisrv::tflite_writer
