// aisrv protocol — stream framing for sockets.
#include "aisrv/protocol/stream_framing.hpp"

namespace aisrv::protocol::stream {

std::array<uint8_t, kRequestPrefix> encode_request_prefix(const Header& h, uint32_t length) {
  std::array<uint8_t, kRequestPrefix> out{};
  encode_header(h, std::span<uint8_t, kHeaderSize>(out.data(), kHeaderSize));
  aisrv_put_u32(out.data() + kHeaderSize, length);
  return out;
}

std::array<uint8_t, kResponsePrefix> encode_response_prefix(uint32_t status, uint32_t length) {
  std::array<uint8_t, kResponsePrefix> out{};
  aisrv_put_u32(out.data(), status);
  aisrv_put_u32(out.data() + 4, length);
  return out;
}

Result<RequestPrefix> decode_request_prefix(std::span<const uint8_t, kRequestPrefix> in, uint32_t max_payload) {
  RequestPrefix p;
  p.header = decode_header(in.first<kHeaderSize>());
  p.length = aisrv_get_u32(in.data() + kHeaderSize);
  if (p.length > max_payload)
    return make_error(Errc::bad_length, "{} announces a {}-byte payload; the limit is {} bytes",
                      command_name(p.header.cmd), p.length, max_payload);
  return p;
}

Result<ResponsePrefix> decode_response_prefix(std::span<const uint8_t, kResponsePrefix> in, uint32_t max_payload) {
  ResponsePrefix p{aisrv_get_u32(in.data()), aisrv_get_u32(in.data() + 4)};
  if (p.length > max_payload)
    return make_error(Errc::protocol_error, "response announces a {}-byte payload; the limit is {} bytes", p.length,
                      max_payload);
  return p;
}

std::vector<uint8_t> encode_request(const Header& h, std::span<const uint8_t> payload) {
  const auto prefix = encode_request_prefix(h, static_cast<uint32_t>(payload.size()));
  std::vector<uint8_t> out(prefix.begin(), prefix.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::vector<uint8_t> encode_response(uint32_t status, std::span<const uint8_t> payload) {
  const auto prefix = encode_response_prefix(status, static_cast<uint32_t>(payload.size()));
  std::vector<uint8_t> out(prefix.begin(), prefix.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Result<std::optional<DecodedRequest>> decode_request(std::span<const uint8_t> in, uint32_t max_payload) {
  if (in.size() < kRequestPrefix) return std::optional<DecodedRequest>{};
  auto prefix = decode_request_prefix(in.first<kRequestPrefix>(), max_payload);
  if (!prefix) return std::move(prefix).error();
  const size_t total = kRequestPrefix + prefix->length;
  if (in.size() < total) return std::optional<DecodedRequest>{};
  return std::optional<DecodedRequest>{DecodedRequest{
      Request{prefix->header, in.subspan(kRequestPrefix, prefix->length)}, total}};
}

Result<std::optional<DecodedResponse>> decode_response(std::span<const uint8_t> in, uint32_t max_payload) {
  if (in.size() < kResponsePrefix) return std::optional<DecodedResponse>{};
  auto prefix = decode_response_prefix(in.first<kResponsePrefix>(), max_payload);
  if (!prefix) return std::move(prefix).error();
  const size_t total = kResponsePrefix + prefix->length;
  if (in.size() < total) return std::optional<DecodedResponse>{};
  return std::optional<DecodedResponse>{
      DecodedResponse{prefix->status, in.subspan(kResponsePrefix, prefix->length), total}};
}

}  // namespace aisrv::protocol::stream
