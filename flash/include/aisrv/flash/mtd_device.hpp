// aisrv flash — a Linux MTD character device (`--flash mtd:/dev/mtdN`): geometry from MEMGETINFO, erase with
// MEMERASE, program and read with pwrite/pread on the device node. NOR, RAM and DataFlash devices are accepted;
// NAND is refused (it needs bad-block handling and program-once pages, which the store does not do — use UBI).
#pragma once

#include <memory>
#include <string>

#include "aisrv/flash/device.hpp"

namespace aisrv::flash {

class MtdFlash final : public FlashDevice {
 public:
  static Result<std::unique_ptr<MtdFlash>> open(const std::string& node, bool read_only);
  ~MtdFlash() override;

  std::string name() const override;
  // MTD type name from MEMGETINFO ("NOR", "RAM", "DataFlash", ...).
  const std::string& type_name() const { return type_; }

 protected:
  Status do_read(uint64_t offset, std::span<uint8_t> out) override;
  Status do_program(uint64_t offset, std::span<const uint8_t> data) override;
  Status do_erase(uint64_t offset, uint64_t length) override;
  Status do_sync() override;

 private:
  MtdFlash(const Geometry& g, int fd, std::string node, std::string type, bool read_only)
      : FlashDevice(g), fd_(fd), node_(std::move(node)), type_(std::move(type)), read_only_(read_only) {}

  int fd_ = -1;
  std::string node_;
  std::string type_;
  bool read_only_ = false;
};

}  // namespace aisrv::flash
