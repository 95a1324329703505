// aisrv CPU engine — TFLite model reader (see model_reader.hpp).
#include "model_reader.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include <flatbuffers/flatbuffers.h>
#include <flatbuffers/flexbuffers.h>

#include "aisrv/engine/cpu/tflite_subset_generated.h"
#include "op_names.hpp"

namespace aisrv::engine::cpu {

namespace fb = aisrv::tflite_fb;

namespace {

// The largest buffer the flatbuffers verifier accepts.
constexpr size_t kMaxFlatbufferBytes = (size_t{1} << 31) - 1;

std::string_view tensor_type_name(int8_t t) {
  switch (t) {
    case 0: return "FLOAT32";
    case 1: return "FLOAT16";
    case 2: return "INT32";
    case 3: return "UINT8";
    case 4: return "INT64";
    case 5: return "STRING";
    case 6: return "BOOL";
    case 7: return "INT16";
    case 8: return "COMPLEX64";
    case 9: return "INT8";
    case 10: return "FLOAT64";
    case 11: return "COMPLEX128";
    case 12: return "UINT64";
    case 13: return "RESOURCE";
    case 14: return "VARIANT";
    case 15: return "UINT32";
    case 16: return "UINT16";
    case 17: return "INT4";
    default: return "UNKNOWN";
  }
}

DType to_dtype(int8_t t) {
  switch (t) {
    case 0: return DType::float32;
    case 1: return DType::float16;
    case 2: return DType::int32;
    case 3: return DType::uint8;
    case 4: return DType::int64;
    case 6: return DType::boolean;
    case 7: return DType::int16;
    case 9: return DType::int8;
    case 16: return DType::uint16;
    default: return DType::unknown;
  }
}

Activation to_activation(fb::ActivationFunctionType a) { return static_cast<Activation>(static_cast<int8_t>(a)); }
PaddingKind to_padding(fb::Padding p) { return static_cast<PaddingKind>(static_cast<int8_t>(p)); }

std::string tensor_label(const Graph& g, int32_t t) {
  return fmt::format("tensor {} '{}'", t, g.tensors[static_cast<size_t>(t)].name);
}

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  Result<Graph> read() {
    if (bytes_.size() < 8)
      return make_error(Errc::model_error, "model is {} bytes, too short to be a TFLite flatbuffer", bytes_.size());
    if (!has_tflite_identifier(bytes_)) {
      std::string id;
      for (size_t i = 4; i < 8; ++i) {
        const char c = static_cast<char>(bytes_[i]);
        id += (c >= 32 && c < 127) ? c : '?';
      }
      return make_error(Errc::model_error, "not a TFLite model: file identifier '{}', expected 'TFL3'", id);
    }
    if (bytes_.size() > kMaxFlatbufferBytes)
      return make_error(Errc::model_error, "model is {} bytes; the reader accepts at most {}", bytes_.size(),
                        kMaxFlatbufferBytes);
    flatbuffers::Verifier verifier(bytes_.data(), bytes_.size());
    if (!fb::VerifyModelBuffer(verifier))
      return make_error(Errc::model_error,
                        "the TFLite flatbuffer does not verify ({} bytes): truncated, corrupted or malformed",
                        bytes_.size());
    model_ = fb::GetModel(bytes_.data());
    if (model_->version() != 3)
      return make_error(Errc::model_error, "TFLite schema version {} is not supported (expected 3)",
                        model_->version());
    if (!model_->subgraphs() || model_->subgraphs()->size() == 0)
      return make_error(Errc::model_error, "the model has no subgraph");
    sg_ = model_->subgraphs()->Get(0);
    if (model_->description()) graph_.description = model_->description()->str();

    AISRV_TRY(read_io());
    AISRV_TRY(read_operators());
    AISRV_TRY(read_tensors());
    AISRV_TRY(size_detection_outputs());
    AISRV_TRY(check_execution_order());
    AISRV_TRY(read_metadata());
    return std::move(graph_);
  }

 private:
  size_t tensor_count() const { return sg_->tensors() ? sg_->tensors()->size() : 0; }

  Result<int32_t> tensor_index(int32_t t, bool optional, std::string_view where) {
    if (optional && t == kNoTensor) return t;
    if (t < 0 || static_cast<size_t>(t) >= tensor_count())
      return make_error(Errc::model_error, "{} refers to tensor {}, but subgraph 0 has {} tensors", where, t,
                        tensor_count());
    referenced_[static_cast<size_t>(t)] = true;
    return t;
  }

  Result<void> read_io() {
    referenced_.assign(tensor_count(), false);
    graph_.tensors.resize(tensor_count());
    if (sg_->inputs())
      for (int32_t t : *sg_->inputs()) graph_.inputs.push_back(AISRV_TRY(tensor_index(t, false, "a graph input")));
    if (sg_->outputs())
      for (int32_t t : *sg_->outputs())
        graph_.outputs.push_back(AISRV_TRY(tensor_index(t, false, "a graph output")));
    if (graph_.outputs.empty()) return make_error(Errc::model_error, "subgraph 0 has no outputs");
    return {};
  }

  template <typename Options, typename Fn>
  Result<void> decode_options(size_t index, const fb::Operator* op, fb::BuiltinOptions expected, Fn&& fn,
                              OperatorSpec& spec) {
    const fb::BuiltinOptions type = op->builtin_options_type();
    if (type != fb::BuiltinOptions::NONE && type != expected)
      return make_error(Errc::model_error, "operator {} ({}) carries builtin options of union type {}, expected {}",
                        index, builtin_op_name(spec.code), static_cast<int>(type), static_cast<int>(expected));
    const auto* table = type == expected ? static_cast<const Options*>(op->builtin_options()) : nullptr;
    spec.options = fn(table);
    return {};
  }

  Result<void> read_operators() {
    const auto* codes = model_->operator_codes();
    const size_t code_count = codes ? codes->size() : 0;
    if (!sg_->operators()) return {};
    const auto& ops = *sg_->operators();
    graph_.operators.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      const fb::Operator* op = ops.Get(static_cast<flatbuffers::uoffset_t>(i));
      OperatorSpec spec;
      if (op->opcode_index() >= code_count)
        return make_error(Errc::model_error, "operator {} uses operator code {}, but the model has {} codes", i,
                          op->opcode_index(), code_count);
      const fb::OperatorCode* oc = codes->Get(op->opcode_index());
      spec.code = std::max<int32_t>(oc->deprecated_builtin_code(), oc->builtin_code());
      if (oc->custom_code()) spec.custom_code = oc->custom_code()->str();
      const std::string where = fmt::format("operator {} ({})", i, builtin_op_name(spec.code));
      if (op->inputs())
        for (int32_t t : *op->inputs()) spec.inputs.push_back(AISRV_TRY(tensor_index(t, true, where)));
      if (op->outputs())
        for (int32_t t : *op->outputs()) spec.outputs.push_back(AISRV_TRY(tensor_index(t, false, where)));
      AISRV_TRY(decode_builtin_options(i, op, spec));
      graph_.operators.push_back(std::move(spec));
    }
    return {};
  }

  // Options of a table type that carries fields: `fn` converts the table (null when absent) into our struct.
  template <typename Table, typename Fn>
  Result<void> table(size_t i, const fb::Operator* op, fb::BuiltinOptions expected, OperatorSpec& spec, Fn&& fn) {
    return decode_options<Table>(i, op, expected, std::forward<Fn>(fn), spec);
  }
  // Options of a table without fields: only the union type is checked.
  template <typename Table, typename Options>
  Result<void> empty_table(size_t i, const fb::Operator* op, fb::BuiltinOptions expected, OperatorSpec& spec) {
    return decode_options<Table>(i, op, expected, [](const Table*) { return Options{}; }, spec);
  }

  Result<void> decode_builtin_options(size_t i, const fb::Operator* op, OperatorSpec& spec) {
    using BO = fb::BuiltinOptions;
    switch (static_cast<BuiltinOp>(spec.code)) {
      case BuiltinOp::conv_2d:
        return table<fb::Conv2DOptions>(i, op, BO::Conv2DOptions, spec, [](const fb::Conv2DOptions* o) {
          Conv2DOptions r;
          if (o) {
            r.padding = to_padding(o->padding());
            r.stride_w = o->stride_w();
            r.stride_h = o->stride_h();
            r.dilation_w = o->dilation_w_factor();
            r.dilation_h = o->dilation_h_factor();
            r.activation = to_activation(o->fused_activation_function());
          }
          return r;
        });
      case BuiltinOp::depthwise_conv_2d:
        return table<fb::DepthwiseConv2DOptions>(
            i, op, BO::DepthwiseConv2DOptions, spec, [](const fb::DepthwiseConv2DOptions* o) {
              DepthwiseConv2DOptions r;
              if (o) {
                r.padding = to_padding(o->padding());
                r.stride_w = o->stride_w();
                r.stride_h = o->stride_h();
                r.depth_multiplier = o->depth_multiplier();
                r.dilation_w = o->dilation_w_factor();
                r.dilation_h = o->dilation_h_factor();
                r.activation = to_activation(o->fused_activation_function());
              }
              return r;
            });
      case BuiltinOp::average_pool_2d:
      case BuiltinOp::max_pool_2d:
      case BuiltinOp::l2_pool_2d:
        return table<fb::Pool2DOptions>(i, op, BO::Pool2DOptions, spec, [](const fb::Pool2DOptions* o) {
          Pool2DOptions r;
          if (o) {
            r.padding = to_padding(o->padding());
            r.stride_w = o->stride_w();
            r.stride_h = o->stride_h();
            r.filter_w = o->filter_width();
            r.filter_h = o->filter_height();
            r.activation = to_activation(o->fused_activation_function());
          }
          return r;
        });
      case BuiltinOp::fully_connected:
        return table<fb::FullyConnectedOptions>(
            i, op, BO::FullyConnectedOptions, spec, [](const fb::FullyConnectedOptions* o) {
              FullyConnectedOptions r;
              if (o) {
                r.activation = to_activation(o->fused_activation_function());
                r.weights_format = static_cast<int8_t>(o->weights_format());
                r.keep_num_dims = o->keep_num_dims();
                r.asymmetric_quantize_inputs = o->asymmetric_quantize_inputs();
              }
              return r;
            });
      case BuiltinOp::softmax:
        return table<fb::SoftmaxOptions>(i, op, BO::SoftmaxOptions, spec, [](const fb::SoftmaxOptions* o) {
          SoftmaxOptions r;
          if (o) r.beta = o->beta();
          return r;
        });
      case BuiltinOp::concatenation:
        return table<fb::ConcatenationOptions>(
            i, op, BO::ConcatenationOptions, spec, [](const fb::ConcatenationOptions* o) {
              ConcatenationOptions r;
              if (o) {
                r.axis = o->axis();
                r.activation = to_activation(o->fused_activation_function());
              }
              return r;
            });
      case BuiltinOp::add:
        return table<fb::AddOptions>(i, op, BO::AddOptions, spec, [](const fb::AddOptions* o) {
          AddOptions r;
          if (o) {
            r.activation = to_activation(o->fused_activation_function());
            r.pot_scale_int16 = o->pot_scale_int16();
          }
          return r;
        });
      case BuiltinOp::sub:
        return table<fb::SubOptions>(i, op, BO::SubOptions, spec, [](const fb::SubOptions* o) {
          SubOptions r;
          if (o) {
            r.activation = to_activation(o->fused_activation_function());
            r.pot_scale_int16 = o->pot_scale_int16();
          }
          return r;
        });
      case BuiltinOp::mul:
        return table<fb::MulOptions>(i, op, BO::MulOptions, spec, [](const fb::MulOptions* o) {
          MulOptions r;
          if (o) r.activation = to_activation(o->fused_activation_function());
          return r;
        });
      case BuiltinOp::div:
        return table<fb::DivOptions>(i, op, BO::DivOptions, spec, [](const fb::DivOptions* o) {
          DivOptions r;
          if (o) r.activation = to_activation(o->fused_activation_function());
          return r;
        });
      case BuiltinOp::l2_normalization:
        return table<fb::L2NormOptions>(i, op, BO::L2NormOptions, spec, [](const fb::L2NormOptions* o) {
          L2NormOptions r;
          if (o) r.activation = to_activation(o->fused_activation_function());
          return r;
        });
      case BuiltinOp::mean:
      case BuiltinOp::sum:
      case BuiltinOp::reduce_max:
        return table<fb::ReducerOptions>(i, op, BO::ReducerOptions, spec, [](const fb::ReducerOptions* o) {
          ReducerOptions r;
          if (o) r.keep_dims = o->keep_dims();
          return r;
        });
      case BuiltinOp::unidirectional_sequence_lstm:
        return table<fb::UnidirectionalSequenceLSTMOptions>(
            i, op, BO::UnidirectionalSequenceLSTMOptions, spec, [](const fb::UnidirectionalSequenceLSTMOptions* o) {
              LstmOptions r;
              if (o) {
                r.activation = to_activation(o->fused_activation_function());
                r.cell_clip = o->cell_clip();
                r.proj_clip = o->proj_clip();
                r.time_major = o->time_major();
                r.asymmetric_quantize_inputs = o->asymmetric_quantize_inputs();
              }
              return r;
            });
      case BuiltinOp::reshape:
        return table<fb::ReshapeOptions>(i, op, BO::ReshapeOptions, spec, [](const fb::ReshapeOptions* o) {
          ReshapeOptions r;
          if (o && o->new_shape()) r.new_shape.assign(o->new_shape()->begin(), o->new_shape()->end());
          return r;
        });
      case BuiltinOp::resize_bilinear:
        return table<fb::ResizeBilinearOptions>(
            i, op, BO::ResizeBilinearOptions, spec, [](const fb::ResizeBilinearOptions* o) {
              ResizeBilinearOptions r;
              if (o) {
                r.align_corners = o->align_corners();
                r.half_pixel_centers = o->half_pixel_centers();
              }
              return r;
            });
      case BuiltinOp::resize_nearest_neighbor:
        return table<fb::ResizeNearestNeighborOptions>(
            i, op, BO::ResizeNearestNeighborOptions, spec, [](const fb::ResizeNearestNeighborOptions* o) {
              ResizeNearestNeighborOptions r;
              if (o) {
                r.align_corners = o->align_corners();
                r.half_pixel_centers = o->half_pixel_centers();
              }
              return r;
            });
      case BuiltinOp::strided_slice:
        return table<fb::StridedSliceOptions>(
            i, op, BO::StridedSliceOptions, spec, [](const fb::StridedSliceOptions* o) {
              StridedSliceOptions r;
              if (o) {
                r.begin_mask = o->begin_mask();
                r.end_mask = o->end_mask();
                r.ellipsis_mask = o->ellipsis_mask();
                r.new_axis_mask = o->new_axis_mask();
                r.shrink_axis_mask = o->shrink_axis_mask();
                r.offset = o->offset();
              }
              return r;
            });
      case BuiltinOp::split:
        return table<fb::SplitOptions>(i, op, BO::SplitOptions, spec, [](const fb::SplitOptions* o) {
          SplitOptions r;
          if (o) r.num_splits = o->num_splits();
          return r;
        });
      case BuiltinOp::split_v:
        return table<fb::SplitVOptions>(i, op, BO::SplitVOptions, spec, [](const fb::SplitVOptions* o) {
          SplitVOptions r;
          if (o) r.num_splits = o->num_splits();
          return r;
        });
      case BuiltinOp::pack:
        return table<fb::PackOptions>(i, op, BO::PackOptions, spec, [](const fb::PackOptions* o) {
          PackOptions r;
          if (o) {
            r.values_count = o->values_count();
            r.axis = o->axis();
          }
          return r;
        });
      case BuiltinOp::unpack:
        return table<fb::UnpackOptions>(i, op, BO::UnpackOptions, spec, [](const fb::UnpackOptions* o) {
          UnpackOptions r;
          if (o) {
            r.num = o->num();
            r.axis = o->axis();
          }
          return r;
        });
      case BuiltinOp::squeeze:
        return table<fb::SqueezeOptions>(i, op, BO::SqueezeOptions, spec, [](const fb::SqueezeOptions* o) {
          SqueezeOptions r;
          if (o && o->squeeze_dims()) r.squeeze_dims.assign(o->squeeze_dims()->begin(), o->squeeze_dims()->end());
          return r;
        });
      case BuiltinOp::gather:
        return table<fb::GatherOptions>(i, op, BO::GatherOptions, spec, [](const fb::GatherOptions* o) {
          GatherOptions r;
          if (o) {
            r.axis = o->axis();
            r.batch_dims = o->batch_dims();
          }
          return r;
        });
      case BuiltinOp::cast:
        return table<fb::CastOptions>(i, op, BO::CastOptions, spec, [](const fb::CastOptions* o) {
          CastOptions r;
          if (o) {
            r.in_data_type = to_dtype(static_cast<int8_t>(o->in_data_type()));
            r.out_data_type = to_dtype(static_cast<int8_t>(o->out_data_type()));
          }
          return r;
        });
      case BuiltinOp::arg_max:
        return table<fb::ArgMaxOptions>(i, op, BO::ArgMaxOptions, spec, [](const fb::ArgMaxOptions* o) {
          ArgMaxOptions r;
          if (o) r.output_type = to_dtype(static_cast<int8_t>(o->output_type()));
          return r;
        });
      case BuiltinOp::arg_min:
        return table<fb::ArgMinOptions>(i, op, BO::ArgMinOptions, spec, [](const fb::ArgMinOptions* o) {
          ArgMinOptions r;
          if (o) r.output_type = to_dtype(static_cast<int8_t>(o->output_type()));
          return r;
        });
      case BuiltinOp::space_to_depth:
        return table<fb::SpaceToDepthOptions>(
            i, op, BO::SpaceToDepthOptions, spec, [](const fb::SpaceToDepthOptions* o) {
              SpaceToDepthOptions r;
              if (o) r.block_size = o->block_size();
              return r;
            });
      case BuiltinOp::depth_to_space:
        return table<fb::DepthToSpaceOptions>(
            i, op, BO::DepthToSpaceOptions, spec, [](const fb::DepthToSpaceOptions* o) {
              DepthToSpaceOptions r;
              if (o) r.block_size = o->block_size();
              return r;
            });
      case BuiltinOp::transpose_conv:
        return table<fb::TransposeConvOptions>(
            i, op, BO::TransposeConvOptions, spec, [](const fb::TransposeConvOptions* o) {
              TransposeConvOptions r;
              if (o) {
                r.padding = to_padding(o->padding());
                r.stride_w = o->stride_w();
                r.stride_h = o->stride_h();
                r.activation = to_activation(o->fused_activation_function());
              }
              return r;
            });
      case BuiltinOp::leaky_relu:
        return table<fb::LeakyReluOptions>(i, op, BO::LeakyReluOptions, spec, [](const fb::LeakyReluOptions* o) {
          LeakyReluOptions r;
          if (o) r.alpha = o->alpha();
          return r;
        });
      case BuiltinOp::pad: return empty_table<fb::PadOptions, PadOptions>(i, op, BO::PadOptions, spec);
      case BuiltinOp::padv2: return empty_table<fb::PadV2Options, PadV2Options>(i, op, BO::PadV2Options, spec);
      case BuiltinOp::transpose:
        return empty_table<fb::TransposeOptions, TransposeOptions>(i, op, BO::TransposeOptions, spec);
      case BuiltinOp::quantize:
        return empty_table<fb::QuantizeOptions, QuantizeOptions>(i, op, BO::QuantizeOptions, spec);
      case BuiltinOp::dequantize:
        return empty_table<fb::DequantizeOptions, DequantizeOptions>(i, op, BO::DequantizeOptions, spec);
      case BuiltinOp::exp: return empty_table<fb::ExpOptions, ExpOptions>(i, op, BO::ExpOptions, spec);
      case BuiltinOp::maximum:
      case BuiltinOp::minimum:
        return empty_table<fb::MaximumMinimumOptions, MaximumMinimumOptions>(i, op, BO::MaximumMinimumOptions,
                                                                              spec);
      case BuiltinOp::slice: return empty_table<fb::SliceOptions, SliceOptions>(i, op, BO::SliceOptions, spec);
      case BuiltinOp::expand_dims:
        return empty_table<fb::ExpandDimsOptions, ExpandDimsOptions>(i, op, BO::ExpandDimsOptions, spec);
      case BuiltinOp::floor_div:
        return empty_table<fb::FloorDivOptions, FloorDivOptions>(i, op, BO::FloorDivOptions, spec);
      case BuiltinOp::squared_difference:
        return empty_table<fb::SquaredDifferenceOptions, SquaredDifferenceOptions>(
            i, op, BO::SquaredDifferenceOptions, spec);
      case BuiltinOp::gather_nd:
        return empty_table<fb::GatherNdOptions, GatherNdOptions>(i, op, BO::GatherNdOptions, spec);
      case BuiltinOp::hard_swish:
        return empty_table<fb::HardSwishOptions, HardSwishOptions>(i, op, BO::HardSwishOptions, spec);
      case BuiltinOp::custom:
        return decode_custom_options(i, op, spec);
      default:
        return {};  // no options table (LOGISTIC, TANH, RELU, ...), or an operator this engine does not implement
                    // (refused by name when prepared)
    }
  }

  // The custom options of the custom operators this engine implements (a flexbuffer map, verified before it is
  // read); other custom operators keep no options and are refused by name when prepared.
  Result<void> decode_custom_options(size_t i, const fb::Operator* op, OperatorSpec& spec) {
    if (spec.custom_code != kDetectionPostProcessCode) return {};
    const auto* bytes = op->custom_options();
    if (!bytes || bytes->size() == 0)
      return make_error(Errc::model_error, "operator {} ({}) has no custom options", i, spec.custom_code);
    if (!flexbuffers::VerifyBuffer(bytes->data(), bytes->size()))
      return make_error(Errc::model_error, "operator {} ({}): its custom options are not a valid flexbuffer", i,
                        spec.custom_code);
    const flexbuffers::Reference root = flexbuffers::GetRoot(bytes->data(), bytes->size());
    if (!root.IsMap())
      return make_error(Errc::model_error, "operator {} ({}): its custom options are not a flexbuffer map", i,
                        spec.custom_code);
    const flexbuffers::Map m = root.AsMap();
    DetectionPostProcessOptions r;
    auto int_field = [&](const char* key, int32_t& out) {
      const flexbuffers::Reference v = m[key];
      if (!v.IsNull()) out = static_cast<int32_t>(std::clamp<int64_t>(v.AsInt64(), -(int64_t{1} << 31),
                                                                     (int64_t{1} << 31) - 1));
    };
    auto float_field = [&](const char* key, float& out) {
      const flexbuffers::Reference v = m[key];
      if (!v.IsNull()) out = v.AsFloat();
    };
    int_field("max_detections", r.max_detections);
    int_field("max_classes_per_detection", r.max_classes_per_detection);
    int_field("detections_per_class", r.detections_per_class);
    int_field("num_classes", r.num_classes);
    const flexbuffers::Reference regular = m["use_regular_nms"];
    if (!regular.IsNull()) r.use_regular_nms = regular.AsBool();
    float_field("nms_score_threshold", r.nms_score_threshold);
    float_field("nms_iou_threshold", r.nms_iou_threshold);
    float_field("y_scale", r.y_scale);
    float_field("x_scale", r.x_scale);
    float_field("h_scale", r.h_scale);
    float_field("w_scale", r.w_scale);
    spec.options = r;
    return {};
  }

  // TFLite_Detection_PostProcess outputs are often declared with shape [] (TensorFlow Lite sizes them when it
  // prepares the operator): give them their real shapes [1, N, 4], [1, N], [1, N], [1] with
  // N = max_detections * max_classes_per_detection. Declared shapes that are not [] are left for the operator's
  // preparation to check.
  Result<void> size_detection_outputs() {
    for (size_t i = 0; i < graph_.operators.size(); ++i) {
      const OperatorSpec& op = graph_.operators[i];
      const auto* o = std::get_if<DetectionPostProcessOptions>(&op.options);
      if (!o || op.outputs.size() != 4) continue;
      const int64_t n = int64_t{o->max_detections} * o->max_classes_per_detection;
      if (o->max_detections < 1 || o->max_classes_per_detection < 1 || n > (int64_t{1} << 20))
        return make_error(Errc::model_error,
                          "operator {} ({}): max_detections {} x max_classes_per_detection {} is not a valid "
                          "number of detections (1 to {})",
                          i, op.custom_code, o->max_detections, o->max_classes_per_detection, 1 << 20);
      const std::array<std::vector<int32_t>, 4> shapes{
          std::vector<int32_t>{1, static_cast<int32_t>(n), 4}, std::vector<int32_t>{1, static_cast<int32_t>(n)},
          std::vector<int32_t>{1, static_cast<int32_t>(n)}, std::vector<int32_t>{1}};
      for (size_t k = 0; k < 4; ++k) {
        TensorSpec& t = graph_.tensors[static_cast<size_t>(op.outputs[k])];
        if (t.shape.rank != 0) continue;
        t.shape.rank = static_cast<int>(shapes[k].size());
        for (size_t d = 0; d < shapes[k].size(); ++d) t.shape.dims[d] = shapes[k][d];
        t.bytes = static_cast<size_t>(t.shape.elements()) * protocol::dtype_size(t.type);
      }
    }
    return {};
  }

  Result<void> read_metadata() {
    const auto* entries = model_->metadata();
    if (!entries) return {};
    const auto* buffers = model_->buffers();
    const size_t buffer_count = buffers ? buffers->size() : 0;
    for (const fb::Metadata* e : *entries) {
      MetadataEntry m;
      m.name = e->name() ? e->name()->str() : std::string();
      if (e->buffer() >= buffer_count)
        return make_error(Errc::model_error, "metadata '{}' refers to buffer {}, but the model has {} buffers",
                          m.name, e->buffer(), buffer_count);
      const fb::Buffer* b = buffers->Get(e->buffer());
      if (b->data()) {
        m.bytes = std::span<const uint8_t>(b->data()->data(), b->data()->size());
      } else if (b->offset() > 1) {
        if (b->offset() > bytes_.size() || b->size() > bytes_.size() - b->offset())
          return make_error(Errc::model_error, "metadata '{}': external buffer lies outside the {}-byte model",
                            m.name, bytes_.size());
        m.bytes = bytes_.subspan(b->offset(), b->size());
      }
      graph_.metadata.push_back(std::move(m));
    }
    return {};
  }

  Result<void> read_tensors() {
    const auto* buffers = model_->buffers();
    const size_t buffer_count = buffers ? buffers->size() : 0;
    for (size_t i = 0; i < tensor_count(); ++i) {
      const fb::Tensor* t = sg_->tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
      TensorSpec& spec = graph_.tensors[i];
      spec.name = (t->name() && t->name()->size() > 0) ? t->name()->str() : fmt::format("t{}", i);
      if (!referenced_[i]) continue;  // not used by subgraph 0: nothing to validate
      const std::string label = fmt::format("tensor {} '{}'", i, spec.name);

      const int8_t raw_type = static_cast<int8_t>(t->type());
      spec.type = to_dtype(raw_type);
      if (spec.type == DType::unknown || spec.type == DType::float16 || spec.type == DType::uint16)
        return make_error(Errc::model_error, "{} has element type {}, which the cpu engine does not support",
                          label, tensor_type_name(raw_type));
      if (t->sparsity()) return make_error(Errc::model_error, "{} is sparse, which the cpu engine does not support",
                                           label);
      spec.is_variable = t->is_variable();

      // Shape and byte size, refusing absurd sizes before any multiplication can overflow.
      const auto* shape = t->shape();
      const size_t rank = shape ? shape->size() : 0;
      if (rank > static_cast<size_t>(kMaxRank))
        return make_error(Errc::model_error, "{} has rank {}; the cpu engine supports at most {}", label, rank,
                          kMaxRank);
      spec.shape.rank = static_cast<int>(rank);
      uint64_t bytes = protocol::dtype_size(spec.type);
      for (size_t d = 0; d < rank; ++d) {
        const int32_t dim = shape->Get(static_cast<flatbuffers::uoffset_t>(d));
        if (dim <= 0)
          return make_error(Errc::model_error, "{} has dimension {} of size {} (must be at least 1)", label, d,
                            dim);
        spec.shape.dims[d] = dim;
        bytes *= static_cast<uint64_t>(dim);
        if (bytes > kMaxTensorBytes)
          return make_error(Errc::model_error, "{} has an absurd shape: more than {} bytes", label,
                            kMaxTensorBytes);
      }
      spec.bytes = static_cast<size_t>(bytes);

      // Constant data.
      const uint32_t b = t->buffer();
      if (b >= buffer_count && !(b == 0 && buffer_count == 0))
        return make_error(Errc::model_error, "{} refers to buffer {}, but the model has {} buffers", label, b,
                          buffer_count);
      if (b < buffer_count && !spec.is_variable) AISRV_TRY(read_constant(label, buffers->Get(b), spec));

      AISRV_TRY(read_quantization(label, t->quantization(), spec));
    }
    return {};
  }

  Result<void> read_constant(const std::string& label, const fb::Buffer* buffer, TensorSpec& spec) {
    const auto* data = buffer->data();
    const uint64_t offset = buffer->offset();
    const uint64_t size = buffer->size();
    if (data && data->size() > 0) {
      if (offset > 1)
        return make_error(Errc::model_error, "{}: its buffer has both inline data and an external offset", label);
      if (data->size() != spec.bytes)
        return make_error(Errc::model_error, "{}: buffer holds {} bytes, the shape needs {}", label, data->size(),
                          spec.bytes);
      spec.data = data->data();
    } else if (offset > 1) {
      if (size != spec.bytes)
        return make_error(Errc::model_error, "{}: external buffer holds {} bytes, the shape needs {}", label, size,
                          spec.bytes);
      if (offset > bytes_.size() || size > bytes_.size() - offset)
        return make_error(Errc::model_error,
                          "{}: external buffer [{}, +{}) lies outside the {}-byte model (bad buffer offset)", label,
                          offset, size, bytes_.size());
      spec.data = bytes_.data() + offset;
    }
    return {};
  }

  Result<void> read_quantization(const std::string& label, const fb::QuantizationParameters* q, TensorSpec& spec) {
    if (!q) return {};
    if (q->details_type() != fb::QuantizationDetails::NONE)
      return make_error(Errc::model_error, "{} uses custom quantization, which the cpu engine does not support",
                        label);
    const size_t n = q->scale() ? q->scale()->size() : 0;
    if (n == 0) return {};
    const size_t nz = q->zero_point() ? q->zero_point()->size() : 0;
    if (nz != n)
      return make_error(Errc::model_error, "{} has {} quantization scales but {} zero points", label, n, nz);
    spec.quant.scale.assign(q->scale()->begin(), q->scale()->end());
    spec.quant.zero_point.assign(q->zero_point()->begin(), q->zero_point()->end());
    // The quantized dimension is checked where a per-channel tensor is used as one (conv filters): converters
    // copy the filter's dimension into rank-1 bias records, where it means nothing.
    spec.quant.axis = q->quantized_dimension();
    return {};
  }

  // Operators must come in execution order: every input is a constant, a variable, a graph input or the output
  // of an earlier operator; every output is written exactly once. A graph with a cycle cannot satisfy this.
  Result<void> check_execution_order() {
    const size_t n = graph_.tensors.size();
    std::vector<int32_t> writer(n, -2);  // -2: not available, -1: available from the start, >= 0: operator
    for (size_t t = 0; t < n; ++t)
      if (graph_.tensors[t].is_constant() || graph_.tensors[t].is_variable) writer[t] = -1;
    for (int32_t t : graph_.inputs) {
      if (graph_.tensors[static_cast<size_t>(t)].is_constant())
        return make_error(Errc::model_error, "graph input {} is a constant", tensor_label(graph_, t));
      writer[static_cast<size_t>(t)] = -1;
    }
    for (size_t i = 0; i < graph_.operators.size(); ++i) {
      const OperatorSpec& op = graph_.operators[i];
      for (int32_t t : op.inputs) {
        if (t == kNoTensor) continue;
        if (writer[static_cast<size_t>(t)] == -2)
          return make_error(Errc::model_error,
                            "operator {} ({}) reads {} before any operator produces it (operators out of order, or "
                            "a cycle in the graph)",
                            i, builtin_op_name(op.code), tensor_label(graph_, t));
      }
      for (int32_t t : op.outputs) {
        const int32_t w = writer[static_cast<size_t>(t)];
        if (w == -1)
          return make_error(Errc::model_error, "operator {} ({}) writes {}, which is a constant, a variable or a "
                            "graph input", i, builtin_op_name(op.code), tensor_label(graph_, t));
        if (w >= 0)
          return make_error(Errc::model_error, "operator {} ({}) writes {}, which operator {} already produced", i,
                            builtin_op_name(op.code), tensor_label(graph_, t), w);
        writer[static_cast<size_t>(t)] = static_cast<int32_t>(i);
      }
    }
    for (int32_t t : graph_.outputs)
      if (writer[static_cast<size_t>(t)] == -2)
        return make_error(Errc::model_error, "graph output {} is never produced", tensor_label(graph_, t));
    return {};
  }

  std::span<const uint8_t> bytes_;
  const fb::Model* model_ = nullptr;
  const fb::SubGraph* sg_ = nullptr;
  Graph graph_;
  std::vector<bool> referenced_;
};

}  // namespace

bool has_tflite_identifier(std::span<const uint8_t> model) {
  return model.size() >= 8 && std::memcmp(model.data() + 4, fb::ModelIdentifier(), 4) == 0;
}

Result<Graph> read_tflite_model(std::span<const uint8_t> model) { return Reader(model).read(); }

}  // namespace aisrv::engine::cpu
