// aisrv sensors — what the libcamera source needs in every build: its --sensor spec parser, the libcamera pixel
// format names it converts, and (AISRV_LIBCAMERA off) the answer that this build has no libcamera.
#include <linux/videodev2.h>

#include <cctype>
#include <cstdio>
#include <fmt/format.h>

#include "aisrv/sensors/libcamera_frame_source.hpp"

namespace aisrv::sensors {

namespace {

bool is_fourcc(const std::string& s) {
  return s == "YUYV" || s == "MJPG" || s == "RGB3" || s == "BGR3" || s == "GREY";
}

}  // namespace

Result<LibcameraOptions> parse_libcamera_spec(const std::string& spec) {
  if (spec.rfind("libcamera:", 0) != 0)
    return make_error(Errc::invalid_argument, "'{}' is not libcamera:[CAMERA][:WxH[:FOURCC]]", spec);
  auto parts = AISRV_TRY(split_camera_spec(spec, spec.substr(10), is_fourcc, "YUYV, MJPG, RGB3, BGR3, GREY"));
  LibcameraOptions o;
  o.width = parts.width;
  o.height = parts.height;
  o.fourcc = parts.fourcc;
  const std::string& rest = parts.name;
  for (char c : rest)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      return make_error(Errc::invalid_argument, "'{}': the camera id has a control character", spec);
  if (rest.size() > 256) return make_error(Errc::invalid_argument, "'{}': the camera id is over 256 characters", spec);
  o.camera = rest;
  return o;
}

uint32_t v4l2_fourcc_of_libcamera(const std::string& name) {
  if (name == "YUYV") return V4L2_PIX_FMT_YUYV;
  if (name == "MJPEG") return V4L2_PIX_FMT_MJPEG;
  if (name == "RGB888") return V4L2_PIX_FMT_BGR24;  // DRM RGB888: B, G, R in memory
  if (name == "BGR888") return V4L2_PIX_FMT_RGB24;  // DRM BGR888: R, G, B in memory
  if (name == "R8") return V4L2_PIX_FMT_GREY;
  return 0;
}

#ifndef AISRV_HAVE_LIBCAMERA
bool libcamera_built() { return false; }

Result<std::unique_ptr<FrameSource>> open_libcamera_frame_source(const LibcameraOptions&) {
  return make_error(Errc::not_supported,
                    "this aisrvd was built without libcamera (install libcamera-dev, e.g. tools/install-deps, and "
                    "configure with -DAISRV_LIBCAMERA=ON); use a V4L2 camera (v4l2:/dev/videoN) instead");
}
#endif

}  // namespace aisrv::sensors
