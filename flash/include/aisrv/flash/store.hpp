// aisrv flash — the model store: per client (= engine number) a catalogue entry with two slots (A/B) on a
// FlashDevice, updated power-cut-safely: an update writes the inactive slot, verifies its xxHash64 by reading it
// back, and only then commits by appending a newer catalogue record; a transfer that never commits leaves the old
// model active. Engines read through the seed's API: read_model (length + bytes, hash-verified) and
// read_parameters (offset and size inside the client's parameter block).
//
// Thread-safe: one mutex serialises every call (the device is not shared with anything else).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aisrv/flash/catalogue.hpp"
#include "aisrv/flash/device.hpp"
#include "aisrv/flash/format.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::flash {

namespace detail {
class Journal;
struct PendingUpdate;
}  // namespace detail

struct FormatOptions {
  uint32_t clients = 16;  // engine numbers 0..clients-1
};

struct UpdateInfo {
  std::string name;                                   // <= 32 bytes, no control characters
  std::array<uint64_t, kSegmentKinds> sizes{};        // bytes per segment; the model (index 0) must be > 0
  std::optional<uint64_t> expected_hash;              // xxHash64 of the model bytes, checked at commit
  ModelFormat expected_format = ModelFormat::unknown; // unknown = accept whatever is detected
};

struct UpdateProgress {
  uint8_t slot = 0;                  // slot being written (0 = A, 1 = B)
  SegmentKind segment = SegmentKind::model;  // segment the next chunk belongs to
  uint64_t offset = 0;               // offset the next chunk must start at
  uint64_t written = 0;              // bytes received over all segments
  uint64_t total = 0;                // bytes expected over all segments
};

struct JournalStats {
  struct Block {
    uint32_t erase_block = 0;
    bool header_valid = false;
    uint64_t generation = 0;
    uint32_t capacity = 0, used = 0, intact = 0, unreadable = 0;
  };
  std::array<Block, 2> blocks{};
  int active = -1;
  uint64_t next_seq = 0;
  uint64_t compactions = 0;  // done by this store object
};

class ModelStore {
 public:
  // Writes a new, empty store (destroys whatever the device held). The superblock is written last, so an
  // interrupted format leaves a device that open() refuses, never a half-valid store.
  static Result<std::unique_ptr<ModelStore>> format(FlashDevice& dev, const FormatOptions& options);
  // Opens an existing store without writing anything. Refuses foreign, erased, truncated or inconsistent images with
  // a message naming the problem; tolerates (and lists in notes()) what a power cut can leave behind.
  static Result<std::unique_ptr<ModelStore>> open(FlashDevice& dev);
  ~ModelStore();

  FlashDevice& device() { return *dev_; }
  const format::Superblock& superblock() const { return sb_; }
  uint32_t clients() const { return sb_.clients; }
  // What open() found and tolerated (torn records from a power cut, unreadable journal header, ...).
  std::vector<std::string> notes() const;
  JournalStats journal_stats() const;

  // Catalogue entries of every client (clients without a record have no model and seq 0).
  std::vector<CatalogueEntry> list() const;
  Result<CatalogueEntry> entry(uint32_t client) const;

  // FLASH_READ_MODEL: the active model's bytes, after checking the stored length and the xxHash64.
  Result<std::vector<uint8_t>> read_model(uint32_t client);
  // Raw bytes [offset, offset + out.size()) of the active model (no hash check; for chunked read-back).
  Status read_model_range(uint32_t client, uint64_t offset, std::span<uint8_t> out);
  // FLASH_READ_PARAMETERS: bytes [offset, offset + size) of the active slot's parameter block (bounds-checked).
  Result<std::vector<uint8_t>> read_parameters(uint32_t client, uint64_t offset, uint64_t size);
  // Whole segment of the active slot, hash-verified (parameters, operators, xip).
  Result<std::vector<uint8_t>> read_segment(uint32_t client, SegmentKind kind);
  // Reads back every segment of a slot (default: the active one) and checks length prefix and hashes.
  Status verify(uint32_t client, std::optional<uint8_t> slot = std::nullopt);

  // Chunked update of one client. begin replaces any unfinished update of that client; chunks of each segment
  // must arrive in order (segment order model, parameters, operators, xip; the error names the expected offset).
  Status begin_update(uint32_t client, const UpdateInfo& info);
  Status write_chunk(uint32_t client, SegmentKind kind, uint64_t offset, std::span<const uint8_t> bytes);
  // Flushes, reads the slot back, checks every hash (and the expected hash/format), then commits.
  Result<CatalogueEntry> commit_update(uint32_t client);
  void abort_update(uint32_t client);
  std::optional<UpdateProgress> update_progress(uint32_t client) const;

  // One-call update: begin + chunks + commit.
  Result<CatalogueEntry> write_model(uint32_t client, std::string_view name, std::span<const uint8_t> model,
                                     std::span<const uint8_t> parameters = {});
  // Removes the client's model from the catalogue (a committed record without slots), then erases its blocks.
  Status erase(uint32_t client);

 private:
  ModelStore(FlashDevice& dev, const format::Superblock& sb);
  Status check_client(uint32_t client) const;
  Status reload_if_needed();
  Result<format::Record> current_record(uint32_t client) const;
  Result<const Slot*> active_slot(uint32_t client) const;
  Status verify_slot(uint32_t client, const Slot& s);
  Result<uint64_t> allocate(uint32_t client, uint8_t target_slot, uint64_t bytes);
  std::optional<uint64_t> find_free(uint64_t blocks_needed, uint32_t client) const;
  Status release_slot(uint32_t client, uint8_t slot);
  Status flush_stage(detail::PendingUpdate& p);
  Status prepare_blocks(detail::PendingUpdate& p, uint64_t end);
  Result<CatalogueEntry> commit_locked(uint32_t client);
  void mark_dirty() { dirty_ = true; }

  mutable std::mutex mu_;
  FlashDevice* dev_;
  format::Superblock sb_;
  std::unique_ptr<detail::Journal> journal_;
  std::vector<std::string> notes_;
  std::map<uint32_t, std::unique_ptr<detail::PendingUpdate>> pending_;
  bool dirty_ = false;  // a write failed half-way: re-read the journal before the next write
};

}  // namespace aisrv::flash
