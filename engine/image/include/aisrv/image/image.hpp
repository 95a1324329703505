// aisrv image — an 8-bit interleaved picture (grey or RGB) and reading one from a file or memory: JPEG, PNG, BMP,
// PPM/PGM, told apart by content. Hostile files are refused before anything large is allocated: dimensions above
// DecodeLimits::max_pixels, truncated or corrupt data give Errc::invalid_argument with the file's name and why.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace aisrv::image {

struct Image {
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t channels = 0;        // 1 (grey) or 3 (R, G, B)
  std::vector<uint8_t> pixels;  // row-major, top row first, channels interleaved
};

struct DecodeLimits {
  uint64_t max_pixels = 64u << 20;  // 64 megapixels
};

enum class FileKind { jpeg, png, bmp, pnm, unknown };
FileKind sniff(std::span<const uint8_t> head);  // from the first bytes

// Reads and decodes an image file (kind from its content).
Result<Image> read_image(const std::string& path, const DecodeLimits& limits = {});
// Decodes an in-memory JPEG or PNG (e.g. an MJPEG camera frame); `what` names it in errors.
Result<Image> decode_image(std::span<const uint8_t> data, const std::string& what = "image",
                           const DecodeLimits& limits = {});

// The same picture with 1 or 3 channels: grey to RGB repeats the value, RGB to grey is ITU-R BT.601 luma, rounded.
Image with_channels(const Image& in, uint32_t channels);

}  // namespace aisrv::image
