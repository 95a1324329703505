// aisrv CPU engine, reference kernels — binary element-wise operators with broadcasting over a 6-D index (SUB, MUL,
// DIV, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, FLOOR_DIV, PRELU, and float32 / int32 / int16 ADD): float32 with the
// reference formulas and TFLite's activation clamp, int32 with two's-complement wrap-around where the reference
// overflows, quantized types with the fixed-point arithmetic of TensorFlow Lite (Micro)'s reference kernels. Integer
// division by zero fails the inference.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "scratch.hpp"

namespace aisrv::engine::cpu {

namespace {

// Element strides of a kMaxRank shape, 0 along the dimensions the output broadcasts.
std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<int64_t, kMaxRank> strides{};
  int64_t s = 1;
  for (int d = kMaxRank - 1; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = (in[d] == 1 && out[d] != 1) ? 0 : s;
    s *= in[d];
  }
  return strides;
}

// out[k] = fn(in1[i], in2[j]) for every output element k in row-major order, i and j its broadcast sources.
template <typename In1, typename In2, typename Out, typename Fn>
void for_each_output(const BinaryParams& p, Fn fn) {
  const auto* in1 = static_cast<const In1*>(p.input1);
  const auto* in2 = static_cast<const In2*>(p.input2);
  auto* out = static_cast<Out*>(p.output);
  const Shape& o = p.output_shape;
  if (p.input1_shape == o && p.input2_shape == o) {
    const int64_t n = o.elements();
    for (int64_t k = 0; k < n; ++k) out[k] = fn(in1[k], in2[k]);
    return;
  }
  const auto s1 = broadcast_strides(p.input1_shape, o);
  const auto s2 = broadcast_strides(p.input2_shape, o);
  int64_t k = 0;
  for (int32_t i0 = 0; i0 < o[0]; ++i0)
    for (int32_t i1 = 0; i1 < o[1]; ++i1)
      for (int32_t i2 = 0; i2 < o[2]; ++i2)
        for (int32_t i3 = 0; i3 < o[3]; ++i3)
          for (int32_t i4 = 0; i4 < o[4]; ++i4) {
            const int64_t a = i0 * s1[0] + i1 * s1[1] + i2 * s1[2] + i3 * s1[3] + i4 * s1[4];
            const int64_t b = i0 * s2[0] + i1 * s2[1] + i2 * s2[2] + i3 * s2[3] + i4 * s2[4];
            for (int32_t i5 = 0; i5 < o[5]; ++i5) out[k++] = fn(in1[a + i5 * s1[5]], in2[b + i5 * s2[5]]);
          }
}

// Whether some element of input 2 (plus `offset`) is zero.
template <typename T>
bool has_zero_divisor(const BinaryParams& p, int32_t offset) {
  const auto* in2 = static_cast<const T*>(p.input2);
  const int64_t n = p.input2_shape.elements();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (in2[i] == 0) return true;
    } else if (int64_t{in2[i]} + offset == 0) {
      return true;
    }
  }
  return false;
}

Error division_by_zero(const char* op) {
  return make_error(Errc::infer_error, "{}: division by zero (a divisor element is 0)", op);
}

// ---- float32 ----

Result<void> binary_float(const BinaryParams& p) {
  using F = float;
  const F lo = p.float_act_min, hi = p.float_act_max;
  // TFLite's ActivationFunctionWithMinMax: min(max(x, lo), hi), NaN passing through.
  auto clamp = [lo, hi](F v) { return std::min(std::max(v, lo), hi); };
  switch (p.op) {
    case BinaryOp::add: for_each_output<F, F, F>(p, [&](F a, F b) { return clamp(a + b); }); break;
    case BinaryOp::sub: for_each_output<F, F, F>(p, [&](F a, F b) { return clamp(a - b); }); break;
    case BinaryOp::mul: for_each_output<F, F, F>(p, [&](F a, F b) { return clamp(a * b); }); break;
    case BinaryOp::div: for_each_output<F, F, F>(p, [&](F a, F b) { return clamp(a / b); }); break;
    case BinaryOp::squared_difference:
      for_each_output<F, F, F>(p, [](F a, F b) {
        const F d = a - b;
        return d * d;
      });
      break;
    case BinaryOp::maximum: for_each_output<F, F, F>(p, [](F a, F b) { return a > b ? a : b; }); break;
    case BinaryOp::minimum: for_each_output<F, F, F>(p, [](F a, F b) { return a < b ? a : b; }); break;
    case BinaryOp::floor_div:
      // TensorFlow Lite (Micro) checks every divisor first, float ones included.
      if (has_zero_divisor<F>(p, 0)) return division_by_zero("FLOOR_DIV");
      for_each_output<F, F, F>(p, [](F a, F b) {
        return static_cast<F>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
      });
      break;
    case BinaryOp::prelu:
      for_each_output<F, F, F>(p, [](F x, F alpha) { return x >= 0.0f ? x : x * alpha; });
      break;
  }
  return {};
}

// ---- int32 / int64 ----

int32_t wrap_add(int32_t a, int32_t b) { return fp::add_wrapping(a, b); }
int32_t wrap_sub(int32_t a, int32_t b) { return fp::sub_wrapping(a, b); }
int32_t wrap_mul(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}

// C++ integer division, with INT32_MIN / -1 giving INT32_MIN (the wrapped quotient, as ARM's SDIV does).
int32_t truncating_div(int32_t a, int32_t b) {
  if (b == -1) return wrap_sub(0, a);
  return a / b;
}

// floor(a / b) computed in double as the reference; the one quotient beyond int32 (INT32_MIN / -1) gives INT32_MIN,
// what x86's conversion of an out-of-range double produces.
int32_t floor_div_int32(int32_t a, int32_t b) {
  const double q = std::floor(static_cast<double>(a) / static_cast<double>(b));
  if (!(q >= -2147483648.0 && q < 2147483648.0)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(q);
}

Result<void> binary_int32(const BinaryParams& p) {
  const int32_t lo = p.act_min, hi = p.act_max;
  auto clamp = [lo, hi](int32_t v) { return std::min(std::max(v, lo), hi); };
  using I = int32_t;
  switch (p.op) {
    case BinaryOp::add: for_each_output<I, I, I>(p, [&](I a, I b) { return clamp(wrap_add(a, b)); }); break;
    case BinaryOp::sub: for_each_output<I, I, I>(p, [&](I a, I b) { return clamp(wrap_sub(a, b)); }); break;
    case BinaryOp::mul: for_each_output<I, I, I>(p, [&](I a, I b) { return clamp(wrap_mul(a, b)); }); break;
    case BinaryOp::div:
      if (has_zero_divisor<I>(p, 0)) return division_by_zero("DIV");
      for_each_output<I, I, I>(p, [&](I a, I b) { return clamp(truncating_div(a, b)); });
      break;
    case BinaryOp::squared_difference:
      for_each_output<I, I, I>(p, [](I a, I b) {
        const I d = wrap_sub(a, b);
        return wrap_mul(d, d);
      });
      break;
    case BinaryOp::maximum: for_each_output<I, I, I>(p, [](I a, I b) { return a > b ? a : b; }); break;
    case BinaryOp::minimum: for_each_output<I, I, I>(p, [](I a, I b) { return a < b ? a : b; }); break;
    case BinaryOp::floor_div:
      if (has_zero_divisor<I>(p, 0)) return division_by_zero("FLOOR_DIV");
      for_each_output<I, I, I>(p, floor_div_int32);
      break;
    case BinaryOp::prelu: break;  // not prepared for int32
  }
  return {};
}

void binary_int64(const BinaryParams& p) {
  using L = int64_t;
  if (p.op == BinaryOp::maximum) for_each_output<L, L, L>(p, [](L a, L b) { return a > b ? a : b; });
  else if (p.op == BinaryOp::minimum) for_each_output<L, L, L>(p, [](L a, L b) { return a < b ? a : b; });
}

// ---- quantized (int8, uint8, int16) ----

// x * 2^-exponent rounded half away from zero, for any exponent >= 0. Up to 31 this is gemmlowp's
// RoundingDivideByPOT; quantized DIV can ask for more, where the reference's 32-bit mask and shift are out of range
// and (on the ARM targets TensorFlow Lite Micro runs on, whose shifts saturate) it yields 1 for x >= 0 and -1 for
// x < 0. That is reproduced here.
int32_t rounding_divide_by_pot_any(int32_t x, int exponent) {
  if (exponent <= 31) return fp::rounding_divide_by_pot(x, exponent);
  return x >= 0 ? 1 : -1;
}

int32_t clamp_to(const BinaryParams& p, int32_t v) { return std::min(p.act_max, std::max(p.act_min, v)); }

// ADD / SUB with rescaling (TFLite AddElementwise / SubElementwise).
template <bool kSub>
int32_t add_sub_quantized(const BinaryParams& p, int32_t x, int32_t y) {
  const int32_t shifted1 = (p.input1_offset + x) * (1 << p.left_shift);
  const int32_t shifted2 = (p.input2_offset + y) * (1 << p.left_shift);
  const int32_t scaled1 =
      fp::multiply_by_quantized_multiplier_smaller_than_one_exp(shifted1, p.input1_multiplier, p.input1_shift);
  const int32_t scaled2 =
      fp::multiply_by_quantized_multiplier_smaller_than_one_exp(shifted2, p.input2_multiplier, p.input2_shift);
  const int32_t raw = kSub ? scaled1 - scaled2 : scaled1 + scaled2;
  const int32_t out =
      fp::multiply_by_quantized_multiplier_smaller_than_one_exp(raw, p.output_multiplier, p.output_shift) +
      p.output_offset;
  return clamp_to(p, out);
}

// MultiplyByQuantizedMultiplier whose left shift saturates instead of overflowing: identical wherever the
// reference's shift fits 32 bits. Where it does not, the reference is undefined and the exact result is at least
// 2^30 in magnitude (the multiplier is at least 2^30), far outside every output range: saturating reaches the
// activation bound as the real-valued formula does.
int32_t requantize_saturating(int32_t x, int32_t multiplier, int shift) {
  const int left = std::max(shift, 0);
  const int64_t shifted = std::clamp<int64_t>(int64_t{x} * (int64_t{1} << left), std::numeric_limits<int32_t>::min(),
                                              std::numeric_limits<int32_t>::max());
  return fp::rounding_divide_by_pot(
      fp::saturating_rounding_doubling_high_mul(static_cast<int32_t>(shifted), multiplier), std::max(-shift, 0));
}

int32_t mul_quantized(const BinaryParams& p, int32_t x, int32_t y) {
  const int32_t product = (p.input1_offset + x) * (p.input2_offset + y);
  const int64_t v = int64_t{p.output_offset} + requantize_saturating(product, p.output_multiplier, p.output_shift);
  return static_cast<int32_t>(std::clamp<int64_t>(v, p.act_min, p.act_max));
}

// TFLite's DivElementwise: numerator times a Q0.31 reciprocal of the divisor with the numerator's headroom used as a
// left shift, then one rescale by the output multiplier and the combined shift. The divisor is not 0 (checked).
int32_t div_quantized(const BinaryParams& p, int32_t x, int32_t y) {
  int32_t numerator = p.input1_offset + x;
  int32_t divisor = p.input2_offset + y;
  if (divisor < 0) {
    numerator = -numerator;
    divisor = -divisor;
  }
  int reciprocal_shift = 0;
  const int32_t reciprocal = fp::get_reciprocal(divisor, 31, &reciprocal_shift);
  const int headroom = numerator == 0 ? 31 : __builtin_clrsb(numerator);
  const int32_t unscaled =
      fp::saturating_rounding_doubling_high_mul(fp::shift_left_wrapping(numerator, headroom), reciprocal);
  const int total_shift = p.output_shift - reciprocal_shift - headroom;  // <= 0: the loader bounds output_shift
  const int32_t scaled = rounding_divide_by_pot_any(
      fp::saturating_rounding_doubling_high_mul(unscaled, p.output_multiplier), -total_shift);
  return clamp_to(p, fp::add_wrapping(p.output_offset, scaled));
}

int32_t squared_difference_quantized(const BinaryParams& p, int32_t x, int32_t y) {
  const int32_t shifted1 = (p.input1_offset + x) * (1 << p.left_shift);
  const int32_t shifted2 = (p.input2_offset + y) * (1 << p.left_shift);
  const int32_t scaled1 =
      fp::multiply_by_quantized_multiplier_smaller_than_one_exp(shifted1, p.input1_multiplier, p.input1_shift);
  const int32_t scaled2 =
      fp::multiply_by_quantized_multiplier_smaller_than_one_exp(shifted2, p.input2_multiplier, p.input2_shift);
  const int32_t diff = scaled1 - scaled2;
  const int32_t out = fp::add_wrapping(
      fp::multiply_by_quantized_multiplier(diff * diff, p.output_multiplier, p.output_shift), p.output_offset);
  return clamp_to(p, out);
}

int32_t prelu_quantized(const BinaryParams& p, int32_t x, int32_t alpha) {
  const int32_t input = p.input1_offset + x;
  int32_t v = 0;
  if (input >= 0) {
    v = fp::multiply_by_quantized_multiplier(input, p.output_multiplier, p.output_shift);
  } else {
    const int32_t centred_alpha = p.input2_offset + alpha;
    v = fp::multiply_by_quantized_multiplier(input * centred_alpha, p.output_multiplier_2, p.output_shift_2);
  }
  return clamp_to(p, fp::add_wrapping(v, p.output_offset));
}

template <typename T>
Result<void> binary_quantized(const BinaryParams& p) {
  auto as_t = [](int32_t v) { return static_cast<T>(v); };
  switch (p.op) {
    case BinaryOp::add:
      for_each_output<T, T, T>(p, [&](T a, T b) { return as_t(add_sub_quantized<false>(p, a, b)); });
      break;
    case BinaryOp::sub:
      for_each_output<T, T, T>(p, [&](T a, T b) { return as_t(add_sub_quantized<true>(p, a, b)); });
      break;
    case BinaryOp::mul: for_each_output<T, T, T>(p, [&](T a, T b) { return as_t(mul_quantized(p, a, b)); }); break;
    case BinaryOp::div:
      if (has_zero_divisor<T>(p, p.input2_offset)) return division_by_zero("DIV");
      for_each_output<T, T, T>(p, [&](T a, T b) { return as_t(div_quantized(p, a, b)); });
      break;
    case BinaryOp::squared_difference:
      for_each_output<T, T, T>(p, [&](T a, T b) { return as_t(squared_difference_quantized(p, a, b)); });
      break;
    case BinaryOp::maximum: for_each_output<T, T, T>(p, [](T a, T b) { return a > b ? a : b; }); break;
    case BinaryOp::minimum: for_each_output<T, T, T>(p, [](T a, T b) { return a < b ? a : b; }); break;
    case BinaryOp::prelu:
      // int16 inputs take int8 alpha (the only int16 form TensorFlow Lite Micro has).
      if constexpr (std::is_same_v<T, int16_t>)
        for_each_output<T, int8_t, T>(p, [&](T x, int8_t a) { return as_t(prelu_quantized(p, x, a)); });
      else
        for_each_output<T, T, T>(p, [&](T x, T a) { return as_t(prelu_quantized(p, x, a)); });
      break;
    case BinaryOp::floor_div: break;  // not prepared for quantized types
  }
  return {};
}

}  // namespace

Result<void> ReferenceKernelBackend::binary(const BinaryParams& p) {
  switch (p.dtype) {
    case DType::float32: return binary_float(p);
    case DType::int32: return binary_int32(p);
    case DType::int64: binary_int64(p); return {};
    case DType::int8: return binary_quantized<int8_t>(p);
    case DType::uint8: return binary_quantized<uint8_t>(p);
    case DType::int16: return binary_quantized<int16_t>(p);
    default: return make_error(Errc::internal, "binary kernel: unsupported element type");
  }
}

size_t ref::scratch_bytes(const BinaryParams&) { return 0; }

}  // namespace aisrv::engine::cpu
