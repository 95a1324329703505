// aisrv CPU engine — the TFLite model reader: verifies a "TFL3" flatbuffer with the flatbuffers verifier, then
// decodes subgraph 0 into a Graph, checking every index, shape, size, buffer range and quantization record on the
// way, and finally that the operators form a valid execution order (no tensor read before it is produced, none
// produced twice — which also rules out cycles). The only code in the engine that touches the flatbuffer.
#pragma once

#include <cstdint>
#include <span>

#include "aisrv/protocol/result.hpp"
#include "graph.hpp"

namespace aisrv::engine::cpu {

// Largest tensor the engine accepts (a larger one is an "absurd shape").
inline constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 30;

// Whether the bytes carry the TFLite file identifier ("TFL3" at offset 4).
bool has_tflite_identifier(std::span<const uint8_t> model);

// Reads `model`; the returned Graph points into `model` for constant data, so the bytes must outlive it.
// `model.data()` must be 16-byte aligned (the flatbuffer's own alignment guarantees then hold in memory).
// Errc::model_error with a message that names the problem (and the tensor or operator index).
Result<Graph> read_tflite_model(std::span<const uint8_t> model);

}  // namespace aisrv::engine::cpu
