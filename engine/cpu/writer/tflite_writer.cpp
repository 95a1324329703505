// aisrv — TFLite flatbuffer writer (see tflite_writer.hpp).
#include "tflite_writer.hpp"

#include <cstring>

#include <flatbuffers/flatbuffers.h>
#include <flatbuffers/flexbuffers.h>

#include "aisrv/engine/cpu/tflite_subset_generated.h"

namespace aisrv::tflite_writer {

namespace fb = aisrv::tflite_fb;
namespace cpu = aisrv::engine::cpu;

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

// The builtin-options table of `options` and its union type (NONE for none, and for options that are not a table:
// the detection post-process's, written as custom options).
std::pair<fb::BuiltinOptions, flatbuffers::Offset<void>> builtin_options(flatbuffers::FlatBufferBuilder& b,
                                                                          const Options& options);

// The flexbuffer map TensorFlow Lite's TFLite_Detection_PostProcess reads its options from.
std::vector<uint8_t> detection_custom_options(const cpu::DetectionPostProcessOptions& o) {
  flexbuffers::Builder f;
  f.Map([&] {
    f.Int("max_detections", o.max_detections);
    f.Int("max_classes_per_detection", o.max_classes_per_detection);
    f.Int("detections_per_class", o.detections_per_class);
    f.Bool("use_regular_nms", o.use_regular_nms);
    f.Float("nms_score_threshold", o.nms_score_threshold);
    f.Float("nms_iou_threshold", o.nms_iou_threshold);
    f.Int("num_classes", o.num_classes);
    f.Float("y_scale", o.y_scale);
    f.Float("x_scale", o.x_scale);
    f.Float("h_scale", o.h_scale);
    f.Float("w_scale", o.w_scale);
  });
  f.Finish();
  return f.GetBuffer();
}

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
                                   std::move(options), {}});
}

void ModelBuilder::add_custom_operator(std::string custom_code, std::vector<int32_t> inputs,
                                       std::vector<int32_t> outputs, Options options,
                                       std::vector<uint8_t> raw_custom_options) {
  std::vector<uint8_t> custom = std::move(raw_custom_options);
  if (const auto* d = std::get_if<cpu::DetectionPostProcessOptions>(&options); d && custom.empty()) {
    custom = detection_custom_options(*d);
    options = std::monostate{};
  }
  operators_.push_back(OperatorDef{opcode_index(Op::custom, custom_code), std::move(inputs), std::move(outputs),
                                   std::move(options), std::move(custom)});
}

void ModelBuilder::add_metadata(std::string name, std::vector<uint8_t> bytes) {
  metadata_.emplace_back(std::move(name), add_buffer(std::move(bytes)));
}

void ModelBuilder::add_operator_raw(uint32_t opcode_index, std::vector<int32_t> inputs,
                                    std::vector<int32_t> outputs) {
  operators_.push_back(OperatorDef{opcode_index, std::move(inputs), std::move(outputs), {}, {}});
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
    const auto [type, options] = builtin_options(b, o.options);
    const auto custom = o.custom_options.empty() ? 0 : b.CreateVector(o.custom_options).o;
    ops.push_back(fb::CreateOperator(b, o.opcode_index, b.CreateVector(o.inputs), b.CreateVector(o.outputs), type,
                                     options, flatbuffers::Offset<flatbuffers::Vector<uint8_t>>(custom)));
  }

  std::vector<flatbuffers::Offset<fb::Metadata>> metadata;
  for (const auto& [name, buffer] : metadata_) metadata.push_back(fb::CreateMetadata(b, b.CreateString(name), buffer));

  const auto subgraph = fb::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(inputs_),
                                           b.CreateVector(outputs_), b.CreateVector(ops), b.CreateString("main"));
  const auto model = fb::CreateModel(b, 3, b.CreateVector(codes), b.CreateVector(&subgraph, 1),
                                     b.CreateString(description), b.CreateVector(buffers),
                                     metadata.empty() ? 0 : b.CreateVector(metadata));
  fb::FinishModelBuffer(b, model);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

namespace {

std::pair<fb::BuiltinOptions, flatbuffers::Offset<void>> builtin_options(flatbuffers::FlatBufferBuilder& b,
                                                                          const Options& options) {
  using BO = fb::BuiltinOptions;
  auto tflite_type = [](DType t) { return tensor_type(t); };
  return std::visit(
      Overloaded{
          [&](const std::monostate&) { return std::pair{BO::NONE, flatbuffers::Offset<void>()}; },
          [&](const cpu::DetectionPostProcessOptions&) { return std::pair{BO::NONE, flatbuffers::Offset<void>()}; },
          [&](const cpu::Conv2DOptions& c) {
            return std::pair{BO::Conv2DOptions, fb::CreateConv2DOptions(b, pad(c.padding), c.stride_w, c.stride_h,
                                                                        act(c.activation), c.dilation_w, c.dilation_h)
                                                    .Union()};
          },
          [&](const cpu::DepthwiseConv2DOptions& c) {
            return std::pair{BO::DepthwiseConv2DOptions,
                             fb::CreateDepthwiseConv2DOptions(b, pad(c.padding), c.stride_w, c.stride_h,
                                                              c.depth_multiplier, act(c.activation), c.dilation_w,
                                                              c.dilation_h)
                                 .Union()};
          },
          [&](const cpu::Pool2DOptions& c) {
            return std::pair{BO::Pool2DOptions, fb::CreatePool2DOptions(b, pad(c.padding), c.stride_w, c.stride_h,
                                                                        c.filter_w, c.filter_h, act(c.activation))
                                                    .Union()};
          },
          [&](const cpu::FullyConnectedOptions& c) {
            return std::pair{BO::FullyConnectedOptions,
                             fb::CreateFullyConnectedOptions(
                                 b, act(c.activation), static_cast<fb::FullyConnectedOptionsWeightsFormat>(c.weights_format),
                                 c.keep_num_dims, c.asymmetric_quantize_inputs)
                                 .Union()};
          },
          [&](const cpu::SoftmaxOptions& c) {
            return std::pair{BO::SoftmaxOptions, fb::CreateSoftmaxOptions(b, c.beta).Union()};
          },
          [&](const cpu::ConcatenationOptions& c) {
            return std::pair{BO::ConcatenationOptions,
                             fb::CreateConcatenationOptions(b, c.axis, act(c.activation)).Union()};
          },
          [&](const cpu::AddOptions& c) {
            return std::pair{BO::AddOptions, fb::CreateAddOptions(b, act(c.activation), c.pot_scale_int16).Union()};
          },
          [&](const cpu::SubOptions& c) {
            return std::pair{BO::SubOptions, fb::CreateSubOptions(b, act(c.activation), c.pot_scale_int16).Union()};
          },
          [&](const cpu::MulOptions& c) {
            return std::pair{BO::MulOptions, fb::CreateMulOptions(b, act(c.activation)).Union()};
          },
          [&](const cpu::DivOptions& c) {
            return std::pair{BO::DivOptions, fb::CreateDivOptions(b, act(c.activation)).Union()};
          },
          [&](const cpu::L2NormOptions& c) {
            return std::pair{BO::L2NormOptions, fb::CreateL2NormOptions(b, act(c.activation)).Union()};
          },
          [&](const cpu::ReshapeOptions& c) {
            return std::pair{BO::ReshapeOptions, fb::CreateReshapeOptions(b, b.CreateVector(c.new_shape)).Union()};
          },
          [&](const cpu::ReducerOptions& c) {
            return std::pair{BO::ReducerOptions, fb::CreateReducerOptions(b, c.keep_dims).Union()};
          },
          [&](const cpu::LstmOptions& c) {
            return std::pair{BO::UnidirectionalSequenceLSTMOptions,
                             fb::CreateUnidirectionalSequenceLSTMOptions(b, act(c.activation), c.cell_clip,
                                                                         c.proj_clip, c.time_major,
                                                                         c.asymmetric_quantize_inputs)
                                 .Union()};
          },
          [&](const cpu::ResizeBilinearOptions& c) {
            return std::pair{BO::ResizeBilinearOptions,
                             fb::CreateResizeBilinearOptions(b, c.align_corners, c.half_pixel_centers).Union()};
          },
          [&](const cpu::ResizeNearestNeighborOptions& c) {
            return std::pair{BO::ResizeNearestNeighborOptions,
                             fb::CreateResizeNearestNeighborOptions(b, c.align_corners, c.half_pixel_centers).Union()};
          },
          [&](const cpu::StridedSliceOptions& c) {
            return std::pair{BO::StridedSliceOptions,
                             fb::CreateStridedSliceOptions(b, c.begin_mask, c.end_mask, c.ellipsis_mask,
                                                           c.new_axis_mask, c.shrink_axis_mask, c.offset)
                                 .Union()};
          },
          [&](const cpu::SplitOptions& c) {
            return std::pair{BO::SplitOptions, fb::CreateSplitOptions(b, c.num_splits).Union()};
          },
          [&](const cpu::SplitVOptions& c) {
            return std::pair{BO::SplitVOptions, fb::CreateSplitVOptions(b, c.num_splits).Union()};
          },
          [&](const cpu::PackOptions& c) {
            return std::pair{BO::PackOptions, fb::CreatePackOptions(b, c.values_count, c.axis).Union()};
          },
          [&](const cpu::UnpackOptions& c) {
            return std::pair{BO::UnpackOptions, fb::CreateUnpackOptions(b, c.num, c.axis).Union()};
          },
          [&](const cpu::SqueezeOptions& c) {
            return std::pair{BO::SqueezeOptions, fb::CreateSqueezeOptions(b, b.CreateVector(c.squeeze_dims)).Union()};
          },
          [&](const cpu::GatherOptions& c) {
            return std::pair{BO::GatherOptions, fb::CreateGatherOptions(b, c.axis, c.batch_dims).Union()};
          },
          [&](const cpu::CastOptions& c) {
            return std::pair{BO::CastOptions,
                             fb::CreateCastOptions(b, tflite_type(c.in_data_type), tflite_type(c.out_data_type))
                                 .Union()};
          },
          [&](const cpu::ArgMaxOptions& c) {
            return std::pair{BO::ArgMaxOptions, fb::CreateArgMaxOptions(b, tflite_type(c.output_type)).Union()};
          },
          [&](const cpu::ArgMinOptions& c) {
            return std::pair{BO::ArgMinOptions, fb::CreateArgMinOptions(b, tflite_type(c.output_type)).Union()};
          },
          [&](const cpu::SpaceToDepthOptions& c) {
            return std::pair{BO::SpaceToDepthOptions, fb::CreateSpaceToDepthOptions(b, c.block_size).Union()};
          },
          [&](const cpu::DepthToSpaceOptions& c) {
            return std::pair{BO::DepthToSpaceOptions, fb::CreateDepthToSpaceOptions(b, c.block_size).Union()};
          },
          [&](const cpu::TransposeConvOptions& c) {
            return std::pair{BO::TransposeConvOptions,
                             fb::CreateTransposeConvOptions(b, pad(c.padding), c.stride_w, c.stride_h,
                                                            act(c.activation))
                                 .Union()};
          },
          [&](const cpu::LeakyReluOptions& c) {
            return std::pair{BO::LeakyReluOptions, fb::CreateLeakyReluOptions(b, c.alpha).Union()};
          },
          [&](const cpu::PadOptions&) { return std::pair{BO::PadOptions, fb::CreatePadOptions(b).Union()}; },
          [&](const cpu::PadV2Options&) { return std::pair{BO::PadV2Options, fb::CreatePadV2Options(b).Union()}; },
          [&](const cpu::TransposeOptions&) {
            return std::pair{BO::TransposeOptions, fb::CreateTransposeOptions(b).Union()};
          },
          [&](const cpu::QuantizeOptions&) {
            return std::pair{BO::QuantizeOptions, fb::CreateQuantizeOptions(b).Union()};
          },
          [&](const cpu::DequantizeOptions&) {
            return std::pair{BO::DequantizeOptions, fb::CreateDequantizeOptions(b).Union()};
          },
          [&](const cpu::ExpOptions&) { return std::pair{BO::ExpOptions, fb::CreateExpOptions(b).Union()}; },
          [&](const cpu::MaximumMinimumOptions&) {
            return std::pair{BO::MaximumMinimumOptions, fb::CreateMaximumMinimumOptions(b).Union()};
          },
          [&](const cpu::SliceOptions&) { return std::pair{BO::SliceOptions, fb::CreateSliceOptions(b).Union()}; },
          [&](const cpu::ExpandDimsOptions&) {
            return std::pair{BO::ExpandDimsOptions, fb::CreateExpandDimsOptions(b).Union()};
          },
          [&](const cpu::FloorDivOptions&) {
            return std::pair{BO::FloorDivOptions, fb::CreateFloorDivOptions(b).Union()};
          },
          [&](const cpu::SquaredDifferenceOptions&) {
            return std::pair{BO::SquaredDifferenceOptions, fb::CreateSquaredDifferenceOptions(b).Union()};
          },
          [&](const cpu::GatherNdOptions&) {
            return std::pair{BO::GatherNdOptions, fb::CreateGatherNdOptions(b).Union()};
          },
          [&](const cpu::HardSwishOptions&) {
            return std::pair{BO::HardSwishOptions, fb::CreateHardSwishOptions(b).Union()};
          },
      },
      options);
}

}  // namespace

std::vector<uint8_t> float_bytes(const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace aisrv::tflite_writer
