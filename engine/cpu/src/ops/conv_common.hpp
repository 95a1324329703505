// aisrv CPU engine — preparation pieces shared by CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV (and
// the LSTM's gate FCs, the pools' windows): output size and padding of a windowed operator, requantization
// multipliers from the input / filter / output scales, the accumulator bound that guarantees the kernels' int32 sums
// cannot overflow, and the float32 / dynamic-range (hybrid) pieces: float activation clamps, float biases, and the
// int8 filter scales of TensorFlow Lite's hybrid kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "../quant_math.hpp"
#include "prepare.hpp"

namespace aisrv::engine::cpu {

// Output extent of a window of `filter` taps with `stride` and `dilation` over `in` (TFLite ComputeOutSize);
// refuses strides / dilations below 1, windows larger than a VALID input, and extents (input, dilated window) of
// 2^30 or more, so that every position the kernels compute in int32 (origin + dilated tap) stays in range.
Result<int32_t> window_output_size(const PrepareContext& ctx, PaddingKind padding, int32_t in, int32_t filter,
                                   int32_t stride, int32_t dilation, std::string_view axis);

// Leading/trailing padding along one axis (TFLite ComputePaddingWithOffset: total / 2 before, the rest after).
struct AxisPadding {
  int32_t before = 0, after = 0;
};
AxisPadding window_padding(int32_t in, int32_t filter, int32_t out, int32_t stride, int32_t dilation);

// The window of AVERAGE_POOL_2D / MAX_POOL_2D / L2_POOL_2D: input and output shapes (4-D, batch and channels equal),
// filter, strides, TFLite's output size and padding for them, and the int32 bound of out_index * stride. `P` is
// AveragePool2DParams or Pool2DParams.
template <typename P>
Result<void> prepare_pool_window(const PrepareContext& ctx, const Pool2DOptions& options, const TensorSpec& in,
                                 const TensorSpec& out, P& p);

// Per-output-channel requantization of a conv-like operator.
struct ChannelRequant {
  std::vector<int32_t> multiplier, shift;
};
// int8 (and int16) path: one multiplier per channel from double(input_scale) * double(filter_scale[c]) /
// double(output_scale), a per-tensor filter scale broadcast (TFLite PopulateConvolutionQuantizationParams).
Result<ChannelRequant> per_channel_requant(const PrepareContext& ctx, float input_scale,
                                           const std::vector<float>& filter_scales, float output_scale,
                                           int32_t channels);
// Legacy per-tensor path (uint8 models, per-tensor int8 FULLY_CONNECTED): the product input_scale * filter_scale
// taken in float, then divided in double (TFLite GetQuantizedConvolutionMultipler), with TFLite's check that the
// bias scale matches the product when a bias is present.
Result<ChannelRequant> legacy_requant(const PrepareContext& ctx, float input_scale, float filter_scale,
                                      const TensorSpec* bias, float output_scale, int32_t channels);

// The output stage CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED share: the requantization multipliers and shifts,
// the offsets (input and filter zero points negated, the output's as is) and the activation clamp in the output's
// quantized range.
template <typename Params>
Result<void> set_output_stage(Params& p, ChannelRequant rq, int32_t input_zp, int32_t filter_zp, int32_t output_zp,
                              float output_scale, DType output_type, Activation activation) {
  p.output_multiplier = std::move(rq.multiplier);
  p.output_shift = std::move(rq.shift);
  p.input_offset = -input_zp;
  p.filter_offset = -filter_zp;
  p.output_offset = output_zp;
  const ActivationRange act = AISRV_TRY(activation_range(activation, output_type, output_scale, output_zp));
  p.act_min = act.min;
  p.act_max = act.max;
  return {};
}

// Largest |q + offset| over the values q of an 8-bit type.
int64_t max_abs_offset_value(DType type, int32_t offset);

// Worst-case |accumulator| over the output channels of a constant 8-bit filter: for channel c the taps are
// filter[c * channel_stride + k * tap_stride], k < taps. Refuses the operator when the bound exceeds int32.
Result<void> check_accumulator_bound(const PrepareContext& ctx, const TensorSpec& filter, int32_t filter_offset,
                                     int64_t channels, int64_t taps, int64_t channel_stride, int64_t tap_stride,
                                     int64_t max_input, const int32_t* bias);

// The operand checks CONV_2D and DEPTHWISE_CONV_2D share: 2 or 3 inputs and one output; an 8-bit input, filter and
// output of one type, or a float32 input and output with a float32 filter (float model) or a constant int8 one
// (dynamic range); 8-bit filters constant. Fills p.dtype, p.filter_type and the three 4-D shapes (every filter
// dimension and the input depth at least 1); returns the filter. Instantiated for Conv2DParams and
// DepthwiseConv2DParams.
template <typename Params>
Result<const TensorSpec*> prepare_conv_operands(const PrepareContext& ctx, Params& p);

// Strides, dilations, the output size checked against the window arithmetic and the padding of CONV_2D /
// DEPTHWISE_CONV_2D (a folded PAD included). Instantiated like the function below.
template <typename Params, typename Options>
Result<void> prepare_conv_window(const PrepareContext& ctx, const Options& opt, Params& p);

// What CONV_2D and DEPTHWISE_CONV_2D share once their shapes are checked (input 0, filter 1, bias 2, output 0):
// strides and dilations, the output size checked against the window arithmetic, the padding, and the quantization —
// int8: symmetric weights with one scale or one per output channel along dimension `scale_axis`; uint8: per-tensor
// weights with their zero point — as multipliers, shifts, offsets and the activation clamp. Instantiated for
// (Conv2DParams, Conv2DOptions) and (DepthwiseConv2DParams, DepthwiseConv2DOptions).
template <typename Params, typename Options>
Result<void> prepare_conv_window_and_quantization(const PrepareContext& ctx, const Options& opt, int32_t scale_axis,
                                                  Params& p);

// The int32 bias of `channels` entries at input position `input` (aligned constant memory); null when absent.
Result<const int32_t*> bias_data(const PrepareContext& ctx, size_t input, int32_t channels);

// ---- float32 and dynamic-range (hybrid) operators ----

// The float clamp of TFLite's CalculateActivationRange<float> (NONE: [lowest, max], so an infinite sum ends at
// +-FLT_MAX as in TFLite; RELU: [0, max]; RELU6; RELU_N1_TO_1). TANH and SIGN_BIT have no clamp form: TFLite's float
// convolutions silently run them as NONE, we refuse them rather than skip an activation the model asks for.
struct FloatActivation {
  float min = 0.0f, max = 0.0f;
};
Result<FloatActivation> float_activation_range(const PrepareContext& ctx, Activation activation);

// The float32 bias of `channels` entries at input position `input`; null when absent.
Result<const float*> float_bias_data(const PrepareContext& ctx, size_t input, int32_t channels);

// The scales of a dynamic-range int8 filter, one per output channel (a single scale broadcast): finite and positive,
// zero points 0 (TFLite's hybrid kernels ignore them; we refuse what they would ignore), per-channel scales `channels`
// of them along dimension `axis`.
Result<std::vector<float>> hybrid_filter_scales(const PrepareContext& ctx, const TensorSpec& filter, int32_t channels,
                                                int32_t axis);

}  // namespace aisrv::engine::cpu
