// aisrv flash — a flash device backed by an image file (the default `aisrvd --flash PATH`), with NOR semantics:
// erase writes 0xFF over whole blocks, program may only clear bits (enforced by FlashDevice). The file holds exactly
// the chip's bytes, so an image made offline can be programmed onto a real chip unchanged.
// The file is locked (flock) while open: exclusively for writing, shared for read-only use.
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

 private:
  FileFlash(const Geometry& g, int fd, std::filesystem::path path, bool read_only)
      : FlashDevice(g), fd_(fd), path_(std::move(path)), read_only_(read_only) {}
  Status write_all(uint64_t offset, std::span<const uint8_t> data, const char* op);

  int fd_ = -1;
  std::filesystem::path path_;
  bool read_only_ = false;
};

}  // namespace aisrv::flash
