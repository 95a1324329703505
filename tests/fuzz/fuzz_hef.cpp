// aisrv fuzz target — the HEF reader: container (every version, checksums), protobuf, network groups, edge layers,
// NMS and host ops, stream and vstream infos; an accepted HEF is described as text and JSON and loaded by the
// Hailo-8 backend (load only: no device is touched), whose tensor sizes are checked before anything is allocated.
// Seeded with the shared test data's HEFs. The container checksum would make almost every mutation fail at once, so
// a custom mutator recomputes it after libFuzzer's mutation (as the mutation unit test does): the protobuf and the
// metadata code get the mutated bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "hef_builder.hpp"

#include "aisrv/engine/hailo8/backend.hpp"
#include "aisrv/engine/hailo8/hef/describe.hpp"
#include "aisrv/engine/hailo8/hef/reader.hpp"

using namespace aisrv;
namespace hef = aisrv::engine::hailo8::hef;

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  // A container (magic "\x01HEF"/"HEF" checked by the reader) of a known version: make its checksum right again.
  if (size >= 56 && seed % 8 != 0) {
    const uint32_t version = aisrv::test::hef::get_be32(std::span<const uint8_t>(data, size), 4);
    if (version < 4 && size >= aisrv::test::hef::header_size(version)) {
      std::vector<uint8_t> f(data, data + size);
      aisrv::test::hef::refresh_checksum(f);
      std::memcpy(data, f.data(), size);
    }
  }
  return size;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  auto r = hef::read_hef(in);
  if (!r) return 0;
  (void)hef::describe(*r, {.streams = true});
  if (auto j = hef::to_json(*r)) (void)hef::dump_json(*j);
  static auto backend = engine::hailo8::make_hailo8_backend({});
  engine::LoadOptions lo;
  lo.max_tensor_bytes = 16u << 20;
  (void)backend->load(in, lo);
  backend->unload();
  return 0;
}
