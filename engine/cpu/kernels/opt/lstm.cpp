// aisrv CPU engine, optimised kernels — UNIDIRECTIONAL_SEQUENCE_LSTM (integer), the reference kernel's step in the
// same order with the work moved out of the loop: at prepare time each gate's input and recurrent weights become
// int16 rows (+ filter offset) padded to 16 columns and 8 rows, the biases a padded copy, and the three activations
// (sigmoid and tanh of the Q3.12 gates, tanh of the cell state with its scale) 65536-entry tables filled from the
// fixed-point functions themselves — so a table lookup is the reference's value by construction. Per step and batch
// row: the gate FCs (gate_row: dot products and vector requantization to int16), saturating adds, table lookups,
// and the element-wise products (mul) from the kernel table. Rows are independent in the reference (each gate FC
// and every element-wise operation works per row), so time-major input runs row by row too.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "aisrv/engine/cpu/fixed_point.hpp"
#include "optimized_backend.hpp"

namespace aisrv::engine::cpu::opt {

namespace {

constexpr size_t kTable = 65536;

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

struct LstmLayout {
  size_t kx = 0, kh = 0, sp = 0;  // padded input depth, padded state depth (columns), padded state (rows)
  size_t gate_bytes = 0;          // one gate: input weights, recurrent weights, bias
  size_t tables_at = 0, total = 0;
};

LstmLayout layout_of(const LstmParams& p) {
  LstmLayout l;
  l.kx = round_up(static_cast<size_t>(p.input_dim), 16);
  l.kh = round_up(static_cast<size_t>(p.state_dim), 16);
  l.sp = round_up(static_cast<size_t>(p.state_dim), 8);
  l.gate_bytes = round_up(l.sp * (l.kx + l.kh) * sizeof(int16_t) + l.sp * sizeof(int32_t), 64);
  l.tables_at = kPreparedHeaderBytes + 4 * l.gate_bytes;
  l.total = l.tables_at + 3 * kTable * sizeof(int16_t);
  return l;
}

bool shape_usable(const LstmParams& p) {
  if (p.input_dim <= 0 || p.state_dim <= 0 || p.batches <= 0 || p.time_steps < 0) return false;
  const long double bytes = (static_cast<long double>(p.input_dim) + 16) * (static_cast<long double>(p.state_dim) + 16) *
                            64;
  return bytes < kMaxKernelBytes;
}

bool requant_usable(int32_t multiplier, int32_t shift) { return multiplier >= 0 && shift >= -31 && shift <= 30; }

bool params_usable(const LstmParams& p) {
  for (const auto& g : p.gates) {
    if (!g.input_weights || !g.recurrent_weights) return false;
    if (!requant_usable(g.input_multiplier, g.input_shift) || !requant_usable(g.recurrent_multiplier, g.recurrent_shift))
      return false;
    // weights + filter offset and values + offsets must fit the int16 lanes exactly (they are within [-255, 255] for
    // every valid int8 model)
    if (std::abs(g.input_filter_offset) > 127 || std::abs(g.recurrent_filter_offset) > 127 ||
        std::abs(g.input_offset) > 128 || std::abs(g.recurrent_offset) > 128)
      return false;
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
  const int16_t* input_weights[4];
  const int16_t* recurrent_weights[4];
  const int32_t* bias[4];
  const int16_t* sigmoid;
  const int16_t* tanh;
  const int16_t* cell_tanh;
};

Prepared view(const LstmLayout& l, const uint8_t* base) {
  Prepared v{};
  for (size_t g = 0; g < 4; ++g) {
    const uint8_t* at = base + kPreparedHeaderBytes + g * l.gate_bytes;
    v.input_weights[g] = reinterpret_cast<const int16_t*>(at);
    v.recurrent_weights[g] = v.input_weights[g] + l.sp * l.kx;
    v.bias[g] = reinterpret_cast<const int32_t*>(v.recurrent_weights[g] + l.sp * l.kh);
  }
  const auto* tables = reinterpret_cast<const int16_t*>(base + l.tables_at);
  v.sigmoid = tables;
  v.tanh = tables + kTable;
  v.cell_tanh = tables + 2 * kTable;
  return v;
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
  // widened input and hidden rows, four gate buffers and one temporary (sp each)
  return (l.kx + l.kh + 5 * l.sp) * sizeof(int16_t);
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
  for (size_t g = 0; g < 4; ++g) {
    const LstmGateParams& gp = p.gates[g];
    uint8_t* at = prepared.data() + kPreparedHeaderBytes + g * l.gate_bytes;
    auto* w_in = reinterpret_cast<int16_t*>(at);
    auto* w_rec = w_in + l.sp * l.kx;
    auto* bias = reinterpret_cast<int32_t*>(w_rec + l.sp * l.kh);
    for (size_t o = 0; o < state; ++o) {
      for (size_t k = 0; k < depth; ++k)
        w_in[o * l.kx + k] = static_cast<int16_t>(gp.input_weights[o * depth + k] + gp.input_filter_offset);
      for (size_t k = 0; k < state; ++k)
        w_rec[o * l.kh + k] = static_cast<int16_t>(gp.recurrent_weights[o * state + k] + gp.recurrent_filter_offset);
      bias[o] = gp.bias ? gp.bias[o] : 0;
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
  int16_t* gates[4];
  for (size_t g = 0; g < 4; ++g) gates[g] = h16 + l.kh + g * l.sp;
  int16_t* temp = gates[3] + l.sp;
  std::fill(x16, x16 + l.kx + l.kh, int16_t{0});  // the padding columns stay zero

  const size_t state = static_cast<size_t>(p.state_dim), depth = static_cast<size_t>(p.input_dim);
  auto step = [&](const int8_t* input, int8_t* hidden, int16_t* cell, int8_t* output) {
    // gate pre-activations from the old hidden state, then the activations (sigmoid; tanh for the cell gate)
    for (size_t g = 0; g < 4; ++g) {
      const LstmGateParams& gp = p.gates[g];
      k.widen[0](reinterpret_cast<const uint8_t*>(input), x16, depth, gp.input_offset);
      k.gate_row(GateRow{x16, w.input_weights[g], static_cast<int32_t>(l.kx), static_cast<int32_t>(l.sp), w.bias[g],
                         gp.input_multiplier, gp.input_shift, gates[g]});
      k.widen[0](reinterpret_cast<const uint8_t*>(hidden), h16, state, gp.recurrent_offset);
      k.gate_row(GateRow{h16, w.recurrent_weights[g], static_cast<int32_t>(l.kh), static_cast<int32_t>(l.sp), nullptr,
                         gp.recurrent_multiplier, gp.recurrent_shift, temp});
      const int16_t* table = g == static_cast<size_t>(LstmGate::cell) ? w.tanh : w.sigmoid;
      int16_t* out = gates[g];
      for (size_t i = 0; i < state; ++i) out[i] = lookup(table, sat_add(out[i], temp[i]));
    }
    const int16_t* input_gate = gates[static_cast<size_t>(LstmGate::input)];
    const int16_t* forget_gate = gates[static_cast<size_t>(LstmGate::forget)];
    const int16_t* cell_gate = gates[static_cast<size_t>(LstmGate::cell)];
    const int16_t* output_gate = gates[static_cast<size_t>(LstmGate::output)];
    const auto n = static_cast<int64_t>(state);
    // cell = forget * cell + input * cell_gate (saturating), optionally clipped
    const auto& fm = p.forget_cell_mul;
    k.mul(MulSpan{forget_gate, cell, n, fm.multiplier, fm.shift, fm.output_offset, fm.act_min, fm.act_max, cell, nullptr});
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

  if (p.time_major) {
    for (int32_t t = 0; t < p.time_steps; ++t)
      for (int32_t b = 0; b < p.batches; ++b) {
        const int64_t row = int64_t{t} * p.batches + b;
        step(p.input + row * p.input_dim, p.hidden_state + int64_t{b} * p.state_dim,
             p.cell_state + int64_t{b} * p.state_dim, p.output + row * p.state_dim);
      }
    return true;
  }
  for (int32_t b = 0; b < p.batches; ++b)
    for (int32_t t = 0; t < p.time_steps; ++t) {
      const int64_t row = int64_t{b} * p.time_steps + t;
      step(p.input + row * p.input_dim, p.hidden_state + int64_t{b} * p.state_dim,
           p.cell_state + int64_t{b} * p.state_dim, p.output + row * p.state_dim);
    }
  return true;
}

}  // namespace aisrv::engine::cpu::opt
