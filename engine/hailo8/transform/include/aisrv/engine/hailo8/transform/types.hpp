// aisrv Hailo-8 host transforms — the vocabulary shared by every transform: tensor shapes (host and hardware-padded),
// the hardware format orders we convert to/from, quantization parameters, and frame-size arithmetic
// (the device frame is always a whole number of 8-byte words, HailoRT's HW_DATA_ALIGNMENT).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace aisrv::engine::hailo8::transform {

// Shape of a 3-D frame as the HEF states it: height × width × features (channels). NC frames use 1×1×C, NHW frames
// use H×W×1.
struct Shape3 {
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t features = 0;

  friend bool operator==(const Shape3&, const Shape3&) = default;
};

// Hardware (device-side) format orders handled by the layout transforms. The host side of each is the dense
// [height][width][features] array (NHWC; for NC just [features], for NHW [height][width]) — HailoRT's default host
// order for these device orders (NHCW → NHWC, everything else unchanged).
enum class DeviceOrder : uint8_t {
  nhwc,  // [h][w][f], rows padded to hw width / features
  nhcw,  // [h][f][w], each channel row padded to hw width
  fcr,   // [h][w][f], features padded to hw features per pixel
  f8cr,  // [h][f/8][w][8], groups of 8 channels, last group zero-padded; hw features must be a multiple of 8
  nc,    // [f], padded to hw features
  nhw,   // [h][w], rows padded to hw width (argmax outputs; features must be 1)
};

std::string_view device_order_name(DeviceOrder order);
// HEF `edge_layer_base.format` value → order (0 NHWC, 1 NHCW, 2 NC, 3 FCR, 5 NHW, 7 F8CR, 13 NHWC); nullopt for
// orders these transforms do not handle (BAYER, NMS, RGB888, YUV…).
std::optional<DeviceOrder> device_order_from_hef(uint32_t hef_format);

// Element type on the device: 1 byte (UINT8) or 2 bytes (UINT16), from `data_bytes` in the HEF.
enum class ElementType : uint8_t { u8 = 1, u16 = 2 };

inline constexpr size_t element_bytes(ElementType t) { return static_cast<size_t>(t); }

// Quantization parameters of a stream (hailo_quant_info_t): real = (q - zp) · scale; q = x / scale + zp after
// clipping x to [limvals_min, limvals_max].
struct QuantInfo {
  float zp = 0.0f;
  float scale = 1.0f;
  float limvals_min = 0.0f;
  float limvals_max = 0.0f;

  // HailoRT's "identity" test: scale exactly 1 and zero point exactly 0 (then only rounding / casting happens).
  bool is_identity() const { return scale == 1.0f && zp == 0.0f; }
  friend bool operator==(const QuantInfo&, const QuantInfo&) = default;
};

// Hailo-8 transfers whole 8-byte words per frame (HailoRT HW_DATA_ALIGNMENT).
inline constexpr size_t kHwDataAlignment = 8;

inline constexpr uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Largest frame we accept anywhere (1 GiB): every size computation is checked against it, so no product of
// hostile dimensions can overflow or allocate absurdly.
inline constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 30;

}  // namespace aisrv::engine::hailo8::transform
