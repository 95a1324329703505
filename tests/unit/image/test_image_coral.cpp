// aisrv tests — engine/image against the shared test data: libcoral's preprocessing of cat.bmp (SOURCES.md §2.3:
// TFLite bilinear resize with half-pixel centres in float, truncation to uint8) must give the reference input bytes
// byte for byte, and mnist_nine.bmp (an 8-bit grey-palette BMP) its pixels.
#include <doctest/doctest.h>

#include "aisrv/image/image.hpp"
#include "aisrv/image/tensor_image.hpp"
#include "testdata.hpp"

using namespace aisrv;
using namespace aisrv::image;

TEST_CASE("cat.bmp through our preprocessing is libcoral's 128x128 input") {
  auto cat = read_image(test::testdata_path("tflite/google-coral__test_data/cat.bmp").string());
  REQUIRE_MESSAGE(cat, (cat ? std::string() : cat.error().message));
  CHECK(cat->channels == 3);
  protocol::TensorInfo in;
  in.name = "input";
  in.dtype = protocol::DType::uint8;
  in.shape = {1, 128, 128, 3};
  in.bytes = 128 * 128 * 3;
  in.scale = {0.0078125f};
  in.zero_point = {128};
  auto tensor = image_to_tensor(*cat, in);
  REQUIRE(tensor);
  const auto expected = test::read_file(test::testdata_path("reference_io/coral/cat_coral_u8_128x128x3.bin"));
  REQUIRE(tensor->size() == expected.size());
  size_t differ = 0;
  for (size_t i = 0; i < expected.size(); ++i) differ += (*tensor)[i] != expected[i];
  CHECK(differ == 0);
}

TEST_CASE("mnist_nine.bmp is the reference's 28x28 grey pixels") {
  auto nine = read_image(test::testdata_path("tflite/google-coral__test_data/mnist_nine.bmp").string());
  REQUIRE(nine);
  protocol::TensorInfo in;
  in.name = "input";
  in.dtype = protocol::DType::uint8;
  in.shape = {1, 28, 28};
  in.bytes = 28 * 28;
  auto tensor = image_to_tensor(*nine, in);
  REQUIRE(tensor);
  CHECK(*tensor == test::read_file(test::testdata_path("reference_io/coral/mnist_nine_u8_28x28.bin")));
}
