// make-demo-model — writes the aisrv demo model (a TFLite INT8 digit classifier with constructed weights, see
// demo_model.hpp) and the model input for one rendered digit:
//   make-demo-model [--out DIR] [--digit N]
// produces DIR/demo_digits.tflite and DIR/digit_N.bin (28x28 int8, raw bytes as SET_INPUT_TENSOR sends them).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>

#include "demo_model.hpp"

namespace {

bool write_file(const std::filesystem::path& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write the aisrv demo model (TFLite INT8 digit classifier) and an input image of one digit"};
  std::string out_dir = ".";
  int digit = 7;
  app.add_option("-o,--out", out_dir, "output directory");
  app.add_option("-d,--digit", digit, "digit to render as the input file")->check(CLI::Range(0, 9));
  CLI11_PARSE(app, argc, argv);

  const std::filesystem::path dir(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const auto model = aisrv::demo::build_digit_model();
  const auto input = aisrv::demo::render_digit(digit);
  const auto model_path = dir / "demo_digits.tflite";
  const auto input_path = dir / ("digit_" + std::to_string(digit) + ".bin");
  if (!write_file(model_path, model.data(), model.size()) || !write_file(input_path, input.data(), input.size())) {
    std::fprintf(stderr, "make-demo-model: cannot write to %s\n", dir.c_str());
    return 1;
  }
  std::printf("%s: %zu bytes (TFLite INT8: CONV_2D, RESHAPE, FULLY_CONNECTED, SOFTMAX; 10 classes 0..9)\n",
              model_path.c_str(), model.size());
  std::printf("%s: %zu bytes, the digit %d (%s) as 28x28 int8:\n", input_path.c_str(), input.size(), digit,
              std::string(aisrv::demo::digit_name(digit)).c_str());
  for (int y = 0; y < aisrv::demo::kImageSize; y += 2) {
    std::string row;
    for (int x = 0; x < aisrv::demo::kImageSize; ++x)
      row += input[static_cast<size_t>(y * aisrv::demo::kImageSize + x)] > 0 ? '#' : '.';
    std::printf("  %s\n", row.c_str());
  }
  return 0;
}
