// aisrv CPU engine, optimised kernels — UNIDIRECTIONAL_SEQUENCE_LSTM (integer), the reference kernel's step in the
// same order with the work moved out of the loop. At prepare time the four gates' input weights become one stack of
// int16 rows (+ filter offset; gate g's rows at g·state), the recurrent weights another, both padded to 8 columns and
// 8 rows; each gate's input offset is folded into its bias (sum (w+fo)(x+io) = sum (w+fo)x + io·sum (w+fo), equal in
// wrapping int32 arithmetic), so the input and hidden rows are widened once per step with no offset; the per-row
// multipliers and shifts are laid out beside them; and the three activations (sigmoid and tanh of the Q3.12 gates,
// tanh of the cell state with its scale) become 65536-entry tables filled from the fixed-point functions themselves,
// so a lookup is the reference's value by construction. Per step and batch row: two stacked gate FCs (gate_row: dot
// products and vector requantization to int16), saturating adds and lookups, and the element-wise products (mul)
// from the kernel table. Rows are independent in the reference (each gate FC and every element-wise operation works
// per row), so time-major input runs row by row too.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu::opt {

namespace {

constexpr size_t kTable = 65536;

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

// Prepared block: header, input weights [rows][kx], recurrent weights [rows][kh], then six int32 arrays of `rows`
// (input bias, recurrent bias, input multiplier, input shift, recurrent multiplier, recurrent shift), then the tables.
struct LstmLayout {
  size_t kx = 0, kh = 0, rows = 0;  // padded input depth, padded state depth, 4·state padded to 8
  size_t recurrent_at = 0, arrays_at = 0, tables_at = 0, total = 0;
};

LstmLayout layout_of(const LstmParams& p) {
  LstmLayout l;
  l.kx = round_up(static_cast<size_t>(p.input_dim), 8);
  l.kh = round_up(static_cast<size_t>(p.state_dim), 8);
  l.rows = round_up(4 * static_cast<size_t>(p.state_dim), 8);
  l.recurrent_at = kPreparedHeaderBytes + round_up(l.rows * l.kx * sizeof(int16_t), 64);
  l.arrays_at = l.recurrent_at + round_up(l.rows * l.kh * sizeof(int16_t), 64);
  l.tables_at = l.arrays_at + round_up(6 * l.rows * sizeof(int32_t), 64);
  l.total = l.tables_at + 3 * kTable * sizeof(int16_t);
  return l;
}

bool shape_usable(const LstmParams& p) {
  if (p.input_dim <= 0 || p.state_dim <= 0 || p.batches <= 0 || p.time_steps < 0) return false;
  const long double bytes =
      (static_cast<long double>(p.input_dim) + 16) * (static_cast<long double>(p.state_dim) + 16) * 64;
  return bytes < kMaxKernelBytes;
}

bool requant_usable(int32_t multiplier, int32_t shift) { return multiplier >= 0 && shift >= -31 && shift <= 30; }

bool params_usable(const LstmParams& p) {
  for (const auto& g : p.gates) {
    if (!g.input_weights || !g.recurrent_weights) return false;
    if (!requant_usable(g.input_multiplier, g.input_shift) || !requant_usable(g.recurrent_multiplier, g.recurrent_shift))
      return false;
    // weights + filter offset must fit the int16 lanes with room for the pairwise sums (int8 models: |w + fo| <= 255)
    if (std::abs(g.input_filter_offset) > 128 || std::abs(g.recurrent_filter_offset) > 128) return false;
  }
  for (const auto* m : {&p.forget_cell_mul, &p.input_cell_mul, &p.output_hidden_mul})
    if (!requant_usable(m->multiplier, m->shift)) return false;
  return true;
}

// The cell-state tanh's input scaling, as the reference computes it.
void cell_tanh_scaling(const LstmParams& p, int32_t& multiplier, int32_t& left_shift) {
  left_shift = 15 + p.cell_state_scale_power - 3;
  multiplier = 0;
  if (left_shift < 0) {
    left_shift = -left_shift;
    multiplier = 3;
  }
}

struct Prepared {
  const int16_t* input_weights;
  const int16_t* recurrent_weights;
  const int32_t *input_bias, *recurrent_bias, *input_multiplier, *input_shift, *recurrent_multiplier, *recurrent_shift;
  const int16_t* sigmoid;
  const int16_t* tanh;
  const int16_t* cell_tanh;
};

Prepared view(const LstmLayout& l, const uint8_t* base) {
  Prepared v{};
  v.input_weights = reinterpret_cast<const int16_t*>(base + kPreparedHeaderBytes);
  v.recurrent_weights = reinterpret_cast<const int16_t*>(base + l.recurrent_at);
  const auto* arrays = reinterpret_cast<const int32_t*>(base + l.arrays_at);
  v.input_bias = arrays;
  v.recurrent_bias = arrays + l.rows;
  v.input_multiplier = arrays + 2 * l.rows;
  v.input_shift = arrays + 3 * l.rows;
  v.recurrent_multiplier = arrays + 4 * l.rows;
  v.recurrent_shift = arrays + 5 * l.rows;
  const auto* tables = reinterpret_cast<const int16_t*>(base + l.tables_at);
  v.sigmoid = tables;
  v.tanh = tables + kTable;
  v.cell_tanh = tables + 2 * kTable;
  return v;
}

// Rows of one FC, stacked by gate: (w + fo) as int16, and the bias with the input offset folded in.
void stack_weights(const int8_t* weights, size_t depth, size_t padded, int32_t filter_offset, int32_t input_offset,
                   const int32_t* bias, size_t first_row, size_t state, int16_t* out, int32_t* bias_out) {
  for (size_t o = 0; o < state; ++o) {
    int64_t sum = 0;
    for (size_t k = 0; k < depth; ++k) {
      const int32_t w = weights[o * depth + k] + filter_offset;
      out[(first_row + o) * padded + k] = static_cast<int16_t>(w);
      sum += w;
    }
    const int64_t folded = int64_t{bias ? bias[o] : 0} + int64_t{input_offset} * sum;
    bias_out[first_row + o] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(folded)));
  }
}

inline int16_t sat_add(int16_t a, int16_t b) {
  return static_cast<int16_t>(std::clamp(int32_t{a} + int32_t{b}, -32768, 32767));
}

inline int16_t lookup(const int16_t* table, int16_t x) { return table[static_cast<uint16_t>(x)]; }

}  // namespace

size_t lstm_prepared_bytes(const LstmParams& p) {
  if (!shape_usable(p)) return 0;
  return layout_of(p).total;
}

size_t lstm_scratch_bytes(const LstmParams& p) {
  if (!shape_usable(p)) return 0;
  const LstmLayout l = layout_of(p);
  // widened input and hidden rows, the stacked gates (input FC, recurrent FC) and one temporary of state + 8
  return (l.kx + l.kh + 2 * l.rows + static_cast<size_t>(p.state_dim) + 8) * sizeof(int16_t);
}

void lstm_prepare(const LstmParams& p, std::span<uint8_t> prepared) {
  PreparedHeader h;
  h.magic = kPreparedMagic;
  if (prepared.size() < kPreparedHeaderBytes) return;
  std::memset(prepared.data(), 0, prepared.size());
  if (!shape_usable(p) || !params_usable(p) || prepared.size() != layout_of(p).total) {
    std::memcpy(prepared.data(), &h, sizeof h);
    return;
  }
  const LstmLayout l = layout_of(p);
  const size_t state = static_cast<size_t>(p.state_dim), depth = static_cast<size_t>(p.input_dim);
  auto* w_in = reinterpret_cast<int16_t*>(prepared.data() + kPreparedHeaderBytes);
  auto* w_rec = reinterpret_cast<int16_t*>(prepared.data() + l.recurrent_at);
  auto* arrays = reinterpret_cast<int32_t*>(prepared.data() + l.arrays_at);
  for (size_t g = 0; g < 4; ++g) {
    const LstmGateParams& gp = p.gates[g];
    stack_weights(gp.input_weights, depth, l.kx, gp.input_filter_offset, gp.input_offset, gp.bias, g * state, state,
                  w_in, arrays);
    stack_weights(gp.recurrent_weights, state, l.kh, gp.recurrent_filter_offset, gp.recurrent_offset, nullptr,
                  g * state, state, w_rec, arrays + l.rows);
    for (size_t o = g * state; o < (g + 1) * state; ++o) {
      arrays[2 * l.rows + o] = gp.input_multiplier;
      arrays[3 * l.rows + o] = gp.input_shift;
      arrays[4 * l.rows + o] = gp.recurrent_multiplier;
      arrays[5 * l.rows + o] = gp.recurrent_shift;
    }
  }
  auto* tables = reinterpret_cast<int16_t*>(prepared.data() + l.tables_at);
  int32_t cell_multiplier = 0, cell_shift = 0;
  cell_tanh_scaling(p, cell_multiplier, cell_shift);
  for (size_t i = 0; i < kTable; ++i) {
    const auto x = static_cast<int16_t>(static_cast<uint16_t>(i));
    tables[i] = fp::logistic_int16(x, 0, 0);
    tables[kTable + i] = fp::tanh_int16(x, 0, 0);
    tables[2 * kTable + i] = fp::tanh_int16(x, cell_multiplier, cell_shift);
  }
  h.usable = 1;
  std::memcpy(prepared.data(), &h, sizeof h);
}

bool lstm_run(const LstmParams& p, const OptKernels& k) {
  if (p.prepared.size() < kPreparedHeaderBytes || !shape_usable(p)) return false;
  PreparedHeader h;
  std::memcpy(&h, p.prepared.data(), sizeof h);
  const LstmLayout l = layout_of(p);
  if (h.magic != kPreparedMagic || !h.usable || p.prepared.size() != l.total) return false;
  if (p.scratch.size() < lstm_scratch_bytes(p)) return false;
  const Prepared w = view(l, p.prepared.data());

  auto* x16 = reinterpret_cast<int16_t*>(p.scratch.data());
  int16_t* h16 = x16 + l.kx;
  int16_t* gates = h16 + l.kh;          // rows: the stacked pre-activations, then the gates
  int16_t* recurrent = gates + l.rows;  // rows: the recurrent FC
  int16_t* temp = recurrent + l.rows;
  std::fill(x16, x16 + l.kx + l.kh, int16_t{0});  // the padding columns stay zero

  const size_t state = static_cast<size_t>(p.state_dim), depth = static_cast<size_t>(p.input_dim);
  const auto n = static_cast<int64_t>(state);
  const int16_t* input_gate = gates + static_cast<size_t>(LstmGate::input) * state;
  const int16_t* forget_gate = gates + static_cast<size_t>(LstmGate::forget) * state;
  const int16_t* cell_gate = gates + static_cast<size_t>(LstmGate::cell) * state;
  const int16_t* output_gate = gates + static_cast<size_t>(LstmGate::output) * state;
  const auto rows = static_cast<int32_t>(l.rows);
  auto step = [&](const int8_t* input, int8_t* hidden, int16_t* cell, int8_t* output) {
    // the four gates' pre-activations from the old hidden state, then sigmoid (tanh for the cell gate)
    k.widen[0](reinterpret_cast<const uint8_t*>(input), x16, depth, 0);
    k.widen[0](reinterpret_cast<const uint8_t*>(hidden), h16, state, 0);
    k.gate_row(GateRow{x16, w.input_weights, static_cast<int32_t>(l.kx), rows, w.input_bias, w.input_multiplier,
                       w.input_shift, gates});
    k.gate_row(GateRow{h16, w.recurrent_weights, static_cast<int32_t>(l.kh), rows, w.recurrent_bias,
                       w.recurrent_multiplier, w.recurrent_shift, recurrent});
    for (size_t i = 0; i < 2 * state; ++i) gates[i] = lookup(w.sigmoid, sat_add(gates[i], recurrent[i]));
    for (size_t i = 2 * state; i < 3 * state; ++i) gates[i] = lookup(w.tanh, sat_add(gates[i], recurrent[i]));
    for (size_t i = 3 * state; i < 4 * state; ++i) gates[i] = lookup(w.sigmoid, sat_add(gates[i], recurrent[i]));
    // cell = forget * cell + input * cell_gate (saturating), optionally clipped
    const auto& fm = p.forget_cell_mul;
    k.mul(MulSpan{forget_gate, cell, n, fm.multiplier, fm.shift, fm.output_offset, fm.act_min, fm.act_max, cell,
                  nullptr});
    const auto& im = p.input_cell_mul;
    k.mul(MulSpan{input_gate, cell_gate, n, im.multiplier, im.shift, im.output_offset, im.act_min, im.act_max, temp,
                  nullptr});
    for (size_t i = 0; i < state; ++i) cell[i] = sat_add(cell[i], temp[i]);
    if (p.clip_cell)
      for (size_t i = 0; i < state; ++i)
        cell[i] = std::max<int16_t>(std::min<int16_t>(p.quantized_cell_clip, cell[i]),
                                    static_cast<int16_t>(-p.quantized_cell_clip));
    // hidden = output_gate * tanh(cell)
    for (size_t i = 0; i < state; ++i) temp[i] = lookup(w.cell_tanh, cell[i]);
    const auto& om = p.output_hidden_mul;
    k.mul(MulSpan{temp, output_gate, n, om.multiplier, om.shift, om.output_offset, om.act_min, om.act_max, nullptr,
                  hidden});
    std::memcpy(output, hidden, state);
  };

  // Rows in memory order: time-major [time][batch], batch-major [batch][time]; the state row is the batch's.
  const int32_t outer = p.time_major ? p.time_steps : p.batches, inner = p.time_major ? p.batches : p.time_steps;
  for (int32_t o = 0; o < outer; ++o)
    for (int32_t i = 0; i < inner; ++i) {
      const int64_t row = int64_t{o} * inner + i, b = p.time_major ? i : o;
      step(p.input + row * p.input_dim, p.hidden_state + b * p.state_dim, p.cell_state + b * p.state_dim,
           p.output + row * p.state_dim);
    }
  return true;
}

}  // namespace aisrv::engine::cpu::opt
