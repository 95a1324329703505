// aisrv CLI — turning tensor bytes into numbers people read: element decoding, dequantization, top-k, and the
// text/JSON forms of tensor descriptions.
#pragma once

#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <vector>

#include "aisrv/protocol/payloads.hpp"

namespace aisrv::cli {

// Raw element values as doubles (integers exactly; float32 as is). Empty when the byte count does not match.
std::vector<double> element_values(const protocol::TensorInfo& t, std::span<const uint8_t> bytes);
// (q - zero_point) * scale per element (per-axis quantization honoured); raw values when not quantized.
std::vector<double> dequantized(const protocol::TensorInfo& t, std::span<const uint8_t> bytes);
// Indices of the k largest values, largest first.
std::vector<size_t> top_k(const std::vector<double>& values, size_t k);

std::string shape_text(const std::vector<int32_t>& shape);
std::string quant_text(const protocol::TensorInfo& t);
nlohmann::json tensor_json(const protocol::TensorInfo& t);

}  // namespace aisrv::cli
