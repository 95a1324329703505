// aisrv phy frigate — parsing Frigate's request parts and writing its JSON replies (nlohmann-json, no exceptions
// escape).
#include "frigate_messages.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>
#include <nlohmann/json.hpp>

namespace aisrv::phy::frigate {

namespace {

using nlohmann::json;

// Largest header accepted: Frigate's are under 100 bytes.
constexpr size_t kMaxHeaderBytes = 4096;

BadMessage bad(std::string why) { return BadMessage{std::move(why), false}; }

std::string name_of(const json& h, std::string& error) {
  auto it = h.find("model_name");
  if (it == h.end() || !it->is_string()) {
    error = "no \"model_name\" string";
    return {};
  }
  std::string name = it->get<std::string>();
  if (name.empty() || name.size() > kMaxNameBytes) {
    error = fmt::format("\"model_name\" of {} bytes (1..{})", name.size(), kMaxNameBytes);
    return {};
  }
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f) {
      error = "\"model_name\" has control characters";
      return {};
    }
  return name;
}

bool flag(const json& h, const char* key) {
  auto it = h.find(key);
  return it != h.end() && it->is_boolean() && it->get<bool>();
}

Message detect(const json& h, std::span<const uint8_t> pixels) {
  auto shape = h.find("shape");
  if (shape == h.end() || !shape->is_array()) return bad("the header has no \"shape\" array");
  auto dtype = h.find("dtype");
  if (dtype == h.end() || !dtype->is_string()) return bad("the header has no \"dtype\" string");
  std::string model_type;
  if (auto mt = h.find("model_type"); mt != h.end()) {
    if (!mt->is_string()) return bad("\"model_type\" is not a string");
    model_type = mt->get<std::string>();
    if (model_type.size() > 64) return bad("\"model_type\" is longer than 64 bytes");
  }
  std::vector<uint64_t> dims;
  for (const auto& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() <= 0 || d.get<int64_t>() > (1 << 20))
      return bad("\"shape\" holds something other than sizes 1..1048576");
    dims.push_back(d.get<uint64_t>());
  }
  DetectRequest r;
  r.dtype = dtype->get<std::string>();
  r.model_type = model_type;
  r.pixels = pixels;
  if (dims.size() != 4 || dims[0] != 1)
    return BadMessage{fmt::format("shape [{}] is not [1, H, W, C]", fmt::join(dims, ", ")), true};
  r.height = static_cast<uint32_t>(dims[1]);
  r.width = static_cast<uint32_t>(dims[2]);
  r.channels = static_cast<uint32_t>(dims[3]);
  if (r.dtype != "uint8") return BadMessage{fmt::format("dtype \"{}\" (only \"uint8\" is served)", r.dtype), true};
  // dims are <= 2^20 each: the product of the last three fits in 64 bits.
  const uint64_t expected = dims[1] * dims[2] * dims[3];
  if (expected != pixels.size())
    return BadMessage{fmt::format("shape [1, {}, {}, {}] is {} bytes but the tensor part has {}", r.height, r.width,
                                  r.channels, expected, pixels.size()),
                      true};
  return r;
}

}  // namespace

Message parse_message(std::span<const std::span<const uint8_t>> parts) {
  if (parts.empty() || parts.size() > 2) return bad(fmt::format("{} message parts (1 or 2 expected)", parts.size()));
  if (parts[0].size() > kMaxHeaderBytes)
    return bad(fmt::format("a header of {} bytes (at most {})", parts[0].size(), kMaxHeaderBytes));
  json h = json::parse(parts[0].begin(), parts[0].end(), nullptr, /*allow_exceptions=*/false);
  if (h.is_discarded()) return bad("the header is not JSON");
  if (!h.is_object()) return bad("the header is not a JSON object");
  try {
    std::string error;
    if (flag(h, "model_request")) {
      if (parts.size() != 1) return bad("a model_request with a second part");
      std::string name = name_of(h, error);
      if (!error.empty()) return bad("model_request: " + error);
      return ModelRequest{std::move(name)};
    }
    if (flag(h, "model_data")) {
      if (parts.size() != 2) return bad("a model_data without the model file part");
      std::string name = name_of(h, error);
      if (!error.empty()) return bad("model_data: " + error);
      return ModelData{std::move(name), parts[1]};
    }
    if (parts.size() != 2) return bad("a detection request without the tensor part");
    return detect(h, parts[1]);
  } catch (const std::exception& e) {  // json type errors: not expected after the checks, never fatal
    return bad(fmt::format("the header cannot be read: {}", e.what()));
  }
}

std::string model_request_reply(bool available, bool loaded) {
  return nlohmann::json{{"model_available", available}, {"model_loaded", loaded}}.dump();
}

std::string model_data_reply(bool saved, bool loaded) {
  return nlohmann::json{{"model_saved", saved}, {"model_loaded", loaded}}.dump();
}

}  // namespace aisrv::phy::frigate
