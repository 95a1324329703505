// aisrv flash — byte layouts of the model store on flash (docs/flash-format.md is the specification): the
// superblock with the seed's version word, the journal block header and the catalogue record. Pure functions:
// encoders produce exact bytes, decoders check magic, lengths and xxHash64 and never trust a field unchecked.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aisrv/flash/catalogue.hpp"
#include "aisrv/flash/device.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::flash::format {

// Store format version written by this build (the seed's XMOS layout is 1.2).
inline constexpr uint8_t kMajor = 2;
inline constexpr uint8_t kMinor = 0;

// Seed version word: major | minor << 8 | ~major << 16 | ~minor << 24 (little-endian u32 at offset 0).
uint32_t version_word(uint8_t major, uint8_t minor);
struct Version {
  uint8_t major = 0;
  uint8_t minor = 0;
};
// The version when the complements match, nullopt otherwise (erased flash reads 0xFFFFFFFF: no match).
std::optional<Version> decode_version_word(uint32_t word);

inline constexpr uint32_t kSuperblockBytes = 64;
inline constexpr uint32_t kJournalHeaderBytes = 32;
inline constexpr uint32_t kRecordBytes = 352;
inline constexpr uint32_t kSlotBytes = 160;
inline constexpr uint32_t kModelPrefixBytes = 4;  // the seed's u32 length in front of the model bytes
inline constexpr uint32_t kSegmentAlign = 16;     // segments start on max(16, write size) boundaries
inline constexpr uint32_t kMaxClients = 64;

struct Superblock {
  uint8_t major = kMajor;
  uint8_t minor = kMinor;
  uint32_t erase_block = 0;
  uint32_t write_size = 1;
  uint32_t clients = 0;
  uint64_t store_size = 0;          // bytes of the device the store spans (from offset 0)
  uint32_t journal_block[2] = {1, 2};
  uint32_t data_first_block = 3;
  uint32_t data_block_count = 0;
  uint32_t record_size = 0;         // kRecordBytes rounded up to the write size
  uint32_t journal_header_size = 0; // kJournalHeaderBytes rounded up to the write size

  uint32_t records_per_block() const { return (erase_block - journal_header_size) / record_size; }
  uint64_t block_offset(uint32_t block) const { return uint64_t{block} * erase_block; }
  uint64_t data_begin() const { return block_offset(data_first_block); }
  uint64_t data_end() const { return block_offset(data_first_block + data_block_count); }
};

// Layout for a new store on a device of this geometry; refuses geometries that cannot hold it, naming the numbers.
Result<Superblock> plan(const Geometry& device, uint32_t clients);
std::vector<uint8_t> encode(const Superblock& sb);  // kSuperblockBytes
// Checks version word, magic, checksum and every field against itself and the device it was read from.
Result<Superblock> decode_superblock(std::span<const uint8_t> bytes, const Geometry& device);

struct JournalHeader {
  uint64_t generation = 0;  // increases with every compaction; the valid header with the highest one is active
  uint32_t block = 0;       // erase-block index of the journal block (guards against a misplaced copy)
};
std::vector<uint8_t> encode(const JournalHeader& h);  // kJournalHeaderBytes
std::optional<JournalHeader> decode_journal_header(std::span<const uint8_t> bytes);

struct Record {
  uint64_t seq = 0;
  uint32_t client = 0;
  uint8_t active = kNoActiveSlot;
  std::array<Slot, 2> slots{};

  CatalogueEntry entry() const { return CatalogueEntry{client, seq, active, slots}; }
};
std::vector<uint8_t> encode(const Record& r);  // kRecordBytes
// nullopt when the bytes are not an intact record (wrong magic/length/checksum): a torn write or corruption.
std::optional<Record> decode_record(std::span<const uint8_t> bytes);
// Content checks of an intact record against the layout (hostile images): client, active slot, names, extents
// inside the data area and block-aligned, segments inside their extent and not overlapping.
Status validate(const Record& r, const Superblock& sb);

// Offsets of the segments inside a new slot for these segment sizes (model first, each aligned), and the extent
// size it needs (whole erase blocks).
struct SlotPlan {
  std::array<Segment, kSegmentKinds> segments{};
  uint64_t stream_bytes = 0;  // end of the last segment
  uint64_t extent_bytes = 0;  // stream_bytes rounded up to erase blocks
};
Result<SlotPlan> plan_slot(const Superblock& sb, const std::array<uint64_t, kSegmentKinds>& sizes);

// Name rules: 0..32 bytes, no NUL or other control character.
Status validate_name(std::string_view name);

uint64_t xxh64(std::span<const uint8_t> bytes);

}  // namespace aisrv::flash::format
