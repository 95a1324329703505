// aisrv CPU engine, optimised kernels — TRANSPOSE: one strided copy loop over a chosen inner dimension (the output's
// last, or the input's contiguous one when the output's last is short, e.g. NCHW -> NHWC with 3 channels), an
// odometer over the others that keeps both offsets incrementally; element copies typed by size. Bytes whose output
// pixels hold 2-4 values from contiguous planes (an image's NCHW -> NHWC) are interleaved plane by plane instead
// (3 planes: the level's interleave3 kernel, byte shuffles on x86).
// With threads, ranges of the odometer's lines go to the participants (each starts its odometer at its first line).
#include <algorithm>
#include <cstring>
#include <functional>

#include "optimized_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

// The worker pool's measure of a TRANSPOSE: a byte moved counts as 8 multiply-accumulates (an image of 150 KB is
// worth handing out, a few kilobytes are not).
constexpr uint64_t kTransposeWorkPerByte = 8;

template <size_t N>
struct Element {
  uint8_t bytes[N];
};

template <size_t N>
void strided_copy(const uint8_t* in, uint8_t* out, size_t count, size_t in_step, size_t out_step) {
  const auto* src = reinterpret_cast<const Element<N>*>(in);
  auto* dst = reinterpret_cast<Element<N>*>(out);
  for (size_t i = 0; i < count; ++i) std::memcpy(dst + i * out_step, src + i * in_step, N);
}

// C contiguous byte planes `plane` apart, interleaved into count pixels of C bytes (a loop compilers turn into
// interleaving vector stores, ST3 / ST4 on NEON).
template <size_t C>
void interleave(const uint8_t* in, size_t plane, uint8_t* out, size_t count) {
  for (size_t i = 0; i < count; ++i)
    for (size_t c = 0; c < C; ++c) out[i * C + c] = in[c * plane + i];
}

}  // namespace

void OptimizedKernelBackend::transpose(const TransposeParams& p) {
  const Shape &is = p.input_shape, &os = p.output_shape;
  const int rank = os.rank;
  const size_t es = p.element_size;
  if (rank < 2 || rank != is.rank || !(es == 1 || es == 2 || es == 4 || es == 8) || os.elements() == 0) {
    ReferenceKernelBackend::transpose(p);
    return;
  }
  std::array<size_t, kMaxRank> in_of_out{}, out_stride{};  // element strides per output dimension
  {
    std::array<size_t, kMaxRank> in_stride{};
    size_t s = 1;
    for (int d = rank - 1; d >= 0; --d) {
      in_stride[static_cast<size_t>(d)] = s;
      s *= static_cast<size_t>(is[d]);
    }
    s = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const auto k = static_cast<size_t>(d);
      const auto src = p.perm[k];
      if (src < 0 || src >= rank) {
        ReferenceKernelBackend::transpose(p);
        return;
      }
      in_of_out[k] = in_stride[static_cast<size_t>(src)];
      out_stride[k] = s;
      s *= static_cast<size_t>(os[d]);
    }
  }
  int inner = rank - 1;
  if (os[inner] < 16) {
    for (int d = 0; d < rank; ++d)
      if (in_of_out[static_cast<size_t>(d)] == 1 && os[d] > os[inner]) inner = d;
  }
  const auto count = static_cast<size_t>(os[inner]);
  const size_t in_step = in_of_out[static_cast<size_t>(inner)], out_step = out_stride[static_cast<size_t>(inner)];
  const auto* input = static_cast<const uint8_t*>(p.input);
  auto* output = static_cast<uint8_t*>(p.output);
  // Bytes whose output pixels are 2 to 4 values from contiguous input planes (NCHW -> NHWC of an image): each line
  // interleaves the planes, and the odometer skips the output's last dimension too.
  const int last = rank - 1;
  const auto channels = static_cast<size_t>(os[last]);
  const bool planes = es == 1 && inner != last && in_step == 1 && out_step == channels && channels >= 2 &&
                      channels <= 4;
  const size_t lines = static_cast<size_t>(os.elements()) / count / (planes ? channels : 1);
  // Lines [first, end): the odometer over the other dimensions (the last one fastest) starts at `first`.
  auto copy_lines = [&](size_t first, size_t end) {
    std::array<int32_t, kMaxRank> idx{};
    size_t in_off = 0, out_off = 0;
    size_t rest = first;
    for (int d = rank - 1; d >= 0; --d) {
      if (d == inner || (planes && d == last)) continue;
      const auto k = static_cast<size_t>(d);
      idx[k] = static_cast<int32_t>(rest % static_cast<size_t>(os[d]));
      rest /= static_cast<size_t>(os[d]);
      in_off += static_cast<size_t>(idx[k]) * in_of_out[k];
      out_off += static_cast<size_t>(idx[k]) * out_stride[k];
    }
    for (size_t line = first; line < end; ++line) {
      const uint8_t* src = input + in_off * es;
      uint8_t* dst = output + out_off * es;
      if (planes) {
        const size_t plane = in_of_out[static_cast<size_t>(last)];
        if (channels == 2) interleave<2>(src, plane, dst, count);
        else if (channels == 3) kernels_.interleave3(src, plane, dst, count);
        else interleave<4>(src, plane, dst, count);
      } else {
        switch (es) {
          case 1: strided_copy<1>(src, dst, count, in_step, out_step); break;
          case 2: strided_copy<2>(src, dst, count, in_step, out_step); break;
          case 4: strided_copy<4>(src, dst, count, in_step, out_step); break;
          default: strided_copy<8>(src, dst, count, in_step, out_step); break;
        }
      }
      for (int d = rank - 1; d >= 0; --d) {  // advance the odometer over the other dimensions
        if (d == inner || (planes && d == last)) continue;
        const auto k = static_cast<size_t>(d);
        in_off += in_of_out[k];
        out_off += out_stride[k];
        if (++idx[k] < os[d]) break;
        in_off -= in_of_out[k] * static_cast<size_t>(os[d]);
        out_off -= out_stride[k] * static_cast<size_t>(os[d]);
        idx[k] = 0;
      }
    }
  };
  // With threads: ranges of lines (a 224x224 image's NCHW -> NHWC took 30 us on the caller while the worker waited).
  const uint64_t work = static_cast<uint64_t>(os.elements()) * es * kTransposeWorkPerByte;
  if (lines < 2 || !pool_.may_hand_out(work)) {
    copy_lines(0, lines);
    return;
  }
  const size_t parts = std::min(lines, 2 * pool_.size());
  const auto part_fn = [&](size_t part, size_t) { copy_lines(lines * part / parts, lines * (part + 1) / parts); };
  pool_.run(parts, std::cref(part_fn), work);
}

}  // namespace aisrv::engine::cpu
