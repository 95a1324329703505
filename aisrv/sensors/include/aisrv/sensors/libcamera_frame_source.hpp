// aisrv sensors — a camera through libcamera (Raspberry Pi CSI cameras, and any camera a libcamera pipeline handler
// drives: uvcvideo for USB webcams, vimc, …) as a frame source: "libcamera:[CAMERA][:WxH[:FOURCC]]". Format
// negotiation through libcamera's CameraConfiguration (the FOURCC asked for, else the first of YUYV, MJPG, RGB3,
// BGR3, GREY the camera offers), the newest frame (completed requests waiting when a grab starts are given back and
// counted as dropped), and the same bad-frame decision and conversion as the V4L2 source (decode_buffer). Built when
// CMake finds libcamera (option AISRV_LIBCAMERA); without it the spec still parses and opening says how to get it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "aisrv/protocol/result.hpp"
#include "aisrv/sensors/frame_source.hpp"

namespace aisrv::sensors {

struct LibcameraOptions {
  std::string camera;              // libcamera's camera id, or its index in the camera list ("0"); empty: the first
  uint32_t width = 0, height = 0;  // 0: the configuration libcamera proposes
  std::string fourcc;              // V4L2 FOURCC (YUYV, MJPG, RGB3, BGR3, GREY); empty: the first one offered
  int timeout_ms = 2000;           // a frame must arrive within this
};

// "libcamera:", "libcamera:0", "libcamera:ID:640x480", "libcamera:ID:640x480:YUYV", "libcamera:::YUYV" (first camera,
// its size, YUYV). A camera id may contain ':' (libcamera's USB ids do): size and format are read from the end.
Result<LibcameraOptions> parse_libcamera_spec(const std::string& spec);

// The libcamera pixel format name (PixelFormat::toString: "YUYV", "MJPEG", "RGB888", "BGR888", "R8") as the V4L2
// FOURCC decode_buffer converts, or 0 when aisrv does not convert it. libcamera's names follow DRM: RGB888 is B, G, R
// in memory (V4L2 BGR3), BGR888 is R, G, B (V4L2 RGB3).
uint32_t v4l2_fourcc_of_libcamera(const std::string& name);

// True when this build has the libcamera source (CMake found libcamera).
bool libcamera_built();

// Starts libcamera's camera manager and opens the camera; a camera absent now is looked for again at each grab.
// Errc::not_supported when aisrvd was built without libcamera.
Result<std::unique_ptr<FrameSource>> open_libcamera_frame_source(const LibcameraOptions& options);

}  // namespace aisrv::sensors
