// aisrv host — the model-store commands on top of Client: catalogue, chunked write with progress (begin, chunks,
// commit; an error after begin sends an abort), chunked read-back checked against the catalogue's xxHash64, erase.
// docs/flash-format.md ("Protocol") has the wire layouts.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "aisrv/client/client.hpp"
#include "aisrv/protocol/flash_payloads.hpp"

namespace aisrv::client {

// Called after every chunk with the bytes done so far and the total.
using FlashProgress = std::function<void(uint64_t done, uint64_t total)>;

struct FlashWriteOptions {
  std::string name;                                 // <= 32 bytes
  uint32_t format = protocol::kFlashFormatAny;      // announced format (0: the server detects it)
  uint32_t chunk = 0;                               // bytes per SET_FLASH_CHUNK (0: 1 MiB or the server's limit)
  FlashProgress progress;
};

Result<protocol::FlashCatalogue> flash_catalogue(Client& c);
Result<protocol::FlashWriteState> flash_write_state(Client& c, uint32_t engine);
// Writes `model` into the engine's inactive slot and commits it; returns the catalogue entry of the new model.
Result<protocol::FlashSlotInfo> flash_write(Client& c, uint32_t engine, std::span<const uint8_t> model,
                                            const FlashWriteOptions& options);
// Reads the engine's stored model back chunk by chunk and checks it against the catalogue's size and xxHash64.
Result<std::vector<uint8_t>> flash_read(Client& c, uint32_t engine, const FlashProgress& progress = {});
Status flash_erase(Client& c, uint32_t engine);
Status flash_abort(Client& c, uint32_t engine);

}  // namespace aisrv::client
