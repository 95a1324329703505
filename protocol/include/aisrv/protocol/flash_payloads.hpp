// aisrv protocol — payloads of the model-store commands (0x30-0x3F / 0xB0-0xBF): SET_FLASH_BEGIN, SET_FLASH_CHUNK,
// GET_FLASH_CATALOGUE, GET_FLASH_WRITE_STATE. Byte layouts are specified in docs/flash-format.md ("Protocol") and
// described once in records.def (which drives these codecs and the Python client's); decoders are bounds-checked
// and refuse trailing bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace aisrv::protocol {

// Model format codes on the wire (same values as on flash).
inline constexpr uint32_t kFlashFormatAny = 0;  // begin: accept whatever the bytes are; catalogue: unknown
inline constexpr uint32_t kFlashFormatTflite = 1;
inline constexpr uint32_t kFlashFormatHef = 2;

// SET_FLASH_BEGIN: u64 size | u64 xxh64 | u32 format | u32 flags (bit 0: xxh64 given) | str8 name.
struct FlashBegin {
  uint64_t size = 0;
  std::optional<uint64_t> xxh64;
  uint32_t format = kFlashFormatAny;
  std::string name;
};
void encode(const FlashBegin& b, std::vector<uint8_t>& out);
Result<FlashBegin> decode_flash_begin(std::span<const uint8_t> in);

// SET_FLASH_CHUNK: u64 offset | bytes (the rest of the payload).
struct FlashChunk {
  uint64_t offset = 0;
  std::span<const uint8_t> bytes;
};
void encode_flash_chunk(uint64_t offset, std::span<const uint8_t> bytes, std::vector<uint8_t>& out);
Result<FlashChunk> decode_flash_chunk(std::span<const uint8_t> in);

// One stored model in GET_FLASH_CATALOGUE:
//   u8 slot (0 = A, 1 = B) | str8 name | u32 format | u64 size | u64 xxh64 | u64 seq | u64 parameter bytes
struct FlashSlotInfo {
  uint8_t slot = 0;
  std::string name;
  uint32_t format = kFlashFormatAny;
  uint64_t size = 0;
  uint64_t xxh64 = 0;
  uint64_t seq = 0;
  uint64_t parameters = 0;
};
// One client: u32 client | u64 seq | u8 flags (bit 0 active, bit 1 previous, bit 2 transfer in progress) |
//   [active slot] [previous slot] [u64 received | u64 expected]
struct FlashEntry {
  uint32_t client = 0;
  uint64_t seq = 0;
  std::optional<FlashSlotInfo> active;
  std::optional<FlashSlotInfo> previous;
  bool writing = false;
  uint64_t received = 0;
  uint64_t expected = 0;
};
inline constexpr uint32_t kMaxCatalogueEntries = 4096;  // entries a catalogue decoder accepts
// u64 store size | u32 erase block | u32 write size | u64 data bytes | u64 free bytes | u32 read chunk |
// str8 device | u32 entry count | entries
struct FlashCatalogue {
  uint64_t store_size = 0;
  uint32_t erase_block = 0;
  uint32_t write_size = 0;
  uint64_t data_bytes = 0;
  uint64_t free_bytes = 0;
  uint32_t read_chunk = 0;  // GET_FLASH_MODEL chunk size
  std::string device;
  std::vector<FlashEntry> entries;  // one per client of the store
};
void encode(const FlashCatalogue& c, std::vector<uint8_t>& out);
Result<FlashCatalogue> decode_flash_catalogue(std::span<const uint8_t> in);

// GET_FLASH_WRITE_STATE: u8 in progress | u8 slot | u64 next offset | u64 received | u64 expected.
struct FlashWriteState {
  bool in_progress = false;
  uint8_t slot = 0;
  uint64_t next_offset = 0;
  uint64_t received = 0;
  uint64_t expected = 0;
};
void encode(const FlashWriteState& s, std::vector<uint8_t>& out);
Result<FlashWriteState> decode_flash_write_state(std::span<const uint8_t> in);

std::string_view flash_format_name(uint32_t format);  // "any"/"unknown" for 0, "tflite", "hef", "?" otherwise

}  // namespace aisrv::protocol
