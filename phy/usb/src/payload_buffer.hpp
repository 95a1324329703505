// aisrv phy/usb (private) — the receive buffer of SET payloads: one anonymous mapping as large as the largest
// payload, so endpoint reads land in place (the request's payload is a view into it, no copy) while only the pages
// that data actually reached use memory; pages above a threshold are given back after a large request.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace aisrv::phy::usb {

class PayloadBuffer {
 public:
  explicit PayloadBuffer(size_t size) : size_(size) {
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) size_ = 0;
    else data_ = static_cast<uint8_t*>(p);
  }
  ~PayloadBuffer() {
    if (data_) munmap(data_, size_);
  }
  PayloadBuffer(const PayloadBuffer&) = delete;
  PayloadBuffer& operator=(const PayloadBuffer&) = delete;

  // False when the mapping failed (no address space).
  bool valid() const { return data_ != nullptr; }
  uint8_t* data() { return data_; }
  size_t size() const { return size_; }
  std::span<uint8_t> span(size_t n) { return {data_, n}; }

  // Returns the memory of the pages above `keep` bytes to the system (their contents become zero).
  void release_above(size_t keep) {
    const size_t page = 4096;
    const size_t from = (keep + page - 1) / page * page;
    if (from < size_) madvise(data_ + from, size_ - from, MADV_DONTNEED);
  }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace aisrv::phy::usb
