// aisrv protocol — framing on byte streams (Unix and TCP sockets), as pure functions.
//   request  = header (12 B: u32 cmd, u32 engine, u32 tensor) + u32 payload length + payload
//   response = u32 status + u32 payload length + payload
// All integers little-endian. Lengths above the limit are refused from the prefix alone, before any allocation.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "aisrv/protocol/protocol.hpp"

namespace aisrv::protocol::stream {

inline constexpr size_t kRequestPrefix = kHeaderSize + 4;  // 16
inline constexpr size_t kResponsePrefix = 8;

struct RequestPrefix {
  Header header;
  uint32_t length = 0;
};
struct ResponsePrefix {
  uint32_t status = 0;
  uint32_t length = 0;
};

std::array<uint8_t, kRequestPrefix> encode_request_prefix(const Header& h, uint32_t length);
std::array<uint8_t, kResponsePrefix> encode_response_prefix(uint32_t status, uint32_t length);

// Errc::bad_length when the announced length exceeds `max_payload`.
Result<RequestPrefix> decode_request_prefix(std::span<const uint8_t, kRequestPrefix> in, uint32_t max_payload);
Result<ResponsePrefix> decode_response_prefix(std::span<const uint8_t, kResponsePrefix> in, uint32_t max_payload);

// Whole frames (used by tests, tools and clients that build a request in one buffer).
std::vector<uint8_t> encode_request(const Header& h, std::span<const uint8_t> payload);
std::vector<uint8_t> encode_response(uint32_t status, std::span<const uint8_t> payload);

struct DecodedRequest {
  Request request;   // payload points into the input buffer
  size_t consumed;   // bytes of the input this frame used
};
struct DecodedResponse {
  uint32_t status;
  std::span<const uint8_t> payload;
  size_t consumed;
};
// nullopt when `in` holds only part of a frame; an error when the prefix is invalid.
Result<std::optional<DecodedRequest>> decode_request(std::span<const uint8_t> in, uint32_t max_payload);
Result<std::optional<DecodedResponse>> decode_response(std::span<const uint8_t> in, uint32_t max_payload);

}  // namespace aisrv::protocol::stream
