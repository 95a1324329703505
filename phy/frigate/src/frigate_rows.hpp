// aisrv phy frigate — decoded detections as Frigate's reply: 20 rows of six float32 values [class_id, score, y_min,
// x_min, y_max, x_max], boxes normalised to 0..1 of the model input and clamped, in score order, stopping at the
// first score below the threshold or after 20 rows; unused rows are all zero (Frigate's CPU detector's rules).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "aisrv/results/results.hpp"

namespace aisrv::phy::frigate {

inline constexpr size_t kRows = 20;
inline constexpr size_t kRowValues = 6;
using Rows = std::array<float, kRows * kRowValues>;  // 480 bytes on the wire, row-major

// `detections` in input pixels of an input `width` x `height` (results::decode without a placement). Returns the
// number of rows filled.
size_t fill_rows(std::span<const results::Detection> detections, uint32_t width, uint32_t height, float threshold,
                 Rows& rows);

}  // namespace aisrv::phy::frigate
