// aisrv CPU engine — UNIDIRECTIONAL_SEQUENCE_LSTM preparation: the full-integer LSTM of TFLite Micro (int8 input,
// output and hidden state, int8 per-tensor weights, int32 biases, int16 cell state with a power-of-two scale, tanh
// cell activation, optional cell clipping; no peephole, projection or layer normalisation). The gate FCs write
// Q3.12 (scale 2^-12), the gate activations Q0.15 (scale 2^-15), as TFLite Micro fixes them.
#include <cmath>

#include "conv_common.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

namespace {

constexpr float kGateInputScale = 0.000244140625f;    // 2^-12
constexpr float kGateOutputScale = 0.000030517578125f;  // 2^-15

// Operand positions (fixed by the format).
constexpr size_t kInput = 0;
constexpr size_t kInputWeights[4] = {1, 2, 3, 4};       // input, forget, cell, output gate
constexpr size_t kRecurrentWeights[4] = {5, 6, 7, 8};
constexpr size_t kBiases[4] = {12, 13, 14, 15};
constexpr size_t kHiddenState = 18;
constexpr size_t kCellState = 19;
constexpr const char* kGateNames[4] = {"input", "forget", "cell", "output"};

Result<LstmMulParams> mul_params(const PrepareContext& ctx, float scale1, float scale2, float out_scale,
                                 int32_t out_zp, DType out_type) {
  const double real = static_cast<double>(scale1) * static_cast<double>(scale2) / static_cast<double>(out_scale);
  const QuantizedMultiplier q = AISRV_TRY(checked_multiplier(real, ctx.where()));
  LstmMulParams m;
  m.multiplier = q.multiplier;
  m.shift = q.shift;
  m.output_offset = out_zp;
  m.act_min = type_min(out_type);
  m.act_max = type_max(out_type);
  return m;
}

}  // namespace

Result<OpParams> prepare_unidirectional_sequence_lstm(const PrepareContext& ctx) {
  AISRV_TRY(ctx.check_counts(24, 24, 1));
  const auto& opt = std::get<LstmOptions>(ctx.op().options);
  for (size_t i : {9, 10, 11})
    if (ctx.optional_input(i)) return ctx.error("peephole connections (input {}) are not supported", i);
  for (size_t i : {16, 17})
    if (ctx.optional_input(i)) return ctx.error("projection (input {}) is not supported", i);
  for (size_t i : {20, 21, 22, 23})
    if (ctx.optional_input(i)) return ctx.error("layer normalisation (input {}) is not supported", i);
  if (opt.activation != Activation::tanh)
    return ctx.error("cell activation {} is not supported (only TANH)", static_cast<int>(opt.activation));

  const TensorSpec& in = *AISRV_TRY(ctx.input(kInput, "input"));
  const TensorSpec& hidden = *AISRV_TRY(ctx.input(kHiddenState, "output state"));
  const TensorSpec& cell = *AISRV_TRY(ctx.input(kCellState, "cell state"));
  const TensorSpec& out = ctx.output();
  AISRV_TRY(ctx.expect_type(in, {DType::int8}, "input"));
  AISRV_TRY(ctx.expect_type(hidden, {DType::int8}, "output state"));
  AISRV_TRY(ctx.expect_type(cell, {DType::int16}, "cell state"));
  AISRV_TRY(ctx.expect_type(out, {DType::int8}, "output"));
  if (!hidden.is_variable || !cell.is_variable)
    return ctx.error("the output state and cell state must be variable tensors");
  if (in.shape.rank != 3) return ctx.error("input '{}' has rank {}, expected 3", in.name, in.shape.rank);

  LstmParams p;
  p.time_major = opt.time_major;
  p.batches = opt.time_major ? in.shape[1] : in.shape[0];
  p.time_steps = opt.time_major ? in.shape[0] : in.shape[1];
  p.input_dim = in.shape[2];
  const TensorSpec& forget_w = *AISRV_TRY(ctx.input(kInputWeights[1], "input-to-forget weights"));
  if (forget_w.shape.rank != 2) return ctx.error("weights '{}' have rank {}, expected 2", forget_w.name,
                                                 forget_w.shape.rank);
  p.state_dim = forget_w.shape[0];
  const int64_t state_elements = int64_t{p.batches} * p.state_dim;
  if (hidden.shape.elements() != state_elements || cell.shape.elements() != state_elements)
    return ctx.error("state tensors hold {} and {} elements; expected {} batches x {}", hidden.shape.elements(),
                     cell.shape.elements(), p.batches, p.state_dim);
  if (out.shape.rank != 3 || out.shape[0] != in.shape[0] || out.shape[1] != in.shape[1] ||
      out.shape[2] != p.state_dim)
    return ctx.error("output '{}' must be [{}, {}, {}]", out.name, in.shape[0], in.shape[1], p.state_dim);

  const float in_scale = AISRV_TRY(ctx.scale(in, "input"));
  const int32_t in_zp = AISRV_TRY(ctx.zero_point(in, "input"));
  const float hidden_scale = AISRV_TRY(ctx.scale(hidden, "output state"));
  const int32_t hidden_zp = AISRV_TRY(ctx.zero_point(hidden, "output state"));
  const float cell_scale = AISRV_TRY(ctx.scale(cell, "cell state"));
  if (AISRV_TRY(ctx.zero_point(cell, "cell state")) != 0) return ctx.error("cell state zero point must be 0");
  // (out scale/zero point are not used: the LSTM copies its hidden state to the output, as TFLite Micro does)

  for (size_t g = 0; g < 4; ++g) {
    const std::string wname = fmt::format("input-to-{} weights", kGateNames[g]);
    const std::string rname = fmt::format("recurrent-to-{} weights", kGateNames[g]);
    const TensorSpec& w = *AISRV_TRY(ctx.input(kInputWeights[g], wname));
    const TensorSpec& rw = *AISRV_TRY(ctx.input(kRecurrentWeights[g], rname));
    AISRV_TRY(ctx.input(kBiases[g], fmt::format("{} gate bias", kGateNames[g])));
    for (const TensorSpec* t : {&w, &rw}) {
      AISRV_TRY(ctx.expect_type(*t, {DType::int8}, "weights"));
      AISRV_TRY(ctx.expect_constant(*t, "weights"));
    }
    if (w.shape.rank != 2 || w.shape[0] != p.state_dim || w.shape[1] != p.input_dim)
      return ctx.error("{} '{}' must be [{}, {}]", wname, w.name, p.state_dim, p.input_dim);
    if (rw.shape.rank != 2 || rw.shape[0] != p.state_dim || rw.shape[1] != p.state_dim)
      return ctx.error("{} '{}' must be [{}, {}]", rname, rw.name, p.state_dim, p.state_dim);

    LstmGateParams& gate = p.gates[g];
    const float w_scale = AISRV_TRY(ctx.scale(w, wname));
    const float rw_scale = AISRV_TRY(ctx.scale(rw, rname));
    gate.input_offset = -in_zp;
    gate.input_filter_offset = -AISRV_TRY(ctx.zero_point(w, wname));
    gate.recurrent_offset = -hidden_zp;
    gate.recurrent_filter_offset = -AISRV_TRY(ctx.zero_point(rw, rname));
    // TFLite Micro's gate FCs: per-tensor multiplier with the scale product taken in float, no bias check.
    const QuantizedMultiplier qi = AISRV_TRY(checked_multiplier(
        static_cast<double>(in_scale * w_scale) / static_cast<double>(kGateInputScale), ctx.where()));
    const QuantizedMultiplier qr = AISRV_TRY(checked_multiplier(
        static_cast<double>(hidden_scale * rw_scale) / static_cast<double>(kGateInputScale), ctx.where()));
    gate.input_multiplier = qi.multiplier;
    gate.input_shift = qi.shift;
    gate.recurrent_multiplier = qr.multiplier;
    gate.recurrent_shift = qr.shift;
    gate.bias = AISRV_TRY(bias_data(ctx, kBiases[g], p.state_dim));
    AISRV_TRY(check_accumulator_bound(ctx, w, gate.input_filter_offset, p.state_dim, p.input_dim, p.input_dim, 1,
                                      max_abs_offset_value(DType::int8, gate.input_offset), gate.bias));
    AISRV_TRY(check_accumulator_bound(ctx, rw, gate.recurrent_filter_offset, p.state_dim, p.state_dim, p.state_dim,
                                      1, max_abs_offset_value(DType::int8, gate.recurrent_offset), nullptr));
    gate.input_weights = static_cast<const int8_t*>(ctx.read_input(kInputWeights[g]));
    gate.recurrent_weights = static_cast<const int8_t*>(ctx.read_input(kRecurrentWeights[g]));
  }

  p.forget_cell_mul = AISRV_TRY(mul_params(ctx, kGateOutputScale, cell_scale, cell_scale, 0, DType::int16));
  p.input_cell_mul = AISRV_TRY(mul_params(ctx, kGateOutputScale, kGateOutputScale, cell_scale, 0, DType::int16));
  p.output_hidden_mul =
      AISRV_TRY(mul_params(ctx, kGateOutputScale, kGateOutputScale, hidden_scale, hidden_zp, DType::int8));

  // Cell scale 2^power (TFLite Micro rounds log2 in float); the tanh input scaling needs power in [-40, 2].
  const float log2_scale = std::log(cell_scale) * (1.0f / std::log(2.0f));
  const float power = std::round(log2_scale);
  if (!(power >= -40.0f && power <= 2.0f))
    return ctx.error("cell state scale {:g} (2^{}) is outside the supported range 2^-40 .. 2^2", cell_scale, power);
  p.cell_state_scale_power = static_cast<int32_t>(power);
  if (opt.cell_clip > 0.0f) {
    const double clip = static_cast<double>(opt.cell_clip) / static_cast<double>(cell_scale);
    p.clip_cell = true;
    p.quantized_cell_clip = static_cast<int16_t>(std::min(std::max(clip, -32768.0), 32767.0));
  } else if (!(opt.cell_clip >= 0.0f)) {
    return ctx.error("cell clip {} is negative", opt.cell_clip);
  }

  p.input = static_cast<const int8_t*>(ctx.read_input(kInput));
  p.hidden_state = static_cast<int8_t*>(ctx.write(ctx.input_index(kHiddenState)));
  p.cell_state = static_cast<int16_t*>(ctx.write(ctx.input_index(kCellState)));
  p.output = static_cast<int8_t*>(ctx.write_output());
  return OpParams{std::move(p)};
}

}  // namespace aisrv::engine::cpu
