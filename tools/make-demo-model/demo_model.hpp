// aisrv demo model — a small convolutional digit classifier written as a real TFLite INT8 flatbuffer, with
// weights constructed (not trained) so that it classifies the digits it renders: 5x7 bitmap glyphs, scaled by 3
// and placed on a 28x28 grey image.
//
// Network (int8, input scale 1/255, zero point -128, i.e. q = pixel - 128):
//   CONV_2D 3x3 stride 3 VALID, one filter of ones, RELU     -> [1,9,9,1]  ink per glyph cell (0..1)
//   RESHAPE                                                  -> [1,81]
//   FULLY_CONNECTED 81 -> 10: weight 8 on the ink cells of digit d, bias -4 x (ink cells of d)
//                                                            -> score_d = 8 |x ∩ d| - 4 |d|
//   SOFTMAX                                                  -> [1,10] probabilities (scale 1/256, zp -128)
// score_d - score_x = -4 x (Hamming distance between the glyphs) whenever x is a rendered digit, so the rendered
// digit always wins by at least 4 (softmax probability above 0.85).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace aisrv::demo {

inline constexpr int kImageSize = 28;
inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 7;
inline constexpr int kCellPixels = 3;

// The TFLite model (file identifier "TFL3").
std::vector<uint8_t> build_digit_model();

// The model input for a digit 0..9: 28x28 int8 (pixel - 128), ink 255 on background 0.
std::vector<int8_t> render_digit(int digit);

// Whether cell (row, col) of the 5x7 glyph of `digit` is ink.
bool glyph_ink(int digit, int row, int col);

// "zero", "one", ...
std::string_view digit_name(int digit);

// Index of the largest output (the classification) of a softmax output vector.
int argmax(const std::vector<int8_t>& scores);

}  // namespace aisrv::demo
