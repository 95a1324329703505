// aisrv CPU engine — ADD preparation: int8 / uint8 with TFLite's general rescaling (both inputs brought to twice
// the larger input scale with 20 bits of headroom, summed, rescaled to the output) and numpy-style broadcasting.
// float32, int32 and int16 ADD run as a binary element-wise operator (ops/binary.cpp, BinaryParams{op = add}).
#include <algorithm>

#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

namespace {

Shape extend(const Shape& s) {
  Shape r;
  r.rank = kMaxRank;
  r.dims.fill(1);
  for (int i = 0; i < s.rank; ++i) r.dims[static_cast<size_t>(kMaxRank - s.rank + i)] = s[i];
  return r;
}

}  // namespace

Result<OpParams> prepare_add(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(2, 2, 1));
  const auto& opt = std::get<AddOptions>(ctx.op().options);
  const TensorSpec& a = *AISRV_TRY(ctx.input(0, "input 1"));
  const TensorSpec& b = *AISRV_TRY(ctx.input(1, "input 2"));
  const TensorSpec& out = ctx.output();
  if (a.type == DType::float32 || a.type == DType::int32 || a.type == DType::int16) return prepare_binary(ctx);
  AISRV_TRY(ctx.expect_type(a, {DType::int8, DType::uint8, DType::int16, DType::int32, DType::float32}, "input 1"));
  AISRV_TRY(ctx.expect_same_type(a, b, "inputs"));
  AISRV_TRY(ctx.expect_same_type(a, out, "input and output"));

  AddParams p;
  p.dtype = a.type;
  p.input1_shape = extend(a.shape);
  p.input2_shape = extend(b.shape);
  p.output_shape = extend(out.shape);
  const int out_rank = std::max(a.shape.rank, b.shape.rank);
  if (out.shape.rank != out_rank)
    return ctx.error("output rank {} is not the broadcast rank {}", out.shape.rank, out_rank);
  for (size_t d = 0; d < static_cast<size_t>(kMaxRank); ++d) {
    const int32_t x = p.input1_shape.dims[d], y = p.input2_shape.dims[d], o = p.output_shape.dims[d];
    if ((x != y && x != 1 && y != 1) || o != std::max(x, y))
      return ctx.error("shapes do not broadcast: dimension sizes {} and {} into {}", x, y, o);
  }

  const float s1 = AISRV_TRY(ctx.scale(a, "input 1"));
  const float s2 = AISRV_TRY(ctx.scale(b, "input 2"));
  const float so = AISRV_TRY(ctx.scale(out, "output"));
  p.input1_offset = -AISRV_TRY(ctx.zero_point(a, "input 1"));
  p.input2_offset = -AISRV_TRY(ctx.zero_point(b, "input 2"));
  p.output_offset = AISRV_TRY(ctx.zero_point(out, "output"));
  p.left_shift = 20;
  const double twice_max = 2.0 * static_cast<double>(std::max(s1, s2));
  const double real1 = static_cast<double>(s1) / twice_max;
  const double real2 = static_cast<double>(s2) / twice_max;
  const double real_out = twice_max / (static_cast<double>(1 << p.left_shift) * static_cast<double>(so));
  if (!(real_out < 1.0))
    return ctx.error("output scale {:g} is too small for the inputs' scales {:g}, {:g}", so, s1, s2);
  const QuantizedMultiplier q1 = quantize_multiplier(real1);
  const QuantizedMultiplier q2 = quantize_multiplier(real2);
  const QuantizedMultiplier qo = quantize_multiplier(real_out);
  p.input1_multiplier = q1.multiplier;
  p.input1_shift = q1.shift;
  p.input2_multiplier = q2.multiplier;
  p.input2_shift = q2.shift;
  p.output_multiplier = qo.multiplier;
  p.output_shift = qo.shift;
  const ActivationRange act = AISRV_TRY(activation_range(opt.activation, out.type, so, p.output_offset));
  p.act_min = act.min;
  p.act_max = act.max;
  p.input1 = ctx.read_input(0);
  p.input2 = ctx.read_input(1);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
