// aisrv protocol — payloads of the model-store commands (0x30-0x3F / 0xB0-0xBF): SET_FLASH_BEGIN, SET_FLASH_CHUNK,
// GET_FLASH_CATALOGUE, GET_FLASH_WRITE_STATE. Byte layouts are specified in docs/flash-format.md ("Protocol") and
// described once in records.def, which declares the structs (FlashBegin, FlashChunk, FlashSlotInfo, FlashEntry,
// FlashCatalogue, FlashWriteState: payloads.hpp expands the table) and drives these codecs and the Python client's;
// decoders are bounds-checked and refuse trailing bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::protocol {

// Model format codes on the wire (same values as on flash).
inline constexpr uint32_t kFlashFormatAny = 0;  // begin: accept whatever the bytes are; catalogue: unknown
inline constexpr uint32_t kFlashFormatTflite = 1;
inline constexpr uint32_t kFlashFormatHef = 2;
inline constexpr uint32_t kMaxCatalogueEntries = 4096;  // entries a catalogue decoder accepts

// SET_FLASH_BEGIN.
void encode(const FlashBegin& b, std::vector<uint8_t>& out);
Result<FlashBegin> decode_flash_begin(std::span<const uint8_t> in);

// SET_FLASH_CHUNK.
void encode_flash_chunk(uint64_t offset, std::span<const uint8_t> bytes, std::vector<uint8_t>& out);
Result<FlashChunk> decode_flash_chunk(std::span<const uint8_t> in);

// GET_FLASH_CATALOGUE.
void encode(const FlashCatalogue& c, std::vector<uint8_t>& out);
Result<FlashCatalogue> decode_flash_catalogue(std::span<const uint8_t> in);

// GET_FLASH_WRITE_STATE.
void encode(const FlashWriteState& s, std::vector<uint8_t>& out);
Result<FlashWriteState> decode_flash_write_state(std::span<const uint8_t> in);

std::string_view flash_format_name(uint32_t format);  // "any"/"unknown" for 0, "tflite", "hef", "?" otherwise

}  // namespace aisrv::protocol
