// aisrv tests — small TFLite models built with the project's writer, with contents the tests know exactly: a
// six-operator int8 network, a float-in/float-out model, a tiny integer LSTM, and a template to derive malformed
// variants from.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "tflite_writer.hpp"

namespace aisrv::test {

namespace tw = aisrv::tflite_writer;
using protocol::DType;

inline tw::Quant q(float scale, int64_t zero_point) { return tw::Quant{{scale}, {zero_point}, 0}; }

inline int32_t activation(tw::ModelBuilder& b, const char* name, DType type, std::vector<int32_t> shape,
                          tw::Quant quant) {
  return b.add_tensor(tw::TensorDef{name, type, std::move(shape), std::move(quant), {}, std::nullopt, false});
}

// int8 [1,6,6,1] -> CONV_2D (2 x 3x3 SAME, relu) -> DEPTHWISE_CONV_2D (3x3 SAME) -> CONV_2D (4 x 1x1) ->
// MEAN (axes 1,2) -> FULLY_CONNECTED (4 -> 3) -> SOFTMAX -> int8 [1,3]. Operators 0..5.
inline std::vector<uint8_t> small_net_model() {
  tw::ModelBuilder b;
  const int32_t in = activation(b, "input", DType::int8, {1, 6, 6, 1}, q(1.0f / 64, 0));
  const int32_t w0 = b.add_constant<int8_t>("conv0/w", DType::int8, {2, 3, 3, 1},
                                            {1, 2, 1, 0, 3, 0, -1, 2, -1, 2, -1, 0, 1, 1, 1, 0, -2, 1},
                                            tw::Quant{{0.05f, 0.1f}, {0, 0}, 0});
  const int32_t b0 = b.add_constant<int32_t>("conv0/b", DType::int32, {2}, {10, -20});
  const int32_t t0 = activation(b, "conv0", DType::int8, {1, 6, 6, 2}, q(1.0f / 32, -128));
  b.add_operator(tw::Op::conv_2d, {in, w0, b0}, {t0}, tw::Conv2D{tw::Padding::same, 1, 1, tw::Activation::relu});
  const int32_t w1 = b.add_constant<int8_t>("dw1/w", DType::int8, {1, 3, 3, 2},
                                            {1, 0, 2, 1, 1, 2, 0, 1, 3, 3, 1, 0, 2, 2, 0, 1, 1, -1},
                                            tw::Quant{{0.02f, 0.03f}, {0, 0}, 3});
  const int32_t b1 = b.add_constant<int32_t>("dw1/b", DType::int32, {2}, {0, 5});
  const int32_t t1 = activation(b, "dw1", DType::int8, {1, 6, 6, 2}, q(1.0f / 16, -10));
  b.add_operator(tw::Op::depthwise_conv_2d, {t0, w1, b1}, {t1}, tw::DepthwiseConv2D{tw::Padding::same, 1, 1, 1});
  const int32_t w2 = b.add_constant<int8_t>("pw2/w", DType::int8, {4, 1, 1, 2}, {10, -3, 4, 4, -7, 9, 1, 0},
                                            tw::Quant{{0.01f, 0.01f, 0.02f, 0.04f}, {0, 0, 0, 0}, 0});
  const int32_t t2 = activation(b, "pw2", DType::int8, {1, 6, 6, 4}, q(1.0f / 64, 3));
  b.add_operator(tw::Op::conv_2d, {t1, w2, -1}, {t2}, tw::Conv2D{tw::Padding::valid, 1, 1, tw::Activation::relu6});
  const int32_t axes = b.add_constant<int32_t>("axes", DType::int32, {2}, {1, 2});
  const int32_t t3 = activation(b, "mean3", DType::int8, {1, 4}, q(1.0f / 64, 3));
  b.add_operator(tw::Op::mean, {t2, axes}, {t3}, tw::Reducer{false});
  const int32_t w4 = b.add_constant<int8_t>("fc4/w", DType::int8, {3, 4}, {20, -5, 3, 1, -8, 12, 0, 5, 2, 2, 2, -9},
                                            q(0.05f, 0));
  const int32_t b4 = b.add_constant<int32_t>("fc4/b", DType::int32, {3}, {100, -50, 0}, q(0.05f / 64, 0));
  const int32_t t4 = activation(b, "fc4", DType::int8, {1, 3}, q(0.05f, 0));
  b.add_operator(tw::Op::fully_connected, {t3, w4, b4}, {t4}, tw::FullyConnected{});
  const int32_t out = activation(b, "probabilities", DType::int8, {1, 3}, q(1.0f / 256, -128));
  b.add_operator(tw::Op::softmax, {t4}, {out}, tw::Softmax{1.0f});
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("small test net");
}

// float32 [1,4] -> QUANTIZE (int8) -> FULLY_CONNECTED (4 -> 2) -> DEQUANTIZE -> float32 [1,2].
// With weights {1,2,3,4; -1,0,1,0} (scale 1/16) and bias {8, -16} (scale 1/256): y0 = x.(1,2,3,4)/16 + 1/32,
// y1 = (x2 - x0)/16 - 1/16.
inline std::vector<uint8_t> float_io_model() {
  tw::ModelBuilder b;
  const int32_t in = activation(b, "x", DType::float32, {1, 4}, tw::Quant{});
  const int32_t qin = activation(b, "x_q", DType::int8, {1, 4}, q(1.0f / 16, 0));
  b.add_operator(tw::Op::quantize, {in}, {qin});
  const int32_t w = b.add_constant<int8_t>("w", DType::int8, {2, 4}, {1, 2, 3, 4, -1, 0, 1, 0}, q(1.0f / 16, 0));
  const int32_t bias = b.add_constant<int32_t>("b", DType::int32, {2}, {8, -16}, q(1.0f / 256, 0));
  const int32_t y = activation(b, "y_q", DType::int8, {1, 2}, q(1.0f / 64, 0));
  b.add_operator(tw::Op::fully_connected, {qin, w, bias}, {y}, tw::FullyConnected{});
  const int32_t out = activation(b, "y", DType::float32, {1, 2}, tw::Quant{});
  b.add_operator(tw::Op::dequantize, {y}, {out});
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("float io");
}

// A one-layer integer LSTM: input int8 [batch, time, input_dim] (scale in_scale, zero point 0), state_dim cells,
// weights given as real values (quantized with scale 1/64), biases as reals; hidden state / output scale 1/128,
// cell state scale 2^-11.
struct LstmSpec {
  int32_t batch = 1, time = 3, input_dim = 2, state_dim = 2;
  float in_scale = 1.0f / 64;
  // gate order: input, forget, cell, output; row-major [state_dim, input_dim] / [state_dim, state_dim]
  std::vector<float> w[4], u[4], bias[4];
  float cell_clip = 0.0f;
};

inline std::vector<uint8_t> lstm_model(const LstmSpec& s) {
  tw::ModelBuilder b;
  const float ws = 1.0f / 64;
  const int32_t in = activation(b, "x", DType::int8, {s.batch, s.time, s.input_dim}, q(s.in_scale, 0));
  std::vector<int32_t> inputs(24, -1);
  inputs[0] = in;
  auto quantize = [](const std::vector<float>& v, float scale) {
    std::vector<int8_t> r;
    for (float x : v) r.push_back(static_cast<int8_t>(std::lround(x / scale)));
    return r;
  };
  for (int g = 0; g < 4; ++g) {
    inputs[static_cast<size_t>(1 + g)] =
        b.add_constant<int8_t>("w", DType::int8, {s.state_dim, s.input_dim}, quantize(s.w[g], ws), q(ws, 0));
    inputs[static_cast<size_t>(5 + g)] =
        b.add_constant<int8_t>("u", DType::int8, {s.state_dim, s.state_dim}, quantize(s.u[g], ws), q(ws, 0));
    std::vector<int32_t> bq;
    for (float x : s.bias[g]) bq.push_back(static_cast<int32_t>(std::lround(x / (s.in_scale * ws))));
    inputs[static_cast<size_t>(12 + g)] =
        b.add_constant<int32_t>("b", DType::int32, {s.state_dim}, bq, q(s.in_scale * ws, 0));
  }
  inputs[18] = b.add_tensor(tw::TensorDef{"h", DType::int8, {s.batch, s.state_dim}, q(1.0f / 128, 0), {},
                                          std::nullopt, true});
  inputs[19] = b.add_tensor(tw::TensorDef{"c", DType::int16, {s.batch, s.state_dim}, q(1.0f / 2048, 0), {},
                                          std::nullopt, true});
  const int32_t out = activation(b, "y", DType::int8, {s.batch, s.time, s.state_dim}, q(1.0f / 128, 0));
  b.add_operator(tw::Op::unidirectional_sequence_lstm, inputs, {out},
                 tw::Lstm{.activation = tw::Activation::tanh, .cell_clip = s.cell_clip});
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish("lstm");
}

}  // namespace aisrv::test
