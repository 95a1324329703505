// aisrv CPU engine — out-of-line parts of the fixed-point arithmetic: the int16 sigmoid / tanh of the integer LSTM
// (linear interpolation in the 256-entry table of sigmoid(i / 24) that fixed_point.hpp generates at compile time,
// TFLite's int16 logistic / tanh scheme).
#include "aisrv/engine/cpu/fixed_point.hpp"

namespace aisrv::engine::cpu::fp {

int16_t logistic_int16(int16_t input, int32_t input_multiplier, int32_t input_left_shift) {
  if (input_multiplier == 0) {  // power-of-two input scale
    input_multiplier = 3 << input_left_shift;
    input_left_shift = 0;
  }
  const int32_t round = input_left_shift > 0 ? 1 << (input_left_shift - 1) : 0;
  const int32_t x = (int32_t{input} * input_multiplier + round) >> input_left_shift;
  const uint32_t abs_x = static_cast<uint32_t>(x < 0 ? -x : x);
  const uint32_t uh = abs_x >> 9;  // table step: 2^9 input units
  uint32_t result;
  if (uh >= 255) {
    result = 0x7FFFu << 10;
  } else {
    const uint32_t ua = kSigmoidTableQ16[uh];
    const uint32_t ub = kSigmoidTableQ16[uh + 1];
    const uint32_t ut = abs_x & 0x1FFu;
    result = (ua << 9) + ut * (ub - ua);
  }
  result = x >= 0 ? result + (1u << 9) : (1u << (16 + 9)) - result + (1u << 9) - 1;
  return static_cast<int16_t>(result >> 10);
}

int16_t tanh_int16(int16_t input, int32_t input_multiplier, int32_t input_left_shift) {
  if (input_multiplier == 0) {  // power-of-two input scale
    input_multiplier = 3 << input_left_shift;
    input_left_shift = 0;
  }
  const int32_t round = input_left_shift > 0 ? 1 << (input_left_shift - 1) : 0;
  const int32_t x = (int32_t{input} * input_multiplier + round) >> input_left_shift;
  const uint32_t abs_x = static_cast<uint32_t>(x < 0 ? -x : x);
  const uint32_t uh = abs_x >> 8;  // tanh(x) = 2 sigmoid(2x) - 1: half the table step
  int32_t result;
  if (uh >= 255) {
    result = 0xFFFF << 8;
  } else {
    const uint32_t ua = kSigmoidTableQ16[uh];
    const uint32_t ub = kSigmoidTableQ16[uh + 1];
    const uint32_t ut = abs_x & 0xFFu;
    result = static_cast<int32_t>((ua << 8) + ut * (ub - ua));
  }
  result = x >= 0 ? result - (1 << (14 + 9)) + (1 << (9 - 2)) : -result + (1 << (14 + 9)) + (1 << (9 - 2)) - 1;
  return static_cast<int16_t>(result >> (9 - 1));
}

}  // namespace aisrv::engine::cpu::fp
