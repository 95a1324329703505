// aisrv CPU engine — TRANSPOSE_CONV preparation: inputs output_shape (constant int32 [4], equal to the output
// tensor's shape), filter (constant, OHWI), input, optional bias. int8 with per-channel (or per-tensor) symmetric
// weights and int32 bias (TFLite Micro's transpose_conv.cc); uint8 with per-tensor weights and TFLite's legacy
// multiplier (TFLite's reference kernel: TFLite Micro has none); float32 with a float32 bias. Padding as TFLite:
// the window arithmetic of the forward convolution whose input is this operator's output (ComputePaddingHeightWidth
// on the output extent, dilation 1).
#include <limits>

#include "conv_common.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

namespace {

constexpr size_t kOutputShapeInput = 0, kFilterInput = 1, kDataInput = 2, kBiasInput = 3;

// Leading padding along one axis, TFLite's ComputePaddingHeightWidth over the output extent: the forward
// convolution's size (SAME: (out + stride - 1) / stride; VALID: (out + stride - filter) / stride, C++ division; a
// negative size makes TFLite keep padding 0), then half the total padding that size needs (a filter wider than the
// output pads even a VALID window).
int32_t leading_padding(PaddingKind padding, int32_t out, int32_t filter, int32_t stride) {
  const int64_t forward_out = padding == PaddingKind::same ? (int64_t{out} + stride - 1) / stride
                                                           : (int64_t{out} + stride - filter) / stride;
  if (forward_out < 0) return 0;
  const int64_t total = (forward_out - 1) * stride + filter - out;
  return total > 0 ? static_cast<int32_t>(total / 2) : 0;
}

// Scatter positions in_index * stride - padding + filter_tap stay within +-2^30, so the kernel's int32 arithmetic
// cannot overflow.
Result<void> check_extent(const PrepareContext& ctx, int32_t in, int32_t stride, int32_t filter, int32_t out,
                          std::string_view axis) {
  constexpr int64_t limit = int64_t{1} << 30;
  if (stride < 1) return ctx.error("{}: stride {} must be at least 1", axis, stride);
  if ((int64_t{in} - 1) * stride >= limit || filter >= limit || out >= limit)
    return ctx.error("{}: input {} with stride {}, filter {} and output {} are too large", axis, in, stride, filter,
                     out);
  return {};
}

Result<void> prepare_quantized(const PrepareContext& ctx, const TransposeConvOptions& opt, const TensorSpec& in,
                               const TensorSpec& filter, const TensorSpec& out, TransposeConvParams& p) {
  const Dims4 &fs = p.filter_shape, &os = p.output_shape;
  const float in_scale = AISRV_TRY(ctx.scale(in, "input"));
  const float out_scale = AISRV_TRY(ctx.scale(out, "output"));
  const int32_t in_zp = AISRV_TRY(ctx.zero_point(in, "input"));
  const int32_t out_zp = AISRV_TRY(ctx.zero_point(out, "output"));
  if (!filter.quant.present()) return ctx.error("filter '{}' is not quantized", filter.name);
  const size_t nscales = filter.quant.scale.size();
  int32_t filter_zp = 0;
  ChannelRequant rq;
  if (in.type == DType::int8) {
    if (nscales != 1 && !(nscales == static_cast<size_t>(os.c) && filter.quant.axis == 0))
      return ctx.error("filter has {} scales along dimension {}; expected 1 or {} along dimension 0", nscales,
                       filter.quant.axis, os.c);
    // TFLM's int8 kernel multiplies the raw weights (no filter offset): only symmetric weights mean what they say.
    for (int64_t zp : filter.quant.zero_point)
      if (zp != 0) return ctx.error("int8 filter zero point {} is not 0 (weights must be symmetric)", zp);
    rq = AISRV_TRY(per_channel_requant(ctx, in_scale, filter.quant.scale, out_scale, os.c));
  } else {
    if (nscales != 1) return ctx.error("uint8 filter has {} scales; only per-tensor is supported", nscales);
    filter_zp = AISRV_TRY(ctx.zero_point(filter, "filter"));
    rq = AISRV_TRY(legacy_requant(ctx, in_scale, filter.quant.scale[0], ctx.optional_input(kBiasInput), out_scale,
                                  os.c));
  }
  AISRV_TRY(set_output_stage(p, std::move(rq), in_zp, filter_zp, out_zp, out_scale, out.type, opt.activation));
  p.bias = AISRV_TRY(bias_data(ctx, kBiasInput, os.c));
  // Each output element sums a subset of its channel's taps (one input position per filter tap at most).
  const int64_t taps = int64_t{fs.h} * fs.w * fs.c;
  return check_accumulator_bound(ctx, filter, p.filter_offset, os.c, taps, taps, 1,
                                 max_abs_offset_value(in.type, p.input_offset), p.bias);
}

}  // namespace

Result<OpParams> prepare_transpose_conv(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(3, 4, 1));
  const auto& opt = std::get<TransposeConvOptions>(ctx.op().options);
  const TensorSpec& shape = *AISRV_TRY(ctx.input(kOutputShapeInput, "output shape"));
  const TensorSpec& filter = *AISRV_TRY(ctx.input(kFilterInput, "filter"));
  const TensorSpec& in = *AISRV_TRY(ctx.input(kDataInput, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, filter, "input and filter"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  AISRV_TRY(ctx.expect_constant(filter, "filter"));

  TransposeConvParams p;
  p.dtype = in.type;
  p.input_shape = AISRV_TRY(ctx.dims4(in, "input"));
  p.filter_shape = AISRV_TRY(ctx.dims4(filter, "filter"));
  p.output_shape = AISRV_TRY(ctx.dims4(out, "output"));
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  const std::vector<int32_t> wanted = AISRV_TRY(ctx.int32_values(shape, "output shape"));
  if (wanted.size() != 4 || shape.shape.rank != 1)
    return ctx.error("output shape '{}' must be a 1-D tensor of 4 values; it has {}", shape.name, wanted.size());
  if (wanted[0] != os.n || wanted[1] != os.h || wanted[2] != os.w || wanted[3] != os.c)
    return ctx.error("output shape [{}, {}, {}, {}] differs from the output tensor's [{}, {}, {}, {}]", wanted[0],
                     wanted[1], wanted[2], wanted[3], os.n, os.h, os.w, os.c);
  if (fs.n < 1 || fs.h < 1 || fs.w < 1 || fs.c < 1)
    return ctx.error("filter {}x{}x{}x{} has an empty dimension", fs.n, fs.h, fs.w, fs.c);
  if (fs.n != os.c) return ctx.error("filter has {} output channels but the output {}", fs.n, os.c);
  if (fs.c != is.c) return ctx.error("filter has {} input channels but the input {}", fs.c, is.c);
  if (is.n != os.n) return ctx.error("batch {} of the output differs from the input's {}", os.n, is.n);
  if (opt.padding != PaddingKind::same && opt.padding != PaddingKind::valid)
    return ctx.error("unknown padding type {}", static_cast<int>(opt.padding));
  AISRV_TRY(check_extent(ctx, is.h, opt.stride_h, fs.h, os.h, "height"));
  AISRV_TRY(check_extent(ctx, is.w, opt.stride_w, fs.w, os.w, "width"));
  p.stride_h = opt.stride_h;
  p.stride_w = opt.stride_w;
  p.padding.top = leading_padding(opt.padding, os.h, fs.h, p.stride_h);
  p.padding.left = leading_padding(opt.padding, os.w, fs.w, p.stride_w);

  if (p.dtype == DType::float32) {
    const FloatActivation act = AISRV_TRY(float_activation_range(ctx, opt.activation));
    p.float_act_min = act.min;
    p.float_act_max = act.max;
    p.float_bias = AISRV_TRY(float_bias_data(ctx, kBiasInput, os.c));
  } else {
    AISRV_TRY(prepare_quantized(ctx, opt, in, filter, out, p));
  }
  p.input = ctx.read_input(kDataInput);
  p.filter = ctx.read_input(kFilterInput);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
