// aisrv unit tests — the libcamera frame source's parts that need no camera: its --sensor spec (camera ids contain
// ':'), the libcamera pixel format names it converts and the conversion of buffers in those layouts (a DRM RGB888
// buffer is B, G, R in memory), and, when the source is built, a camera that is absent (no camera on the build
// machine): the source is made, says it is absent, and a grab answers ERROR_SENSOR saying why.
#include <doctest/doctest.h>
#include <linux/videodev2.h>

#include <vector>

#include "aisrv/protocol/payloads.hpp"
#include "aisrv/sensors/libcamera_frame_source.hpp"

using namespace aisrv;
using namespace aisrv::sensors;

TEST_CASE("libcamera specs: camera, size and format from the end; ids with ':'") {
  auto o = parse_libcamera_spec("libcamera:");
  REQUIRE(o.ok());
  CHECK(o->camera.empty());
  CHECK(o->width == 0);
  CHECK(o->fourcc.empty());
  o = parse_libcamera_spec("libcamera:0");
  REQUIRE(o.ok());
  CHECK(o->camera == "0");
  o = parse_libcamera_spec("libcamera::320x240:YUYV");
  REQUIRE(o.ok());
  CHECK(o->camera.empty());
  CHECK(o->width == 320);
  CHECK(o->height == 240);
  CHECK(o->fourcc == "YUYV");
  o = parse_libcamera_spec("libcamera:::MJPG");
  REQUIRE(o.ok());
  CHECK(o->camera.empty());
  CHECK(o->width == 0);
  CHECK(o->fourcc == "MJPG");
  // A Raspberry Pi CSI camera's id and a UVC camera's id as libcamera names them.
  o = parse_libcamera_spec("libcamera:/base/axi/pcie@120000/rp1/i2c@88000/imx708@1a:1536x864");
  REQUIRE(o.ok());
  CHECK(o->camera == "/base/axi/pcie@120000/rp1/i2c@88000/imx708@1a");
  CHECK(o->width == 1536);
  o = parse_libcamera_spec("libcamera:\\_SB_.PCI0.XHC_.RHUB.HS07-7:1.0-0c45:6366:640x480:MJPG");
  REQUIRE(o.ok());
  CHECK(o->camera == "\\_SB_.PCI0.XHC_.RHUB.HS07-7:1.0-0c45:6366");
  CHECK(o->fourcc == "MJPG");
  // Refused: not libcamera, a format aisrv does not convert, a broken size, control characters.
  CHECK(parse_libcamera_spec("v4l2:/dev/video0").error().code == Errc::invalid_argument);
  auto nv12 = parse_libcamera_spec("libcamera:0:640x480:NV12");
  REQUIRE_FALSE(nv12.ok());
  CHECK(nv12.error().message.find("not one aisrv converts") != std::string::npos);
  CHECK_FALSE(parse_libcamera_spec("libcamera:0:0x480").ok());
  CHECK_FALSE(parse_libcamera_spec("libcamera:0:640x").ok());
  CHECK_FALSE(parse_libcamera_spec("libcamera:0:99999x480").ok());
  CHECK_FALSE(parse_libcamera_spec(std::string("libcamera:a\nb")).ok());
}

TEST_CASE("libcamera pixel formats: DRM names to the FOURCC decode_buffer converts, byte order kept") {
  CHECK(v4l2_fourcc_of_libcamera("YUYV") == V4L2_PIX_FMT_YUYV);
  CHECK(v4l2_fourcc_of_libcamera("MJPEG") == V4L2_PIX_FMT_MJPEG);
  CHECK(v4l2_fourcc_of_libcamera("R8") == V4L2_PIX_FMT_GREY);
  CHECK(v4l2_fourcc_of_libcamera("NV12") == 0);
  CHECK(v4l2_fourcc_of_libcamera("YUV420") == 0);
  // A 2x1 buffer as libcamera's RGB888 lays it out (DRM: little-endian 0xRRGGBB, so B, G, R in memory), a line of
  // 8 bytes (padding): red then blue.
  const std::vector<uint8_t> rgb888{0, 0, 255, 255, 0, 0, 0xEE, 0xEE};
  image::Image out;
  auto st = decode_buffer(BufferFormat{v4l2_fourcc_of_libcamera("RGB888"), 2, 1, 8}, false, rgb888, out, "test");
  REQUIRE(st.ok());
  CHECK(out.pixels == std::vector<uint8_t>{255, 0, 0, 0, 0, 255});
  // BGR888: R, G, B in memory.
  const std::vector<uint8_t> bgr888{255, 0, 0, 0, 0, 255};
  st = decode_buffer(BufferFormat{v4l2_fourcc_of_libcamera("BGR888"), 2, 1, 6}, false, bgr888, out, "test");
  REQUIRE(st.ok());
  CHECK(out.pixels == std::vector<uint8_t>{255, 0, 0, 0, 0, 255});
  // A frame libcamera marked failed (FrameMetadata::FrameError) is a bad frame.
  st = decode_buffer(BufferFormat{v4l2_fourcc_of_libcamera("BGR888"), 2, 1, 6}, true, bgr888, out, "test");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == Errc::sensor_error);
}

TEST_CASE("libcamera source: a camera that is not there") {
  LibcameraOptions o;
  o.camera = "aisrv-test-no-such-camera";
  o.timeout_ms = 100;
  auto source = open_libcamera_frame_source(o);
  if (!libcamera_built()) {
    REQUIRE_FALSE(source.ok());
    CHECK(source.error().code == Errc::not_supported);
    CHECK(source.error().message.find("without libcamera") != std::string::npos);
    return;
  }
  REQUIRE_MESSAGE(source.ok(), (source ? "" : source.error().what()));
  CHECK_FALSE((*source)->present());
  protocol::TensorInfo input;
  SensorFrame frame;
  auto st = (*source)->grab(input, frame);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == Errc::not_found);  // as the V4L2 source's: the server answers it as ERROR_SENSOR
  CHECK_MESSAGE(st.error().message.find("aisrv-test-no-such-camera' is absent") != std::string::npos,
                st.error().message);
}
