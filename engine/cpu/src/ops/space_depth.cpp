// aisrv CPU engine — DEPTH_TO_SPACE and SPACE_TO_DEPTH preparation (NHWC, any element type): a positive constant
// block size; DEPTH_TO_SPACE needs the depth to divide by block², SPACE_TO_DEPTH the height and width to divide by
// the block (TensorFlow Lite / TFLite Micro depth_to_space.cc, space_to_depth.cc). The output shape must be the one
// the operator produces.
#include "prepare.hpp"

namespace aisrv::engine::cpu {

Result<OpParams> prepare_space_depth(const PrepareContext& ctx) {
  const bool to_space = ctx.op().code == static_cast<int32_t>(BuiltinOp::depth_to_space);
  const int32_t block = to_space ? std::get<DepthToSpaceOptions>(ctx.op().options).block_size
                                 : std::get<SpaceToDepthOptions>(ctx.op().options).block_size;
  AISRV_TRY(ctx.check_counts(1, 1, 1));
  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in,
                            {DType::int8, DType::uint8, DType::int16, DType::int32, DType::int64, DType::float32,
                             DType::boolean},
                            "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  const Dims4 is = AISRV_TRY(ctx.dims4(in, "input"));
  const Dims4 os = AISRV_TRY(ctx.dims4(out, "output"));
  if (block < 1) return ctx.error("block_size is {}; it must be at least 1", block);

  const int64_t b = block, area = b * b;
  int64_t want_h, want_w, want_c;
  if (to_space) {
    if (is.c % area != 0) return ctx.error("input depth {} does not divide by block_size² = {}", is.c, area);
    want_h = is.h * b;
    want_w = is.w * b;
    want_c = is.c / area;
  } else {
    if (is.h % b != 0 || is.w % b != 0)
      return ctx.error("input height {} and width {} must divide by block_size {}", is.h, is.w, block);
    want_h = is.h / b;
    want_w = is.w / b;
    want_c = is.c * area;
  }
  if (os.n != is.n || os.h != want_h || os.w != want_w || os.c != want_c)
    return ctx.error("output '{}' is [{},{},{},{}], expected [{},{},{},{}]", out.name, os.n, os.h, os.w, os.c, is.n,
                     want_h, want_w, want_c);

  SpaceDepthParams p;
  p.to_space = to_space;
  p.element_size = protocol::dtype_size(in.type);
  p.block_size = block;
  p.input_shape = is;
  p.output_shape = os;
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
