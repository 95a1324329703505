// aisrv tests — the real models of the shared test data, damaged: truncated at many cut points and with random byte
// flips. Every damaged model is refused with model_error or, when the damage left a valid model (a flipped weight),
// loads and runs; nothing crashes under ASan/UBSan. Also models the engine does not implement (XMOS custom
// operators) are refused by name.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "testdata.hpp"

using namespace aisrv;

namespace {

struct Tally {
  int refused = 0, ran = 0;
};

void try_model(const std::vector<uint8_t>& model, Tally& t) {
  auto b = engine::cpu::CpuBackend::create({});
  REQUIRE(b.ok());
  auto r = (*b)->load(model, {});
  if (!r.ok()) {
    CHECK(r.error().code == Errc::model_error);
    CHECK_FALSE(r.error().message.empty());
    ++t.refused;
    return;
  }
  for (size_t i = 0; i < r->inputs.size(); ++i) std::fill((*b)->input(i).begin(), (*b)->input(i).end(), 1);
  CHECK((*b)->invoke({}).ok());
  ++t.ran;
}

}  // namespace

TEST_CASE("real models truncated at many cut points are refused") {
  for (const char* name : {"tflite/tensorflow__tflite-micro/micro_speech_quantized.tflite",
                           "tflite/tensorflow__tflite-micro/person_detect.tflite"}) {
    const auto model = test::read_file(test::testdata_path(name));
    Tally t;
    for (size_t cut = 0; cut < model.size(); cut += (cut < 64 ? 1 : model.size() / 150 + 1)) {
      std::vector<uint8_t> m(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(cut));
      try_model(m, t);
    }
    CHECK_MESSAGE(t.ran == 0, name);
    MESSAGE(std::string(name) << ": " << t.refused << " truncations refused");
  }
}

TEST_CASE("real models with random byte flips are refused or run") {
  std::mt19937 rng(4242);
  for (const char* name : {"tflite/tensorflow__tflite-micro/micro_speech_quantized.tflite",
                           "tflite/tensorflow__tflite-micro/trained_lstm_int8.tflite",
                           "tflite/tensorflow__tflite-micro/hello_world_int8.tflite"}) {
    const auto model = test::read_file(test::testdata_path(name));
    Tally t;
    for (int round = 0; round < 150; ++round) {
      auto m = model;
      // Flip bytes in the first 4 KiB (the tables, offsets, shapes and options) most of the time, anywhere else
      // sometimes (mostly weights).
      const size_t span = (round % 4 == 0) ? m.size() : std::min<size_t>(m.size(), 4096);
      for (int f = 0; f < 1 + round % 6; ++f) m[rng() % span] ^= static_cast<uint8_t>(1u << (rng() % 8));
      try_model(m, t);
    }
    MESSAGE(std::string(name) << ": " << t.refused << " refused, " << t.ran << " loaded and ran");
    CHECK(t.refused > 0);
  }
}

TEST_CASE("XMOS models with custom operators are refused by name") {
  const std::string dir = "tflite/xmos__aisrv/";
  if (!std::filesystem::exists(test::testdata_path(dir + "model_quant_xcore.tflite"))) {
    MESSAGE("XMOS models not present in this test data");
    return;
  }
  auto b = engine::cpu::CpuBackend::create({});
  auto r = (*b)->load(test::read_file(test::testdata_path(dir + "model_quant_xcore.tflite")), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("is CUSTOM 'XC_") != std::string::npos);
}
