// aisrv CPU engine, optimised kernels — QUANTIZE from float32: zero_point + round(x / scale), halves away from zero,
// clamped to the output type — the reference's value, in a loop the compiler vectorises. The division is the same
// float division; rounding is done on the quotient's magnitude with a truncating conversion (exact below 2^23,
// where floats still have a fraction; above it the quotient is already whole) instead of a call to std::round; NaN
// gives the zero point as in the reference. 8-bit integer inputs (requantization) look their 256 possible results
// up in a table the reference's formula filled at load; int16 inputs run the reference kernel.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"

#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

// round(q) with halves away from zero, limited to [-65536, 65536] (every output type's range lies well inside, so
// the final clamp gives the same value as the reference's saturating conversion would), NaN -> 0.
inline int32_t round_limited(float q) {
  const float a = std::min(std::fabs(q), 65536.0f);  // NaN stays NaN (std::min returns its first argument)
  const float t = static_cast<float>(static_cast<int32_t>(a == a ? a : 0.0f));
  const float r = (a - t >= 0.5f) ? t + 1.0f : t;
  const auto v = static_cast<int32_t>(r);
  return q == q ? (q < 0 ? -v : v) : 0;
}

template <typename T>
void quantize_floats(const float* in, int64_t n, float scale, int32_t zero_point, int32_t lo, int32_t hi, T* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(std::clamp(round_limited(in[i] / scale) + zero_point, lo, hi));
}

bool byte_input(const QuantizeParams& p) { return p.input_type == DType::int8 || p.input_type == DType::uint8; }

int32_t output_lowest(DType t) { return t == DType::int8 ? -128 : t == DType::uint8 ? 0 : -32768; }
int32_t output_highest(DType t) { return t == DType::int8 ? 127 : t == DType::uint8 ? 255 : 32767; }

template <typename In, typename Out>
void look_up(const QuantizeParams& p, const int32_t* table) {
  const auto* in = static_cast<const In*>(p.input);
  auto* out = static_cast<Out*>(p.output);
  for (int64_t i = 0; i < p.elements; ++i) out[i] = static_cast<Out>(table[static_cast<uint8_t>(in[i])]);
}

template <typename In>
void look_up_into(const QuantizeParams& p, const int32_t* table) {
  switch (p.output_type) {
    case DType::int8: look_up<In, int8_t>(p, table); break;
    case DType::uint8: look_up<In, uint8_t>(p, table); break;
    default: look_up<In, int16_t>(p, table); break;
  }
}

}  // namespace

namespace opt {

size_t quantize_prepared_bytes(const QuantizeParams& p) {
  return byte_input(p) ? kPreparedHeaderBytes + 256 * sizeof(int32_t) : 0;
}

void quantize_prepare(const QuantizeParams& p, std::span<uint8_t> prepared) {
  if (!byte_input(p) || prepared.size() < quantize_prepared_bytes(p)) return;
  PreparedHeader h;
  h.magic = kPreparedMagic;
  h.usable = p.output_type == DType::int8 || p.output_type == DType::uint8 || p.output_type == DType::int16;
  int32_t table[256];
  const int32_t lo = output_lowest(p.output_type), hi = output_highest(p.output_type);
  for (int32_t byte = 0; byte < 256; ++byte) {  // indexed by the input's bit pattern, as the reference reads it
    const int32_t value = p.input_type == DType::int8 ? static_cast<int8_t>(byte) : byte;
    const int64_t v =
        int64_t{fp::multiply_by_quantized_multiplier(value - p.input_zero_point, p.multiplier, p.shift)} +
        p.output_zero_point;
    table[byte] = static_cast<int32_t>(std::clamp<int64_t>(v, lo, hi));
  }
  std::memcpy(prepared.data() + kPreparedHeaderBytes, table, sizeof table);
  std::memcpy(prepared.data(), &h, sizeof h);
}

}  // namespace opt

void OptimizedKernelBackend::quantize(const QuantizeParams& p) {
  if (byte_input(p)) {
    opt::PreparedHeader h;
    if (p.prepared.size() >= opt::quantize_prepared_bytes(p)) std::memcpy(&h, p.prepared.data(), sizeof h);
    if (h.magic != opt::kPreparedMagic || !h.usable) {
      ReferenceKernelBackend::quantize(p);
      return;
    }
    const auto* table = reinterpret_cast<const int32_t*>(p.prepared.data() + opt::kPreparedHeaderBytes);
    if (p.input_type == DType::int8) look_up_into<int8_t>(p, table);
    else look_up_into<uint8_t>(p, table);
    return;
  }
  if (p.input_type != DType::float32 || p.output_zero_point < -65536 || p.output_zero_point > 65536) {
    ReferenceKernelBackend::quantize(p);
    return;
  }
  const auto* in = static_cast<const float*>(p.input);
  switch (p.output_type) {
    case DType::int8:
      quantize_floats(in, p.elements, p.output_scale, p.output_zero_point, -128, 127, static_cast<int8_t*>(p.output));
      break;
    case DType::uint8:
      quantize_floats(in, p.elements, p.output_scale, p.output_zero_point, 0, 255, static_cast<uint8_t*>(p.output));
      break;
    case DType::int16:
      quantize_floats(in, p.elements, p.output_scale, p.output_zero_point, -32768, 32767,
                      static_cast<int16_t*>(p.output));
      break;
    default: ReferenceKernelBackend::quantize(p);
  }
}

}  // namespace aisrv::engine::cpu
