// aisrv tests — hostile and malformed models built in the test, each refused with Errc::model_error and a message
// that names the problem: wrong identifier, bad version, truncation at every cut point, random byte flips,
// unsupported and custom operators, cycles and out-of-order operators, tensors written twice, absurd and invalid
// shapes, bad buffer indices / offsets / sizes, bad tensor and opcode indices, quantization that cannot be
// represented, accumulators that would overflow 32 bits. Run under ASan/UBSan: nothing may crash.
#include <doctest/doctest.h>

#include <random>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "test_models.hpp"

using namespace aisrv;
using namespace aisrv::engine;
namespace tw = aisrv::tflite_writer;
using test::activation;
using test::q;

namespace {

Result<ModelInfo> load(const std::vector<uint8_t>& model) {
  auto b = cpu::CpuBackend::create({});
  REQUIRE(b.ok());
  return (*b)->load(model, {});
}

// Loads must fail with model_error and a message containing `needle`.
void refused(const std::vector<uint8_t>& model, std::string_view needle) {
  auto r = load(model);
  REQUIRE_MESSAGE(!r.ok(), "expected a refusal mentioning '" << needle << "'");
  CHECK(r.error().code == Errc::model_error);
  CHECK_MESSAGE(r.error().message.find(needle) != std::string::npos, r.error().message);
}

// A one-operator model: input int8 [1,4] -> FULLY_CONNECTED (4 -> 2) -> output; `edit` may change the builder.
template <typename Edit>
std::vector<uint8_t> fc_model(Edit edit) {
  tw::ModelBuilder b;
  const int32_t in = activation(b, "in", DType::int8, {1, 4}, q(0.1f, 0));
  const int32_t w = b.add_constant<int8_t>("w", DType::int8, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, q(0.1f, 0));
  const int32_t out = activation(b, "out", DType::int8, {1, 2}, q(0.5f, 0));
  edit(b, in, w, out);
  return b.finish();
}

std::vector<uint8_t> plain_fc() {
  return fc_model([](tw::ModelBuilder& b, int32_t in, int32_t w, int32_t out) {
    b.add_operator(tw::Op::fully_connected, {in, w, -1}, {out}, tw::FullyConnected{});
    b.set_inputs({in});
    b.set_outputs({out});
  });
}

}  // namespace

TEST_CASE("the test's base model loads and runs") {
  auto b = cpu::CpuBackend::create({});
  REQUIRE(b.ok());
  REQUIRE((*b)->load(plain_fc(), {}).ok());
  CHECK((*b)->invoke({}).ok());
}

// Offset of field `field` of the root table of a flatbuffer (0 when the field is absent).
static size_t root_field_offset(const std::vector<uint8_t>& fb, int field) {
  auto u32 = [&](size_t at) { return uint32_t{fb[at]} | uint32_t{fb[at + 1]} << 8 | uint32_t{fb[at + 2]} << 16 |
                                     uint32_t{fb[at + 3]} << 24; };
  auto u16 = [&](size_t at) { return static_cast<uint16_t>(fb[at] | fb[at + 1] << 8); };
  const size_t table = u32(0);
  const size_t vtable = table - static_cast<int32_t>(u32(table));
  const uint16_t off = u16(vtable + 4 + 2 * static_cast<size_t>(field));
  return off ? table + off : 0;
}

TEST_CASE("not a TFLite model: identifier, size, version") {
  refused({}, "too short");
  refused({1, 2, 3}, "too short");
  auto m = plain_fc();
  m[4] = 'X';
  refused(m, "file identifier 'XFL3', expected 'TFL3'");
  m = plain_fc();
  const size_t version = root_field_offset(m, 0);
  REQUIRE(version != 0);
  REQUIRE(m[version] == 3);
  m[version] = 4;
  refused(m, "TFLite schema version 4 is not supported");
  tw::ModelBuilder empty;
  refused(empty.finish(), "no outputs");
  std::vector<uint8_t> noise(4096);
  std::mt19937 rng(7);
  for (auto& v : noise) v = static_cast<uint8_t>(rng());
  noise[4] = 'T';
  noise[5] = 'F';
  noise[6] = 'L';
  noise[7] = '3';
  refused(noise, "does not verify");
}

TEST_CASE("truncated at every cut point") {
  const auto m = test::small_net_model();
  for (size_t cut = 0; cut < m.size(); cut += (cut < 256 ? 1 : 7)) {
    std::vector<uint8_t> t(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(cut));
    auto r = load(t);
    CHECK_MESSAGE(!r.ok(), "cut at " << cut);
    if (!r.ok()) CHECK(r.error().code == Errc::model_error);
  }
}

TEST_CASE("random byte flips are refused or run without harm") {
  const auto m = test::small_net_model();
  std::mt19937 rng(2024);
  int refused_count = 0, loaded = 0;
  for (int round = 0; round < 400; ++round) {
    auto x = m;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) x[rng() % x.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    auto b = cpu::CpuBackend::create({});
    auto r = (*b)->load(x, {});
    if (!r.ok()) {
      CHECK(r.error().code == Errc::model_error);
      ++refused_count;
      continue;
    }
    ++loaded;  // a flip in weights or names keeps the model valid: it must still run
    for (size_t i = 0; i < r->inputs.size(); ++i) std::fill((*b)->input(i).begin(), (*b)->input(i).end(), 7);
    auto t = (*b)->invoke({});
    CHECK(t.ok());
  }
  MESSAGE(refused_count << " refused, " << loaded << " loaded and ran");
  CHECK(refused_count > 0);
}

TEST_CASE("unsupported operators are named with their index") {
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
            const int32_t mid = activation(b, "mid", DType::int8, {1, 4}, q(0.1f, 0));
            b.add_operator(tw::Op::reshape, {in}, {mid});
            b.add_operator(static_cast<tw::Op>(73), {mid}, {out});  // LOG: not implemented
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "operator 1 is LOG");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
            b.add_operator(tw::Op::custom, {in}, {out}, {}, "XC_conv2d_v2");
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "operator 0 is CUSTOM 'XC_conv2d_v2'");
}

TEST_CASE("graph order: cycles, reads before writes, double writes, missing outputs") {
  // op0: a -> b reads b2 (produced by op1); op1: b -> b2: a cycle in data flow.
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
            const int32_t x = activation(b, "x", DType::int8, {1, 4}, q(0.1f, 0));
            b.add_operator(tw::Op::add, {in, out}, {x}, tw::Add{});
            b.add_operator(tw::Op::add, {x, in}, {out}, tw::Add{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "operator 0 (ADD) reads tensor 2 'out' before any operator produces it");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
            b.add_operator(tw::Op::reshape, {in}, {out});
            b.add_operator(tw::Op::reshape, {in}, {out});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "operator 1 (RESHAPE) writes tensor 2 'out', which operator 0 already produced");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t w, int32_t) {
            b.add_operator(tw::Op::reshape, {in}, {w});
            b.set_inputs({in});
            b.set_outputs({w});
          }),
          "which is a constant");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "graph output tensor 2 'out' is never produced");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t w, int32_t out) {
            b.add_operator(tw::Op::fully_connected, {in, w}, {}, tw::FullyConnected{});
            b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "operator 0 (FULLY_CONNECTED) has no outputs");
}

TEST_CASE("indices out of range") {
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t w, int32_t out) {
            b.add_operator(tw::Op::fully_connected, {in, w, 99}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "refers to tensor 99, but subgraph 0 has 3 tensors");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t w, int32_t out) {
            b.add_operator(tw::Op::fully_connected, {in, w, -2}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "refers to tensor -2");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t w, int32_t out) {
            b.add_operator_raw(5, {in, w}, {out});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "operator 0 uses operator code 5, but the model has 0 codes");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t w, int32_t out) {
            b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
            b.set_inputs({in, 7});
            b.set_outputs({out});
          }),
          "a graph input refers to tensor 7");
}

TEST_CASE("absurd and invalid shapes") {
  auto with_shape = [](std::vector<int32_t> shape) {
    return fc_model([shape](tw::ModelBuilder& b, int32_t, int32_t, int32_t out) {
      const int32_t big = activation(b, "big", DType::int8, shape, q(0.1f, 0));
      b.add_operator(tw::Op::reshape, {big}, {out});
      b.set_inputs({big});
      b.set_outputs({out});
    });
  };
  refused(with_shape({1 << 20, 1 << 20}), "absurd shape");
  refused(with_shape({2147483647, 2147483647, 2147483647}), "absurd shape");
  refused(with_shape({1, -4}), "dimension 1 of size -4");
  refused(with_shape({0, 4}), "dimension 0 of size 0");
  refused(with_shape({1, 1, 1, 1, 1, 1, 1}), "rank 7");
  refused(with_shape({3, 3}), "input has 9 elements but the output 2");  // RESHAPE size mismatch
}

TEST_CASE("bad buffers: index, size, external offset") {
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
            const int32_t w = b.add_tensor(tw::TensorDef{"w2", DType::int8, {2, 4}, q(0.1f, 0), {}, 42u, false});
            b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "refers to buffer 42");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
            const int32_t w = b.add_constant<int8_t>("w2", DType::int8, {2, 4}, {1, 2, 3}, q(0.1f, 0));
            b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "buffer holds 3 bytes, the shape needs 8");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
            const uint32_t ext = b.add_buffer({}, 1u << 30, 8);
            const int32_t w = b.add_tensor(tw::TensorDef{"w2", DType::int8, {2, 4}, q(0.1f, 0), {}, ext, false});
            b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "bad buffer offset");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
            const uint32_t ext = b.add_buffer({}, ~uint64_t{0} - 2, 8);  // offset + size overflows
            const int32_t w = b.add_tensor(tw::TensorDef{"w2", DType::int8, {2, 4}, q(0.1f, 0), {}, ext, false});
            b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "bad buffer offset");
}

TEST_CASE("external buffers inside the file are read") {
  // Constant weights stored after the flatbuffer (the >2 GiB layout): point a buffer at bytes we append.
  std::vector<uint8_t> tail = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<uint8_t> model;
  for (int pass = 0; pass < 2; ++pass) {
    const uint64_t offset = pass == 0 ? 1000000 : model.size();
    model = fc_model([&](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
      const uint32_t ext = b.add_buffer({}, offset, 8);
      const int32_t w = b.add_tensor(tw::TensorDef{"w2", DType::int8, {2, 4}, q(0.1f, 0), {}, ext, false});
      b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
      b.set_inputs({in});
      b.set_outputs({out});
    });
  }
  model.insert(model.end(), tail.begin(), tail.end());
  auto b = cpu::CpuBackend::create({});
  REQUIRE((*b)->load(model, {}).ok());
  std::fill((*b)->input(0).begin(), (*b)->input(0).end(), 10);  // x = 1.0 each
  REQUIRE((*b)->invoke({}).ok());
  // acc = 10 * (1+2+3+4) = 100 at scale 0.1 x 0.1 -> 1.0 -> 2 at output scale 0.5; row 2: 10 * 26 -> 2.6 -> 5.
  CHECK(static_cast<int8_t>((*b)->output(0)[0]) == 2);
  CHECK(static_cast<int8_t>((*b)->output(0)[1]) == 5);
}

TEST_CASE("operand types, counts and quantization that the kernels cannot serve") {
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t w, int32_t) {
            const int32_t f = activation(b, "f", DType::float32, {1, 2}, tw::Quant{});
            b.add_operator(tw::Op::fully_connected, {in, w}, {f}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({f});
          }),
          "input and output");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t w, int32_t out) {
            b.add_operator(tw::Op::fully_connected, {in}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
            (void)w;
          }),
          "operator 0 (FULLY_CONNECTED): has 1 inputs, expected 2 to 3");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t, int32_t out) {
            const int32_t w = b.add_constant<int8_t>("w2", DType::int8, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8},
                                                     q(0.0f, 0));
            b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "filter scale 0 is not positive");
  refused(fc_model([](tw::ModelBuilder& b, int32_t, int32_t w, int32_t out) {
            const int32_t in = activation(b, "in2", DType::int8, {1, 4}, q(1e12f, 0));
            b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "is too large");
  refused(fc_model([](tw::ModelBuilder& b, int32_t, int32_t w, int32_t out) {
            const int32_t in = activation(b, "in2", DType::int8, {1, 4}, q(0.1f, 300));
            b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "zero point 300, outside the range of INT8");
  refused(fc_model([](tw::ModelBuilder& b, int32_t in, int32_t w, int32_t out) {
            b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::Conv2D{});
            b.set_inputs({in});
            b.set_outputs({out});
          }),
          "carries builtin options of union type 1");
}

TEST_CASE("a fully connected layer whose accumulator could overflow 32 bits is refused") {
  const int32_t depth = 70000;  // 70000 x 127 x 255 > 2^31 (input zero point -128: |q + 128| up to 255)
  tw::ModelBuilder b;
  const int32_t in = activation(b, "in", DType::int8, {1, depth}, q(0.1f, -128));
  const int32_t w = b.add_constant<int8_t>("w", DType::int8, {1, depth}, std::vector<int8_t>(depth, 127),
                                           q(0.001f, 0));
  const int32_t out = activation(b, "out", DType::int8, {1, 1}, q(1.0f, 0));
  b.add_operator(tw::Op::fully_connected, {in, w}, {out}, tw::FullyConnected{});
  b.set_inputs({in});
  b.set_outputs({out});
  refused(b.finish(), "worst-case accumulator exceeds 32 bits");
}

TEST_CASE("window arithmetic that does not match the declared output is refused") {
  tw::ModelBuilder b;
  const int32_t in = activation(b, "in", DType::int8, {1, 5, 5, 1}, q(0.1f, 0));
  const int32_t w = b.add_constant<int8_t>("w", DType::int8, {1, 3, 3, 1}, std::vector<int8_t>(9, 1), q(0.1f, 0));
  const int32_t out = activation(b, "out", DType::int8, {1, 5, 5, 1}, q(0.1f, 0));
  b.add_operator(tw::Op::conv_2d, {in, w}, {out}, tw::Conv2D{tw::Padding::valid, 1, 1});
  b.set_inputs({in});
  b.set_outputs({out});
  refused(b.finish(), "output is 5x5 but the window arithmetic gives 3x3");
  tw::ModelBuilder z;
  const int32_t zin = activation(z, "in", DType::int8, {1, 5, 5, 1}, q(0.1f, 0));
  const int32_t zw = z.add_constant<int8_t>("w", DType::int8, {1, 3, 3, 1}, std::vector<int8_t>(9, 1), q(0.1f, 0));
  const int32_t zout = activation(z, "out", DType::int8, {1, 5, 5, 1}, q(0.1f, 0));
  z.add_operator(tw::Op::conv_2d, {zin, zw}, {zout}, tw::Conv2D{tw::Padding::same, 0, 1});
  z.set_inputs({zin});
  z.set_outputs({zout});
  refused(z.finish(), "stride 0");
}
