// aisrv tests — the results the models' authors documented (../shared/testdata/SOURCES.md, EXPECTED.md "check"),
// checked on the CPU engine's outputs: person / no person, hello_world's sine within 0.05, micro_speech's words,
// the LSTM digits, the MobileNets' labels and scores.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "testdata.hpp"

using namespace aisrv;

namespace {

std::vector<int> run(const std::string& model, const std::string& input) {
  auto b = engine::cpu::CpuBackend::create({});
  REQUIRE(b.ok());
  auto info = (*b)->load(test::read_file(test::testdata_path(model)), {});
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? "" : info.error().what()));
  const auto in = test::read_file(test::testdata_path(input));
  REQUIRE((*b)->input(0).size() == in.size());
  std::memcpy((*b)->input(0).data(), in.data(), in.size());
  REQUIRE((*b)->invoke({}).ok());
  const bool is_signed = info->outputs[0].dtype == protocol::DType::int8;
  std::vector<int> out;
  for (uint8_t v : (*b)->output(0)) out.push_back(is_signed ? static_cast<int8_t>(v) : v);
  return out;
}

int argmax(const std::vector<int>& v) { return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin()); }

const std::string kMicro = "tflite/tensorflow__tflite-micro/";
const std::string kIo = "reference_io/tflite-micro/";

}  // namespace

TEST_CASE("person_detect: person, no person, and the all-zero input's documented scores") {
  const std::string m = kMicro + "person_detect.tflite";
  auto p = run(m, kIo + "person_int8_96x96.bin");
  CHECK(p[1] > p[0]);  // [notperson, person]
  auto n = run(m, kIo + "no_person_int8_96x96.bin");
  CHECK(n[0] > n[1]);
  CHECK(run(m, kIo + "zeros_96x96.bin") == std::vector<int>{72, -72});  // "person score:-72 no person score 72"
}

TEST_CASE("hello_world: |sin(x) - y| <= 0.05") {
  for (const char* x : {"0.77", "1.57", "2.3", "3.14"}) {
    auto y = run(kMicro + "hello_world_int8.tflite", kIo + "hello_world_in_" + x + ".bin");
    const double value = (y[0] - 5) * 0.00829095673;
    CHECK_MESSAGE(std::abs(std::sin(std::stod(x)) - value) <= 0.05, "x=" << x << " y=" << value);
  }
}

TEST_CASE("micro_speech: yes, no, silence, silence") {
  const std::string m = kMicro + "micro_speech_quantized.tflite";  // labels: silence, unknown, yes, no
  CHECK(argmax(run(m, kIo + "yes_1000ms_features_int8_49x40.bin")) == 2);
  CHECK(argmax(run(m, kIo + "no_1000ms_features_int8_49x40.bin")) == 3);
  CHECK(argmax(run(m, kIo + "silence_1000ms_features_int8_49x40.bin")) == 0);
  CHECK(argmax(run(m, kIo + "noise_1000ms_features_int8_49x40.bin")) == 0);
}

TEST_CASE("trained_lstm: sample N is digit N") {
  for (int n = 0; n < 10; ++n)
    CHECK(argmax(run(kMicro + "trained_lstm_int8.tflite",
                     kIo + "mnist_sample" + std::to_string(n) + "_int8_1x28x28.bin")) == n);
}

TEST_CASE("keras_lstm_mnist_ptq: nine with score > 0.7") {
  auto y = run("tflite/google-coral__test_data/keras_lstm_mnist_ptq.tflite",
               "reference_io/coral/mnist_nine_u8_28x28.bin");
  CHECK(argmax(y) == 9);
  CHECK(y[9] * 0.00390625 > 0.7);
}

TEST_CASE("mobilenet_v1_0.25_128_quant: tiger cat (283) in the top 3 with score > 0.25") {
  auto y = run("tflite/google-coral__test_data/mobilenet_v1_0.25_128_quant.tflite",
               "reference_io/coral/cat_coral_u8_128x128x3.bin");
  CHECK(argmax(y) == 283);
  CHECK(y[283] * 0.00390625 > 0.25);
}

TEST_CASE("mobilenet_v2_quantized_1x3x224x224: the dog image is a Samoyed (258)") {
  auto y = run(kMicro + "mobilenet_v2_quantized_1x3x224x224.tflite", kIo + "dog_int8_1x3x224x224.bin");
  CHECK(argmax(y) == 258);
}
