// aisrv fuzz target — the model store reader on a hostile flash image: the input (padded with erased bytes to whole
// 4 KiB blocks, at least 16 of them) is the device; the store opens it or refuses it, and an opened store is listed,
// every entry verified and its models read. Nothing a corrupt image holds may crash or loop.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "aisrv/flash/store.hpp"
#include "flash/memory_flash.hpp"

using namespace aisrv;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  constexpr uint64_t kBlock = 4096;
  const uint64_t blocks = std::max<uint64_t>(16, (size + kBlock - 1) / kBlock);
  test::MemoryFlash dev(flash::Geometry{blocks * kBlock, kBlock, 1}, std::vector<uint8_t>(data, data + size));
  auto store = flash::ModelStore::open(dev);
  if (!store) return 0;
  for (const auto& e : (*store)->list()) {
    (void)(*store)->verify(e.client);
    (void)(*store)->read_model(e.client);
    (void)(*store)->update_progress(e.client);
  }
  (void)(*store)->notes();
  return 0;
}
