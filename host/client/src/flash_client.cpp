// aisrv host — model-store commands (catalogue, chunked write/read, erase) over any host transport.
#include "aisrv/client/flash_client.hpp"

#include <xxhash.h>

#include <algorithm>

#include "aisrv/protocol/protocol.hpp"

namespace aisrv::client {

namespace {

constexpr uint32_t kDefaultChunk = 1024 * 1024;
constexpr uint32_t kChunkHeader = 8;  // u64 offset in front of each chunk

uint32_t op(protocol::Command c) { return static_cast<uint32_t>(c); }

Result<protocol::FlashEntry> entry_of(Client& c, uint32_t engine) {
  auto cat = AISRV_TRY(flash_catalogue(c));
  for (auto& e : cat.entries)
    if (e.client == engine) return std::move(e);
  return make_error(Errc::bad_engine, "engine {} has no place in the model store ({} clients)", engine,
                    cat.entries.size());
}

}  // namespace

Result<protocol::FlashCatalogue> flash_catalogue(Client& c) {
  auto payload = AISRV_TRY(c.call(op(protocol::Command::GET_FLASH_CATALOGUE), 0, 0));
  return protocol::decode_flash_catalogue(payload);
}

Result<protocol::FlashWriteState> flash_write_state(Client& c, uint32_t engine) {
  auto payload = AISRV_TRY(c.call(op(protocol::Command::GET_FLASH_WRITE_STATE), engine, 0));
  return protocol::decode_flash_write_state(payload);
}

Result<protocol::FlashSlotInfo> flash_write(Client& c, uint32_t engine, std::span<const uint8_t> model,
                                            const FlashWriteOptions& o) {
  uint32_t chunk = o.chunk ? o.chunk : kDefaultChunk;
  const uint32_t limit = c.server_version().max_payload;
  if (limit > kChunkHeader) chunk = std::min(chunk, limit - kChunkHeader);
  protocol::FlashBegin b;
  b.size = model.size();
  b.xxh64 = XXH64(model.data(), model.size(), 0);
  b.format = o.format;
  b.name = o.name;
  std::vector<uint8_t> payload;
  protocol::encode(b, payload);
  AISRV_TRY(c.call(op(protocol::Command::SET_FLASH_BEGIN), engine, 0, payload));
  auto send_all = [&]() -> Status {
    for (uint64_t off = 0; off < model.size();) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, model.size() - off));
      payload.clear();
      protocol::encode_flash_chunk(off, model.subspan(static_cast<size_t>(off), n), payload);
      AISRV_TRY(c.call(op(protocol::Command::SET_FLASH_CHUNK), engine, 0, payload));
      off += n;
      if (o.progress) o.progress(off, model.size());
    }
    AISRV_TRY(c.call(op(protocol::Command::SET_FLASH_COMMIT), engine, 0));
    return ok();
  };
  if (auto st = send_all(); !st) {
    (void)c.call(op(protocol::Command::SET_FLASH_ABORT), engine, 0);  // the old model stays; drop the transfer
    return std::move(st).error();
  }
  auto e = AISRV_TRY(entry_of(c, engine));
  if (!e.active) return make_error(Errc::flash_error, "engine {}: committed, but the catalogue lists no model", engine);
  return *e.active;
}

Result<std::vector<uint8_t>> flash_read(Client& c, uint32_t engine, const FlashProgress& progress) {
  auto cat = AISRV_TRY(flash_catalogue(c));
  const protocol::FlashEntry* e = nullptr;
  for (const auto& x : cat.entries)
    if (x.client == engine) e = &x;
  if (!e) return make_error(Errc::bad_engine, "engine {} has no place in the model store", engine);
  if (!e->active) return make_error(Errc::no_model, "engine {} has no model in the store", engine);
  if (cat.read_chunk == 0) return make_error(Errc::protocol_error, "server announced a read chunk of 0 bytes");
  const uint64_t size = e->active->size;
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(size));
  for (uint32_t i = 0; out.size() < size; ++i) {
    auto piece = AISRV_TRY(c.call(op(protocol::Command::GET_FLASH_MODEL), engine, i));
    const uint64_t want = std::min<uint64_t>(cat.read_chunk, size - out.size());
    if (piece.size() != want)
      return make_error(Errc::protocol_error, "chunk {} of engine {}'s stored model has {} bytes, expected {}", i,
                        engine, piece.size(), want);
    out.insert(out.end(), piece.begin(), piece.end());
    if (progress) progress(out.size(), size);
  }
  const uint64_t h = XXH64(out.data(), out.size(), 0);
  if (h != e->active->xxh64)
    return make_error(Errc::crc_error,
                      "engine {}: read-back has xxh64 {:016x}, the catalogue says {:016x} (the model changed during "
                      "the read, or the transfer was corrupted)",
                      engine, h, e->active->xxh64);
  return out;
}

Status flash_erase(Client& c, uint32_t engine) {
  AISRV_TRY(c.call(op(protocol::Command::SET_FLASH_ERASE), engine, 0));
  return ok();
}

Status flash_abort(Client& c, uint32_t engine) {
  AISRV_TRY(c.call(op(protocol::Command::SET_FLASH_ABORT), engine, 0));
  return ok();
}

}  // namespace aisrv::client
