// aisrv CPU engine — shared preparation of conv-like operators (see conv_common.hpp).
#include "conv_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

namespace {
// Input extents and dilated windows stay below this, so origin (at most the input extent, or minus half a window
// of padding) plus a dilated tap offset fits int32 in the kernels.
constexpr int64_t kMaxWindowExtent = int64_t{1} << 30;
}  // namespace

Result<int32_t> window_output_size(const PrepareContext& ctx, PaddingKind padding, int32_t in, int32_t filter,
                                   int32_t stride, int32_t dilation, std::string_view axis) {
  if (stride < 1 || dilation < 1 || filter < 1)
    return ctx.error("{}: stride {}, dilation {} and filter size {} must all be at least 1", axis, stride, dilation,
                     filter);
  const int64_t effective = (int64_t{filter} - 1) * dilation + 1;
  if (effective >= kMaxWindowExtent || in >= kMaxWindowExtent)
    return ctx.error("{}: a window of {} (dilated) over {} is too large (2^30 or more)", axis, effective, in);
  int64_t out = 0;
  if (padding == PaddingKind::same) out = (int64_t{in} + stride - 1) / stride;
  else if (padding == PaddingKind::valid) out = (int64_t{in} + stride - effective) / stride;
  else return ctx.error("unknown padding type {}", static_cast<int>(padding));
  if (out < 1)
    return ctx.error("{}: a window of {} (dilated) over {} leaves no output with VALID padding", axis, effective, in);
  return static_cast<int32_t>(out);
}

AxisPadding window_padding(int32_t in, int32_t filter, int32_t out, int32_t stride, int32_t dilation) {
  const int64_t effective = (int64_t{filter} - 1) * dilation + 1;
  int64_t total = (int64_t{out} - 1) * stride + effective - in;
  total = std::max<int64_t>(total, 0);
  return AxisPadding{static_cast<int32_t>(total / 2), static_cast<int32_t>(total - total / 2)};
}

Result<ChannelRequant> per_channel_requant(const PrepareContext& ctx, float input_scale,
                                           const std::vector<float>& filter_scales, float output_scale,
                                           int32_t channels) {
  ChannelRequant r;
  r.multiplier.resize(static_cast<size_t>(channels));
  r.shift.resize(static_cast<size_t>(channels));
  for (int32_t c = 0; c < channels; ++c) {
    const float fs = filter_scales.size() > 1 ? filter_scales[static_cast<size_t>(c)] : filter_scales[0];
    if (!std::isfinite(fs) || !(fs > 0.0f)) return ctx.error("filter scale {} of channel {} is not positive", fs, c);
    const double real = static_cast<double>(input_scale) * static_cast<double>(fs) / static_cast<double>(output_scale);
    const QuantizedMultiplier q =
        AISRV_TRY(checked_multiplier(real, fmt::format("{}: channel {}", ctx.where(), c)));
    r.multiplier[static_cast<size_t>(c)] = q.multiplier;
    r.shift[static_cast<size_t>(c)] = q.shift;
  }
  return r;
}

Result<ChannelRequant> legacy_requant(const PrepareContext& ctx, float input_scale, float filter_scale,
                                      const TensorSpec* bias, float output_scale, int32_t channels) {
  if (!std::isfinite(filter_scale) || !(filter_scale > 0.0f))
    return ctx.error("filter scale {} is not positive", filter_scale);
  const double product = static_cast<double>(input_scale * filter_scale);
  if (bias) {
    const double bias_scale = bias->quant.present() ? static_cast<double>(bias->quant.scale[0]) : 0.0;
    const double product_exact = static_cast<double>(input_scale) * static_cast<double>(filter_scale);
    const double diff = std::abs(product_exact - bias_scale) / static_cast<double>(output_scale);
    if (!(diff <= 0.02))
      return ctx.error("bias scale {:g} does not match input scale x filter scale {:g}", bias_scale, product_exact);
  }
  const double real = product / static_cast<double>(output_scale);
  const QuantizedMultiplier q = AISRV_TRY(checked_multiplier(real, ctx.where()));
  ChannelRequant r;
  r.multiplier.assign(static_cast<size_t>(channels), q.multiplier);
  r.shift.assign(static_cast<size_t>(channels), q.shift);
  return r;
}

int64_t max_abs_offset_value(DType type, int32_t offset) {
  const int64_t lo = type_min(type), hi = type_max(type);
  return std::max(std::llabs(lo + offset), std::llabs(hi + offset));
}

Result<void> check_accumulator_bound(const PrepareContext& ctx, const TensorSpec& filter, int32_t filter_offset,
                                     int64_t channels, int64_t taps, int64_t channel_stride, int64_t tap_stride,
                                     int64_t max_input, const int32_t* bias) {
  const bool is_signed = filter.type == DType::int8;
  const uint8_t* w = filter.data;
  const int64_t limit = std::numeric_limits<int32_t>::max();
  for (int64_t c = 0; c < channels; ++c) {
    int64_t weight_sum = 0;  // sum of |w + offset| of this channel
    for (int64_t k = 0; k < taps; ++k) {
      const uint8_t raw = w[c * channel_stride + k * tap_stride];
      const int32_t v = is_signed ? static_cast<int32_t>(static_cast<int8_t>(raw)) : static_cast<int32_t>(raw);
      weight_sum += std::abs(v + filter_offset);
      if (weight_sum > limit) break;  // already hopeless; avoid any chance of overflow below
    }
    const int64_t bound = weight_sum * max_input + (bias ? std::llabs(bias[c]) : 0);
    if (weight_sum > limit || bound > limit)
      return ctx.error("output channel {}: worst-case accumulator exceeds 32 bits ({} taps of weight magnitude "
                       "sum {} times inputs up to {})",
                       c, taps, weight_sum, max_input);
  }
  return {};
}

Result<const int32_t*> bias_data(const PrepareContext& ctx, size_t input, int32_t channels) {
  const TensorSpec* bias = ctx.optional_input(input);
  if (!bias) return static_cast<const int32_t*>(nullptr);
  AISRV_TRY(ctx.expect_type(*bias, {DType::int32}, "bias"));
  AISRV_TRY(ctx.expect_constant(*bias, "bias"));
  if (bias->shape.elements() != channels)
    return ctx.error("bias '{}' has {} elements for {} output channels", bias->name, bias->shape.elements(),
                     channels);
  return static_cast<const int32_t*>(ctx.read_input(input));
}

template <typename Params>
Result<const TensorSpec*> prepare_conv_operands(const PrepareContext& ctx, Params& p) {
  AISRV_TRY(ctx.check_counts(2, 3, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& filter = *AISRV_TRY(ctx.input(1, "filter"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::float32}, "input"));
  if (in.type == DType::float32) {
    // A float model (float32 filter, which may be computed) or a dynamic-range one (constant int8 filter).
    AISRV_TRY(ctx.expect_type(filter, {DType::float32, DType::int8}, "filter of a float32 input"));
    AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
    if (filter.type == DType::int8) AISRV_TRY(ctx.expect_constant(filter, "filter"));
  } else {
    AISRV_TRY(ctx.expect_same_type(in, filter, "input and filter"));
    AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
    AISRV_TRY(ctx.expect_constant(filter, "filter"));
  }
  p.dtype = in.type;
  p.filter_type = filter.type;
  p.input_shape = AISRV_TRY(ctx.dims4(in, "input"));
  p.filter_shape = AISRV_TRY(ctx.dims4(filter, "filter"));
  p.output_shape = AISRV_TRY(ctx.dims4(out, "output"));
  if (p.output_shape.n != p.input_shape.n)
    return ctx.error("batch {} of the output differs from the input's {}", p.output_shape.n, p.input_shape.n);
  const Dims4& fs = p.filter_shape;
  if (fs.n < 1 || fs.h < 1 || fs.w < 1 || fs.c < 1 || p.input_shape.c < 1)
    return ctx.error("filter {}x{}x{}x{} and input depth {} must all be at least 1", fs.n, fs.h, fs.w, fs.c,
                     p.input_shape.c);
  return &filter;
}

template Result<const TensorSpec*> prepare_conv_operands(const PrepareContext&, Conv2DParams&);
template Result<const TensorSpec*> prepare_conv_operands(const PrepareContext&, DepthwiseConv2DParams&);

template <typename Params, typename Options>
Result<void> prepare_conv_window(const PrepareContext& ctx, const Options& opt, Params& p) {
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;

  p.stride_h = opt.stride_h;
  p.stride_w = opt.stride_w;
  p.dilation_h = opt.dilation_h;
  p.dilation_w = opt.dilation_w;
  if (ctx.op().folded_pad) {  // VALID over the input padded by a folded PAD (pad_folding.hpp)
    const Padding2D& f = *ctx.op().folded_pad;
    const int64_t padded_h = int64_t{is.h} + f.top + f.bottom, padded_w = int64_t{is.w} + f.left + f.right;
    if (padded_h > std::numeric_limits<int32_t>::max() || padded_w > std::numeric_limits<int32_t>::max())
      return ctx.error("input padded to {}x{} is too large", padded_h, padded_w);
    const int32_t oh = AISRV_TRY(window_output_size(ctx, PaddingKind::valid, static_cast<int32_t>(padded_h), fs.h,
                                                    p.stride_h, p.dilation_h, "height"));
    const int32_t ow = AISRV_TRY(window_output_size(ctx, PaddingKind::valid, static_cast<int32_t>(padded_w), fs.w,
                                                    p.stride_w, p.dilation_w, "width"));
    if (oh != os.h || ow != os.w)
      return ctx.error("output is {}x{} but the window arithmetic gives {}x{}", os.h, os.w, oh, ow);
    p.padding = f;
  } else {
    const int32_t oh =
        AISRV_TRY(window_output_size(ctx, opt.padding, is.h, fs.h, p.stride_h, p.dilation_h, "height"));
    const int32_t ow = AISRV_TRY(window_output_size(ctx, opt.padding, is.w, fs.w, p.stride_w, p.dilation_w, "width"));
    if (oh != os.h || ow != os.w)
      return ctx.error("output is {}x{} but the window arithmetic gives {}x{}", os.h, os.w, oh, ow);
    const AxisPadding ph = window_padding(is.h, fs.h, oh, p.stride_h, p.dilation_h);
    const AxisPadding pw = window_padding(is.w, fs.w, ow, p.stride_w, p.dilation_w);
    p.padding = Padding2D{ph.before, pw.before, ph.after, pw.after};
  }
  return {};
}

template Result<void> prepare_conv_window(const PrepareContext&, const Conv2DOptions&, Conv2DParams&);
template Result<void> prepare_conv_window(const PrepareContext&, const DepthwiseConv2DOptions&,
                                          DepthwiseConv2DParams&);

template <typename Params, typename Options>
Result<void> prepare_conv_window_and_quantization(const PrepareContext& ctx, const Options& opt, int32_t scale_axis,
                                                  Params& p) {
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& filter = *AISRV_TRY(ctx.input(1, "filter"));
  const TensorSpec& out = ctx.output();
  const Dims4& os = p.output_shape;
  AISRV_TRY(prepare_conv_window(ctx, opt, p));

  const float in_scale = AISRV_TRY(ctx.scale(in, "input"));
  const float out_scale = AISRV_TRY(ctx.scale(out, "output"));
  const int32_t in_zp = AISRV_TRY(ctx.zero_point(in, "input"));
  const int32_t out_zp = AISRV_TRY(ctx.zero_point(out, "output"));
  if (!filter.quant.present()) return ctx.error("filter '{}' is not quantized", filter.name);
  const size_t nscales = filter.quant.scale.size();
  int32_t filter_zp = 0;
  ChannelRequant rq;
  if (in.type == DType::int8) {
    if (nscales != 1 && !(nscales == static_cast<size_t>(os.c) && filter.quant.axis == scale_axis))
      return ctx.error("filter has {} scales along dimension {}; expected 1 or {} along dimension {}", nscales,
                       filter.quant.axis, os.c, scale_axis);
    for (int64_t zp : filter.quant.zero_point)
      if (zp != 0) return ctx.error("int8 filter zero point {} is not 0 (weights must be symmetric)", zp);
    rq = AISRV_TRY(per_channel_requant(ctx, in_scale, filter.quant.scale, out_scale, os.c));
  } else {
    if (nscales != 1) return ctx.error("uint8 filter has {} scales; only per-tensor is supported", nscales);
    filter_zp = AISRV_TRY(ctx.zero_point(filter, "filter"));
    rq = AISRV_TRY(legacy_requant(ctx, in_scale, filter.quant.scale[0], ctx.optional_input(2), out_scale, os.c));
  }
  return set_output_stage(p, std::move(rq), in_zp, filter_zp, out_zp, out_scale, out.type, opt.activation);
}

template Result<void> prepare_conv_window_and_quantization(const PrepareContext&, const Conv2DOptions&, int32_t,
                                                           Conv2DParams&);
template Result<void> prepare_conv_window_and_quantization(const PrepareContext&, const DepthwiseConv2DOptions&,
                                                           int32_t, DepthwiseConv2DParams&);

template <typename P>
Result<void> prepare_pool_window(const PrepareContext& ctx, const Pool2DOptions& options, const TensorSpec& in,
                                 const TensorSpec& out, P& p) {
  p.input_shape = AISRV_TRY(ctx.dims4(in, "input"));
  p.output_shape = AISRV_TRY(ctx.dims4(out, "output"));
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  if (os.n != is.n || os.c != is.c)
    return ctx.error("output {}x..x{} does not match input batch {} / channels {}", os.n, os.c, is.n, is.c);
  p.filter_h = options.filter_h;
  p.filter_w = options.filter_w;
  p.stride_h = options.stride_h;
  p.stride_w = options.stride_w;
  const int32_t oh = AISRV_TRY(window_output_size(ctx, options.padding, is.h, p.filter_h, p.stride_h, 1, "height"));
  const int32_t ow = AISRV_TRY(window_output_size(ctx, options.padding, is.w, p.filter_w, p.stride_w, 1, "width"));
  if (oh != os.h || ow != os.w)
    return ctx.error("output is {}x{} but the window arithmetic gives {}x{}", os.h, os.w, oh, ow);
  const AxisPadding ph = window_padding(is.h, p.filter_h, oh, p.stride_h, 1);
  const AxisPadding pw = window_padding(is.w, p.filter_w, ow, p.stride_w, 1);
  p.padding = Padding2D{ph.before, pw.before, ph.after, pw.after};
  // The kernels form out_index * stride - padding in int32 (below the input extent for TFLite's window arithmetic).
  if (int64_t{os.h - 1} * p.stride_h > std::numeric_limits<int32_t>::max() ||
      int64_t{os.w - 1} * p.stride_w > std::numeric_limits<int32_t>::max())
    return ctx.error("strides {}x{} are too large", p.stride_h, p.stride_w);
  return {};
}

template Result<void> prepare_pool_window(const PrepareContext&, const Pool2DOptions&, const TensorSpec&,
                                          const TensorSpec&, AveragePool2DParams&);
template Result<void> prepare_pool_window(const PrepareContext&, const Pool2DOptions&, const TensorSpec&,
                                          const TensorSpec&, Pool2DParams&);

Result<FloatActivation> float_activation_range(const PrepareContext& ctx, Activation activation) {
  constexpr float lowest = std::numeric_limits<float>::lowest(), highest = std::numeric_limits<float>::max();
  switch (activation) {
    case Activation::none: return FloatActivation{lowest, highest};
    case Activation::relu: return FloatActivation{0.0f, highest};
    case Activation::relu6: return FloatActivation{0.0f, 6.0f};
    case Activation::relu_n1_to_1: return FloatActivation{-1.0f, 1.0f};
    default:
      return ctx.error("fused activation {} is not supported on float32 outputs (only NONE, RELU, RELU6, "
                       "RELU_N1_TO_1)",
                       static_cast<int>(activation));
  }
}

Result<const float*> float_bias_data(const PrepareContext& ctx, size_t input, int32_t channels) {
  const TensorSpec* bias = ctx.optional_input(input);
  if (!bias) return static_cast<const float*>(nullptr);
  AISRV_TRY(ctx.expect_type(*bias, {DType::float32}, "bias"));
  if (bias->shape.elements() != channels)
    return ctx.error("bias '{}' has {} elements for {} output channels", bias->name, bias->shape.elements(),
                     channels);
  return static_cast<const float*>(ctx.read_input(input));
}

Result<std::vector<float>> hybrid_filter_scales(const PrepareContext& ctx, const TensorSpec& filter, int32_t channels,
                                                int32_t axis) {
  if (!filter.quant.present())
    return ctx.error("int8 filter '{}' of a float32 operator has no quantization scale", filter.name);
  const std::vector<float>& scales = filter.quant.scale;
  if (scales.size() != 1 && !(scales.size() == static_cast<size_t>(channels) && filter.quant.axis == axis))
    return ctx.error("filter '{}' has {} scales along dimension {}; expected 1 or {} along dimension {}", filter.name,
                     scales.size(), filter.quant.axis, channels, axis);
  for (int64_t zp : filter.quant.zero_point)
    if (zp != 0) return ctx.error("int8 filter zero point {} is not 0 (weights must be symmetric)", zp);
  for (float s : scales)
    if (!std::isfinite(s) || !(s > 0.0f))
      return ctx.error("filter '{}' has scale {}, not a positive number", filter.name, s);
  std::vector<float> r(static_cast<size_t>(channels), scales[0]);
  if (scales.size() > 1) r = scales;
  return r;
}

}  // namespace aisrv::engine::cpu
