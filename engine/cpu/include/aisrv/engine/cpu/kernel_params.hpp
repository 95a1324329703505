// aisrv CPU engine — the parameter structs of the kernels: everything an operator's invoke phase needs, computed
// once at load time (shapes, data pointers into the arena or the model's constants, quantization multipliers and
// shifts, padding, activation range, scratch memory). A KernelBackend receives one of these per operator call and
// does no parsing, validation or allocation: the loader guarantees that every pointer covers its shape, that
// accumulators cannot overflow 32 bits, and that every requantization shift is within [-31, 30] (the SOFTMAX input
// left shift within [1, 31]).
//
// Conventions (those of TensorFlow Lite):
//   - activations are NHWC; CONV_2D filters are OHWI, DEPTHWISE_CONV_2D filters are 1HW(C*multiplier),
//     FULLY_CONNECTED weights are [output depth, accumulation depth];
//   - quantized value q stands for scale * (q - zero_point); "offsets" are the negated input/filter zero points and
//     the output zero point, as the integer kernels add them;
//   - a requantization (multiplier, shift) pair means x * multiplier * 2^(shift - 31), rounded as TFLite does
//     (see fixed_point.hpp: multiply_by_quantized_multiplier);
//   - per-channel arrays always have one entry per output channel (a per-tensor scale is broadcast at load).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "aisrv/protocol/payloads.hpp"

namespace aisrv::engine::cpu {

using protocol::DType;

inline constexpr int kMaxRank = 6;

// A tensor shape of rank 0..kMaxRank.
struct Shape {
  int rank = 0;
  std::array<int32_t, kMaxRank> dims{};

  int32_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t elements() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
    return n;
  }
  bool operator==(const Shape& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (dims[static_cast<size_t>(i)] != o.dims[static_cast<size_t>(i)]) return false;
    return true;
  }
};

// A 4-D activation or filter shape, NHWC (or OHWI / 1HWC for filters).
struct Dims4 {
  int32_t n = 0, h = 0, w = 0, c = 0;
  int64_t elements() const { return int64_t{n} * h * w * c; }
  // Element index of (b, y, x, ch).
  int64_t offset(int32_t b, int32_t y, int32_t x, int32_t ch) const {
    return ((int64_t{b} * h + y) * w + x) * c + ch;
  }
};

// Leading (top/left) and trailing (bottom/right) padding of a 2-D window operator; the reference kernels use only
// the leading values, an im2col implementation may want both.
struct Padding2D {
  int32_t top = 0, left = 0, bottom = 0, right = 0;
};

}  // namespace aisrv::engine::cpu

#include "aisrv/engine/cpu/kernel_params_conv.hpp"
#include "aisrv/engine/cpu/kernel_params_elementwise.hpp"
#include "aisrv/engine/cpu/kernel_params_movement.hpp"
#include "aisrv/engine/cpu/kernel_params_spatial.hpp"
#include "aisrv/engine/cpu/kernel_params_lstm.hpp"
#include "aisrv/engine/cpu/kernel_params_detection.hpp"

namespace aisrv::engine::cpu {

// One operator's parameters. Each alternative has one output (`void* output`, typed for DEQUANTIZE and the LSTM)
// or several (`std::vector<void*> outputs`, in the operator's output order). Index order is part of the
// KernelBackend dispatch (run_kernel).
using OpParams = std::variant<Conv2DParams, DepthwiseConv2DParams, FullyConnectedParams, AveragePool2DParams,
                              AddParams, SoftmaxParams, CopyParams, MeanParams, PadParams, TransposeParams,
                              QuantizeParams, DequantizeParams, ConcatenationParams, LstmParams, UnaryParams,
                              BinaryParams, CastParams, StridedSliceParams, SplitParams, GatherParams, GatherNdParams,
                              SpaceDepthParams, Pool2DParams, ResizeParams, ReduceParams, ArgMinMaxParams,
                              L2NormParams, TransposeConvParams, DetectionPostProcessParams>;

// The output buffers of an operator, in its output order.
std::vector<void*> outputs_of(const OpParams& p);
// The same parameters writing to different output buffers (verify mode runs the checking backend there); `outputs`
// has one entry per output.
OpParams with_outputs(const OpParams& p, std::span<void* const> outputs);
// Sets the `prepared` span of the structs that have one (no effect on the others).
void set_prepared(OpParams& p, std::span<const uint8_t> prepared);

}  // namespace aisrv::engine::cpu
