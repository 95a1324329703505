// aisrv image — a picture as the bytes of a model input: layout from the shape, channels, crop/resize, then the
// element type's values (rules in tensor_image.hpp).
#include "aisrv/image/tensor_image.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace aisrv::image {

namespace {

std::string shape_text(const std::vector<int32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_channels(int32_t d) { return d == 1 || d == 3; }

// Per-channel value of a mean/std option: none (default), one for all channels, or one per channel.
Result<std::vector<float>> per_channel(const std::vector<float>& v, uint32_t channels, float fallback,
                                       const char* what) {
  if (v.empty()) return std::vector<float>(channels, fallback);
  if (v.size() == 1) return std::vector<float>(channels, v[0]);
  if (v.size() != channels)
    return make_error(Errc::invalid_argument, "{} has {} values; the input has {} channel(s): give 1 or {}", what,
                      v.size(), channels, channels);
  return v;
}

}  // namespace

Result<InputGeometry> input_geometry(const protocol::TensorInfo& t, std::optional<Layout> forced) {
  const auto& s = t.shape;
  auto not_picture = [&] {
    return make_error(Errc::invalid_argument,
                      "input '{}' of shape {} does not hold a picture (batch 1, height, width and 1 or 3 channels, "
                      "NHWC or NCHW)",
                      t.name, shape_text(s));
  };
  if (std::any_of(s.begin(), s.end(), [](int32_t d) { return d <= 0; })) return not_picture();
  std::vector<int32_t> hwc(s.begin(), s.end());
  if (hwc.size() == 4) {
    if (hwc[0] != 1) return not_picture();
    hwc.erase(hwc.begin());
  }
  InputGeometry g;
  if (hwc.size() == 2) {  // [H, W] grey; [1, N] is a batch of flat vectors, not a picture
    if (forced == Layout::nchw || hwc[0] == 1) return not_picture();
    g = {static_cast<uint32_t>(hwc[1]), static_cast<uint32_t>(hwc[0]), 1, Layout::nhwc};
  } else if (hwc.size() == 3) {
    const bool nhwc = is_channels(hwc[2]), nchw = is_channels(hwc[0]);
    Layout layout;
    if (forced) {
      layout = *forced;
      if ((layout == Layout::nhwc && !nhwc) || (layout == Layout::nchw && !nchw)) return not_picture();
    } else if (nhwc) {
      layout = Layout::nhwc;  // both fit (e.g. [1,3,3,3]): NHWC, TFLite's and Hailo's layout
    } else if (nchw) {
      layout = Layout::nchw;
    } else {
      return not_picture();
    }
    if (layout == Layout::nhwc)
      g = {static_cast<uint32_t>(hwc[1]), static_cast<uint32_t>(hwc[0]), static_cast<uint32_t>(hwc[2]), layout};
    else
      g = {static_cast<uint32_t>(hwc[2]), static_cast<uint32_t>(hwc[1]), static_cast<uint32_t>(hwc[0]), layout};
  } else {
    return not_picture();
  }
  const uint64_t expected = static_cast<uint64_t>(g.width) * g.height * g.channels * protocol::dtype_size(t.dtype);
  if (expected != t.bytes)
    return make_error(Errc::invalid_argument, "input '{}': shape {} of {} is {} bytes, the tensor has {}", t.name,
                      shape_text(s), protocol::dtype_name(t.dtype), expected, t.bytes);
  return g;
}

Result<Placement> placement(const Image& picture, const InputGeometry& g, const Preprocess& o) {
  if (o.crop) AISRV_TRY(check_crop(picture, *o.crop));
  const Crop c = o.crop.value_or(Crop{0, 0, picture.width, picture.height});
  if (c.width == 0 || c.height == 0) return make_error(Errc::invalid_argument, "the picture is empty");
  Placement p;
  p.input_width = g.width;
  p.input_height = g.height;
  p.picture_width = picture.width;
  p.picture_height = picture.height;
  p.crop_x = c.x;
  p.crop_y = c.y;
  if (o.fit == Fit::stretch) {
    p.scale_x = static_cast<double>(g.width) / c.width;
    p.scale_y = static_cast<double>(g.height) / c.height;
    return p;
  }
  // Letterbox: one scale for both axes, the resized size rounded, the padding split around it.
  const double r = std::min(static_cast<double>(g.width) / c.width, static_cast<double>(g.height) / c.height);
  const auto w = static_cast<uint32_t>(std::clamp<long>(std::lround(c.width * r), 1, g.width));
  const auto h = static_cast<uint32_t>(std::clamp<long>(std::lround(c.height * r), 1, g.height));
  p.scale_x = static_cast<double>(w) / c.width;
  p.scale_y = static_cast<double>(h) / c.height;
  p.left = std::lround((g.width - w) / 2.0 - 0.1);
  p.top = std::lround((g.height - h) / 2.0 - 0.1);
  return p;
}

namespace {
Status picture_dtype(const protocol::TensorInfo& t) {
  if (t.dtype != protocol::DType::uint8 && t.dtype != protocol::DType::int8 && t.dtype != protocol::DType::float32)
    return make_error(Errc::not_supported, "input '{}' is {}: pictures go into uint8, int8 or float32 inputs", t.name,
                      protocol::dtype_name(t.dtype));
  return ok();
}
}  // namespace

Result<std::vector<uint8_t>> image_to_tensor(const Image& picture, const protocol::TensorInfo& t,
                                             const Preprocess& o) {
  AISRV_TRY(picture_dtype(t));
  const auto g = AISRV_TRY(input_geometry(t, o.layout));
  std::vector<uint8_t> out(static_cast<size_t>(g.width) * g.height * g.channels * protocol::dtype_size(t.dtype));
  AISRV_TRY(image_to_tensor(picture, t, o, out));
  return out;
}

Status image_to_tensor(const Image& picture, const protocol::TensorInfo& t, const Preprocess& o,
                       std::span<uint8_t> out) {
  AISRV_TRY(picture_dtype(t));
  const InputGeometry g = AISRV_TRY(input_geometry(t, o.layout));
  const Placement where = AISRV_TRY(placement(picture, g, o));
  if (!std::isfinite(o.pad_value) || o.pad_value < 0 || o.pad_value > 255)
    return make_error(Errc::invalid_argument, "the letterbox pad value {} is not within 0..255", o.pad_value);
  const Image source = with_channels(picture, g.channels);
  // The picture's part of the input (all of it when stretched), then its place in the input.
  const auto inner_w = static_cast<uint32_t>(std::lround(where.scale_x * (o.crop ? o.crop->width : picture.width)));
  const auto inner_h = static_cast<uint32_t>(std::lround(where.scale_y * (o.crop ? o.crop->height : picture.height)));
  const FloatImage inner = resize_bilinear(source, inner_w, inner_h, o.crop);
  FloatImage resized;
  if (inner_w == g.width && inner_h == g.height) {
    resized = inner;
  } else {
    resized.width = g.width;
    resized.height = g.height;
    resized.channels = inner.channels;
    resized.values.assign(static_cast<size_t>(g.width) * g.height * inner.channels, o.pad_value);
    const auto left = static_cast<size_t>(where.left), top = static_cast<size_t>(where.top);
    for (size_t y = 0; y < inner_h; ++y)
      std::copy_n(inner.values.begin() + static_cast<std::ptrdiff_t>(y * inner_w * inner.channels),
                  inner_w * inner.channels,
                  resized.values.begin() + static_cast<std::ptrdiff_t>(((top + y) * g.width + left) * inner.channels));
  }

  const bool normalise = !o.mean.empty() || !o.std.empty();
  const auto mean = AISRV_TRY(per_channel(o.mean, g.channels, 0.0f, "--mean"));
  const auto stdev = AISRV_TRY(per_channel(o.std, g.channels, 1.0f, "--std"));
  for (float s : stdev)
    if (s == 0 || !std::isfinite(s)) return make_error(Errc::invalid_argument, "--std values must be finite, not 0");
  const bool quantized = t.dtype != protocol::DType::float32;
  if (normalise && quantized && t.scale.empty())
    return make_error(Errc::invalid_argument,
                      "input '{}' is {} without quantization parameters: --mean/--std cannot be applied", t.name,
                      protocol::dtype_name(t.dtype));
  // Per-channel quantization along the channel axis, else the tensor's (first) scale.
  const int channel_axis = static_cast<int>(t.shape.size()) - (g.layout == Layout::nhwc ? 1 : 3);
  auto scale_of = [&](uint32_t c) {
    if (t.scale.size() == g.channels && g.channels > 1 && t.quant_axis == channel_axis) return t.scale[c];
    return t.scale.empty() ? 1.0f : t.scale[0];
  };
  auto zero_of = [&](uint32_t c) {
    if (t.zero_point.size() == g.channels && g.channels > 1 && t.quant_axis == channel_axis) return t.zero_point[c];
    return t.zero_point.empty() ? 0 : t.zero_point[0];
  };
  const int lo = t.dtype == protocol::DType::int8 ? -128 : 0, hi = t.dtype == protocol::DType::int8 ? 127 : 255;

  const size_t plane = static_cast<size_t>(g.width) * g.height;
  if (out.size() != plane * g.channels * protocol::dtype_size(t.dtype))
    return make_error(Errc::bad_length, "input '{}' takes {} bytes for a {}x{}x{} picture, the buffer holds {}", t.name,
                      plane * g.channels * protocol::dtype_size(t.dtype), g.width, g.height, g.channels, out.size());
  for (size_t p = 0; p < plane; ++p) {
    for (uint32_t c = 0; c < g.channels; ++c) {
      const uint32_t from = o.bgr && g.channels == 3 ? 2 - c : c;
      const float v = std::clamp(resized.values[p * g.channels + from], 0.0f, 255.0f);
      const size_t index = g.layout == Layout::nhwc ? p * g.channels + c : c * plane + p;
      if (!quantized) {
        const float real = normalise ? (v - mean[c]) / stdev[c] : v / 255.0f;
        std::memcpy(out.data() + index * 4, &real, 4);
      } else if (!normalise) {  // raw pixels (uint8) or pixels - 128 (int8), truncated as libcoral does
        const int q = static_cast<int>(v) - (t.dtype == protocol::DType::int8 ? 128 : 0);
        out[index] = static_cast<uint8_t>(q & 0xFF);
      } else {
        const float real = (v - mean[c]) / stdev[c];
        const long q = std::lround(static_cast<double>(real) / scale_of(c)) + zero_of(c);
        out[index] = static_cast<uint8_t>(std::clamp<long>(q, lo, hi) & 0xFF);
      }
    }
  }
  return ok();
}

}  // namespace aisrv::image
