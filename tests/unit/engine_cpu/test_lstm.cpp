// aisrv tests — the integer UNIDIRECTIONAL_SEQUENCE_LSTM on small hand-specified cells: against a float LSTM of
// the same (quantized) weights within one or two output steps, exact on degenerate cases, state reset between
// inferences, cell clipping.
#include <doctest/doctest.h>

#include <cmath>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "test_models.hpp"

using namespace aisrv;
using namespace aisrv::engine;

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Float LSTM over the quantized weights; returns the hidden sequence.
std::vector<double> float_lstm(const test::LstmSpec& s, const std::vector<int8_t>& x_q) {
  auto qw = [](float v) { return std::lround(v * 64) / 64.0; };
  std::vector<double> h(static_cast<size_t>(s.state_dim), 0.0), c(h), out;
  for (int t = 0; t < s.time; ++t) {
    std::vector<double> gate[4];
    for (int g = 0; g < 4; ++g) {
      for (int o = 0; o < s.state_dim; ++o) {
        double z = s.bias[g][static_cast<size_t>(o)];
        for (int i = 0; i < s.input_dim; ++i)
          z += qw(s.w[g][static_cast<size_t>(o * s.input_dim + i)]) * x_q[static_cast<size_t>(t * s.input_dim + i)] *
               s.in_scale;
        for (int j = 0; j < s.state_dim; ++j)
          z += qw(s.u[g][static_cast<size_t>(o * s.state_dim + j)]) * h[static_cast<size_t>(j)];
        gate[g].push_back(g == 2 ? std::tanh(z) : sigmoid(z));
      }
    }
    for (int o = 0; o < s.state_dim; ++o) {
      const auto k = static_cast<size_t>(o);
      c[k] = gate[1][k] * c[k] + gate[0][k] * gate[2][k];
      if (s.cell_clip > 0) c[k] = std::clamp<double>(c[k], -s.cell_clip, s.cell_clip);
      h[k] = std::round(gate[3][k] * std::tanh(c[k]) * 128) / 128;  // the hidden state is int8 (scale 1/128)
      out.push_back(h[k]);
    }
  }
  return out;
}

test::LstmSpec spec() {
  test::LstmSpec s;
  s.w[0] = {0.5f, -0.25f, 1.0f, 0.75f};
  s.w[1] = {0.25f, 0.5f, -0.5f, 0.25f};
  s.w[2] = {1.5f, -1.0f, 0.5f, 1.25f};
  s.w[3] = {-0.5f, 0.5f, 0.75f, -0.25f};
  s.u[0] = {0.25f, 0.0f, -0.5f, 0.5f};
  s.u[1] = {0.5f, 0.25f, 0.0f, 0.75f};
  s.u[2] = {-0.75f, 0.5f, 0.25f, 1.0f};
  s.u[3] = {0.0f, 0.5f, 0.5f, -0.5f};
  s.bias[0] = {0.1f, -0.2f};
  s.bias[1] = {1.0f, 0.5f};
  s.bias[2] = {0.0f, 0.3f};
  s.bias[3] = {0.2f, -0.1f};
  return s;
}

std::vector<int8_t> run(const test::LstmSpec& s, const std::vector<int8_t>& x, int times = 1) {
  auto b = engine::cpu::CpuBackend::create({});
  REQUIRE(b.ok());
  auto info = (*b)->load(test::lstm_model(s), {});
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? "" : info.error().what()));
  std::vector<int8_t> out;
  for (int k = 0; k < times; ++k) {
    auto in = (*b)->input(0);
    REQUIRE(in.size() == x.size());
    std::memcpy(in.data(), x.data(), x.size());
    REQUIRE((*b)->invoke({}).ok());
    auto o = (*b)->output(0);
    out.assign(reinterpret_cast<const int8_t*>(o.data()), reinterpret_cast<const int8_t*>(o.data()) + o.size());
  }
  return out;
}

}  // namespace

TEST_CASE("integer LSTM follows a float LSTM of the same weights") {
  const test::LstmSpec s = spec();
  const std::vector<int8_t> x = {64, -32, 16, 48, -64, 100};  // 3 steps x 2 inputs, scale 1/64
  const auto got = run(s, x);
  const auto want = float_lstm(s, x);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK_MESSAGE(std::abs(got[i] - want[i] * 128) <= 2.0, "element " << i << ": " << int(got[i]) << " vs "
                                                                       << want[i] * 128);
}

TEST_CASE("integer LSTM: all-zero weights and biases give a zero hidden state exactly") {
  test::LstmSpec s;
  for (int g = 0; g < 4; ++g) {
    s.w[g].assign(4, 0.0f);
    s.u[g].assign(4, 0.0f);
    s.bias[g].assign(2, 0.0f);
  }
  const auto got = run(s, {10, 20, 30, 40, 50, 60});
  CHECK(got == std::vector<int8_t>(6, 0));  // cell = 0.5 * 0 + 0.5 * tanh(0) = 0, hidden = 0.5 * tanh(0) = 0
}

TEST_CASE("integer LSTM state restarts with every inference") {
  const test::LstmSpec s = spec();
  const std::vector<int8_t> x = {64, -32, 16, 48, -64, 100};
  CHECK(run(s, x, 1) == run(s, x, 3));
}

TEST_CASE("integer LSTM cell clipping bounds the cell state") {
  test::LstmSpec s;
  for (int g = 0; g < 4; ++g) {
    s.w[g].assign(2, 0.0f);
    s.u[g].assign(1, 0.0f);
    s.bias[g].assign(1, 0.0f);
  }
  s.input_dim = 2;
  s.state_dim = 1;
  s.time = 6;
  s.w[2] = {1.9f, 1.9f};     // cell gate saturates at tanh -> ~1
  s.bias[1] = {8.0f};        // forget gate ~1: the cell accumulates
  s.bias[0] = {8.0f};        // input gate ~1
  s.bias[3] = {8.0f};        // output gate ~1
  const std::vector<int8_t> x(12, 127);
  const auto free_run = run(s, x);
  s.cell_clip = 0.5f;
  const auto clipped = run(s, x);
  // Unclipped, the cell grows past 2 and hidden = tanh(cell) approaches 1 (127 at scale 1/128); clipped at 0.5,
  // hidden stays at tanh(0.5) = 0.46 (59).
  CHECK(free_run.back() >= 120);
  CHECK(std::abs(clipped.back() - 59) <= 1);
}
