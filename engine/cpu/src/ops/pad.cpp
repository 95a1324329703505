// aisrv CPU engine — PAD / PADV2 preparation: constant int32 paddings [rank, 2]; PAD fills with the output's zero
// point (quantized) or zero, PADV2 with its constant scalar third input (same quantization as the output).
#include <cstring>

#include "prepare.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_pad(const PrepareContext& ctx) {
  const bool v2 = ctx.op().code == static_cast<int32_t>(BuiltinOp::padv2);
  AISRV_TRY(ctx.check_counts(2, 3, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& pads_t = *AISRV_TRY(ctx.input(1, "paddings"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::int16, DType::int32, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  const std::vector<int32_t> pads = AISRV_TRY(ctx.int32_values(pads_t, "paddings"));
  if (pads.size() != static_cast<size_t>(2 * in.shape.rank) || out.shape.rank != in.shape.rank)
    return ctx.error("paddings hold {} values for rank {} (output rank {})", pads.size(), in.shape.rank,
                     out.shape.rank);

  PadParams p;
  p.element_size = protocol::dtype_size(in.type);
  p.input_shape = in.shape;
  p.output_shape = out.shape;
  for (int d = 0; d < in.shape.rank; ++d) {
    const int32_t before = pads[static_cast<size_t>(2 * d)], after = pads[static_cast<size_t>(2 * d + 1)];
    if (before < 0 || after < 0) return ctx.error("dimension {} has negative padding ({}, {})", d, before, after);
    if (int64_t{in.shape[d]} + before + after != out.shape[d])
      return ctx.error("dimension {}: {} + {} + {} does not give the output's {}", d, in.shape[d], before, after,
                       out.shape[d]);
    p.before[static_cast<size_t>(d)] = before;
    p.after[static_cast<size_t>(d)] = after;
  }

  const TensorSpec* value = ctx.optional_input(2);
  if (value && !v2) return ctx.error("PAD takes no constant-value input (that is PADV2)");
  if (value) {
    AISRV_TRY(ctx.expect_same_type(in, *value, "input and pad value"));
    AISRV_TRY(ctx.expect_constant(*value, "pad value"));
    if (value->shape.elements() != 1)
      return ctx.error("pad value has {} elements, expected 1", value->shape.elements());
    if (in.type == DType::int8 || in.type == DType::uint8) {
      const float vs = AISRV_TRY(ctx.scale(*value, "pad value"));
      const int32_t vz = AISRV_TRY(ctx.zero_point(*value, "pad value"));
      const float os = AISRV_TRY(ctx.scale(out, "output"));
      const int32_t oz = AISRV_TRY(ctx.zero_point(out, "output"));
      if (vs != os || vz != oz) return ctx.error("pad value is quantized differently from the output");
    }
    std::memcpy(p.pad_value.data(), value->data, p.element_size);
  } else if (in.type == DType::int8 || in.type == DType::uint8 || in.type == DType::int16) {
    const int32_t zp = out.quant.present() ? AISRV_TRY(ctx.zero_point(out, "output")) : 0;
    if (in.type == DType::int16) {
      const auto v = static_cast<int16_t>(zp);
      std::memcpy(p.pad_value.data(), &v, sizeof v);
    } else {
      p.pad_value[0] = static_cast<uint8_t>(zp);
    }
  }  // int32 / float32: zero bytes
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
