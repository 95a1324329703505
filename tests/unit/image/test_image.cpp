// aisrv tests — engine/image: decoding (PNG and JPEG written here with libpng and TurboJPEG, hostile files), the
// TFLite bilinear resize against values worked out by hand, layout guessing and the value rules per element type.
#include <doctest/doctest.h>
#include <png.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "aisrv/image/image.hpp"
#include "aisrv/image/resize.hpp"
#include "aisrv/image/tensor_image.hpp"

using namespace aisrv;
using namespace aisrv::image;
using protocol::DType;
using protocol::TensorInfo;

namespace {

struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& suffix, std::span<const uint8_t> bytes) {
    path = std::filesystem::temp_directory_path() /
           ("aisrv-image-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++) + suffix);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                static_cast<std::streamsize>(bytes.size()));
  }
  ~TempFile() { std::filesystem::remove(path); }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

Image gradient(uint32_t w, uint32_t h, uint32_t channels) {
  Image img{w, h, channels, std::vector<uint8_t>(static_cast<size_t>(w) * h * channels)};
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x)
      for (uint32_t c = 0; c < channels; ++c)
        img.pixels[(static_cast<size_t>(y) * w + x) * channels + c] = static_cast<uint8_t>((x * 7 + y * 3 + c * 50) % 256);
  return img;
}

std::vector<uint8_t> encode_png(const Image& img) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = img.width;
  png.height = img.height;
  png.format = img.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  png_alloc_size_t size = 0;
  REQUIRE(png_image_write_to_memory(&png, nullptr, &size, 0, img.pixels.data(), 0, nullptr));
  std::vector<uint8_t> out(size);
  REQUIRE(png_image_write_to_memory(&png, out.data(), &size, 0, img.pixels.data(), 0, nullptr));
  out.resize(size);
  return out;
}

std::vector<uint8_t> encode_jpeg(const Image& img, int quality) {
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int format = img.channels == 3 ? TJPF_RGB : TJPF_GRAY;
  REQUIRE(tjCompress2(tj, img.pixels.data(), static_cast<int>(img.width), 0, static_cast<int>(img.height), format, &buf,
                      &size, img.channels == 3 ? TJSAMP_444 : TJSAMP_GRAY, quality, 0) == 0);
  std::vector<uint8_t> out(buf, buf + size);
  tjFree(buf);
  tjDestroy(tj);
  return out;
}

// A 24-bit bottom-up BMP, written by the book (BITMAPFILEHEADER + BITMAPINFOHEADER, rows padded to 4 bytes, BGR).
std::vector<uint8_t> encode_bmp(const Image& img, int32_t claimed_width = 0, int32_t claimed_height = 0) {
  const uint32_t row = (img.width * 3 + 3) / 4 * 4;
  std::vector<uint8_t> b(54 + static_cast<size_t>(row) * img.height);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  b[0] = 'B';
  b[1] = 'M';
  put32(2, static_cast<uint32_t>(b.size()));
  put32(10, 54);
  put32(14, 40);
  put32(18, static_cast<uint32_t>(claimed_width ? claimed_width : static_cast<int32_t>(img.width)));
  put32(22, static_cast<uint32_t>(claimed_height ? claimed_height : static_cast<int32_t>(img.height)));
  b[26] = 1;
  b[28] = 24;
  put32(34, static_cast<uint32_t>(row * img.height));
  for (uint32_t y = 0; y < img.height; ++y)
    for (uint32_t x = 0; x < img.width; ++x)
      for (int c = 0; c < 3; ++c)
        b[54 + static_cast<size_t>(img.height - 1 - y) * row + x * 3 + static_cast<size_t>(c)] =
            img.pixels[(static_cast<size_t>(y) * img.width + x) * 3 + 2 - static_cast<size_t>(c)];
  return b;
}

TensorInfo input(DType t, std::vector<int32_t> shape, std::vector<float> scale = {}, std::vector<int32_t> zp = {}) {
  TensorInfo info;
  info.name = "in";
  info.dtype = t;
  info.shape = shape;
  uint32_t n = 1;
  for (int32_t d : shape) n *= static_cast<uint32_t>(d);
  info.bytes = n * static_cast<uint32_t>(protocol::dtype_size(t));
  info.scale = std::move(scale);
  info.zero_point = std::move(zp);
  return info;
}

float f32_at(const std::vector<uint8_t>& b, size_t i) {
  float v;
  std::memcpy(&v, b.data() + i * 4, 4);
  return v;
}

}  // namespace

TEST_CASE("PNG, BMP and PPM decode to the exact pixels; JPEG within its quantization error") {
  for (uint32_t channels : {1u, 3u}) {
    CAPTURE(channels);
    const Image img = gradient(37, 23, channels);
    TempFile png(".png", encode_png(img));
    auto got = read_image(png.path.string());
    REQUIRE(got);
    CHECK(got->width == 37);
    CHECK(got->height == 23);
    CHECK(got->channels == channels);
    CHECK(got->pixels == img.pixels);
    auto from_memory = decode_image(encode_png(img));
    REQUIRE(from_memory);
    CHECK(from_memory->pixels == img.pixels);

    const auto jpeg = encode_jpeg(img, 100);
    auto j = decode_image(jpeg);
    REQUIRE(j);
    CHECK(j->channels == channels);
    REQUIRE(j->pixels.size() == img.pixels.size());
    int worst = 0;
    for (size_t i = 0; i < img.pixels.size(); ++i) worst = std::max(worst, std::abs(j->pixels[i] - img.pixels[i]));
    CHECK(worst <= 4);
  }
  const Image rgb = gradient(13, 9, 3);
  TempFile bmp(".bmp", encode_bmp(rgb));
  auto b = read_image(bmp.path.string());
  REQUIRE(b);
  CHECK(b->channels == 3);
  CHECK(b->pixels == rgb.pixels);  // BGR and bottom-up rows put right

  std::string ppm = "P6\n13 9\n255\n";
  std::vector<uint8_t> pnm(ppm.begin(), ppm.end());
  pnm.insert(pnm.end(), rgb.pixels.begin(), rgb.pixels.end());
  TempFile p(".ppm", pnm);
  auto q = read_image(p.path.string());
  REQUIRE(q);
  CHECK(q->pixels == rgb.pixels);
}

TEST_CASE("hostile picture files are refused with a reason, before large allocations") {
  const Image img = gradient(40, 30, 3);
  const auto png = encode_png(img), jpeg = encode_jpeg(img, 90), bmp = encode_bmp(img);
  for (const auto* file : {&png, &jpeg, &bmp}) {
    for (size_t cut : {size_t{1}, size_t{10}, size_t{30}, file->size() / 2}) {
      std::vector<uint8_t> truncated(file->begin(), file->begin() + static_cast<std::ptrdiff_t>(cut));
      TempFile t(".img", truncated);
      auto r = read_image(t.path.string());
      // A JPEG cut mid-scan still decodes (libjpeg fills the rest grey, as every viewer does); all else is refused.
      if (r) CHECK(sniff(truncated) == FileKind::jpeg);
      else CHECK(r.error().code == Errc::invalid_argument);
    }
  }
  // A BMP header claiming 100000 x 100000 pixels: refused from the header.
  TempFile huge(".bmp", encode_bmp(img, 100000, 100000));
  auto r = read_image(huge.path.string());
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("above the limit") != std::string::npos);
  // The limit is an option.
  TempFile ok_png(".png", png);
  auto limited = read_image(ok_png.path.string(), DecodeLimits{100});
  REQUIRE_FALSE(limited);
  CHECK(limited.error().message.find("40x30 pixels is above the limit of 100") != std::string::npos);
  // Not a picture at all; a missing file.
  std::vector<uint8_t> text{'h', 'e', 'l', 'l', 'o'};
  TempFile t(".txt", text);
  CHECK_FALSE(read_image(t.path.string()));
  CHECK_FALSE(read_image("/nonexistent/cat.png"));
  CHECK_FALSE(decode_image(text));
}

TEST_CASE("bilinear resize follows TFLite's half-pixel-centre rule") {
  Image img{2, 2, 1, {0, 100, 200, 255}};
  const auto r = resize_bilinear(img, 4, 4);
  // source x for output 0..3: -0.25 (clamped to pixel 0), 0.25, 0.75, 1.25 (clamped to pixel 1)
  const std::vector<float> row0{0, 25, 75, 100};
  const std::vector<float> row3{200, 213.75f, 241.25f, 255};
  for (int x = 0; x < 4; ++x) {
    CHECK(r.values[static_cast<size_t>(x)] == doctest::Approx(row0[static_cast<size_t>(x)]));
    CHECK(r.values[12 + static_cast<size_t>(x)] == doctest::Approx(row3[static_cast<size_t>(x)]));
  }
  // y = 0.25 between rows: x = 0 -> 0 * 0.75 + 200 * 0.25
  CHECK(r.values[4] == doctest::Approx(50));
  // Same size: the pixels themselves.
  const Image g = gradient(9, 7, 3);
  const auto same = resize_bilinear(g, 9, 7);
  for (size_t i = 0; i < g.pixels.size(); ++i) REQUIRE(same.values[i] == static_cast<float>(g.pixels[i]));
  // A crop resized to its own size is the window.
  const auto window = resize_bilinear(g, 3, 2, Crop{4, 5, 3, 2});
  CHECK(window.values[0] == static_cast<float>(g.pixels[(5 * 9 + 4) * 3]));
  CHECK(check_crop(g, Crop{4, 5, 3, 2}));
  CHECK_FALSE(check_crop(g, Crop{4, 5, 6, 2}));
  CHECK_FALSE(check_crop(g, Crop{0, 0, 0, 2}));
  const Crop c = centre_crop(Image{640, 480, 3, {}}, 1, 1);
  CHECK((c.x == 80 && c.y == 0 && c.width == 480 && c.height == 480));
}

TEST_CASE("the input's layout comes from its shape") {
  auto g = input_geometry(input(DType::uint8, {1, 224, 160, 3}));
  REQUIRE(g);
  CHECK((g->width == 160 && g->height == 224 && g->channels == 3 && g->layout == Layout::nhwc));
  g = input_geometry(input(DType::float32, {1, 3, 224, 160}));
  REQUIRE(g);
  CHECK((g->width == 160 && g->height == 224 && g->channels == 3 && g->layout == Layout::nchw));
  g = input_geometry(input(DType::uint8, {1, 28, 28}));  // [C=1, H, W]
  REQUIRE(g);
  CHECK((g->width == 28 && g->height == 28 && g->channels == 1));
  g = input_geometry(input(DType::uint8, {28, 28}));
  REQUIRE(g);
  CHECK(g->channels == 1);
  g = input_geometry(input(DType::uint8, {1, 3, 3, 3}), Layout::nchw);
  REQUIRE(g);
  CHECK(g->layout == Layout::nchw);
  CHECK_FALSE(input_geometry(input(DType::uint8, {1, 784})));
  CHECK_FALSE(input_geometry(input(DType::uint8, {2, 8, 8, 3})));
  CHECK_FALSE(input_geometry(input(DType::uint8, {1, 8, 8, 5})));
  auto wrong = input(DType::uint8, {1, 8, 8, 3});
  wrong.bytes = 100;
  auto e = input_geometry(wrong);
  REQUIRE_FALSE(e);
  CHECK(e.error().message.find("192 bytes") != std::string::npos);
}

TEST_CASE("values per element type, normalisation, channel order and layout") {
  Image img{2, 1, 3, {10, 20, 30, 200, 210, 220}};
  // uint8 without mean/std: the pixels
  auto u8 = image_to_tensor(img, input(DType::uint8, {1, 1, 2, 3}, {0.0078125f}, {128}));
  REQUIRE(u8);
  CHECK(*u8 == std::vector<uint8_t>{10, 20, 30, 200, 210, 220});
  // int8: pixel - 128
  auto i8 = image_to_tensor(img, input(DType::int8, {1, 1, 2, 3}, {0.5f}, {-1}));
  REQUIRE(i8);
  CHECK(static_cast<int8_t>((*i8)[0]) == -118);
  CHECK(static_cast<int8_t>((*i8)[5]) == 92);
  // int8 with mean/std: quantized with the tensor's scale and zero point, saturated
  Preprocess norm;
  norm.mean = {127.5f};
  norm.std = {127.5f};
  auto q = image_to_tensor(img, input(DType::int8, {1, 1, 2, 3}, {1.0f / 128}, {0}), norm);
  REQUIRE(q);
  CHECK(static_cast<int8_t>((*q)[0]) == static_cast<int8_t>(std::lround((10 - 127.5) / 127.5 * 128)));
  CHECK(static_cast<int8_t>((*q)[5]) == 93);  // (220 - 127.5) / 127.5 / (1/128) = 92.86
  // float32: pixel / 255, or (pixel - mean) / std; NCHW puts each channel's plane together
  auto f = image_to_tensor(img, input(DType::float32, {1, 3, 1, 2}));
  REQUIRE(f);
  CHECK(f32_at(*f, 0) == doctest::Approx(10 / 255.0));   // R of pixel 0
  CHECK(f32_at(*f, 1) == doctest::Approx(200 / 255.0));  // R of pixel 1
  CHECK(f32_at(*f, 2) == doctest::Approx(20 / 255.0));   // G of pixel 0
  Preprocess bgr;
  bgr.bgr = true;
  bgr.mean = {1, 2, 3};
  bgr.std = {2};
  auto fb = image_to_tensor(img, input(DType::float32, {1, 1, 2, 3}), bgr);
  REQUIRE(fb);
  CHECK(f32_at(*fb, 0) == doctest::Approx((30 - 1) / 2.0));  // B first
  CHECK(f32_at(*fb, 2) == doctest::Approx((10 - 3) / 2.0));
  // grey model, colour picture: BT.601 luma
  auto grey = image_to_tensor(img, input(DType::uint8, {1, 1, 2, 1}));
  REQUIRE(grey);
  CHECK((*grey)[0] == static_cast<uint8_t>(std::lround(0.299 * 10 + 0.587 * 20 + 0.114 * 30)));
  // refusals
  Preprocess bad;
  bad.mean = {1, 2};
  CHECK_FALSE(image_to_tensor(img, input(DType::float32, {1, 1, 2, 3}), bad));
  bad.mean = {};
  bad.std = {0};
  CHECK_FALSE(image_to_tensor(img, input(DType::float32, {1, 1, 2, 3}), bad));
  CHECK_FALSE(image_to_tensor(img, input(DType::int8, {1, 1, 2, 3}), norm));  // no scale to quantize with
  CHECK_FALSE(image_to_tensor(img, input(DType::int32, {1, 1, 2, 3})));
}
