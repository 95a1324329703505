// aisrv fuzz target — every payload codec of the protocol (the extension records, INFER, the flash store records):
// the first byte picks the decoder, the rest is its input. A record that decodes must encode again and decode to
// the same bytes (round trip), which catches decoders that accept what encoders cannot produce.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "aisrv/protocol/flash_payloads.hpp"
#include "aisrv/protocol/payloads.hpp"

using namespace aisrv::protocol;

namespace {
template <typename T, typename Decode>
void round_trip(std::span<const uint8_t> in, Decode decode) {
  auto r = decode(in);
  if (!r) return;
  std::vector<uint8_t> again;
  encode(*r, again);
  auto r2 = decode(again);
  if (!r2) __builtin_trap();
  std::vector<uint8_t> third;
  encode(*r2, third);
  if (third != again) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> in(data + 1, size - 1);
  switch (data[0] % 16) {
    case 0: round_trip<Spec>(in, decode_spec); break;
    case 1: (void)decode_version(in); break;  // accepts trailing bytes: no exact round trip
    case 2: round_trip<ModelTensors>(in, decode_tensor_info); break;
    case 3: round_trip<EngineInfo>(in, decode_engine_info); break;
    case 4: round_trip<TimingRecord>(in, decode_timing_record); break;
    case 5: (void)decode_timings(in); break;
    case 6: {
      auto r = decode_infer_request(in);
      if (r) {
        std::vector<uint8_t> again;
        encode_infer_request(*r, again);
        if (std::vector<uint8_t>(in.begin(), in.end()) != again) __builtin_trap();
      }
      break;
    }
    case 7: {
      auto r = decode_infer_answer(in);
      if (r) {
        std::vector<uint8_t> again;
        encode_infer_answer(*r, again);
        if (std::vector<uint8_t>(in.begin(), in.end()) != again) __builtin_trap();
      }
      break;
    }
    case 8: (void)decode_session_info(in); break;
    case 9: round_trip<FlashBegin>(in, decode_flash_begin); break;
    case 10: (void)decode_flash_chunk(in); break;
    case 11: round_trip<FlashCatalogue>(in, decode_flash_catalogue); break;
    case 12: round_trip<FlashWriteState>(in, decode_flash_write_state); break;
    case 13: (void)decode_u32(in); break;
    case 14: round_trip<ServerStats>(in, decode_server_stats); break;
    case 15: round_trip<ModelMetadata>(in, decode_model_metadata); break;
  }
  return 0;
}
