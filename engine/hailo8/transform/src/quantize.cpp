// aisrv hailo8/transform — quantize / de-quantize kernels. The quantize kernel is written with SSE2 (x86-64, plus an
// AVX2 variant picked at run time) or NEON (aarch64) intrinsics because it runs on every input frame; a scalar loop
// with identical results covers other targets and the tails. Every path computes exactly HailoRT's float expression
// (clip, true division by scale, add zero point, round half to even) — no reciprocal multiplication, which would change
// results near .5 ties.
#include "aisrv/engine/hailo8/transform/quantize.hpp"

#include <cfenv>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AISRV_HAVE_AVX2_CLONE 1
#endif
#elif defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace aisrv::engine::hailo8::transform {
namespace {

// Sets round-to-nearest (ties to even) for the duration of a call and restores the caller's mode, as HailoRT's
// RoundingToNearestGuard does; the SSE2 conversion and std::nearbyint both follow the current mode.
class RoundToNearest {
 public:
  RoundToNearest() : saved_(std::fegetround()) {
    if (saved_ != FE_TONEAREST) std::fesetround(FE_TONEAREST);
  }
  ~RoundToNearest() {
    if (saved_ != FE_TONEAREST) std::fesetround(saved_);
  }
  RoundToNearest(const RoundToNearest&) = delete;
  RoundToNearest& operator=(const RoundToNearest&) = delete;

 private:
  int saved_;
};

template <typename Q>
constexpr float type_max() {
  return static_cast<float>(std::numeric_limits<Q>::max());
}

// One element, scalar: the reference semantics every vector path reproduces.
template <typename Q>
inline Q quantize_one(float x, const QuantKernelParams& p) {
  float v = x;
  if (!p.identity) {
    // HailoRT clip(): n >= max → max; n <= min → min; else n (NaN passes through).
    if (v >= p.max) {
      v = p.max;
    } else if (v <= p.min) {
      v = p.min;
    }
    v = v / p.scale + p.zp;
  }
  // Saturate (NaN → 0), then round half to even under FE_TONEAREST.
  if (!(v > 0.0f)) v = 0.0f;
  if (!(v < type_max<Q>())) v = type_max<Q>();
  return static_cast<Q>(std::nearbyint(v));
}

template <typename Q>
void quantize_scalar(const float* in, Q* out, size_t n, const QuantKernelParams& p) {
  for (size_t i = 0; i < n; ++i) out[i] = quantize_one<Q>(in[i], p);
}

#if defined(__SSE2__)

// 4 floats → 4 int32 (rounded, saturated to [0, qmax], NaN → 0).
inline __m128i quantize4_sse2(__m128 v, const QuantKernelParams& p, __m128 vmin, __m128 vmax, __m128 vscale,
                              __m128 vzp, __m128 vqmax) {
  if (!p.identity) {
    // min_ps(a, b) = a < b ? a : b and max_ps(a, b) = a > b ? a : b return b for NaN, so NaN stays NaN here.
    v = _mm_min_ps(vmax, v);
    v = _mm_max_ps(vmin, v);
    v = _mm_add_ps(_mm_div_ps(v, vscale), vzp);
  }
  v = _mm_max_ps(v, _mm_setzero_ps());  // NaN → 0
  v = _mm_min_ps(v, vqmax);
  return _mm_cvtps_epi32(v);  // MXCSR rounding = nearest even (guarded by the caller)
}

void quantize_u8_sse2(const float* in, uint8_t* out, size_t n, const QuantKernelParams& p) {
  const __m128 vmin = _mm_set1_ps(p.min), vmax = _mm_set1_ps(p.max), vscale = _mm_set1_ps(p.scale),
               vzp = _mm_set1_ps(p.zp), vqmax = _mm_set1_ps(255.0f);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = quantize4_sse2(_mm_loadu_ps(in + i), p, vmin, vmax, vscale, vzp, vqmax);
    const __m128i b = quantize4_sse2(_mm_loadu_ps(in + i + 4), p, vmin, vmax, vscale, vzp, vqmax);
    const __m128i c = quantize4_sse2(_mm_loadu_ps(in + i + 8), p, vmin, vmax, vscale, vzp, vqmax);
    const __m128i d = quantize4_sse2(_mm_loadu_ps(in + i + 12), p, vmin, vmax, vscale, vzp, vqmax);
    const __m128i ab = _mm_packs_epi32(a, b);  // values are in [0, 255]: no saturation happens here
    const __m128i cd = _mm_packs_epi32(c, d);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_packus_epi16(ab, cd));
  }
  quantize_scalar<uint8_t>(in + i, out + i, n - i, p);
}

void quantize_u16_sse2(const float* in, uint16_t* out, size_t n, const QuantKernelParams& p) {
  const __m128 vmin = _mm_set1_ps(p.min), vmax = _mm_set1_ps(p.max), vscale = _mm_set1_ps(p.scale),
               vzp = _mm_set1_ps(p.zp), vqmax = _mm_set1_ps(65535.0f);
  const __m128i bias = _mm_set1_epi32(32768);
  const __m128i flip = _mm_set1_epi16(static_cast<short>(0x8000));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // SSE2 has no unsigned 32→16 pack: shift into the signed range, pack, flip the sign bit back.
    const __m128i a = _mm_sub_epi32(quantize4_sse2(_mm_loadu_ps(in + i), p, vmin, vmax, vscale, vzp, vqmax), bias);
    const __m128i b =
        _mm_sub_epi32(quantize4_sse2(_mm_loadu_ps(in + i + 4), p, vmin, vmax, vscale, vzp, vqmax), bias);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_xor_si128(_mm_packs_epi32(a, b), flip));
  }
  quantize_scalar<uint16_t>(in + i, out + i, n - i, p);
}

#if defined(AISRV_HAVE_AVX2_CLONE)
// AVX2 variants, chosen at run time when the CPU has AVX2 (8 lanes: the division dominates the cost).
__attribute__((target("avx2"))) inline __m256i quantize8_avx2(__m256 v, bool identity, __m256 vmin, __m256 vmax,
                                                               __m256 vscale, __m256 vzp, __m256 vqmax) {
  if (!identity) {
    v = _mm256_min_ps(vmax, v);  // NaN stays NaN (see quantize4_sse2)
    v = _mm256_max_ps(vmin, v);
    v = _mm256_add_ps(_mm256_div_ps(v, vscale), vzp);
  }
  v = _mm256_max_ps(v, _mm256_setzero_ps());  // NaN → 0
  v = _mm256_min_ps(v, vqmax);
  return _mm256_cvtps_epi32(v);
}

__attribute__((target("avx2"))) void quantize_u8_avx2(const float* in, uint8_t* out, size_t n,
                                                      const QuantKernelParams& p) {
  const __m256 vmin = _mm256_set1_ps(p.min), vmax = _mm256_set1_ps(p.max), vscale = _mm256_set1_ps(p.scale),
               vzp = _mm256_set1_ps(p.zp), vqmax = _mm256_set1_ps(255.0f);
  // packs/packus work within 128-bit lanes; this permutation puts the 32 bytes back in element order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = quantize8_avx2(_mm256_loadu_ps(in + i), p.identity, vmin, vmax, vscale, vzp, vqmax);
    const __m256i b = quantize8_avx2(_mm256_loadu_ps(in + i + 8), p.identity, vmin, vmax, vscale, vzp, vqmax);
    const __m256i c = quantize8_avx2(_mm256_loadu_ps(in + i + 16), p.identity, vmin, vmax, vscale, vzp, vqmax);
    const __m256i d = quantize8_avx2(_mm256_loadu_ps(in + i + 24), p.identity, vmin, vmax, vscale, vzp, vqmax);
    const __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permutevar8x32_epi32(bytes, order));
  }
  quantize_u8_sse2(in + i, out + i, n - i, p);
}

__attribute__((target("avx2"))) void quantize_u16_avx2(const float* in, uint16_t* out, size_t n,
                                                       const QuantKernelParams& p) {
  const __m256 vmin = _mm256_set1_ps(p.min), vmax = _mm256_set1_ps(p.max), vscale = _mm256_set1_ps(p.scale),
               vzp = _mm256_set1_ps(p.zp), vqmax = _mm256_set1_ps(65535.0f);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = quantize8_avx2(_mm256_loadu_ps(in + i), p.identity, vmin, vmax, vscale, vzp, vqmax);
    const __m256i b = quantize8_avx2(_mm256_loadu_ps(in + i + 8), p.identity, vmin, vmax, vscale, vzp, vqmax);
    const __m256i words = _mm256_packus_epi32(a, b);  // [a0-3 b0-3 | a4-7 b4-7]
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permute4x64_epi64(words, 0xD8));
  }
  quantize_u16_sse2(in + i, out + i, n - i, p);
}

bool cpu_has_avx2() { return __builtin_cpu_supports("avx2"); }
#endif

#elif defined(__ARM_NEON) && defined(__aarch64__)

inline uint32x4_t quantize4_neon(float32x4_t v, const QuantKernelParams& p, float32x4_t vmin, float32x4_t vmax,
                                 float32x4_t vscale, float32x4_t vzp, float32x4_t vqmax) {
  if (!p.identity) {
    // Keep NaN as NaN through the clip (vminq/vmaxq would propagate it too, but the compare+select is explicit).
    v = vbslq_f32(vcgeq_f32(v, vmax), vmax, v);
    v = vbslq_f32(vcleq_f32(v, vmin), vmin, v);
    v = vaddq_f32(vdivq_f32(v, vscale), vzp);
  }
  v = vbslq_f32(vcgtq_f32(v, vdupq_n_f32(0.0f)), v, vdupq_n_f32(0.0f));  // NaN → 0
  v = vbslq_f32(vcltq_f32(v, vqmax), v, vqmax);
  return vreinterpretq_u32_s32(vcvtnq_s32_f32(v));  // round to nearest, ties to even (independent of FPCR)
}

void quantize_u8_neon(const float* in, uint8_t* out, size_t n, const QuantKernelParams& p) {
  const float32x4_t vmin = vdupq_n_f32(p.min), vmax = vdupq_n_f32(p.max), vscale = vdupq_n_f32(p.scale),
                    vzp = vdupq_n_f32(p.zp), vqmax = vdupq_n_f32(255.0f);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const uint16x8_t ab = vcombine_u16(vmovn_u32(quantize4_neon(vld1q_f32(in + i), p, vmin, vmax, vscale, vzp, vqmax)),
                                       vmovn_u32(quantize4_neon(vld1q_f32(in + i + 4), p, vmin, vmax, vscale, vzp, vqmax)));
    const uint16x8_t cd =
        vcombine_u16(vmovn_u32(quantize4_neon(vld1q_f32(in + i + 8), p, vmin, vmax, vscale, vzp, vqmax)),
                     vmovn_u32(quantize4_neon(vld1q_f32(in + i + 12), p, vmin, vmax, vscale, vzp, vqmax)));
    vst1q_u8(out + i, vcombine_u8(vmovn_u16(ab), vmovn_u16(cd)));
  }
  quantize_scalar<uint8_t>(in + i, out + i, n - i, p);
}

void quantize_u16_neon(const float* in, uint16_t* out, size_t n, const QuantKernelParams& p) {
  const float32x4_t vmin = vdupq_n_f32(p.min), vmax = vdupq_n_f32(p.max), vscale = vdupq_n_f32(p.scale),
                    vzp = vdupq_n_f32(p.zp), vqmax = vdupq_n_f32(65535.0f);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    vst1q_u16(out + i,
              vcombine_u16(vmovn_u32(quantize4_neon(vld1q_f32(in + i), p, vmin, vmax, vscale, vzp, vqmax)),
                           vmovn_u32(quantize4_neon(vld1q_f32(in + i + 4), p, vmin, vmax, vscale, vzp, vqmax))));
  }
  quantize_scalar<uint16_t>(in + i, out + i, n - i, p);
}

#endif

Status validate(const QuantInfo& qp) {
  if (qp.is_identity()) return ok();
  if (!std::isfinite(qp.scale) || qp.scale == 0.0f) {
    return make_error(Errc::invalid_argument, "quantization scale {} is not usable (must be finite and non-zero)",
                      qp.scale);
  }
  if (!std::isfinite(qp.zero_point)) {
    return make_error(Errc::invalid_argument, "quantization zero point {} is not finite", qp.zero_point);
  }
  if (std::isnan(qp.limit_min) || std::isnan(qp.limit_max) || qp.limit_min > qp.limit_max) {
    return make_error(Errc::invalid_argument, "quantization limits [{}, {}] are not an interval", qp.limit_min,
                      qp.limit_max);
  }
  return ok();
}

template <typename Q>
Status quantize_impl(std::span<const float> in, std::span<Q> out, const QuantInfo& qp) {
  if (in.size() != out.size()) {
    return make_error(Errc::bad_length, "quantize: {} input elements but {} output elements", in.size(), out.size());
  }
  if (auto s = validate(qp); !s) return s;
  quantize_kernel(in.data(), out.data(), in.size(), make_kernel_params(qp));
  return ok();
}

template <typename Q>
Status dequantize_impl(std::span<const Q> in, std::span<float> out, const QuantInfo& qp) {
  if (in.size() != out.size()) {
    return make_error(Errc::bad_length, "dequantize: {} input elements but {} output elements", in.size(),
                      out.size());
  }
  dequantize_kernel(in.data(), out.data(), in.size(), qp);
  return ok();
}

template <typename Q>
Status dequantize_per_feature_impl(std::span<const Q> in, std::span<float> out, std::span<const QuantInfo> qps,
                                   uint32_t repetition) {
  if (in.size() != out.size()) {
    return make_error(Errc::bad_length, "dequantize: {} input elements but {} output elements", in.size(),
                      out.size());
  }
  if (qps.empty()) return make_error(Errc::invalid_argument, "dequantize: no quantization parameters given");
  if (repetition == 0) return make_error(Errc::invalid_argument, "dequantize: repetition count is 0");
  const uint64_t period = uint64_t{qps.size()} * repetition;
  if (in.size() % period != 0) {
    return make_error(Errc::bad_length,
                      "dequantize: {} elements is not a whole number of periods of {} features x {} repetitions",
                      in.size(), qps.size(), repetition);
  }
  bool all_same = true;
  for (const auto& q : qps) all_same = all_same && (q == qps[0]);
  if (all_same) {
    dequantize_kernel(in.data(), out.data(), in.size(), qps[0]);
    return ok();
  }
  size_t i = 0;
  while (i < in.size()) {
    for (const auto& q : qps) {
      dequantize_kernel(in.data() + i, out.data() + i, repetition, q);
      i += repetition;
    }
  }
  return ok();
}

template <typename Q>
Status cast_impl(std::span<const Q> in, std::span<float> out) {
  if (in.size() != out.size()) {
    return make_error(Errc::bad_length, "cast: {} input elements but {} output elements", in.size(), out.size());
  }
  for (size_t i = 0; i < in.size(); ++i) out[i] = static_cast<float>(in[i]);
  return ok();
}

}  // namespace

QuantKernelParams make_kernel_params(const QuantInfo& qp) {
  return QuantKernelParams{qp.is_identity(), qp.limit_min, qp.limit_max, qp.scale, qp.zero_point};
}

void quantize_kernel(const float* in, uint8_t* out, size_t n, const QuantKernelParams& p) {
  RoundToNearest guard;
#if defined(AISRV_HAVE_AVX2_CLONE)
  if (cpu_has_avx2()) return quantize_u8_avx2(in, out, n, p);
#endif
#if defined(__SSE2__)
  quantize_u8_sse2(in, out, n, p);
#elif defined(__ARM_NEON) && defined(__aarch64__)
  quantize_u8_neon(in, out, n, p);
#else
  quantize_scalar<uint8_t>(in, out, n, p);
#endif
}

void quantize_kernel(const float* in, uint16_t* out, size_t n, const QuantKernelParams& p) {
  RoundToNearest guard;
#if defined(AISRV_HAVE_AVX2_CLONE)
  if (cpu_has_avx2()) return quantize_u16_avx2(in, out, n, p);
#endif
#if defined(__SSE2__)
  quantize_u16_sse2(in, out, n, p);
#elif defined(__ARM_NEON) && defined(__aarch64__)
  quantize_u16_neon(in, out, n, p);
#else
  quantize_scalar<uint16_t>(in, out, n, p);
#endif
}

template <typename Q>
void dequantize_kernel(const Q* in, float* out, size_t n, const QuantInfo& qp) {
  if (qp.is_identity()) {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
    return;
  }
  const float zp = qp.zero_point, scale = qp.scale;
  // Same expression and evaluation order as HailoRT: (float(q) - zp) * scale.
  for (size_t i = 0; i < n; ++i) out[i] = (static_cast<float>(in[i]) - zp) * scale;
}
template void dequantize_kernel<uint8_t>(const uint8_t*, float*, size_t, const QuantInfo&);
template void dequantize_kernel<uint16_t>(const uint16_t*, float*, size_t, const QuantInfo&);

Status validate_quant_info(const QuantInfo& qp) { return validate(qp); }

Status quantize(std::span<const float> in, std::span<uint8_t> out, const QuantInfo& qp) {
  return quantize_impl(in, out, qp);
}
Status quantize(std::span<const float> in, std::span<uint16_t> out, const QuantInfo& qp) {
  return quantize_impl(in, out, qp);
}
Status dequantize(std::span<const uint8_t> in, std::span<float> out, const QuantInfo& qp) {
  return dequantize_impl(in, out, qp);
}
Status dequantize(std::span<const uint16_t> in, std::span<float> out, const QuantInfo& qp) {
  return dequantize_impl(in, out, qp);
}
Status dequantize_per_feature(std::span<const uint8_t> in, std::span<float> out, std::span<const QuantInfo> qps,
                              uint32_t repetition) {
  return dequantize_per_feature_impl(in, out, qps, repetition);
}
Status dequantize_per_feature(std::span<const uint16_t> in, std::span<float> out, std::span<const QuantInfo> qps,
                              uint32_t repetition) {
  return dequantize_per_feature_impl(in, out, qps, repetition);
}
Status cast_to_float(std::span<const uint8_t> in, std::span<float> out) { return cast_impl(in, out); }
Status cast_to_float(std::span<const uint16_t> in, std::span<float> out) { return cast_impl(in, out); }

}  // namespace aisrv::engine::hailo8::transform
