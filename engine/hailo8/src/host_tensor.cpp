// aisrv hailo8 — tensor descriptions from the HEF's vstreams and the float conversions through our
// transforms (see host_tensor.hpp).
#include "host_tensor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "aisrv/engine/hailo8/transform/quantize.hpp"
#include "aisrv/engine/hailo8/transform/types.hpp"

namespace aisrv::engine::hailo8 {
namespace {

protocol::DType dtype_of(hef::FormatType t) {
  switch (t) {
    case hef::FormatType::uint8: return protocol::DType::uint8;
    case hef::FormatType::uint16: return protocol::DType::uint16;
    case hef::FormatType::float32: return protocol::DType::float32;
    default: return protocol::DType::unknown;
  }
}

int32_t to_i32(uint32_t v) { return static_cast<int32_t>(std::min<uint32_t>(v, std::numeric_limits<int32_t>::max())); }

// A qp the protocol can report and our transforms can use: finite scale, finite zero point within int32 (2147483520
// is the largest float below 2^31, so lround() of it fits).
Status check_qp(const hef::VStreamInfo& v, const hef::QuantInfo& q) {
  if (!std::isfinite(q.scale) || !std::isfinite(q.zero_point) || std::fabs(q.zero_point) > 2147483520.0f)
    return make_error(Errc::model_error, "vstream '{}': quantization scale {} / zero point {} is not a usable number",
                      v.name, q.scale, q.zero_point);
  return ok();
}

const char* direction(bool is_input) { return is_input ? "input" : "output"; }

}  // namespace

Status HostTensor::check_size(const hef::VStreamInfo& v, bool as_float, uint64_t max_bytes) {
  const uint64_t frame = v.frame_size();
  const bool quantized = v.type == hef::FormatType::uint8 || v.type == hef::FormatType::uint16;
  const uint64_t type_bytes = hef::format_type_bytes(v.type);
  const uint64_t user = as_float && quantized && !v.nms && type_bytes ? frame / type_bytes * sizeof(float) : frame;
  if (frame > max_bytes || user > max_bytes)
    return make_error(Errc::model_error, "vstream '{}' has a frame of {} bytes ({} for the user); the payload limit is "
                                         "{} bytes",
                      v.name, frame, user, max_bytes);
  return ok();
}

Result<HostTensor> HostTensor::input(const hef::VStreamInfo& v, bool as_float) { return make(v, true, as_float); }
Result<HostTensor> HostTensor::output(const hef::VStreamInfo& v, bool as_float) { return make(v, false, as_float); }

Result<HostTensor> HostTensor::make(const hef::VStreamInfo& v, bool is_input, bool as_float) {
  HostTensor t;
  const uint64_t bytes = v.frame_size();
  if (bytes == 0 || bytes > std::numeric_limits<uint32_t>::max())
    return make_error(Errc::model_error, "vstream '{}' has a frame of {} bytes", v.name, bytes);
  t.spec_ = runtime::TensorSpec{v.name, static_cast<uint32_t>(v.type), bytes};
  t.frame_type_ = v.type;
  TensorDesc& d = t.desc_;
  d.name = v.name;
  d.dtype = dtype_of(v.type);
  d.bytes = static_cast<uint32_t>(bytes);

  // Host shape: NC -> [1, C]; NHW -> [1, H, W]; NMS by class -> [1, C*(1+5*M)] float32 values; else [1, H, W, F].
  if (v.nms) {
    d.shape = {1, to_i32(static_cast<uint32_t>(bytes / 4))};
    t.bytes_.assign(bytes, 0);
    return t;  // float32 boxes from HailoRT, not quantized: nothing to convert
  }
  switch (v.order) {
    case hef::FormatOrder::nc: d.shape = {1, to_i32(v.shape.features)}; break;
    case hef::FormatOrder::nhw: d.shape = {1, to_i32(v.shape.height), to_i32(v.shape.width)}; break;
    default: d.shape = {1, to_i32(v.shape.height), to_i32(v.shape.width), to_i32(v.shape.features)}; break;
  }
  const bool quantized = v.type == hef::FormatType::uint8 || v.type == hef::FormatType::uint16;
  if (!quantized) {
    t.bytes_.assign(bytes, 0);
    return t;
  }
  if (v.quant_is_per_feature) {
    if (v.quant_per_feature.size() != v.shape.features)
      return make_error(Errc::model_error, "vstream '{}' has {} per-feature quantization entries for {} features",
                        v.name, v.quant_per_feature.size(), v.shape.features);
    for (const auto& q : v.quant_per_feature) AISRV_TRY(check_qp(v, q));
  } else {
    AISRV_TRY(check_qp(v, v.quant));
  }

  if (!as_float) {
    // The device type as it is, with the quantization that gives its values meaning.
    auto zp = [](float z) { return static_cast<int32_t>(std::lround(z)); };
    if (v.quant_is_per_feature) {
      d.quant_axis = static_cast<int32_t>(d.shape.size()) - 1;
      for (const auto& q : v.quant_per_feature) {
        d.scale.push_back(q.scale);
        d.zero_point.push_back(zp(q.zero_point));
      }
    } else if (v.quant.scale != 0) {
      d.scale = {v.quant.scale};
      d.zero_point = {zp(v.quant.zero_point)};
    }
    t.bytes_.assign(bytes, 0);
    return t;
  }

  // Float I/O through our transforms.
  if (!transform::is_layout_order(v.order))
    return make_error(Errc::not_supported, "{} '{}': float I/O is not supported for host order {}", direction(is_input),
                      v.name, hef::format_order_name(v.order));
  const uint64_t elements = bytes / hef::format_type_bytes(v.type);
  if (elements * sizeof(float) > std::numeric_limits<uint32_t>::max())
    return make_error(Errc::model_error, "{} '{}': a float32 frame of {} elements is too big", direction(is_input),
                      v.name, elements);
  if (is_input) {
    // HailoRT requires one qp per input; the reader refuses inputs whose per-feature qps differ.
    const hef::QuantInfo qp = v.quant_is_per_feature ? v.quant_per_feature.front() : v.quant;
    if (auto s = transform::validate_quant_info(qp); !s)
      return make_error(Errc::not_supported,
                        "input '{}': float input cannot be quantized with the HEF's parameters: {}", v.name,
                        s.error().message);
    t.conversion_ = Conversion::quantize;
    t.qps_ = {qp};
  } else if (v.order == hef::FormatOrder::nhw) {
    t.conversion_ = Conversion::cast;  // argmax indices: HailoRT never de-quantizes them
  } else {
    if (v.quant_is_per_feature && v.order != hef::FormatOrder::nhwc && v.order != hef::FormatOrder::fcr &&
        v.order != hef::FormatOrder::nc)
      return make_error(Errc::not_supported,
                        "output '{}': per-feature float output is not supported for host order {} (features are not "
                        "the innermost axis)",
                        v.name, hef::format_order_name(v.order));
    t.conversion_ = Conversion::dequantize;
    if (v.quant_is_per_feature) {
      t.qps_ = v.quant_per_feature;
    } else {
      t.qps_ = {v.quant};
    }
  }
  d.dtype = protocol::DType::float32;
  d.bytes = static_cast<uint32_t>(elements * sizeof(float));
  t.values_.assign(elements, 0.0f);
  if (v.type == hef::FormatType::uint8) {
    t.bytes_.assign(elements, 0);
  } else {
    t.frame16_.assign(elements, 0);
  }
  return t;
}

std::span<uint8_t> HostTensor::user() {
  if (conversion_ == Conversion::none) return bytes_;
  return {reinterpret_cast<uint8_t*>(values_.data()), values_.size() * sizeof(float)};
}
std::span<const uint8_t> HostTensor::user() const {
  if (conversion_ == Conversion::none) return bytes_;
  return {reinterpret_cast<const uint8_t*>(values_.data()), values_.size() * sizeof(float)};
}

std::span<uint8_t> HostTensor::frame() {
  if (conversion_ == Conversion::none || frame_type_ == hef::FormatType::uint8) return bytes_;
  return {reinterpret_cast<uint8_t*>(frame16_.data()), frame16_.size() * sizeof(uint16_t)};
}
std::span<const uint8_t> HostTensor::frame() const {
  if (conversion_ == Conversion::none || frame_type_ == hef::FormatType::uint8) return bytes_;
  return {reinterpret_cast<const uint8_t*>(frame16_.data()), frame16_.size() * sizeof(uint16_t)};
}

Status HostTensor::to_frame() {
  if (conversion_ != Conversion::quantize) return ok();
  Status s = frame_type_ == hef::FormatType::uint8 ? transform::quantize(values_, bytes_, qps_.front())
                                                   : transform::quantize(values_, frame16_, qps_.front());
  if (!s) return make_error(Errc::infer_error, "input '{}': {}", desc_.name, s.error().message);
  return ok();
}

Status HostTensor::from_frame() {
  Status s = ok();
  const bool u8 = frame_type_ == hef::FormatType::uint8;
  switch (conversion_) {
    case Conversion::none:
    case Conversion::quantize: return ok();
    case Conversion::cast:
      s = u8 ? transform::cast_to_float(std::span<const uint8_t>(bytes_), values_)
             : transform::cast_to_float(std::span<const uint16_t>(frame16_), values_);
      break;
    case Conversion::dequantize:
      if (qps_.size() == 1) {
        s = u8 ? transform::dequantize(std::span<const uint8_t>(bytes_), values_, qps_.front())
               : transform::dequantize(std::span<const uint16_t>(frame16_), values_, qps_.front());
      } else {
        s = u8 ? transform::dequantize_per_feature(std::span<const uint8_t>(bytes_), values_, qps_, 1)
               : transform::dequantize_per_feature(std::span<const uint16_t>(frame16_), values_, qps_, 1);
      }
      break;
  }
  if (!s) return make_error(Errc::infer_error, "output '{}': {}", desc_.name, s.error().message);
  return ok();
}

void HostTensor::clear() {
  std::fill(bytes_.begin(), bytes_.end(), uint8_t{0});
  std::fill(frame16_.begin(), frame16_.end(), uint16_t{0});
  std::fill(values_.begin(), values_.end(), 0.0f);
}

}  // namespace aisrv::engine::hailo8
