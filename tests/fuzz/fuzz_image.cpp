// aisrv fuzz target — picture decoding (JPEG, PNG, BMP, PPM/PGM from memory, with a 4-megapixel limit) and, for a
// picture that decodes, its conversion into a small uint8 NHWC input with a centre crop and a float32 NCHW input with
// normalisation. Seeds: small pictures of each kind written by fuzz_seeds.
#include <cstddef>
#include <cstdint>
#include <span>

#include "aisrv/image/image.hpp"
#include "aisrv/image/tensor_image.hpp"

using namespace aisrv;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto picture = image::decode_image(std::span<const uint8_t>(data, size), "fuzz", image::DecodeLimits{4u << 20});
  if (!picture) return 0;
  protocol::TensorInfo u8{"u8", protocol::DType::uint8, {1, 16, 12, 3}, 16 * 12 * 3, -1, {0.5f}, {3}};
  image::Preprocess centre;
  centre.crop = image::centre_crop(*picture, 12, 16);
  (void)image::image_to_tensor(*picture, u8, centre);
  protocol::TensorInfo f32{"f32", protocol::DType::float32, {1, 1, 8, 8}, 8 * 8 * 4, -1, {}, {}};
  image::Preprocess norm;
  norm.mean = {127.5f};
  norm.std = {127.5f};
  (void)image::image_to_tensor(*picture, f32, norm);
  return 0;
}
