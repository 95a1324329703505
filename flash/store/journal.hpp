// aisrv flash (internal) — the catalogue journal: two erase blocks holding append-only, checksummed catalogue
// records. The newest intact record per client wins; a full block is compacted into the other one (newest records
// copied first, header written last), and a block is erased only when the other block holds a copy of every
// client's newest record, so a power cut at any point never loses a committed record.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "aisrv/flash/device.hpp"
#include "aisrv/flash/format.hpp"

namespace aisrv::flash::detail {

class Journal {
 public:
  struct BlockState {
    uint32_t block = 0;                          // erase-block index on the device
    std::optional<format::JournalHeader> header; // valid header, if any
    uint32_t capacity = 0;                       // record positions in the block
    uint32_t next_free = 0;                      // first position after the last one that is not erased
    uint32_t valid = 0;                          // intact records
    uint32_t garbage = 0;                        // positions that are neither erased nor an intact record
  };
  struct Newest {
    format::Record record;
    std::array<bool, 2> in_block{};  // an intact copy of this record is in journal block 0 / 1
  };

  // Scans both journal blocks (read-only). Torn or corrupt positions are tolerated and described in `notes`;
  // an intact record for a client the store does not have is refused (hostile image).
  static Result<Journal> load(FlashDevice& dev, const format::Superblock& sb, std::vector<std::string>& notes);
  // Format step: erases both journal blocks and writes the header of block 0 (generation 1).
  static Status initialise(FlashDevice& dev, const format::Superblock& sb);

  const std::optional<Newest>& newest(uint32_t client) const { return newest_[client]; }
  uint64_t next_seq() const { return max_seq_ + 1; }
  // Programs the record (seq must be next_seq()) at the next free position of the active block, compacting first
  // when the block is full, then syncs the device. On failure the in-memory state still matches the flash.
  Status append(const format::Record& r);
  const BlockState& block_state(int j) const { return blocks_[j]; }
  int active_block() const;  // -1 when neither block has a valid header
  uint64_t compactions() const { return compactions_; }

 private:
  Journal(FlashDevice& dev, const format::Superblock& sb) : dev_(&dev), sb_(sb) {}
  Status compact();
  bool safe_to_erase(int j) const;
  Status program_record(int j, uint32_t pos, const format::Record& r);
  uint64_t position_offset(int j, uint32_t pos) const;

  FlashDevice* dev_;
  format::Superblock sb_;
  std::array<BlockState, 2> blocks_{};
  std::vector<std::optional<Newest>> newest_;
  uint64_t max_seq_ = 0;
  uint64_t max_generation_ = 0;
  uint64_t compactions_ = 0;
};

}  // namespace aisrv::flash::detail
