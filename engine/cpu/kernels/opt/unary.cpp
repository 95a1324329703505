// aisrv CPU engine, optimised kernels — unary element-wise operators of 8-bit types (int8, uint8): every one of them
// (LOGISTIC, TANH, HARD_SWISH, RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, RSQRT) maps each input byte to one output byte,
// so at load the reference kernel itself is run on the 256 possible bytes and its outputs kept as a table (exact by
// construction, whatever the operator and quantization); at invoke the tensor is looked up in that table, split
// across the worker pool when large. Lookup: a plain loop (portable); on AVX2, 16 VPSHUFB lookups of 16-entry
// sub-tables by the low nibble, merged by a tree of byte blends on the high nibble's bits; on NEON, TBL / TBX over
// four 64-byte quarters. int16 and float32 run the reference kernel.
#include <algorithm>
#include <array>
#include <cstring>

#include "optimized_backend.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AISRV_UNARY_AVX2 1
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace aisrv::engine::cpu {

namespace {

constexpr size_t kTableBytes = 256;

// One looked-up element costs about as much as 8 multiply-accumulates of a convolution, the pool's measure of work
// (AVX2: some 0.14 ns per element against 0.02 ns per multiply-accumulate).
constexpr uint64_t kLookupWorkPerElement = 8;
// Parts are whole multiples of this many elements, so the vector loops' steps stay aligned within a part.
constexpr int64_t kPartGrain = 256;

bool byte_type(DType t) { return t == DType::int8 || t == DType::uint8; }

void look_up_portable(const uint8_t* table, const uint8_t* in, uint8_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = table[in[i]];
}

#if defined(AISRV_UNARY_AVX2)
// 32 bytes at a time. Sub-table k holds entries 16k..16k+15 (in both 128-bit lanes); VPSHUFB picks entry (x & 15)
// from each, then the blends choose by bit 4, 5, 6 and 7 of x in turn (VPBLENDVB reads bit 7 of each mask byte; a
// 16-bit left shift by 3, 2, 1 brings bit 4, 5, 6 of every byte there, the bits crossing from the low byte into the
// high one landing below bit 7).
__attribute__((target("avx2"))) void look_up_avx2(const uint8_t* table, const uint8_t* in, uint8_t* out, int64_t n) {
  __m256i sub[16];
  for (int k = 0; k < 16; ++k)
    sub[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * k)));
  const __m256i low_nibble = _mm256_set1_epi8(0x0F);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    const __m256i index = _mm256_and_si256(x, low_nibble);
    __m256i level[8];
    const __m256i bit4 = _mm256_slli_epi16(x, 3);
    for (int j = 0; j < 8; ++j)
      level[j] = _mm256_blendv_epi8(_mm256_shuffle_epi8(sub[2 * j], index),
                                    _mm256_shuffle_epi8(sub[2 * j + 1], index), bit4);
    const __m256i bit5 = _mm256_slli_epi16(x, 2);
    for (int j = 0; j < 4; ++j) level[j] = _mm256_blendv_epi8(level[2 * j], level[2 * j + 1], bit5);
    const __m256i bit6 = _mm256_slli_epi16(x, 1);
    for (int j = 0; j < 2; ++j) level[j] = _mm256_blendv_epi8(level[2 * j], level[2 * j + 1], bit6);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_blendv_epi8(level[0], level[1], x));
  }
  for (; i < n; ++i) out[i] = table[in[i]];
}
#endif

#if defined(__aarch64__)
// 16 bytes at a time: TBL on the first quarter (indices >= 64 give 0), then TBX on the others with the index moved
// down by 64 each time (TBX leaves a byte alone where its index is out of range, and the wrapped subtraction sends
// indices of earlier quarters out of range).
void look_up_neon(const uint8_t* table, const uint8_t* in, uint8_t* out, int64_t n) {
  const uint8x16x4_t q0 = vld1q_u8_x4(table), q1 = vld1q_u8_x4(table + 64), q2 = vld1q_u8_x4(table + 128),
                     q3 = vld1q_u8_x4(table + 192);
  const uint8x16_t step = vdupq_n_u8(64);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint8x16_t x = vld1q_u8(in + i);
    uint8x16_t r = vqtbl4q_u8(q0, x);
    x = vsubq_u8(x, step);
    r = vqtbx4q_u8(r, q1, x);
    x = vsubq_u8(x, step);
    r = vqtbx4q_u8(r, q2, x);
    x = vsubq_u8(x, step);
    r = vqtbx4q_u8(r, q3, x);
    vst1q_u8(out + i, r);
  }
  for (; i < n; ++i) out[i] = table[in[i]];
}
#endif

using LookUp = void (*)(const uint8_t* table, const uint8_t* in, uint8_t* out, int64_t n);

LookUp look_up_for(SimdLevel level) {
#if defined(AISRV_UNARY_AVX2)
  if (opt::uses_avx2(level)) return look_up_avx2;
#endif
#if defined(__aarch64__)
  if (opt::uses_neon(level)) return look_up_neon;
#endif
  (void)level;
  return look_up_portable;
}

// The table of a prepared block, or null when the block is missing, foreign or marked unusable.
const uint8_t* table_of(const UnaryParams& p) {
  if (!byte_type(p.dtype) || p.prepared.size() < opt::kPreparedHeaderBytes + kTableBytes) return nullptr;
  opt::PreparedHeader h;
  std::memcpy(&h, p.prepared.data(), sizeof h);
  if (h.magic != opt::kPreparedMagic || !h.usable) return nullptr;
  return p.prepared.data() + opt::kPreparedHeaderBytes;
}

}  // namespace

namespace opt {

size_t unary_prepared_bytes(const UnaryParams& p) {
  return byte_type(p.dtype) ? kPreparedHeaderBytes + kTableBytes : 0;
}

void unary_prepare(const UnaryParams& p, std::span<uint8_t> prepared) {
  if (!byte_type(p.dtype) || prepared.size() < unary_prepared_bytes(p)) return;
  // Every byte pattern once, in index order (the reference reads it as int8 or uint8, as the model's tensor).
  std::array<uint8_t, kTableBytes> every_byte;
  for (size_t b = 0; b < kTableBytes; ++b) every_byte[b] = static_cast<uint8_t>(b);
  UnaryParams all = p;
  all.elements = static_cast<int64_t>(kTableBytes);
  all.input = every_byte.data();
  all.output = prepared.data() + kPreparedHeaderBytes;
  all.scratch = {};
  all.prepared = {};
  ReferenceKernelBackend reference;
  reference.unary(all);
  PreparedHeader h;
  h.magic = kPreparedMagic;
  h.usable = 1;
  std::memcpy(prepared.data(), &h, sizeof h);
}

bool unary_fast_path(const UnaryParams& p) { return table_of(p) != nullptr; }

}  // namespace opt

void OptimizedKernelBackend::unary(const UnaryParams& p) {
  const uint8_t* table = table_of(p);
  if (!table) {
    ReferenceKernelBackend::unary(p);
    return;
  }
  const LookUp look_up = look_up_for(level_);
  const auto* in = static_cast<const uint8_t*>(p.input);
  auto* out = static_cast<uint8_t*>(p.output);
  const int64_t n = p.elements;
  const auto grains = static_cast<size_t>((n + kPartGrain - 1) / kPartGrain);
  const size_t parts = std::max<size_t>(std::min(grains, 2 * pool_.size()), 1);
  if (parts == 1) {
    look_up(table, in, out, n);
    return;
  }
  pool_.run(parts, [&](size_t part, size_t) {
    const auto first = static_cast<int64_t>(grains * part / parts) * kPartGrain;
    const int64_t end = std::min(static_cast<int64_t>(grains * (part + 1) / parts) * kPartGrain, n);
    if (first < end) look_up(table, in + first, out + first, end - first);
  }, static_cast<uint64_t>(n) * kLookupWorkPerElement);
}

}  // namespace aisrv::engine::cpu
