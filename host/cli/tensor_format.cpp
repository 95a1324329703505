// aisrv CLI — tensor formatting helpers.
#include "tensor_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

namespace aisrv::cli {

using protocol::DType;

std::vector<double> element_values(const protocol::TensorInfo& t, std::span<const uint8_t> bytes) {
  const size_t size = protocol::dtype_size(t.dtype);
  if (size == 0 || bytes.size() % size != 0) return {};
  std::vector<double> v(bytes.size() / size);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint8_t* p = bytes.data() + i * size;
    switch (t.dtype) {
      case DType::int8: v[i] = static_cast<int8_t>(*p); break;
      case DType::uint8:
      case DType::boolean: v[i] = *p; break;
      case DType::int16: { int16_t x; std::memcpy(&x, p, 2); v[i] = x; break; }
      case DType::uint16: { uint16_t x; std::memcpy(&x, p, 2); v[i] = x; break; }
      case DType::int32: { int32_t x; std::memcpy(&x, p, 4); v[i] = x; break; }
      case DType::int64: { int64_t x; std::memcpy(&x, p, 8); v[i] = static_cast<double>(x); break; }
      case DType::float32: { float x; std::memcpy(&x, p, 4); v[i] = x; break; }
      default: return {};
    }
  }
  return v;
}

std::vector<double> dequantized(const protocol::TensorInfo& t, std::span<const uint8_t> bytes) {
  auto v = element_values(t, bytes);
  if (t.scale.empty() || t.dtype == DType::float32) return v;
  if (t.scale.size() == 1 || t.quant_axis < 0 || static_cast<size_t>(t.quant_axis) >= t.shape.size()) {
    const double s = t.scale[0], z = t.zero_point.empty() ? 0 : t.zero_point[0];
    for (auto& x : v) x = (x - z) * s;
    return v;
  }
  // per-axis: the channel of element i is (i / inner) % dim[axis]
  size_t inner = 1;
  for (size_t d = static_cast<size_t>(t.quant_axis) + 1; d < t.shape.size(); ++d) inner *= std::max(1, t.shape[d]);
  const size_t channels = static_cast<size_t>(std::max(1, t.shape[static_cast<size_t>(t.quant_axis)]));
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t c = std::min((i / inner) % channels, t.scale.size() - 1);
    v[i] = (v[i] - (c < t.zero_point.size() ? t.zero_point[c] : 0)) * t.scale[c];
  }
  return v;
}

std::vector<size_t> top_k(const std::vector<double>& values, size_t k) {
  std::vector<size_t> idx(values.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](size_t a, size_t b) { return values[a] > values[b] || (values[a] == values[b] && a < b); });
  idx.resize(k);
  return idx;
}

std::string shape_text(const std::vector<int32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string quant_text(const protocol::TensorInfo& t) {
  if (t.scale.empty()) return "not quantized";
  if (t.scale.size() == 1) return fmt::format("scale {:.9g} zero point {}", t.scale[0], t.zero_point.empty() ? 0 : t.zero_point[0]);
  return fmt::format("per-axis (axis {}, {} channels)", t.quant_axis, t.scale.size());
}

nlohmann::json tensor_json(const protocol::TensorInfo& t) {
  return {{"name", t.name},
          {"dtype", std::string(protocol::dtype_name(t.dtype))},
          {"shape", t.shape},
          {"bytes", t.bytes},
          {"quant_axis", t.quant_axis},
          {"scale", t.scale},
          {"zero_point", t.zero_point}};
}

}  // namespace aisrv::cli
