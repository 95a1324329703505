// aisrv CPU engine — CONV_2D preparation: int8 activations with per-channel (or per-tensor) symmetric int8 weights,
// or uint8 activations with per-tensor asymmetric uint8 weights (legacy quantized models); int32 bias; grouped
// convolution when the filter has fewer input channels than the input.
#include "conv_common.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_conv_2d(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(2, 3, 1));
  const auto& opt = std::get<Conv2DOptions>(ctx.op().options);
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& filter = *AISRV_TRY(ctx.input(1, "filter"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, filter, "input and filter"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  AISRV_TRY(ctx.expect_constant(filter, "filter"));

  Conv2DParams p;
  p.dtype = in.type;
  p.input_shape = AISRV_TRY(ctx.dims4(in, "input"));
  p.filter_shape = AISRV_TRY(ctx.dims4(filter, "filter"));
  p.output_shape = AISRV_TRY(ctx.dims4(out, "output"));
  const Dims4 &is = p.input_shape, &fs = p.filter_shape, &os = p.output_shape;
  if (os.n != is.n) return ctx.error("batch {} of the output differs from the input's {}", os.n, is.n);
  if (is.c % fs.c != 0)
    return ctx.error("input has {} channels, not a multiple of the filter's {}", is.c, fs.c);
  const int32_t groups = is.c / fs.c;
  if (os.c != fs.n) return ctx.error("output has {} channels but the filter {}", os.c, fs.n);
  if (os.c % groups != 0) return ctx.error("{} output channels do not split into {} groups", os.c, groups);

  p.stride_h = opt.stride_h;
  p.stride_w = opt.stride_w;
  p.dilation_h = opt.dilation_h;
  p.dilation_w = opt.dilation_w;
  const int32_t oh = AISRV_TRY(window_output_size(ctx, opt.padding, is.h, fs.h, p.stride_h, p.dilation_h, "height"));
  const int32_t ow = AISRV_TRY(window_output_size(ctx, opt.padding, is.w, fs.w, p.stride_w, p.dilation_w, "width"));
  if (oh != os.h || ow != os.w)
    return ctx.error("output is {}x{} but the window arithmetic gives {}x{}", os.h, os.w, oh, ow);
  const AxisPadding ph = window_padding(is.h, fs.h, oh, p.stride_h, p.dilation_h);
  const AxisPadding pw = window_padding(is.w, fs.w, ow, p.stride_w, p.dilation_w);
  p.padding = Padding2D{ph.before, pw.before, ph.after, pw.after};

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
    for (int64_t zp : filter.quant.zero_point)
      if (zp != 0) return ctx.error("int8 filter zero point {} is not 0 (weights must be symmetric)", zp);
    rq = AISRV_TRY(per_channel_requant(ctx, in_scale, filter.quant.scale, out_scale, os.c));
  } else {
    if (nscales != 1) return ctx.error("uint8 filter has {} scales; only per-tensor is supported", nscales);
    filter_zp = AISRV_TRY(ctx.zero_point(filter, "filter"));
    rq = AISRV_TRY(legacy_requant(ctx, in_scale, filter.quant.scale[0], ctx.optional_input(2), out_scale, os.c));
  }
  p.output_multiplier = std::move(rq.multiplier);
  p.output_shift = std::move(rq.shift);
  p.input_offset = -in_zp;
  p.filter_offset = -filter_zp;
  p.output_offset = out_zp;
  const ActivationRange act = AISRV_TRY(activation_range(opt.activation, out.type, out_scale, out_zp));
  p.act_min = act.min;
  p.act_max = act.max;

  p.bias = AISRV_TRY(bias_data(ctx, 2, os.c));
  const int64_t taps = int64_t{fs.h} * fs.w * fs.c;
  AISRV_TRY(check_accumulator_bound(ctx, filter, p.filter_offset, os.c, taps, taps, 1,
                                    max_abs_offset_value(in.type, p.input_offset), p.bias));
  p.input = ctx.read_input(0);
  p.filter = ctx.read_input(1);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
