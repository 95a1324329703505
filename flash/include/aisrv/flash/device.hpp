// aisrv flash — the FlashDevice interface: a NOR-like device with a geometry (size, erase-block size, write
// granularity) and three operations, read / program / erase, each returning a Status.
//
// The contract every implementation enforces (checked here, in the non-virtual public methods, so file images,
// MTD devices and test doubles all behave alike):
//   - every range lies inside the device (offset + length <= size, no overflow);
//   - erase covers whole erase blocks (offset and length multiples of erase_block);
//   - program starts and ends on a write-granularity boundary (multiples of write_size);
//   - program may only clear bits: programming a 1 over a stored 0 is refused (Errc::flash_error) before anything
//     is written, as a real NOR chip cannot do it (it would silently AND the bytes instead).
// A device never interprets the bytes; the model store (store.hpp) gives them a meaning.
//
// The program check needs the old contents. The base class remembers, per erase block, from which offset on the
// block is known to be erased (set by erase(), advanced by program()); programming only such bytes needs no read-back,
// which is exact as long as nothing but this object writes the medium (file images are locked; see
// forget_erased_state()).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace aisrv::flash {

struct Geometry {
  uint64_t size = 0;         // bytes
  uint32_t erase_block = 0;  // bytes, a power of two
  uint32_t write_size = 1;   // program granularity in bytes, a power of two (NOR: 1, some chips 16..256)

  uint64_t block_count() const { return erase_block ? size / erase_block : 0; }
};

// "16 MiB, 64 KiB erase blocks, 1-byte writes".
std::string describe(const Geometry& g);
// Checks the invariants of a geometry (powers of two, size a whole number of blocks, write_size <= erase_block).
Status validate(const Geometry& g);
// "65536" -> 65536, "64K"/"64k"/"64KiB" -> 65536, "16M" -> 16777216, "1G"; refuses anything else or 0.
Result<uint64_t> parse_size(std::string_view text);
// 65536 -> "64 KiB", 16777216 -> "16 MiB", 1000 -> "1000 B".
std::string format_size(uint64_t bytes);

class FlashDevice {
 public:
  virtual ~FlashDevice() = default;
  FlashDevice(const FlashDevice&) = delete;
  FlashDevice& operator=(const FlashDevice&) = delete;

  const Geometry& geometry() const { return geometry_; }
  // Where the bytes live, e.g. "file /var/lib/aisrv/flash.img" or "mtd /dev/mtd0 (NOR)".
  virtual std::string name() const = 0;

  Status read(uint64_t offset, std::span<uint8_t> out);
  Status program(uint64_t offset, std::span<const uint8_t> data);
  Status erase(uint64_t offset, uint64_t length);
  // Durability barrier: everything programmed or erased before it is on the medium when it returns.
  Status sync() { return do_sync(); }

  // Zero-copy read when the device can offer one (a memory mapping of a file image): a view of the bytes, valid
  // until the next program or erase; empty when the device cannot (then use read()). Range-checked. sync() leaves
  // the viewed bytes alone, so a view may be read on another thread while sync() runs (the store hashes a new slot
  // beside the barrier); no other call may run concurrently with anything.
  std::span<const uint8_t> view(uint64_t offset, uint64_t length);

  // True when the range reads as erased (all 0xFF). Reads in pieces; a read error is returned as such.
  Result<bool> is_erased(uint64_t offset, uint64_t length);

 protected:
  explicit FlashDevice(const Geometry& g);
  // For implementations whose medium was changed behind the API (test doubles): drop what is known to be erased.
  void forget_erased_state();
  // Raw operations; called only with ranges that passed the checks above.
  virtual Status do_read(uint64_t offset, std::span<uint8_t> out) = 0;
  virtual Status do_program(uint64_t offset, std::span<const uint8_t> data) = 0;
  virtual Status do_erase(uint64_t offset, uint64_t length) = 0;
  virtual Status do_sync() = 0;
  virtual std::span<const uint8_t> do_view(uint64_t /*offset*/, uint64_t /*length*/) { return {}; }

 private:
  Status check_range(const char* op, uint64_t offset, uint64_t length) const;

  Geometry geometry_;
  std::vector<uint8_t> scratch_;     // old contents read back for the program check
  std::vector<uint32_t> clean_from_; // per erase block: bytes from this offset on are known erased (0xFF)
};

// True when `data` can be programmed over `old` (no bit goes from 0 to 1). On failure, *first_bad (if given)
// receives the index of the first offending byte.
bool programmable_over(std::span<const uint8_t> old, std::span<const uint8_t> data, size_t* first_bad = nullptr);

}  // namespace aisrv::flash
