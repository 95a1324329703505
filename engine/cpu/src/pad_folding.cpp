// aisrv CPU engine — folding PAD into the convolution after it (see pad_folding.hpp).
#include "pad_folding.hpp"

#include <cstring>

namespace aisrv::engine::cpu {

namespace {

bool is_8bit(DType t) { return t == DType::int8 || t == DType::uint8; }

bool same_quantization(const QuantInfo& a, const QuantInfo& b) {
  return a.present() && a.scale.size() == 1 && a.scale == b.scale && a.zero_point == b.zero_point;
}

// The padding of a rank-4 PAD that pads height and width only (as read from its constant [4, 2] int32 input).
std::optional<Padding2D> spatial_padding(const Graph& g, const OperatorSpec& pad) {
  if (pad.inputs.size() < 2 || pad.inputs[1] == kNoTensor) return std::nullopt;
  const TensorSpec& t = g.tensors[static_cast<size_t>(pad.inputs[1])];
  if (t.type != DType::int32 || !t.is_constant() || t.bytes != 8 * sizeof(int32_t)) return std::nullopt;
  int32_t v[8];
  std::memcpy(v, t.data, sizeof v);
  for (int32_t x : v)
    if (x < 0 || x > 65536) return std::nullopt;
  if (v[0] != 0 || v[1] != 0 || v[6] != 0 || v[7] != 0) return std::nullopt;  // batch and channels unpadded
  return Padding2D{v[2], v[4], v[3], v[5]};
}

// The PADV2 value (or PAD's implied one) equals the zero point of the padded tensor.
bool pads_with_zero_point(const Graph& g, const OperatorSpec& pad, const TensorSpec& out) {
  if (pad.code == static_cast<int32_t>(BuiltinOp::pad)) return pad.inputs.size() == 2;
  if (pad.inputs.size() != 3 || pad.inputs[2] == kNoTensor) return false;
  const TensorSpec& v = g.tensors[static_cast<size_t>(pad.inputs[2])];
  if (v.type != out.type || !v.is_constant() || v.bytes != 1 || !same_quantization(v.quant, out.quant)) return false;
  const int32_t value = v.type == DType::int8 ? int32_t{static_cast<int8_t>(v.data[0])} : int32_t{v.data[0]};
  return value == out.quant.zero_point[0];
}

template <typename Options>
Options* valid_window_options(OperatorSpec& op) {
  auto* o = std::get_if<Options>(&op.options);
  return o && o->padding == PaddingKind::valid && !op.folded_pad ? o : nullptr;
}

}  // namespace

std::vector<PadFold> fold_pads(Graph& g) {
  // Readers of every tensor (an operator reading one twice counts twice), and the graph outputs.
  std::vector<int32_t> readers(g.tensors.size(), 0), reader(g.tensors.size(), -1);
  for (size_t i = 0; i < g.operators.size(); ++i)
    for (int32_t t : g.operators[i].inputs)
      if (t != kNoTensor) {
        ++readers[static_cast<size_t>(t)];
        reader[static_cast<size_t>(t)] = static_cast<int32_t>(i);
      }
  for (int32_t t : g.outputs) readers[static_cast<size_t>(t)] += 2;  // never fold away a graph output

  std::vector<PadFold> folds;
  for (size_t i = 0; i < g.operators.size(); ++i) {
    const OperatorSpec& pad = g.operators[i];
    if (pad.code != static_cast<int32_t>(BuiltinOp::pad) && pad.code != static_cast<int32_t>(BuiltinOp::padv2))
      continue;
    if (pad.inputs.empty() || pad.inputs[0] == kNoTensor || pad.outputs.size() != 1) continue;
    const int32_t x = pad.inputs[0], y = pad.outputs[0];
    const TensorSpec &in = g.tensors[static_cast<size_t>(x)], &out = g.tensors[static_cast<size_t>(y)];
    if (!is_8bit(in.type) || in.type != out.type || in.is_variable || out.is_variable || out.is_constant()) continue;
    if (in.shape.rank != 4 || out.shape.rank != 4 || !same_quantization(in.quant, out.quant)) continue;
    if (!pads_with_zero_point(g, pad, out)) continue;
    const std::optional<Padding2D> padding = spatial_padding(g, pad);
    if (!padding) continue;
    if (int64_t{in.shape[0]} != out.shape[0] || int64_t{in.shape[3]} != out.shape[3] ||
        int64_t{in.shape[1]} + padding->top + padding->bottom != out.shape[1] ||
        int64_t{in.shape[2]} + padding->left + padding->right != out.shape[2])
      continue;
    const auto yi = static_cast<size_t>(y);
    if (readers[yi] != 1 || reader[yi] <= static_cast<int32_t>(i)) continue;
    OperatorSpec& conv = g.operators[static_cast<size_t>(reader[yi])];
    if (conv.inputs.empty() || conv.inputs[0] != y) continue;
    const bool foldable =
        (conv.code == static_cast<int32_t>(BuiltinOp::conv_2d) && valid_window_options<Conv2DOptions>(conv)) ||
        (conv.code == static_cast<int32_t>(BuiltinOp::depthwise_conv_2d) &&
         valid_window_options<DepthwiseConv2DOptions>(conv));
    if (!foldable) continue;
    conv.folded_pad = *padding;
    conv.inputs[0] = x;
    folds.push_back(PadFold{static_cast<int32_t>(i), reader[yi], *padding});
  }
  return folds;
}

}  // namespace aisrv::engine::cpu
