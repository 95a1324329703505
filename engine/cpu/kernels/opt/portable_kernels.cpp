// aisrv CPU engine, optimised kernels — the portable level: plain C++ inner loops written so that the compiler can
// vectorise them for the build's baseline target (SSE2 on x86-64, NEON on aarch64). Used where the processor has no
// better level, and as the reference point of the SIMD levels in the differential tests.
#include "aisrv/engine/cpu/fixed_point.hpp"
#include "opt_kernels.hpp"
#include "scalar_ops.hpp"

namespace aisrv::engine::cpu::opt {

namespace {

// Weights in GemmLayout::rows: every output is a dot product of an im2col row with a channel's weight row, the
// int16 x int16 -> int32 reduction compilers vectorise (pmaddwd with SSE2, smlal with NEON).
int32_t dot(const int16_t* a, const int16_t* b, int32_t n) {
  int32_t acc = 0;
  for (int32_t k = 0; k < n; ++k) acc += a[k] * b[k];
  return acc;
}

template <bool U>
void gemm(const GemmBlock& g) {
  const int32_t depth = 2 * g.pairs;
  for (int32_t r = 0; r < g.rows; ++r) {
    const int16_t* a = g.a + static_cast<size_t>(r) * g.a_stride;
    uint8_t* out = g.out + static_cast<size_t>(r) * g.out_stride;
    for (int32_t j = 0; j < g.cols; ++j) {
      const int32_t acc = g.bias[j] + dot(a, g.b + static_cast<size_t>(j) * static_cast<size_t>(depth), depth);
      out[j] = static_cast<uint8_t>(
          fp::requantize(acc, g.multiplier[j], g.shift[j], g.output_offset, g.act_min, g.act_max));
    }
  }
}

template <bool U>
void depthwise_row(const DepthwiseRow& d) {
  int32_t* acc = d.accumulators;
  for (int32_t ox = 0; ox < d.out_width; ++ox) {
    const size_t column = static_cast<size_t>(ox) * static_cast<size_t>(d.column_step);
    for (int32_t c = 0; c < d.channels; ++c) acc[c] = d.bias[c];
    for (int32_t t = 0; t < d.taps_count; ++t) {
      const int16_t* x = d.taps[t] + column;
      const auto* w = reinterpret_cast<const uint8_t*>(d.filter) + static_cast<size_t>(t) * d.channels;
      for (int32_t c = 0; c < d.channels; ++c) acc[c] += x[c] * (element<U>(w[c]) + d.filter_offset);
    }
    uint8_t* out = d.out + static_cast<size_t>(ox) * d.channels;
    for (int32_t c = 0; c < d.channels; ++c)
      out[c] = static_cast<uint8_t>(
          fp::requantize(acc[c], d.multiplier[c], d.shift[c], d.output_offset, d.act_min, d.act_max));
  }
}

template <bool U>
void fc_row(const FcRow& f) {
  for (int32_t o = 0; o < f.outputs; ++o) fc_element<U>(f, o, 0, 0);
}

template <bool U>
void add(const AddSpan& s) {
  for (int64_t i = 0; i < s.count; ++i)
    s.out[i] = static_cast<uint8_t>(add_element(element<U>(s.a[i]), element<U>(s.b[i]), s));
}

template <bool U>
void widen(const uint8_t* src, int16_t* dst, size_t count, int32_t offset) {
  for (size_t i = 0; i < count; ++i) dst[i] = static_cast<int16_t>(element<U>(src[i]) + offset);
}

void gate_row(const GateRow& g) {
  for (int32_t o = 0; o < g.outputs; ++o) {
    const int32_t acc = g.bias[o] + dot(g.input, g.weights + static_cast<size_t>(o) * static_cast<size_t>(g.kp), g.kp);
    g.out[o] = static_cast<int16_t>(fp::requantize(acc, g.multiplier[o], g.shift[o], 0, -32768, 32767));
  }
}

void mul(const MulSpan& m) {
  for (int64_t i = 0; i < m.count; ++i) mul_element(m, i);
}

void interleave3(const uint8_t* in, size_t plane, uint8_t* out, size_t count) {
  for (size_t i = 0; i < count; ++i)
    for (size_t c = 0; c < 3; ++c) out[i * 3 + c] = in[c * plane + i];
}

}  // namespace

void fill_portable_kernels(OptKernels& k) {
  k.gate_row = gate_row;
  k.mul = mul;
  k.gemm[0] = gemm<false>;
  k.gemm[1] = gemm<true>;
  k.depthwise_row[0] = depthwise_row<false>;
  k.depthwise_row[1] = depthwise_row<true>;
  k.fc_row[0] = fc_row<false>;
  k.fc_row[1] = fc_row<true>;
  k.add[0] = add<false>;
  k.add[1] = add<true>;
  k.widen[0] = widen<false>;
  k.widen[1] = widen<true>;
  k.interleave3 = interleave3;
  k.gemm_layout = GemmLayout::rows;
  k.depthwise_layout = DepthwiseLayout::filter;
}

}  // namespace aisrv::engine::cpu::opt
