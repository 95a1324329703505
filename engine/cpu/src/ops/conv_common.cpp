// aisrv CPU engine — shared preparation of conv-like operators (see conv_common.hpp).
#include "conv_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<int32_t> window_output_size(const PrepareContext& ctx, PaddingKind padding, int32_t in, int32_t filter,
                                   int32_t stride, int32_t dilation, std::string_view axis) {
  if (stride < 1 || dilation < 1 || filter < 1)
    return ctx.error("{}: stride {}, dilation {} and filter size {} must all be at least 1", axis, stride, dilation,
                     filter);
  const int64_t effective = (int64_t{filter} - 1) * dilation + 1;
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

}  // namespace aisrv::engine::cpu
