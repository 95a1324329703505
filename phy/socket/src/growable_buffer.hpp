// aisrv phy/socket (private) — a byte buffer that grows without zero-filling and keeps its capacity between
// requests, so receiving a payload costs one copy from the kernel and no memset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace aisrv::phy {

class GrowableBuffer {
 public:
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }

  // Grows to `n` bytes, keeping the first size() bytes; new bytes are uninitialised.
  void resize(size_t n) {
    if (n > capacity_) {
      size_t cap = capacity_ ? capacity_ : 4096;
      while (cap < n) cap *= 2;
      std::unique_ptr<uint8_t[]> bigger(new uint8_t[cap]);
      if (size_) std::memcpy(bigger.get(), data_.get(), size_);
      data_ = std::move(bigger);
      capacity_ = cap;
    }
    size_ = n;
  }
  void clear() { size_ = 0; }
  // Returns memory above `keep` bytes of capacity to the allocator.
  void shrink_if_above(size_t keep) {
    if (capacity_ > keep) {
      data_.reset();
      capacity_ = 0;
      size_ = 0;
    }
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace aisrv::phy
