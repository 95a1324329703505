// aisrv CPU engine — load-time quantization arithmetic (see quant_math.hpp).
#include "quant_math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace aisrv::engine::cpu {

QuantizedMultiplier quantize_multiplier(double real_multiplier) {
  QuantizedMultiplier r;
  if (real_multiplier == 0.0 || !std::isfinite(real_multiplier)) return r;
  int shift = 0;
  const double q = std::frexp(real_multiplier, &shift);
  auto q_fixed = static_cast<int64_t>(std::round(q * static_cast<double>(int64_t{1} << 31)));
  if (q_fixed == (int64_t{1} << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) {
    shift = 0;
    q_fixed = 0;
  }
  r.multiplier = static_cast<int32_t>(q_fixed);
  r.shift = shift;
  return r;
}

Result<QuantizedMultiplier> checked_multiplier(double real_multiplier, std::string_view what) {
  if (!std::isfinite(real_multiplier) || real_multiplier < 0.0)
    return make_error(Errc::model_error, "{}: scale ratio {} is not a finite non-negative number", what,
                      real_multiplier);
  const QuantizedMultiplier q = quantize_multiplier(real_multiplier);
  if (q.shift > 30)
    return make_error(Errc::model_error, "{}: scale ratio {:g} is too large (at most 2^30)", what, real_multiplier);
  return q;
}

Result<SoftmaxScaling> softmax_scaling(double beta, double input_scale, int input_integer_bits) {
  if (!std::isfinite(beta) || beta <= 0.0)
    return make_error(Errc::model_error, "SOFTMAX beta {} is not a positive number", beta);
  const double max_real = static_cast<double>((int64_t{1} << 31) - 1);
  const double real = std::min(beta * input_scale * static_cast<double>(int64_t{1} << (31 - input_integer_bits)),
                               max_real);
  if (!(real > 1.0))
    return make_error(Errc::model_error, "SOFTMAX beta * input scale ({:g}) is too small for the integer kernel",
                      beta * input_scale);
  const QuantizedMultiplier q = quantize_multiplier(real);
  SoftmaxScaling s;
  s.multiplier = q.multiplier;
  s.left_shift = q.shift;  // in [1, 31]
  const double max_input_rescaled = 1.0 * ((1 << input_integer_bits) - 1) *
                                    static_cast<double>(int64_t{1} << (31 - input_integer_bits)) /
                                    static_cast<double>(int64_t{1} << s.left_shift);
  s.diff_min = -static_cast<int32_t>(std::floor(max_input_rescaled));
  return s;
}

int32_t quantize_value(float scale, int32_t zero_point, float value) {
  const float q = std::round(value / scale);
  return zero_point + static_cast<int32_t>(q);
}

int32_t type_min(DType type) {
  switch (type) {
    case DType::int8: return std::numeric_limits<int8_t>::min();
    case DType::uint8: return 0;
    case DType::int16: return std::numeric_limits<int16_t>::min();
    default: return std::numeric_limits<int32_t>::min();
  }
}

int32_t type_max(DType type) {
  switch (type) {
    case DType::int8: return std::numeric_limits<int8_t>::max();
    case DType::uint8: return std::numeric_limits<uint8_t>::max();
    case DType::int16: return std::numeric_limits<int16_t>::max();
    default: return std::numeric_limits<int32_t>::max();
  }
}

Result<ActivationRange> activation_range(Activation act, DType type, float scale, int32_t zero_point) {
  const int32_t qmin = type_min(type);
  const int32_t qmax = type_max(type);
  // Quantized bounds of real values; scale and zero point were validated by the caller (finite, > 0, in range),
  // so the quotients stay far inside int32.
  auto q = [&](float v) -> Result<int32_t> {
    const float t = std::round(v / scale);
    if (!(t >= -2147483648.0f && t <= 2147483520.0f))
      return make_error(Errc::model_error, "activation bound {} does not fit the output scale {:g}", v, scale);
    return zero_point + static_cast<int32_t>(t);
  };
  ActivationRange r{qmin, qmax};
  switch (act) {
    case Activation::none: break;
    case Activation::relu: r.min = std::max(qmin, AISRV_TRY(q(0.0f))); break;
    case Activation::relu6:
      r.min = std::max(qmin, AISRV_TRY(q(0.0f)));
      r.max = std::min(qmax, AISRV_TRY(q(6.0f)));
      break;
    case Activation::relu_n1_to_1:
      r.min = std::max(qmin, AISRV_TRY(q(-1.0f)));
      r.max = std::min(qmax, AISRV_TRY(q(1.0f)));
      break;
    default:
      return make_error(Errc::model_error, "fused activation {} has no integer form", static_cast<int>(act));
  }
  if (r.min > r.max)
    return make_error(Errc::model_error, "fused activation leaves an empty output range [{}, {}]", r.min, r.max);
  return r;
}

}  // namespace aisrv::engine::cpu
