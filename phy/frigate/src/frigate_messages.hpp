// aisrv phy frigate — the messages of Frigate's `zmq` detector protocol: the parts of one request checked and told
// apart (model request, model transfer, detection), and the JSON replies. Everything a peer sends is hostile: a
// request that does not parse becomes a BadMessage naming why, never an exception.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace aisrv::phy::frigate {

// {"model_request": true, "model_name": NAME}
struct ModelRequest {
  std::string name;
};
// [{"model_data": true, "model_name": NAME}, FILE BYTES]
struct ModelData {
  std::string name;
  std::span<const uint8_t> file;
};
// [{"shape": [1, H, W, 3], "dtype": "uint8", "model_type": TYPE}, PIXELS]: the header is checked for form here
// (batch 1, 3 channels, positive sizes, byte count = product of the shape); whether it fits the model is the
// endpoint's business.
struct DetectRequest {
  uint32_t height = 0, width = 0, channels = 0;
  std::string dtype;
  std::string model_type;  // "" when absent
  std::span<const uint8_t> pixels;
};
struct BadMessage {
  std::string why;       // for the log
  bool mismatch = false; // a well-formed detection header whose shape/dtype/byte count is wrong (not a bad message)
};
using Message = std::variant<ModelRequest, ModelData, DetectRequest, BadMessage>;

// Longest model name taken from a peer (the store keeps at most 32 bytes; longer names are refused there).
inline constexpr size_t kMaxNameBytes = 255;

// `parts`: the message parts after the routing envelope.
Message parse_message(std::span<const std::span<const uint8_t>> parts);

// {"model_available": a, "model_loaded": l}
std::string model_request_reply(bool available, bool loaded);
// {"model_saved": s, "model_loaded": l}
std::string model_data_reply(bool saved, bool loaded);

}  // namespace aisrv::phy::frigate
