// aisrv protocol — codecs of the model-store command payloads (docs/flash-format.md, "Protocol"): the records of
// records.def through the record codec (records.hpp).
#include "aisrv/protocol/flash_payloads.hpp"

#include "aisrv/protocol/records.hpp"

namespace aisrv::protocol {

std::string_view flash_format_name(uint32_t format) {
  switch (format) {
    case kFlashFormatAny: return "unknown";
    case kFlashFormatTflite: return "tflite";
    case kFlashFormatHef: return "hef";
    default: return "?";
  }
}

void encode(const FlashBegin& b, std::vector<uint8_t>& out) { records::encode_record(b, out); }
Result<FlashBegin> decode_flash_begin(std::span<const uint8_t> in) { return records::decode_record<FlashBegin>(in); }

void encode_flash_chunk(uint64_t offset, std::span<const uint8_t> bytes, std::vector<uint8_t>& out) {
  records::encode_record(FlashChunk{offset, bytes}, out);
}
Result<FlashChunk> decode_flash_chunk(std::span<const uint8_t> in) { return records::decode_record<FlashChunk>(in); }

void encode(const FlashCatalogue& c, std::vector<uint8_t>& out) { records::encode_record(c, out); }
Result<FlashCatalogue> decode_flash_catalogue(std::span<const uint8_t> in) {
  return records::decode_record<FlashCatalogue>(in);
}

void encode(const FlashWriteState& s, std::vector<uint8_t>& out) { records::encode_record(s, out); }
Result<FlashWriteState> decode_flash_write_state(std::span<const uint8_t> in) {
  return records::decode_record<FlashWriteState>(in);
}

}  // namespace aisrv::protocol
