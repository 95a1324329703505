// aisrv tests — helpers shared by the flash unit tests: deterministic model bytes with a chosen format signature,
// temporary files, and small geometries that keep the tests fast under ASan.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "aisrv/flash/store.hpp"
#include "flash/memory_flash.hpp"

namespace aisrv::test {

// 128 KiB, 4 KiB erase blocks: 29 data blocks, 11 records per journal block.
inline flash::Geometry small_geometry(uint32_t write_size = 1) { return {128 * 1024, 4096, write_size}; }

// Pseudo-random bytes; "tflite" puts "TFL3" at offset 4, "hef" the big-endian magic 0x01484546 at offset 0.
inline std::vector<uint8_t> make_model(size_t size, uint64_t seed, const std::string& kind = "tflite") {
  std::vector<uint8_t> b(size);
  std::mt19937_64 rng(seed);
  for (auto& c : b) c = static_cast<uint8_t>(rng());
  if (kind == "tflite" && size >= 8) {
    b[4] = 'T', b[5] = 'F', b[6] = 'L', b[7] = '3';
  } else if (kind == "hef" && size >= 4) {
    b[0] = 0x01, b[1] = 0x48, b[2] = 0x45, b[3] = 0x46;
  } else if (size >= 8) {
    b[0] = 0x00, b[4] = 'X';
  }
  return b;
}

inline std::unique_ptr<flash::ModelStore> format_store(flash::FlashDevice& dev, uint32_t clients = 4) {
  auto s = flash::ModelStore::format(dev, {clients});
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().what()));
  return std::move(*s);
}

inline std::unique_ptr<flash::ModelStore> open_store(flash::FlashDevice& dev) {
  auto s = flash::ModelStore::open(dev);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().what()));
  return std::move(*s);
}

// A fresh path under the system temp folder, removed when the object dies.
class TempPath {
 public:
  explicit TempPath(const std::string& stem) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    path_ = std::filesystem::temp_directory_path() / fmt::format("aisrv-{}-{:016x}", stem, rng());
  }
  ~TempPath() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace aisrv::test
