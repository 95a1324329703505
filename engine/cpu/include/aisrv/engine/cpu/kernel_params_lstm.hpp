// aisrv CPU engine — kernel parameter structs: the integer UNIDIRECTIONAL_SEQUENCE_LSTM.
// Included by kernel_params.hpp (which states the conventions every struct follows); not meant to be included alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace aisrv::engine::cpu {

// UNIDIRECTIONAL_SEQUENCE_LSTM, full-integer: int8 activations and weights, int32 gate biases, int16 cell state,
// no peephole / projection / layer norm, tanh cell activation (the TFLite Micro integer LSTM). Gate FCs produce
// Q3.12 int16, gates are Q0.15 after sigmoid / tanh. Gate order: input, forget, cell, output.
struct LstmGateParams {
  const int8_t* input_weights = nullptr;      // [state_dim, input_dim]
  const int8_t* recurrent_weights = nullptr;  // [state_dim, state_dim]
  const int32_t* bias = nullptr;              // [state_dim] (added in the input FC), may be null
  int32_t input_offset = 0, input_filter_offset = 0, input_multiplier = 0, input_shift = 0;
  int32_t recurrent_offset = 0, recurrent_filter_offset = 0, recurrent_multiplier = 0, recurrent_shift = 0;
};
struct LstmMulParams {  // element-wise product of two Q0.15 (or Q0.15 x cell) vectors, requantized
  int32_t multiplier = 0, shift = 0, output_offset = 0, act_min = 0, act_max = 0;
};
struct LstmParams {
  int32_t batches = 0, time_steps = 0, input_dim = 0, state_dim = 0;
  bool time_major = false;
  const int8_t* input = nullptr;  // [batch, time, input] or [time, batch, input]
  int8_t* output = nullptr;       // same layout, state_dim wide
  int8_t* hidden_state = nullptr;   // [batch, state_dim], variable tensor (read and updated)
  int16_t* cell_state = nullptr;    // [batch, state_dim], variable tensor (read and updated)
  std::array<LstmGateParams, 4> gates;  // input, forget, cell, output
  LstmMulParams forget_cell_mul, input_cell_mul, output_hidden_mul;
  int32_t cell_state_scale_power = 0;   // cell scale = 2^power
  bool clip_cell = false;               // clamp the cell state to [-quantized_cell_clip, quantized_cell_clip]
  int16_t quantized_cell_clip = 0;
  std::span<uint8_t> scratch;
  std::span<const uint8_t> prepared;  // backend-specific data made once at load (KernelBackend::prepare)
};

enum class LstmGate { input = 0, forget = 1, cell = 2, output = 3 };

}  // namespace aisrv::engine::cpu
