// aisrv demo model — glyphs, rendering and the construction of the digit classifier (see demo_model.hpp).
#include "demo_model.hpp"

#include <algorithm>
#include <cmath>

#include "tflite_writer.hpp"

namespace aisrv::demo {

namespace tw = aisrv::tflite_writer;
using protocol::DType;

namespace {

// 5x7 glyphs, one string per row, '#' = ink.
constexpr std::array<std::array<const char*, kGlyphHeight>, 10> kGlyphs = {{
    {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."},
    {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
    {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"},
    {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."},
    {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."},
    {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
    {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."},
    {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
    {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."},
    {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."},
}};

constexpr std::array<std::string_view, 10> kNames = {"zero", "one", "two",   "three", "four",
                                                     "five", "six", "seven", "eight", "nine"};

// Placement of the glyph on the 9x9 grid of cells the first convolution produces (cell = 3x3 pixels).
constexpr int kCellGrid = kImageSize / kCellPixels;  // 9 (the 28th pixel row/column is never read)
constexpr int kTopCell = 1;
constexpr int kLeftCell = 2;

constexpr float kInputScale = 1.0f / 255;
constexpr int kInputZeroPoint = -128;

tw::Quant quant(float scale, int64_t zero_point) { return tw::Quant{{scale}, {zero_point}, 0}; }

}  // namespace

bool glyph_ink(int digit, int row, int col) {
  return kGlyphs[static_cast<size_t>(digit)][static_cast<size_t>(row)][col] == '#';
}

std::string_view digit_name(int digit) { return digit >= 0 && digit < 10 ? kNames[static_cast<size_t>(digit)] : "?"; }

std::vector<int8_t> render_digit(int digit) {
  std::vector<int8_t> image(kImageSize * kImageSize, static_cast<int8_t>(0 + kInputZeroPoint));
  for (int r = 0; r < kGlyphHeight; ++r)
    for (int c = 0; c < kGlyphWidth; ++c) {
      if (!glyph_ink(digit, r, c)) continue;
      for (int y = 0; y < kCellPixels; ++y)
        for (int x = 0; x < kCellPixels; ++x) {
          const int py = (kTopCell + r) * kCellPixels + y, px = (kLeftCell + c) * kCellPixels + x;
          image[static_cast<size_t>(py * kImageSize + px)] = static_cast<int8_t>(255 + kInputZeroPoint);
        }
    }
  return image;
}

std::vector<uint8_t> build_digit_model() {
  tw::ModelBuilder b;
  const int32_t image = b.add_tensor(tw::TensorDef{"image", DType::int8, {1, kImageSize, kImageSize, 1},
                                                   quant(kInputScale, kInputZeroPoint), {}, std::nullopt, false});

  // 1. Ink per cell: mean of a 3x3 block. Weights 1 at scale 1/9 -> output real = mean intensity in [0, 1],
  //    stored at scale 1/255 with zero point -128 (so a full cell is 127).
  const int32_t box = b.add_constant<int8_t>("cells/filter", DType::int8, {1, 3, 3, 1}, std::vector<int8_t>(9, 1),
                                             tw::Quant{{1.0f / 9}, {0}, 0});
  const int32_t box_bias = b.add_constant<int32_t>("cells/bias", DType::int32, {1}, {0},
                                                   tw::Quant{{kInputScale / 9}, {0}, 0});
  const int32_t cells = b.add_tensor(tw::TensorDef{"cells", DType::int8, {1, kCellGrid, kCellGrid, 1},
                                                   quant(1.0f / 255, -128), {}, std::nullopt, false});
  b.add_operator(tw::Op::conv_2d, {image, box, box_bias}, {cells},
                 tw::Conv2D{tw::Padding::valid, kCellPixels, kCellPixels, tw::Activation::relu});

  const int32_t features = b.add_tensor(tw::TensorDef{"features", DType::int8, {1, kCellGrid * kCellGrid},
                                                      quant(1.0f / 255, -128), {}, std::nullopt, false});
  const int32_t shape = b.add_constant<int32_t>("features/shape", DType::int32, {2}, {1, kCellGrid * kCellGrid});
  b.add_operator(tw::Op::reshape, {cells, shape}, {features}, tw::Reshape{{1, kCellGrid * kCellGrid}});

  // 2. Template scores: weight 8 on each ink cell of digit d (int8 127 at scale 8/127), bias -4 per ink cell.
  constexpr float kWeight = 8.0f, kWeightScale = kWeight / 127;
  std::vector<int8_t> weights(static_cast<size_t>(10 * kCellGrid * kCellGrid), 0);
  std::vector<int32_t> bias(10, 0);
  const float bias_scale = (1.0f / 255) * kWeightScale;
  for (int d = 0; d < 10; ++d) {
    int ink = 0;
    for (int r = 0; r < kGlyphHeight; ++r)
      for (int c = 0; c < kGlyphWidth; ++c)
        if (glyph_ink(d, r, c)) {
          weights[static_cast<size_t>(d * kCellGrid * kCellGrid + (kTopCell + r) * kCellGrid + kLeftCell + c)] = 127;
          ++ink;
        }
    const float bias_real = -0.5f * kWeight * static_cast<float>(ink);
    bias[static_cast<size_t>(d)] = static_cast<int32_t>(std::lround(bias_real / bias_scale));
  }
  const int32_t fc_w = b.add_constant<int8_t>("scores/weights", DType::int8, {10, kCellGrid * kCellGrid}, weights,
                                              quant(kWeightScale, 0));
  const int32_t fc_b = b.add_constant<int32_t>("scores/bias", DType::int32, {10}, bias, quant(bias_scale, 0));
  const int32_t scores = b.add_tensor(tw::TensorDef{"scores", DType::int8, {1, 10}, quant(1.0f, 0), {},
                                                    std::nullopt, false});
  b.add_operator(tw::Op::fully_connected, {features, fc_w, fc_b}, {scores}, tw::FullyConnected{});

  const int32_t probabilities = b.add_tensor(tw::TensorDef{"probabilities", DType::int8, {1, 10},
                                                           quant(1.0f / 256, -128), {}, std::nullopt, false});
  b.add_operator(tw::Op::softmax, {scores}, {probabilities}, tw::Softmax{1.0f});
  b.set_inputs({image});
  b.set_outputs({probabilities});
  return b.finish("aisrv demo: 5x7 digit classifier (constructed weights)");
}

int argmax(const std::vector<int8_t>& scores) {
  return static_cast<int>(std::max_element(scores.begin(), scores.end()) - scores.begin());
}

}  // namespace aisrv::demo
