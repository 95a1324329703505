// aisrv sensors — what every frame source shares: fitting a grabbed frame to an input (crop, resize, quantize
// through engine/image; raw bytes checked and copied), and the bad-frame decision plus conversion of one camera
// buffer (YUYV with BT.601 limited range, RGB24, BGR24, GREY, MJPEG decoded strictly by TurboJPEG) used by the V4L2
// and libcamera sources.
#include <linux/videodev2.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>

#include "aisrv/sensors/frame_source.hpp"
#include "aisrv/image/tensor_image.hpp"

namespace aisrv::sensors {

namespace {

uint8_t clamp8(int v) { return static_cast<uint8_t>(std::clamp(v, 0, 255)); }

std::string fourcc_text(uint32_t f) {
  std::string s(4, ' ');
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>((f >> (8 * i)) & 0xFF);
    s[static_cast<size_t>(i)] = (c >= 0x20 && c < 0x7F) ? c : '?';
  }
  return s;
}

// YUYV (Y0 U Y1 V per two pixels), ITU-R BT.601 limited range, integer arithmetic (8-bit fixed point).
void yuyv_to_rgb(const uint8_t* src, uint32_t width, uint32_t height, uint32_t stride, image::Image& out) {
  out.width = width;
  out.height = height;
  out.channels = 3;
  out.pixels.resize(static_cast<size_t>(width) * height * 3);
  for (uint32_t y = 0; y < height; ++y) {
    const uint8_t* row = src + static_cast<size_t>(y) * stride;
    uint8_t* o = out.pixels.data() + static_cast<size_t>(y) * width * 3;
    for (uint32_t x = 0; x < width; ++x) {
      const uint8_t* pair = row + (x & ~1u) * 2;
      const int c = 298 * (pair[(x & 1) * 2] - 16);
      const int d = pair[1] - 128, e = pair[3] - 128;
      *o++ = clamp8((c + 409 * e + 128) >> 8);
      *o++ = clamp8((c - 100 * d - 208 * e + 128) >> 8);
      *o++ = clamp8((c + 516 * d + 128) >> 8);
    }
  }
}

Error bad(const std::string& what, std::string why) {
  return make_error(Errc::sensor_error, "{}: bad frame: {}", what, why);
}

struct TjHandle {
  tjhandle h = tjInitDecompress();
  ~TjHandle() {
    if (h) tjDestroy(h);
  }
};

// A camera's JPEG frame, refused at the first libjpeg warning (TJFLAG_STOPONWARNING): TurboJPEG would otherwise
// return a truncated or corrupt frame padded with grey. Its size must be the one negotiated.
Status decode_mjpeg(const BufferFormat& f, std::span<const uint8_t> data, image::Image& out, const std::string& what) {
  if (data.size() < 4 || data[0] != 0xFF || data[1] != 0xD8)
    return bad(what, fmt::format("{} bytes that do not start a JPEG (no SOI marker)", data.size()));
  TjHandle tj;
  if (!tj.h) return make_error(Errc::internal, "{}: cannot start the JPEG decoder", what);
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  auto* buf = const_cast<unsigned char*>(data.data());
  const auto size = static_cast<unsigned long>(data.size());
  if (tjDecompressHeader3(tj.h, buf, size, &width, &height, &subsampling, &colorspace) != 0)
    return bad(what, fmt::format("JPEG header unreadable: {}", tjGetErrorStr2(tj.h)));
  if (static_cast<uint32_t>(width) != f.width || static_cast<uint32_t>(height) != f.height)
    return bad(what, fmt::format("JPEG of {}x{}, the camera was set to {}x{}", width, height, f.width, f.height));
  const int format = colorspace == TJCS_GRAY ? TJPF_GRAY : TJPF_RGB;
  out.width = f.width;
  out.height = f.height;
  out.channels = format == TJPF_GRAY ? 1 : 3;
  out.pixels.resize(static_cast<size_t>(f.width) * f.height * out.channels);
  if (tjDecompress2(tj.h, buf, size, out.pixels.data(), width, 0, height, format, TJFLAG_STOPONWARNING) != 0)
    return bad(what, fmt::format("JPEG data corrupt ({} bytes): {}", data.size(), tjGetErrorStr2(tj.h)));
  return ok();
}

}  // namespace

Status decode_buffer(const BufferFormat& f, bool flags_error, std::span<const uint8_t> data, image::Image& out,
                     const std::string& what) {
  if (flags_error) return bad(what, fmt::format("the driver flagged the buffer as damaged ({} bytes)", data.size()));
  if (f.width == 0 || f.height == 0) return make_error(Errc::internal, "{}: no frame size negotiated", what);
  if (f.pixelformat == V4L2_PIX_FMT_MJPEG) return decode_mjpeg(f, data, out, what);
  uint32_t bpp = 0;
  switch (f.pixelformat) {
    case V4L2_PIX_FMT_YUYV: bpp = 2; break;
    case V4L2_PIX_FMT_RGB24:
    case V4L2_PIX_FMT_BGR24: bpp = 3; break;
    case V4L2_PIX_FMT_GREY: bpp = 1; break;
    default: return make_error(Errc::internal, "{}: format {} is not converted", what, fourcc_text(f.pixelformat));
  }
  if (f.stride < static_cast<uint64_t>(f.width) * bpp)
    return make_error(Errc::internal, "{}: line of {} bytes for {} pixels of {}", what, f.stride, f.width,
                      fourcc_text(f.pixelformat));
  // The last line needs only its pixels, not the padding after them.
  const uint64_t need = static_cast<uint64_t>(f.stride) * (f.height - 1) + static_cast<uint64_t>(f.width) * bpp;
  if (data.size() < need)
    return bad(what, fmt::format("{} bytes, a {}x{} {} frame needs {}", data.size(), f.width, f.height,
                                 fourcc_text(f.pixelformat), need));
  if (f.pixelformat == V4L2_PIX_FMT_YUYV) {
    yuyv_to_rgb(data.data(), f.width, f.height, f.stride, out);
    return ok();
  }
  const uint32_t ch = f.pixelformat == V4L2_PIX_FMT_GREY ? 1 : 3;
  out.width = f.width;
  out.height = f.height;
  out.channels = ch;
  out.pixels.resize(static_cast<size_t>(f.width) * f.height * ch);
  for (uint32_t y = 0; y < f.height; ++y) {
    const uint8_t* row = data.data() + static_cast<size_t>(y) * f.stride;
    uint8_t* o = out.pixels.data() + static_cast<size_t>(y) * f.width * ch;
    if (f.pixelformat == V4L2_PIX_FMT_BGR24) {
      for (uint32_t x = 0; x < f.width; ++x) {
        o[x * 3] = row[x * 3 + 2];
        o[x * 3 + 1] = row[x * 3 + 1];
        o[x * 3 + 2] = row[x * 3];
      }
    } else {
      std::memcpy(o, row, static_cast<size_t>(f.width) * ch);
    }
  }
  return ok();
}

Status FrameSource::fit(const SensorFrame& grabbed, const protocol::TensorInfo& input,
                        const std::optional<AcquireWindow>& window, std::span<uint8_t> frame) const {
  if (grabbed.picture.pixels.empty()) {
    // Raw bytes: exactly the input's.
    if (window)
      return make_error(Errc::not_supported,
                        "{} delivers raw frames of the input's size: a crop window needs a camera (--sensor N=v4l2:…)",
                        grabbed.what);
    if (grabbed.bytes.size() != frame.size())
      return make_error(Errc::model_changed, "{}: the frame read is {} bytes, the input now takes {}", grabbed.what,
                        grabbed.bytes.size(), frame.size());
    std::memcpy(frame.data(), grabbed.bytes.data(), frame.size());
    return ok();
  }
  image::Preprocess pre;
  if (window) {
    pre.crop = image::Crop{window->x0, window->y0, window->x1 - window->x0, window->y1 - window->y0};
    if (auto c = image::check_crop(grabbed.picture, *pre.crop); !c)
      return make_error(Errc::bad_length, "{}: {}", grabbed.what, c.error().message);
  }
  // Resized and quantized straight into the destination (the session's input tensor): no copy after it.
  if (frame.size() != input.bytes)
    return make_error(Errc::internal, "{}: a {}-byte buffer for an input of {} bytes", grabbed.what, frame.size(),
                      input.bytes);
  if (auto st = image::image_to_tensor(grabbed.picture, input, pre, frame); !st)
    return make_error(st.error().code, "{}: {}", grabbed.what, st.error().message);
  return ok();
}

namespace {

bool parse_size(const std::string& s, uint32_t& w, uint32_t& h) {
  unsigned a = 0, b = 0;
  char x = 0, extra = 0;
  if (std::sscanf(s.c_str(), "%u%c%u%c", &a, &x, &b, &extra) != 3 || x != 'x') return false;
  w = a;
  h = b;
  return true;
}

// Four letters or digits (or trailing spaces), at least one letter: a FOURCC, not the tail of a device path.
bool looks_like_fourcc(const std::string& s) {
  if (s.size() != 4) return false;
  bool letter = false;
  for (char c : s) {
    if (std::isalpha(static_cast<unsigned char>(c))) letter = true;
    else if (!std::isdigit(static_cast<unsigned char>(c)) && c != ' ') return false;
  }
  return letter;
}

}  // namespace

Result<CameraSpec> split_camera_spec(const std::string& spec, const std::string& rest,
                                     const std::function<bool(const std::string&)>& is_format,
                                     std::string_view formats) {
  CameraSpec o;
  o.name = rest;
  const size_t last = rest.rfind(':');
  if (last != std::string::npos) {
    const std::string tail = rest.substr(last + 1), head = rest.substr(0, last);
    const size_t prev = head.rfind(':');
    const std::string middle = prev == std::string::npos ? std::string() : head.substr(prev + 1);
    uint32_t mw = 0, mh = 0;  // the size before a FOURCC
    const bool sized = prev != std::string::npos && (middle.empty() || parse_size(middle, mw, mh));
    const bool fourcc = looks_like_fourcc(tail);
    if (parse_size(tail, o.width, o.height)) {
      o.name = head;
    } else if (fourcc && !is_format(tail) && !formats.empty() && std::isupper(static_cast<unsigned char>(tail[0]))) {
      // (upper case: a FOURCC; a lower-case tail such as "6a66" is part of a camera id)
      return make_error(Errc::invalid_argument, "'{}': format {} is not one aisrv converts ({})", spec, tail, formats);
    } else if (fourcc && is_format(tail) && sized) {
      o.width = mw;
      o.height = mh;
      o.fourcc = tail;
      o.name = head.substr(0, prev);
    } else if (fourcc && is_format(tail)) {
      return make_error(Errc::invalid_argument, "'{}': the format {} needs a size before it (:WxH:{} or ::{})", spec,
                        tail, tail, tail);
    } else if (!tail.empty() && std::isdigit(static_cast<unsigned char>(tail[0])) &&
               tail.find('x') != std::string::npos && tail.find_first_not_of("0123456789x") == std::string::npos) {
      return make_error(Errc::invalid_argument, "'{}': size '{}' is not WxH", spec, tail);
    }
  }
  if ((o.width || o.height) && (o.width == 0 || o.height == 0 || o.width > 16384 || o.height > 16384))
    return make_error(Errc::invalid_argument, "'{}': size {}x{} is not WxH within 1..16384", spec, o.width, o.height);
  return o;
}

}  // namespace aisrv::sensors
