// aisrv tests — folding a PAD into the VALID convolution that reads it (pad_folding.hpp): which graphs fold and
// which do not (graph output, second reader, SAME window, padded batch or channels, PADV2 with another value,
// requantizing PAD), and that a folded model gives exactly the reference backend's unfolded output for random
// shapes, paddings, strides, dilations and zero points, at every SIMD level and on two threads, with the PAD's
// timing entry kept (0 ns) and its output no longer in the arena.
#include <doctest/doctest.h>

#include <random>

#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "interpreter.hpp"
#include "test_models.hpp"

using namespace aisrv;
using namespace aisrv::engine::cpu;
namespace tw = aisrv::tflite_writer;
using test::activation;
using engine::Placement;

namespace {

struct Case {
  bool depthwise = true;
  DType type = DType::int8;
  int32_t h = 9, w = 8, c = 4;
  int32_t filter = 3, stride = 2, dilation = 1;
  std::array<int32_t, 8> pads{0, 0, 0, 1, 0, 1, 0, 0};  // [batch, height, width, channels] x (before, after)
  int64_t zero_point = -3;
  bool v2 = false;
  int64_t v2_value = -3;             // PADV2's constant
  tw::Padding window = tw::Padding::valid;
  bool pad_output_is_graph_output = false;
  bool second_reader = false;        // an ADD also reads the padded tensor
  int64_t pad_output_zero_point = 0; // differs from zero_point: a PAD that would requantize (never folded)
  bool requantize = false;
  uint32_t seed = 1;
};

int32_t out_extent(int32_t padded, int32_t filter, int32_t stride, int32_t dilation) {
  return (padded - ((filter - 1) * dilation + 1)) / stride + 1;
}

std::vector<uint8_t> build(const Case& k) {
  tw::ModelBuilder b;
  std::mt19937 rng(k.seed);
  const tw::Quant qa = test::q(0.05f, k.zero_point);
  const tw::Quant qp = k.requantize ? test::q(0.05f, k.pad_output_zero_point) : qa;
  const int32_t in = activation(b, "input", k.type, {1, k.h, k.w, k.c}, qa);
  const int32_t ph = k.h + k.pads[2] + k.pads[3], pw = k.w + k.pads[4] + k.pads[5];
  const int32_t pads = b.add_constant<int32_t>("paddings", DType::int32, {4, 2},
                                               std::vector<int32_t>(k.pads.begin(), k.pads.end()));
  const int32_t padded =
      activation(b, "padded", k.type, {1 + k.pads[0] + k.pads[1], ph, pw, k.c + k.pads[6] + k.pads[7]}, qp);
  if (k.v2) {
    const int32_t value = k.type == DType::int8
                              ? b.add_constant<int8_t>("value", k.type, {1}, {static_cast<int8_t>(k.v2_value)}, qp)
                              : b.add_constant<uint8_t>("value", k.type, {1}, {static_cast<uint8_t>(k.v2_value)}, qp);
    b.add_operator(tw::Op::padv2, {in, pads, value}, {padded});
  } else {
    b.add_operator(tw::Op::pad, {in, pads}, {padded});
  }
  const int32_t cin = k.c + k.pads[6] + k.pads[7];
  const int32_t oc = k.depthwise ? cin : 5;
  const int32_t oh = k.window == tw::Padding::same ? (ph + k.stride - 1) / k.stride
                                                   : out_extent(ph, k.filter, k.stride, k.dilation);
  const int32_t ow = k.window == tw::Padding::same ? (pw + k.stride - 1) / k.stride
                                                   : out_extent(pw, k.filter, k.stride, k.dilation);
  const int32_t fc = k.depthwise ? oc : cin;
  std::vector<int32_t> shape = k.depthwise ? std::vector<int32_t>{1, k.filter, k.filter, oc}
                                           : std::vector<int32_t>{oc, k.filter, k.filter, fc};
  const size_t n = static_cast<size_t>(k.filter) * k.filter * static_cast<size_t>(k.depthwise ? oc : oc * fc);
  std::uniform_int_distribution<int> wv(k.type == DType::int8 ? -127 : 0, k.type == DType::int8 ? 127 : 255);
  std::vector<float> scales(static_cast<size_t>(oc), 0.01f);
  int32_t filter = 0;
  if (k.type == DType::int8) {
    std::vector<int8_t> v(n);
    for (auto& x : v) x = static_cast<int8_t>(wv(rng));
    filter = b.add_constant<int8_t>("w", k.type, shape, v,
                                    tw::Quant{scales, std::vector<int64_t>(scales.size(), 0), k.depthwise ? 3 : 0});
  } else {
    std::vector<uint8_t> v(n);
    for (auto& x : v) x = static_cast<uint8_t>(wv(rng));
    filter = b.add_constant<uint8_t>("w", k.type, shape, v, test::q(0.01f, 131));
  }
  std::vector<int32_t> bias(static_cast<size_t>(oc));
  for (auto& x : bias) x = static_cast<int32_t>(rng() % 2001) - 1000;
  const int32_t bt = b.add_constant<int32_t>("b", DType::int32, {oc}, bias, test::q(0.05f * 0.01f, 0));
  const int32_t out = activation(b, "out", k.type, {1, oh, ow, oc}, test::q(0.04f, k.type == DType::int8 ? 5 : 120));
  if (k.depthwise)
    b.add_operator(tw::Op::depthwise_conv_2d, {padded, filter, bt}, {out},
                   tw::DepthwiseConv2D{k.window, k.stride, k.stride, 1, tw::Activation::none, k.dilation, k.dilation});
  else
    b.add_operator(tw::Op::conv_2d, {padded, filter, bt}, {out},
                   tw::Conv2D{k.window, k.stride, k.stride, tw::Activation::none, k.dilation, k.dilation});
  std::vector<int32_t> outputs{out};
  if (k.second_reader) {
    const int32_t sum = activation(b, "sum", k.type, {1, ph, pw, cin}, qp);
    b.add_operator(tw::Op::add, {padded, padded}, {sum}, tw::Add{});
    outputs.push_back(sum);
  }
  if (k.pad_output_is_graph_output) outputs.push_back(padded);
  b.set_inputs({in});
  b.set_outputs(outputs);
  return b.finish("pad folding case");
}

struct Loaded {
  std::unique_ptr<KernelBackend> backend;
  std::unique_ptr<Interpreter> model;
};

Loaded load(const std::vector<uint8_t>& model, std::unique_ptr<KernelBackend> backend,
            Placement placement = Placement::external, KernelBackend* checker = nullptr) {
  InterpreterConfig config;
  config.arena_budget = uint64_t{1} << 28;
  config.placement = placement;
  config.primary = backend.get();
  config.checker = checker;
  auto loaded = Interpreter::load(model, config);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().what());
  return Loaded{std::move(backend), std::move(loaded).value()};
}

// Outputs of every graph output after one inference on `input`; the timings in `layers`.
std::vector<std::vector<uint8_t>> run(Loaded& l, const std::vector<uint8_t>& input, KernelBackend* checker = nullptr,
                                      std::vector<engine::LayerTime>* layers = nullptr) {
  auto in = l.model->input(0);
  REQUIRE(in.size() == input.size());
  std::copy(input.begin(), input.end(), in.begin());
  engine::InvokeContext ctx;
  auto result = l.model->invoke(*l.backend, checker, ctx);
  REQUIRE_MESSAGE(result.ok(), result.error().what());
  if (layers) *layers = *result;
  std::vector<std::vector<uint8_t>> outs;
  for (size_t i = 0; i < l.model->info().outputs.size(); ++i) {
    const auto o = l.model->output(i);
    outs.emplace_back(o.begin(), o.end());
  }
  return outs;
}

std::vector<uint8_t> random_input(const Loaded& l, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(l.model->info().inputs[0].bytes);
  for (auto& x : v) x = static_cast<uint8_t>(rng());
  return v;
}

size_t folds(const Case& k) {
  return load(build(k), make_optimized_kernel_backend(SimdLevel::portable)).model->folded_pads().size();
}

}  // namespace

TEST_CASE("PAD before a VALID convolution is folded; other graphs are left as they are") {
  Case k;
  CHECK(folds(k) == 1);
  k.depthwise = false;
  CHECK(folds(k) == 1);  // CONV_2D too
  k = Case{};
  k.v2 = true;
  CHECK(folds(k) == 1);  // PADV2 padding with the zero point
  k.v2_value = 7;
  CHECK(folds(k) == 0);  // ... with another value
  k = Case{};
  k.window = tw::Padding::same;
  CHECK(folds(k) == 0);
  k = Case{};
  k.pad_output_is_graph_output = true;
  CHECK(folds(k) == 0);
  k = Case{};
  k.second_reader = true;
  CHECK(folds(k) == 0);
  k = Case{};
  k.pads = {0, 0, 1, 1, 1, 1, 1, 0};  // channels padded
  CHECK(folds(k) == 0);
  k = Case{};
  k.requantize = true;
  k.pad_output_zero_point = 4;  // the padded tensor is quantized differently from the PAD's input
  CHECK(folds(k) == 0);
  // The reference backend keeps every operator as the model has it.
  CHECK(load(build(Case{}), std::make_unique<ReferenceKernelBackend>()).model->folded_pads().empty());
}

TEST_CASE("a folded PAD keeps its timing entry (0 ns) and its output leaves the arena") {
  Case k;
  k.h = 40;
  k.w = 40;
  k.c = 16;
  const auto model = build(k);
  Loaded ref = load(model, std::make_unique<ReferenceKernelBackend>());
  Loaded opt = load(model, make_optimized_kernel_backend(SimdLevel::portable));
  REQUIRE(opt.model->folded_pads().size() == 1);
  CHECK(opt.model->folded_pads()[0].pad_op == 0);
  CHECK(opt.model->folded_pads()[0].into_op == 1);
  CHECK(opt.model->folded_pads()[0].padding.bottom == 1);
  CHECK(opt.model->folded_pads()[0].padding.right == 1);
  CHECK(opt.model->info().layer_count == ref.model->info().layer_count);
  // Without the padded 41x41x16 tensor the arena holds the input and the output only.
  CHECK(opt.model->plan().arena_bytes < ref.model->plan().arena_bytes);
  std::vector<engine::LayerTime> layers;
  const auto input = random_input(opt, 3);
  CHECK(run(opt, input, nullptr, &layers) == run(ref, input));
  REQUIRE(layers.size() == 2);
  CHECK(layers[0].op == "PAD");
  CHECK(layers[0].ns == 0);
  CHECK(layers[1].op == "DEPTHWISE_CONV_2D");
}

TEST_CASE("folded PADs give the reference's unfolded output bit for bit (random cases, every level, 2 threads)") {
  std::mt19937 rng(20261126);
  auto pick = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1)); };
  for (int round = 0; round < 60; ++round) {
    Case k;
    k.seed = static_cast<uint32_t>(round + 1);
    k.depthwise = round % 3 != 0;
    k.type = round % 4 == 1 ? DType::uint8 : DType::int8;
    k.h = pick(1, 12);
    k.w = pick(1, 12);
    k.c = k.depthwise ? pick(1, 40) : pick(1, 12);
    k.filter = pick(1, 3);
    k.stride = pick(1, 3);
    k.dilation = pick(1, 2);
    for (int d = 2; d < 6; ++d) k.pads[static_cast<size_t>(d)] = pick(0, 3);
    k.zero_point = k.type == DType::int8 ? pick(-128, 127) : pick(0, 255);
    k.v2 = round % 5 == 2;
    k.v2_value = k.zero_point;
    const int32_t eff = (k.filter - 1) * k.dilation + 1;
    if (k.h + k.pads[2] + k.pads[3] < eff || k.w + k.pads[4] + k.pads[5] < eff) continue;  // no output
    CAPTURE(round);
    CAPTURE(k.depthwise);
    CAPTURE(k.h);
    CAPTURE(k.w);
    CAPTURE(k.c);
    CAPTURE(k.filter);
    CAPTURE(k.stride);
    CAPTURE(k.dilation);
    const auto model = build(k);
    Loaded ref = load(model, std::make_unique<ReferenceKernelBackend>());
    const auto input = random_input(ref, k.seed);
    const auto want = run(ref, input);
    for (SimdLevel level : available_simd_levels()) {
      CAPTURE(simd_level_name(level));
      Loaded opt = load(model, make_optimized_kernel_backend(level));
      REQUIRE(opt.model->folded_pads().size() == 1);
      CHECK(run(opt, input) == want);
    }
    Loaded threaded = load(model, make_optimized_kernel_backend(detect_simd_level(), 2));
    CHECK(run(threaded, input) == want);
    // The model placed in the arena is read again there: the same rewrite applies.
    Loaded placed = load(model, make_optimized_kernel_backend(detect_simd_level()), Placement::arena);
    CHECK(placed.model->folded_pads().size() == 1);
    CHECK(run(placed, input) == want);
    // Verify mode: the reference checks the folded convolution operator by operator.
    ReferenceKernelBackend checker;
    Loaded verified = load(model, make_optimized_kernel_backend(detect_simd_level()), Placement::external, &checker);
    CHECK(run(verified, input, &checker) == want);
  }
}
