// aisrv CPU engine — the operators this engine implements: operator code -> preparation function.
#include "prepare.hpp"

namespace aisrv::engine::cpu {

namespace {

struct Entry {
  BuiltinOp code;
  PrepareFn prepare;
};

constexpr Entry kOperators[] = {
    {BuiltinOp::add, prepare_add},
    {BuiltinOp::arg_max, prepare_arg_min_max},
    {BuiltinOp::arg_min, prepare_arg_min_max},
    {BuiltinOp::average_pool_2d, prepare_average_pool_2d},
    {BuiltinOp::cast, prepare_cast},
    {BuiltinOp::concatenation, prepare_concatenation},
    {BuiltinOp::conv_2d, prepare_conv_2d},
    {BuiltinOp::depth_to_space, prepare_space_depth},
    {BuiltinOp::depthwise_conv_2d, prepare_depthwise_conv_2d},
    {BuiltinOp::dequantize, prepare_dequantize},
    {BuiltinOp::div, prepare_binary},
    {BuiltinOp::exp, prepare_unary},
    {BuiltinOp::expand_dims, prepare_expand_dims},
    {BuiltinOp::floor, prepare_unary},
    {BuiltinOp::floor_div, prepare_binary},
    {BuiltinOp::fully_connected, prepare_fully_connected},
    {BuiltinOp::gather, prepare_gather},
    {BuiltinOp::gather_nd, prepare_gather_nd},
    {BuiltinOp::hard_swish, prepare_unary},
    {BuiltinOp::l2_normalization, prepare_l2_normalization},
    {BuiltinOp::l2_pool_2d, prepare_pool_2d},
    {BuiltinOp::leaky_relu, prepare_unary},
    {BuiltinOp::logistic, prepare_unary},
    {BuiltinOp::max_pool_2d, prepare_pool_2d},
    {BuiltinOp::maximum, prepare_binary},
    {BuiltinOp::mean, prepare_mean},
    {BuiltinOp::minimum, prepare_binary},
    {BuiltinOp::mul, prepare_binary},
    {BuiltinOp::pack, prepare_pack},
    {BuiltinOp::pad, prepare_pad},
    {BuiltinOp::padv2, prepare_pad},
    {BuiltinOp::prelu, prepare_binary},
    {BuiltinOp::quantize, prepare_quantize},
    {BuiltinOp::reduce_max, prepare_reduce},
    {BuiltinOp::relu, prepare_unary},
    {BuiltinOp::relu6, prepare_unary},
    {BuiltinOp::relu_n1_to_1, prepare_unary},
    {BuiltinOp::reshape, prepare_reshape},
    {BuiltinOp::resize_bilinear, prepare_resize},
    {BuiltinOp::resize_nearest_neighbor, prepare_resize},
    {BuiltinOp::rsqrt, prepare_unary},
    {BuiltinOp::slice, prepare_slice},
    {BuiltinOp::softmax, prepare_softmax},
    {BuiltinOp::space_to_depth, prepare_space_depth},
    {BuiltinOp::split, prepare_split},
    {BuiltinOp::split_v, prepare_split},
    {BuiltinOp::sqrt, prepare_unary},
    {BuiltinOp::squared_difference, prepare_binary},
    {BuiltinOp::squeeze, prepare_squeeze},
    {BuiltinOp::strided_slice, prepare_strided_slice},
    {BuiltinOp::sub, prepare_binary},
    {BuiltinOp::sum, prepare_reduce},
    {BuiltinOp::tanh, prepare_unary},
    {BuiltinOp::transpose, prepare_transpose},
    {BuiltinOp::transpose_conv, prepare_transpose_conv},
    {BuiltinOp::unidirectional_sequence_lstm, prepare_unidirectional_sequence_lstm},
    {BuiltinOp::unpack, prepare_unpack},
};

struct CustomEntry {
  const char* code;
  PrepareFn prepare;
};

constexpr CustomEntry kCustomOperators[] = {
    {kDetectionPostProcessCode, prepare_detection_postprocess},
};

}  // namespace

PrepareFn find_prepare(const OperatorSpec& op) {
  if (op.code == static_cast<int32_t>(BuiltinOp::custom)) {
    for (const CustomEntry& e : kCustomOperators)
      if (op.custom_code == e.code) return e.prepare;
    return nullptr;
  }
  for (const Entry& e : kOperators)
    if (static_cast<int32_t>(e.code) == op.code) return e.prepare;
  return nullptr;
}

std::vector<std::string> supported_operator_names() {
  std::vector<std::string> names;
  for (const Entry& e : kOperators) names.push_back(builtin_op_name(static_cast<int32_t>(e.code)));
  for (const CustomEntry& e : kCustomOperators) names.push_back(std::string("CUSTOM ") + e.code);
  return names;
}

}  // namespace aisrv::engine::cpu
