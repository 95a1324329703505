// aisrv fuzz target — the socket (stream) framing: request and response frames decoded from arbitrary bytes, one
// after another as a connection reads them, against a small and the full payload limit.
#include <cstddef>
#include <cstdint>
#include <span>

#include "aisrv/protocol/stream_framing.hpp"

using namespace aisrv::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  for (uint32_t limit : {uint32_t{64}, uint32_t{AISRV_MAX_PAYLOAD}}) {
    size_t at = 0;
    while (at < in.size()) {
      auto r = stream::decode_request(in.subspan(at), limit);
      if (!r || !*r || (*r)->consumed == 0) break;
      if ((*r)->request.payload.size() > limit) __builtin_trap();
      at += (*r)->consumed;
    }
    at = 0;
    while (at < in.size()) {
      auto r = stream::decode_response(in.subspan(at), limit);
      if (!r || !*r || (*r)->consumed == 0) break;
      at += (*r)->consumed;
    }
    if (in.size() >= stream::kRequestPrefix)
      (void)stream::decode_request_prefix(in.first<stream::kRequestPrefix>(), limit);
  }
  return 0;
}
