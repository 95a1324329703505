// aisrv CPU engine — RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR preparation (int8, uint8, int16, float32; NHWC).
// The output size comes from the constant int32 size input [height, width] and must match the output tensor. Both
// operators move raw values, so a quantized output must share the input's quantization. The kernels follow the
// reference each type runs in TensorFlow Lite (Micro): bilinear int8 / int16 use the integer ResizeBilinearInteger
// (1/1024 steps), bilinear uint8 / float32 the float ResizeBilinear; nearest neighbour is a float index
// computation for every type.
//
// Before accepting an operator, preparation replays the kernels' source-index arithmetic for every output row and
// column: the integer bilinear version can land beyond the last input row on extreme upscales (TFLite Micro would
// read outside the input there), and we refuse those rather than read out of bounds.
#include <algorithm>
#include <cmath>
#include <limits>

#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

namespace {

struct SourceRange {
  int64_t lower = 0, upper = 0;
};

// Source rows (or columns) [lower, upper] of output index `v` for the float bilinear version (TFLite's
// ComputeInterpolationValues with a float scale).
SourceRange float_bilinear_sources(int32_t v, int32_t in, int32_t out, bool align_corners, bool half_pixel) {
  float scale = static_cast<float>(in) / static_cast<float>(out);
  if (align_corners && out > 1) scale = static_cast<float>(in - 1) / static_cast<float>(out - 1);
  const float fv = static_cast<float>(v);
  const float scaled = half_pixel ? (fv + 0.5f) * scale - 0.5f : fv * scale;
  return {std::max<int64_t>(static_cast<int64_t>(std::floor(scaled)), 0),
          std::min<int64_t>(static_cast<int64_t>(std::ceil(scaled)), in - 1)};
}

// The same for the integer version (ResizeBilinearInteger: scale in 1/1024 steps, truncating divisions); also the
// largest intermediate value, which must fit int32.
SourceRange integer_bilinear_sources(int32_t v, int32_t in, int32_t out, bool align_corners, bool half_pixel,
                                     int64_t& largest) {
  int64_t scale = (int64_t{1024} * in + out / 2) / out;
  if (align_corners && out > 1) scale = (int64_t{1024} * (in - 1) + (out - 1) / 2) / (out - 1);
  const int64_t scaled = half_pixel ? v * scale + scale / 2 - 512 : v * scale;
  largest = std::max({largest, scale, std::abs(scaled) + 1023, int64_t{1024} * in + out});
  return {std::max<int64_t>(scaled / 1024, 0), std::min<int64_t>((scaled + 1023) / 1024, in - 1)};
}

// Source index of output index `v` for nearest neighbour (TFLite's GetNearestNeighbor).
int64_t nearest_source(int32_t v, int32_t in, int32_t out, bool align_corners, bool half_pixel) {
  const float scale = align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                               : static_cast<float>(in) / static_cast<float>(out);
  const float offset = half_pixel ? 0.5f : 0.0f;
  const float scaled = (static_cast<float>(v) + offset) * scale;
  int64_t r = static_cast<int64_t>(align_corners ? std::round(scaled) : std::floor(scaled));
  r = std::min<int64_t>(r, in - 1);
  if (half_pixel) r = std::max<int64_t>(r, 0);
  return r;
}

// Every output index along one axis must map to source indices within [0, in).
Result<void> check_axis(const PrepareContext& ctx, bool bilinear, bool integer, int32_t in, int32_t out,
                        bool align_corners, bool half_pixel, std::string_view axis) {
  int64_t largest = 0;
  for (int32_t v = 0; v < out; ++v) {
    SourceRange r;
    if (!bilinear) {
      r.lower = r.upper = nearest_source(v, in, out, align_corners, half_pixel);
    } else if (integer) {
      r = integer_bilinear_sources(v, in, out, align_corners, half_pixel, largest);
    } else {
      r = float_bilinear_sources(v, in, out, align_corners, half_pixel);
    }
    if (r.lower < 0 || r.lower >= in || r.upper < 0 || r.upper >= in)
      return ctx.error("{}: output index {} of {} maps to input index {} of {}; TensorFlow Lite would read outside "
                       "the input (resizes this extreme are not supported)",
                       axis, v, out, r.lower >= in ? r.lower : r.upper, in);
  }
  if (largest > std::numeric_limits<int32_t>::max())
    return ctx.error("{}: resizing {} to {} overflows the integer interpolation", axis, in, out);
  return {};
}

}  // namespace

Result<OpParams> prepare_resize(const PrepareContext& ctx) {
  const bool bilinear = ctx.op().code == static_cast<int32_t>(BuiltinOp::resize_bilinear);
  AISRV_TRY(ctx.check_counts(2, 2, 1));
  ResizeParams p;
  p.bilinear = bilinear;
  if (bilinear) {
    const auto& opt = std::get<ResizeBilinearOptions>(ctx.op().options);
    p.align_corners = opt.align_corners;
    p.half_pixel_centers = opt.half_pixel_centers;
    if (p.align_corners && p.half_pixel_centers)
      return ctx.error("align_corners and half_pixel_centers are both set (TensorFlow Lite refuses this)");
  } else {
    const auto& opt = std::get<ResizeNearestNeighborOptions>(ctx.op().options);
    p.align_corners = opt.align_corners;
    p.half_pixel_centers = opt.half_pixel_centers;
  }

  const TensorSpec& in = *AISRV_TRY(ctx.input(0, "input"));
  const TensorSpec& size = *AISRV_TRY(ctx.input(1, "size"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8, DType::uint8, DType::int16, DType::float32}, "input"));
  AISRV_TRY(ctx.expect_same_type(in, out, "input and output"));
  p.dtype = in.type;
  p.input_shape = AISRV_TRY(ctx.dims4(in, "input"));
  p.output_shape = AISRV_TRY(ctx.dims4(out, "output"));
  if (size.shape.rank != 1 || size.shape[0] != 2)
    return ctx.error("size '{}' must be a 1-D tensor of 2 values (height, width)", size.name);
  const std::vector<int32_t> hw = AISRV_TRY(ctx.int32_values(size, "size"));
  const Dims4 &is = p.input_shape, &os = p.output_shape;
  if (hw[0] < 1 || hw[1] < 1) return ctx.error("size {}x{} is not positive", hw[0], hw[1]);
  if (os.n != is.n || os.h != hw[0] || os.w != hw[1] || os.c != is.c)
    return ctx.error("output is {}x{}x{}x{}; resizing the input {}x{}x{}x{} to {}x{} gives {}x{}x{}x{}", os.n, os.h,
                     os.w, os.c, is.n, is.h, is.w, is.c, hw[0], hw[1], is.n, hw[0], hw[1], is.c);

  if (in.type != DType::float32) {
    const float in_scale = AISRV_TRY(ctx.scale(in, "input"));
    const float out_scale = AISRV_TRY(ctx.scale(out, "output"));
    const int32_t in_zp = AISRV_TRY(ctx.zero_point(in, "input"));
    const int32_t out_zp = AISRV_TRY(ctx.zero_point(out, "output"));
    if (std::abs(static_cast<double>(in_scale - out_scale)) > 1.0e-6 || in_zp != out_zp)
      return ctx.error("input quantization ({:g}, {}) and output quantization ({:g}, {}) differ (a resize does not "
                       "requantize)", in_scale, in_zp, out_scale, out_zp);
  }

  const bool integer = in.type == DType::int8 || in.type == DType::int16;
  AISRV_TRY(check_axis(ctx, bilinear, integer, is.h, os.h, p.align_corners, p.half_pixel_centers, "height"));
  AISRV_TRY(check_axis(ctx, bilinear, integer, is.w, os.w, p.align_corners, p.half_pixel_centers, "width"));
  p.input = ctx.read_input(0);
  p.output = ctx.write_output();
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
