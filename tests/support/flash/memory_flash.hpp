// aisrv tests — MemoryFlash: a NOR flash device in RAM (test double). The FlashDevice base class enforces the same
// contract as for real devices (bounds, alignment, program only clears bits); the bytes are open to the test for
// snapshots and bit flips, and every mutating operation is counted.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "aisrv/flash/device.hpp"

namespace aisrv::test {

class MemoryFlash final : public flash::FlashDevice {
 public:
  explicit MemoryFlash(const flash::Geometry& g) : FlashDevice(g), bytes_(g.size, 0xFF) {}
  MemoryFlash(const flash::Geometry& g, std::vector<uint8_t> bytes) : FlashDevice(g), bytes_(std::move(bytes)) {
    bytes_.resize(g.size, 0xFF);
  }

  std::string name() const override { return "memory flash"; }
  // Mutable access changes the medium behind the API: what the base class knew to be erased is forgotten.
  std::vector<uint8_t>& bytes() {
    forget_erased_state();
    return bytes_;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::unique_ptr<MemoryFlash> clone() const { return std::make_unique<MemoryFlash>(geometry(), bytes_); }
  void flip_bit(uint64_t bit) {
    forget_erased_state();
    bytes_[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }

  uint64_t reads = 0, programs = 0, erases = 0, syncs = 0;

 protected:
  Status do_read(uint64_t offset, std::span<uint8_t> out) override {
    ++reads;
    std::memcpy(out.data(), bytes_.data() + offset, out.size());
    return ok();
  }
  Status do_program(uint64_t offset, std::span<const uint8_t> data) override {
    ++programs;
    for (size_t i = 0; i < data.size(); ++i) bytes_[offset + i] &= data[i];
    return ok();
  }
  Status do_erase(uint64_t offset, uint64_t length) override {
    ++erases;
    std::fill_n(bytes_.begin() + static_cast<std::ptrdiff_t>(offset), length, 0xFF);
    return ok();
  }
  Status do_sync() override {
    ++syncs;
    return ok();
  }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace aisrv::test
