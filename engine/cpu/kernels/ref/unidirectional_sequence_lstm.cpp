// aisrv CPU engine, reference kernels — UNIDIRECTIONAL_SEQUENCE_LSTM (integer): per time step, four gates
// FC(input) + FC(hidden) in Q3.12, sigmoid (input/forget/output) or tanh (cell) to Q0.15; then
// cell = forget * cell + input * cell_gate (saturating, optionally clipped) and hidden = output * tanh(cell),
// hidden copied to the output sequence. Batch-major input runs one batch at a time, time-major all batches per step.
#include <algorithm>
#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

// int8 [rows, depth] x weights[state, depth] -> int16 [rows, state] in Q3.12.
void gate_fc(const int8_t* input, int32_t rows, int32_t depth, const int8_t* weights, int32_t state,
             const int32_t* bias, int32_t input_offset, int32_t filter_offset, int32_t multiplier, int32_t shift,
             int16_t* out) {
  for (int32_t r = 0; r < rows; ++r) {
    const int8_t* in_row = input + int64_t{r} * depth;
    for (int32_t o = 0; o < state; ++o) {
      const int8_t* w_row = weights + int64_t{o} * depth;
      int32_t acc = 0;
      for (int32_t d = 0; d < depth; ++d)
        acc += (int32_t{w_row[d]} + filter_offset) * (int32_t{in_row[d]} + input_offset);
      if (bias) acc += bias[o];
      out[int64_t{r} * state + o] = static_cast<int16_t>(fp::requantize(acc, multiplier, shift, 0, -32768, 32767));
    }
  }
}

void add_saturating(const int16_t* a, const int16_t* b, int64_t n, int16_t* out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<int16_t>(std::clamp(int32_t{a[i]} + int32_t{b[i]}, -32768, 32767));
}

template <typename Out>
void multiply(const int16_t* a, const int16_t* b, int64_t n, const LstmMulParams& m, Out* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v =
        m.output_offset + fp::multiply_by_quantized_multiplier(int32_t{a[i]} * int32_t{b[i]}, m.multiplier, m.shift);
    out[i] = static_cast<Out>(std::clamp(v, m.act_min, m.act_max));
  }
}

struct Step {
  const int8_t* input;   // [rows, input_dim]
  int8_t* hidden;        // [rows, state]
  int16_t* cell;         // [rows, state]
  int8_t* output;        // [rows, state]
  int32_t rows;
};

void lstm_step(const LstmParams& p, const Step& s, int16_t* buffers[4]) {
  const int64_t n = int64_t{s.rows} * p.state_dim;
  int16_t* fc_scratch = buffers[3];
  auto gate = [&](LstmGate which, int16_t* out, bool tanh_activation) {
    const LstmGateParams& g = p.gates[static_cast<size_t>(which)];
    gate_fc(s.input, s.rows, p.input_dim, g.input_weights, p.state_dim, g.bias, g.input_offset,
            g.input_filter_offset, g.input_multiplier, g.input_shift, out);
    gate_fc(s.hidden, s.rows, p.state_dim, g.recurrent_weights, p.state_dim, nullptr, g.recurrent_offset,
            g.recurrent_filter_offset, g.recurrent_multiplier, g.recurrent_shift, fc_scratch);
    add_saturating(out, fc_scratch, n, out);
    for (int64_t i = 0; i < n; ++i)
      out[i] = tanh_activation ? fp::tanh_int16(out[i], 0, 0) : fp::logistic_int16(out[i], 0, 0);
  };

  int16_t* forget_gate = buffers[0];
  int16_t* input_gate = buffers[1];
  int16_t* cell_gate = buffers[2];
  gate(LstmGate::forget, forget_gate, false);
  gate(LstmGate::input, input_gate, false);
  gate(LstmGate::cell, cell_gate, true);

  // cell = forget * cell + input * cell_gate
  multiply(forget_gate, s.cell, n, p.forget_cell_mul, s.cell);
  int16_t* input_times_cell = buffers[1];
  multiply(input_gate, cell_gate, n, p.input_cell_mul, input_times_cell);
  add_saturating(s.cell, input_times_cell, n, s.cell);
  if (p.clip_cell)
    for (int64_t i = 0; i < n; ++i)
      s.cell[i] = std::max<int16_t>(std::min<int16_t>(p.quantized_cell_clip, s.cell[i]),
                                    static_cast<int16_t>(-p.quantized_cell_clip));

  // hidden = output_gate * tanh(cell)
  int16_t* output_gate = buffers[1];
  gate(LstmGate::output, output_gate, false);
  int16_t* tanh_cell = buffers[0];
  int32_t left_shift = 15 + p.cell_state_scale_power - 3;
  int32_t multiplier = 0;
  if (left_shift < 0) {
    left_shift = -left_shift;
    multiplier = 3;
  }
  for (int64_t i = 0; i < n; ++i) tanh_cell[i] = fp::tanh_int16(s.cell[i], multiplier, left_shift);
  multiply(tanh_cell, output_gate, n, p.output_hidden_mul, s.hidden);
  std::memcpy(s.output, s.hidden, static_cast<size_t>(n));
}

}  // namespace

void ReferenceKernelBackend::lstm(const LstmParams& p) {
  const int32_t rows = p.time_major ? p.batches : 1;
  int16_t* buffers[4];
  const size_t buffer_elems = static_cast<size_t>(rows) * static_cast<size_t>(p.state_dim);
  for (size_t i = 0; i < 4; ++i) buffers[i] = reinterpret_cast<int16_t*>(p.scratch.data()) + i * buffer_elems;
  if (p.time_major) {
    for (int32_t t = 0; t < p.time_steps; ++t) {
      const int64_t step = int64_t{t} * p.batches;
      lstm_step(p, Step{p.input + step * p.input_dim, p.hidden_state, p.cell_state, p.output + step * p.state_dim,
                        rows},
                buffers);
    }
    return;
  }
  for (int32_t b = 0; b < p.batches; ++b) {
    for (int32_t t = 0; t < p.time_steps; ++t) {
      const int64_t step = int64_t{b} * p.time_steps + t;
      lstm_step(p, Step{p.input + step * p.input_dim, p.hidden_state + int64_t{b} * p.state_dim,
                        p.cell_state + int64_t{b} * p.state_dim, p.output + step * p.state_dim, rows},
                buffers);
    }
  }
}

}  // namespace aisrv::engine::cpu
