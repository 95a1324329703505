// aisrv results — one output tensor's bytes checked against its description and read as real values (dequantized
// per tensor or per channel); the texts that describe tensors in messages.
#include <cmath>
#include <cstring>
#include <limits>

#include "decoders.hpp"

namespace aisrv::results::detail {

using protocol::DType;

std::string shape_text(const std::vector<int32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string tensor_text(size_t index, const protocol::TensorInfo& t) {
  return fmt::format("{} '{}' {} {}{}", index, t.name, protocol::dtype_name(t.dtype), shape_text(t.shape),
                     is_quantized(t) ? " (quantized)" : "");
}

std::string outputs_text(const ModelDescription& model) {
  std::string s = fmt::format("{} output(s)", model.outputs.size());
  for (size_t i = 0; i < model.outputs.size(); ++i) s += (i ? "; " : ": ") + tensor_text(i, model.outputs[i]);
  return s;
}

std::optional<uint64_t> element_count(const std::vector<int32_t>& shape) {
  uint64_t n = 1;
  for (int32_t d : shape) {
    if (d < 0) return std::nullopt;
    n *= static_cast<uint64_t>(d);
    if (n > (uint64_t{1} << 40)) return std::nullopt;
  }
  return n;
}

bool is_integer_type(DType t) {
  switch (t) {
    case DType::int8: case DType::uint8: case DType::int16: case DType::uint16: case DType::int32:
    case DType::int64: case DType::boolean:
      return true;
    default:
      return false;
  }
}

bool is_quantized(const protocol::TensorInfo& t) { return is_integer_type(t.dtype) && !t.scale.empty(); }

namespace {

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

double half_to_double(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(mant, -24);
  else if (exp == 31) v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(mant + 1024, exp - 25);
  return (h & 0x8000) ? -v : v;
}

}  // namespace

Result<Tensor> Tensor::make(size_t index, const protocol::TensorInfo& info, std::span<const uint8_t> bytes) {
  Tensor t;
  t.info_ = &info;
  t.bytes_ = bytes;
  t.elem_ = protocol::dtype_size(info.dtype);
  if (t.elem_ == 0)
    return make_error(Errc::invalid_argument, "output {} has an element type the decoder cannot read",
                      tensor_text(index, info));
  auto count = element_count(info.shape);
  if (!count)
    return make_error(Errc::invalid_argument, "output {} has no usable size", tensor_text(index, info));
  t.count_ = static_cast<size_t>(*count);
  if (bytes.size() != t.count_ * t.elem_)
    return make_error(Errc::invalid_argument, "output {} holds {} bytes; its shape and type make {}",
                      tensor_text(index, info), bytes.size(), t.count_ * t.elem_);
  if (!is_integer_type(info.dtype) || info.scale.empty()) return t;  // a float, or an integer taken as it is

  const size_t n = info.scale.size();
  if (info.zero_point.size() != n)
    return make_error(Errc::invalid_argument, "output {} has {} scale(s) but {} zero point(s)",
                      tensor_text(index, info), n, info.zero_point.size());
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(info.scale[i]))
      return make_error(Errc::invalid_argument, "output {} has a non-finite scale", tensor_text(index, info));
    t.scale_.push_back(info.scale[i]);
    t.zero_.push_back(info.zero_point[i]);
  }
  if (n > 1) {  // per channel along quant_axis
    const auto axis = info.quant_axis;
    if (axis < 0 || static_cast<size_t>(axis) >= info.shape.size() ||
        static_cast<size_t>(info.shape[static_cast<size_t>(axis)]) != n)
      return make_error(Errc::invalid_argument,
                        "output {} has {} scales along axis {}, which does not match its shape",
                        tensor_text(index, info), n, axis);
    t.axis_dim_ = n;
    for (size_t d = static_cast<size_t>(axis) + 1; d < info.shape.size(); ++d)
      t.axis_stride_ *= static_cast<size_t>(info.shape[d]);
  }
  return t;
}

double Tensor::raw(size_t i) const {
  const uint8_t* p = bytes_.data() + i * elem_;
  switch (info_->dtype) {
    case DType::float32: return load<float>(p);
    case DType::float16: return half_to_double(load<uint16_t>(p));
    case DType::int8: return load<int8_t>(p);
    case DType::uint8: return load<uint8_t>(p);
    case DType::int16: return load<int16_t>(p);
    case DType::uint16: return load<uint16_t>(p);
    case DType::int32: return load<int32_t>(p);
    case DType::int64: return static_cast<double>(load<int64_t>(p));
    case DType::boolean: return *p ? 1.0 : 0.0;
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

double Tensor::at(size_t i) const {
  const double q = raw(i);
  if (scale_.empty()) return q;
  const size_t c = scale_.size() == 1 ? 0 : (i / axis_stride_) % axis_dim_;
  return (q - zero_[c]) * scale_[c];
}

std::optional<int32_t> Tensor::index_at(size_t i) const {
  const double v = at(i);
  if (!std::isfinite(v) || v < 0 || v > std::numeric_limits<int32_t>::max() || v != std::floor(v))
    return std::nullopt;
  return static_cast<int32_t>(v);
}

}  // namespace aisrv::results::detail
