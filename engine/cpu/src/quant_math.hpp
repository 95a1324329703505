// aisrv CPU engine — load-time quantization arithmetic: turning real-valued scale ratios into the (multiplier,
// shift) pairs and clamp ranges the integer kernels use, with the exact conventions of TensorFlow Lite's
// quantization utilities (so that the kernels are bit-exact with TFLite Micro's reference kernels).
#pragma once

#include <cstdint>

#include "aisrv/protocol/result.hpp"
#include "graph.hpp"

namespace aisrv::engine::cpu {

struct QuantizedMultiplier {
  int32_t multiplier = 0;  // Q0.31, in [2^30, 2^31) or 0
  int shift = 0;           // power of two exponent: value = multiplier * 2^(shift - 31)
};

// frexp-based decomposition of a real multiplier (TFLite QuantizeMultiplier): multiplier rounded to 31 bits, a
// mantissa that rounds up to 2^31 is renormalised, multipliers below 2^-31 become 0.
QuantizedMultiplier quantize_multiplier(double real_multiplier);

// The same, refused (with a message naming `what`) when the multiplier is not finite, negative, or too large for
// the kernels' shift range [-31, 30].
Result<QuantizedMultiplier> checked_multiplier(double real_multiplier, std::string_view what);

// Softmax input scaling (TFLite PreprocessSoftmaxScaling with double rounding) and the matching diff_min
// (-CalculateInputRadius).
struct SoftmaxScaling {
  int32_t multiplier = 0;
  int left_shift = 0;
  int32_t diff_min = 0;
};
Result<SoftmaxScaling> softmax_scaling(double beta, double input_scale, int input_integer_bits);

// TFLite's quantization of a real value in an output's scale: zero_point + round(value / scale) in float.
int32_t quantize_value(float scale, int32_t zero_point, float value);

// Clamp range of a fused activation for an output of type `type` (int8, uint8 or int16) with (scale, zero_point)
// (TFLite CalculateActivationRangeQuantized). Refuses activations that have no integer form (TANH, SIGN_BIT).
struct ActivationRange {
  int32_t min = 0, max = 0;
};
Result<ActivationRange> activation_range(Activation act, DType type, float scale, int32_t zero_point);

// Lowest / highest value of an integer element type.
int32_t type_min(DType type);
int32_t type_max(DType type);

}  // namespace aisrv::engine::cpu
