// aisrv CPU engine, reference kernels — CAST: every element converted as TensorFlow Lite's static_cast does.
// Integer to integer wraps modulo 2^bits, anything to bool is "!= 0" and bool reads as 0 / 1. A float converts by
// truncation; where C++ leaves the result undefined (NaN, out of range) this reproduces what the reference's
// compiled conversion gives on x86-64: the "integer indefinite" value of a 32-bit conversion (INT32_MIN) for
// targets up to 32 bits, narrowed to the target as the compiled code does, and INT64_MIN for int64.
#include <limits>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

int32_t float_to_int32_x86(float v) {
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(v);
}

int64_t float_to_int64_x86(float v) {
  if (!(v >= -9223372036854775808.0f && v < 9223372036854775808.0f)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// One element of the input as the widest type that holds it exactly (float stays float).
struct Value {
  bool is_float = false;
  float f = 0.0f;
  int64_t i = 0;
};

Value load(DType type, const void* base, int64_t k) {
  Value v;
  switch (type) {
    case DType::float32:
      v.is_float = true;
      v.f = static_cast<const float*>(base)[k];
      break;
    case DType::int8: v.i = static_cast<const int8_t*>(base)[k]; break;
    case DType::uint8: v.i = static_cast<const uint8_t*>(base)[k]; break;
    case DType::int16: v.i = static_cast<const int16_t*>(base)[k]; break;
    case DType::int32: v.i = static_cast<const int32_t*>(base)[k]; break;
    case DType::int64: v.i = static_cast<const int64_t*>(base)[k]; break;
    case DType::boolean: v.i = static_cast<const uint8_t*>(base)[k] != 0 ? 1 : 0; break;  // any non-zero byte: true
    default: break;
  }
  return v;
}

// An integer target of up to 32 bits.
template <typename T>
T to_narrow_integer(const Value& v) {
  if (v.is_float) return static_cast<T>(float_to_int32_x86(v.f));
  return static_cast<T>(v.i);
}

template <typename T>
void store_as(T value, void* base, int64_t k) {
  static_cast<T*>(base)[k] = value;
}

void store(DType type, const Value& v, void* base, int64_t k) {
  switch (type) {
    case DType::float32: store_as<float>(v.is_float ? v.f : static_cast<float>(v.i), base, k); break;
    case DType::int8: store_as<int8_t>(to_narrow_integer<int8_t>(v), base, k); break;
    case DType::uint8: store_as<uint8_t>(to_narrow_integer<uint8_t>(v), base, k); break;
    case DType::int16: store_as<int16_t>(to_narrow_integer<int16_t>(v), base, k); break;
    case DType::int32: store_as<int32_t>(to_narrow_integer<int32_t>(v), base, k); break;
    case DType::int64: store_as<int64_t>(v.is_float ? float_to_int64_x86(v.f) : v.i, base, k); break;
    case DType::boolean: store_as<uint8_t>((v.is_float ? v.f != 0.0f : v.i != 0) ? 1 : 0, base, k); break;
    default: break;
  }
}

}  // namespace

void ReferenceKernelBackend::cast(const CastParams& p) {
  for (int64_t k = 0; k < p.elements; ++k) store(p.output_type, load(p.input_type, p.input, k), p.output, k);
}

}  // namespace aisrv::engine::cpu
