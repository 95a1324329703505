// aisrv hailo8/transform — the vocabulary of the transforms. Shapes, format orders, element types,
// quantization parameters and on-chip NMS parameters are the HEF metadata model's own (hef/types.hpp), so what the
// HEF reader produces feeds the transforms unchanged; this header adds the limit every transform checks sizes
// against and the list of device orders the layout transforms handle.
#pragma once

#include <cstdint>

#include "aisrv/engine/hailo8/hef/types.hpp"

namespace aisrv::engine::hailo8::transform {

using hef::FormatOrder;
using hef::FormatType;
using hef::NmsBurstType;
using hef::NmsInfo;
using hef::QuantInfo;
using hef::Shape;

// Device orders the layout transforms handle: NHWC, NHCW, FCR, F8CR, NC, NHW. The host side of each is the dense
// [height][width][features] array (for NC just [features], for NHW [height][width]) — HailoRT's default host order
// for these device orders (NHCW → NHWC, everything else unchanged).
//   NHWC  [h][w][f], rows padded to hw width / features
//   NHCW  [h][f][w], each channel row padded to hw width
//   FCR   [h][w][f], features padded to hw features per pixel
//   F8CR  [h][f/8][w][8], groups of 8 channels, last group zero-padded; hw features must be a multiple of 8
//   NC    [f], padded to hw features
//   NHW   [h][w], rows padded to hw width (argmax outputs; features must be 1)
bool is_layout_order(FormatOrder order);

// Largest frame we accept anywhere (1 GiB): every size computation is checked against it, so no product of
// hostile dimensions can overflow or allocate absurdly.
inline constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 30;

}  // namespace aisrv::engine::hailo8::transform
