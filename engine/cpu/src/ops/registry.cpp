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
    {BuiltinOp::average_pool_2d, prepare_average_pool_2d},
    {BuiltinOp::concatenation, prepare_concatenation},
    {BuiltinOp::conv_2d, prepare_conv_2d},
    {BuiltinOp::depthwise_conv_2d, prepare_depthwise_conv_2d},
    {BuiltinOp::dequantize, prepare_dequantize},
    {BuiltinOp::fully_connected, prepare_fully_connected},
    {BuiltinOp::mean, prepare_mean},
    {BuiltinOp::pad, prepare_pad},
    {BuiltinOp::padv2, prepare_pad},
    {BuiltinOp::quantize, prepare_quantize},
    {BuiltinOp::reshape, prepare_reshape},
    {BuiltinOp::softmax, prepare_softmax},
    {BuiltinOp::transpose, prepare_transpose},
    {BuiltinOp::unidirectional_sequence_lstm, prepare_unidirectional_sequence_lstm},
};

}  // namespace

PrepareFn find_prepare(int32_t code) {
  for (const Entry& e : kOperators)
    if (static_cast<int32_t>(e.code) == code) return e.prepare;
  return nullptr;
}

std::vector<std::string> supported_operator_names() {
  std::vector<std::string> names;
  for (const Entry& e : kOperators) names.push_back(builtin_op_name(static_cast<int32_t>(e.code)));
  return names;
}

}  // namespace aisrv::engine::cpu
