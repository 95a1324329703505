// aisrv flash — a flash device backed by an image file (the default `aisrvd --flash PATH`), with NOR semantics:
// erase writes 0xFF over whole blocks, program may only clear bits (enforced by FlashDevice). The file holds exactly
// the chip's bytes, so an image made offline can be programmed onto a real chip unchanged.
// The file is locked (flock) while open: exclusively for writing, shared for read-only use.
// Erases are deferred: an erased block reads as 0xFF at once but is written to the file only when it is next
// programmed (together with its data, so each block is written once) or at sync()/close. A crash before that leaves
// the block's old bytes, which is what a power cut before the erase leaves on a chip.
#pragma once

#include <filesystem>
#include <memory>

#include "aisrv/flash/device.hpp"

namespace aisrv::flash {

class FileFlash final : public FlashDevice {
 public:
  // Creates a new image of the given geometry, every byte 0xFF (erased). Fails when the file exists.
  static Result<std::unique_ptr<FileFlash>> create(const std::filesystem::path& path, const Geometry& geometry);
  // Opens an existing image; its size is the file size, which must be a whole number of erase blocks.
  static Result<std::unique_ptr<FileFlash>> open(const std::filesystem::path& path, uint32_t erase_block,
                                                 uint32_t write_size, bool read_only);
  ~FileFlash() override;

  std::string name() const override;
  bool read_only() const { return read_only_; }

 protected:
  Status do_read(uint64_t offset, std::span<uint8_t> out) override;
  Status do_program(uint64_t offset, std::span<const uint8_t> data) override;
  Status do_erase(uint64_t offset, uint64_t length) override;
  Status do_sync() override;
  // The file is mapped read-only once; a view is offered when no pending erase is in the range and the file still
  // has its size (a file truncated behind our back is then read with pread, which reports it).
  std::span<const uint8_t> do_view(uint64_t offset, uint64_t length) override;

 private:
  FileFlash(const Geometry& g, int fd, std::filesystem::path path, bool read_only)
      : FlashDevice(g), fd_(fd), path_(std::move(path)), read_only_(read_only),
        pending_erase_(static_cast<size_t>(g.block_count()), false) {}
  Status write_all(uint64_t offset, std::span<const uint8_t> data, const char* op);
  Status write_erased(uint64_t block);   // writes 0xFF over a pending block and clears its flag
  Status flush_pending_erases();


  int fd_ = -1;
  std::filesystem::path path_;
  bool read_only_ = false;
  std::vector<bool> pending_erase_;  // per erase block: erased, not yet written to the file
  std::vector<uint8_t> ff_;          // one erase block of 0xFF
  const uint8_t* map_ = nullptr;     // read-only shared mapping of the whole image (null if mmap failed)
};

}  // namespace aisrv::flash
