// aisrv tests — the demo model (tools/make-demo-model): a real TFLite INT8 flatbuffer that the CPU engine loads and
// that classifies every rendered digit correctly and confidently, also with noise added to the image.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "demo_model.hpp"

using namespace aisrv;

namespace {

std::vector<int8_t> classify(engine::cpu::CpuBackend& b, const std::vector<int8_t>& image) {
  auto in = b.input(0);
  REQUIRE(in.size() == image.size());
  std::memcpy(in.data(), image.data(), image.size());
  auto t = b.invoke({});
  REQUIRE(t.ok());
  auto out = b.output(0);
  return std::vector<int8_t>(reinterpret_cast<const int8_t*>(out.data()),
                             reinterpret_cast<const int8_t*>(out.data()) + out.size());
}

}  // namespace

TEST_CASE("the demo model classifies every rendered digit") {
  const auto model = demo::build_digit_model();
  CHECK(std::string(reinterpret_cast<const char*>(model.data()) + 4, 4) == "TFL3");
  auto b = engine::cpu::CpuBackend::create({});
  REQUIRE(b.ok());
  auto info = (*b)->load(model, {});
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? "" : info.error().what()));
  CHECK(info->inputs[0].shape == std::vector<int32_t>{1, 28, 28, 1});
  CHECK(info->outputs[0].shape == std::vector<int32_t>{1, 10});
  CHECK(info->layer_count == 4);
  for (int d = 0; d < 10; ++d) {
    const auto scores = classify(**b, demo::render_digit(d));
    CHECK_MESSAGE(demo::argmax(scores) == d, "digit " << d);
    const double p = (scores[static_cast<size_t>(d)] + 128) / 256.0;
    CHECK_MESSAGE(p > 0.85, "digit " << d << " probability " << p);
  }
}

TEST_CASE("the demo model still classifies noisy digits") {
  auto b = engine::cpu::CpuBackend::create({});
  REQUIRE(b.ok());
  REQUIRE((*b)->load(demo::build_digit_model(), {}).ok());
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> noise(-40, 40);
  for (int d = 0; d < 10; ++d)
    for (int round = 0; round < 5; ++round) {
      auto image = demo::render_digit(d);
      for (auto& px : image) px = static_cast<int8_t>(std::clamp(px + noise(rng), -128, 127));
      CHECK_MESSAGE(demo::argmax(classify(**b, image)) == d, "digit " << d << " round " << round);
    }
}

TEST_CASE("glyphs are distinct, so the constructed classifier has a margin") {
  for (int a = 0; a < 10; ++a)
    for (int c = a + 1; c < 10; ++c) {
      int hamming = 0;
      for (int r = 0; r < demo::kGlyphHeight; ++r)
        for (int col = 0; col < demo::kGlyphWidth; ++col)
          hamming += demo::glyph_ink(a, r, col) != demo::glyph_ink(c, r, col);
      CHECK_MESSAGE(hamming > 0, a << " vs " << c);
    }
}
