// aisrv image — decoding picture files with Debian's libraries: JPEG through TurboJPEG (accurate IDCT and smooth
// chroma upsampling, libjpeg's defaults, so pictures decode as PIL/libjpeg decode them), PNG through libpng's
// simplified API, BMP and PPM/PGM through stb_image. Dimensions are checked against the limits before decoding.
#include "aisrv/image/image.hpp"

#include <png.h>
#include <stb/stb_image.h>
#include <turbojpeg.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>

namespace aisrv::image {

namespace {

Status check_size(const std::string& what, uint64_t width, uint64_t height, const DecodeLimits& limits) {
  if (width == 0 || height == 0) return make_error(Errc::invalid_argument, "{}: empty picture ({}x{})", what, width, height);
  if (width * height > limits.max_pixels)
    return make_error(Errc::invalid_argument, "{}: {}x{} pixels is above the limit of {} pixels", what, width, height,
                      limits.max_pixels);
  return ok();
}

struct TjHandle {
  tjhandle h;
  explicit TjHandle(tjhandle handle) : h(handle) {}
  ~TjHandle() {
    if (h) tjDestroy(h);
  }
  TjHandle(const TjHandle&) = delete;
  TjHandle& operator=(const TjHandle&) = delete;
};

Result<Image> decode_jpeg(std::span<const uint8_t> data, const std::string& what, const DecodeLimits& limits) {
  TjHandle tj(tjInitDecompress());
  if (!tj.h) return make_error(Errc::internal, "{}: cannot start the JPEG decoder", what);
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  auto* buf = const_cast<unsigned char*>(data.data());
  const auto size = static_cast<unsigned long>(data.size());
  if (tjDecompressHeader3(tj.h, buf, size, &width, &height, &subsampling, &colorspace) != 0)
    return make_error(Errc::invalid_argument, "{}: not a readable JPEG: {}", what, tjGetErrorStr2(tj.h));
  AISRV_TRY(check_size(what, static_cast<uint64_t>(width), static_cast<uint64_t>(height), limits));
  const int format = colorspace == TJCS_GRAY ? TJPF_GRAY : TJPF_RGB;
  std::vector<uint8_t> packed(static_cast<size_t>(width) * static_cast<size_t>(height) *
                              static_cast<size_t>(tjPixelSize[format]));
  if (tjDecompress2(tj.h, buf, size, packed.data(), width, 0, height, format, 0) != 0 &&
      tjGetErrorCode(tj.h) == TJERR_FATAL)
    return make_error(Errc::invalid_argument, "{}: JPEG decoding failed: {}", what, tjGetErrorStr2(tj.h));
  Image out;
  out.width = static_cast<uint32_t>(width);
  out.height = static_cast<uint32_t>(height);
  out.channels = format == TJPF_GRAY ? 1 : 3;
  out.pixels = std::move(packed);
  return out;
}

Result<Image> decode_png(std::span<const uint8_t> data, const std::string& what, const DecodeLimits& limits) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, data.data(), data.size()))
    return make_error(Errc::invalid_argument, "{}: not a readable PNG: {}", what, png.message);
  std::unique_ptr<png_image, void (*)(png_imagep)> guard(&png, png_image_free);
  AISRV_TRY(check_size(what, png.width, png.height, limits));
  const bool colour = (png.format & PNG_FORMAT_FLAG_COLOR) != 0;
  png.format = colour ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;  // alpha is composed onto black, 16 bits reduced to 8
  Image out;
  out.width = png.width;
  out.height = png.height;
  out.channels = colour ? 3 : 1;
  out.pixels.resize(PNG_IMAGE_SIZE(png));
  png_color black{0, 0, 0};
  if (!png_image_finish_read(&png, &black, out.pixels.data(), 0, nullptr))
    return make_error(Errc::invalid_argument, "{}: PNG decoding failed: {}", what, png.message);
  return out;
}

uint32_t le(std::span<const uint8_t> d, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | d[at + static_cast<size_t>(i)];
  return v;
}

// stb_image reads past the end of a BMP as zeros; an uncompressed BMP whose pixel rows end beyond the file is refused.
Status check_bmp_length(std::span<const uint8_t> d, const std::string& what) {
  if (d.size() < 34) return make_error(Errc::invalid_argument, "{}: truncated BMP header ({} bytes)", what, d.size());
  if (le(d, 14, 4) < 40) return ok();  // OS/2 1.x header: stb checks it
  const uint64_t offset = le(d, 10, 4), width = le(d, 18, 4), bits = le(d, 28, 2), compression = le(d, 30, 4);
  const auto height = static_cast<int32_t>(le(d, 22, 4));
  if (compression != 0 && compression != 3) return ok();  // run-length data: no fixed length
  const uint64_t rows = height < 0 ? static_cast<uint64_t>(-static_cast<int64_t>(height)) : static_cast<uint64_t>(height);
  const uint64_t end = offset + (width * bits + 31) / 32 * 4 * rows;
  if (end > d.size())
    return make_error(Errc::invalid_argument, "{}: truncated BMP: {} bytes, its pixel rows end at byte {}", what,
                      d.size(), end);
  return ok();
}

// BMP (every header version, palettes, bit fields) and PPM/PGM through stb_image (Debian's libstb); dimensions are
// read from the header and checked before the pixels are decoded.
Result<Image> decode_stb(std::span<const uint8_t> data, const std::string& what, FileKind kind,
                         const DecodeLimits& limits) {
  const char* name = kind == FileKind::bmp ? "BMP" : "PPM/PGM";
  if (data.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return make_error(Errc::invalid_argument, "{}: {} bytes is too large for a {} file", what, data.size(), name);
  const auto* bytes = reinterpret_cast<const stbi_uc*>(data.data());
  const int size = static_cast<int>(data.size());
  int width = 0, height = 0, components = 0;
  if (!stbi_info_from_memory(bytes, size, &width, &height, &components))
    return make_error(Errc::invalid_argument, "{}: not a readable {} file: {}", what, name, stbi_failure_reason());
  AISRV_TRY(check_size(what, static_cast<uint64_t>(width), static_cast<uint64_t>(height), limits));
  if (kind == FileKind::bmp) AISRV_TRY(check_bmp_length(data, what));
  const int wanted = components <= 2 ? 1 : 3;  // grey (with alpha) or colour (with alpha): alpha is dropped
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load_from_memory(bytes, size, &width, &height, &components, wanted),
                                                   stbi_image_free);
  if (!pixels) return make_error(Errc::invalid_argument, "{}: {} decoding failed: {}", what, name, stbi_failure_reason());
  Image out;
  out.width = static_cast<uint32_t>(width);
  out.height = static_cast<uint32_t>(height);
  out.channels = static_cast<uint32_t>(wanted);
  out.pixels.assign(pixels.get(), pixels.get() + static_cast<size_t>(width) * static_cast<size_t>(height) *
                                                     static_cast<size_t>(wanted));
  return out;
}

}  // namespace

FileKind sniff(std::span<const uint8_t> h) {
  if (h.size() >= 3 && h[0] == 0xFF && h[1] == 0xD8 && h[2] == 0xFF) return FileKind::jpeg;
  if (h.size() >= 8 && std::memcmp(h.data(), "\x89PNG\r\n\x1a\n", 8) == 0) return FileKind::png;
  if (h.size() >= 2 && h[0] == 'B' && h[1] == 'M') return FileKind::bmp;
  if (h.size() >= 2 && h[0] == 'P' && (h[1] == '5' || h[1] == '6')) return FileKind::pnm;
  return FileKind::unknown;
}

Result<Image> decode_image(std::span<const uint8_t> data, const std::string& what, const DecodeLimits& limits) {
  switch (sniff(data)) {
    case FileKind::jpeg: return decode_jpeg(data, what, limits);
    case FileKind::png: return decode_png(data, what, limits);
    case FileKind::bmp:
    case FileKind::pnm: return decode_stb(data, what, sniff(data), limits);
    case FileKind::unknown: break;
  }
  return make_error(Errc::invalid_argument, "{}: not a JPEG, PNG, BMP or PPM/PGM picture ({} bytes)", what, data.size());
}

Result<Image> read_image(const std::string& path, const DecodeLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::invalid_argument, "cannot read {}: {}", path, std::strerror(errno));
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return make_error(Errc::invalid_argument, "error reading {}", path);
  return decode_image(data, path, limits);
}

Image with_channels(const Image& in, uint32_t channels) {
  if (in.channels == channels) return in;
  Image out;
  out.width = in.width;
  out.height = in.height;
  out.channels = channels;
  const size_t n = static_cast<size_t>(in.width) * in.height;
  out.pixels.resize(n * channels);
  if (in.channels == 1) {  // grey to RGB
    for (size_t i = 0; i < n; ++i) out.pixels[i * 3] = out.pixels[i * 3 + 1] = out.pixels[i * 3 + 2] = in.pixels[i];
  } else {  // RGB to grey: BT.601 luma
    for (size_t i = 0; i < n; ++i) {
      const double y = 0.299 * in.pixels[i * 3] + 0.587 * in.pixels[i * 3 + 1] + 0.114 * in.pixels[i * 3 + 2];
      out.pixels[i] = static_cast<uint8_t>(std::lround(y));
    }
  }
  return out;
}

}  // namespace aisrv::image
