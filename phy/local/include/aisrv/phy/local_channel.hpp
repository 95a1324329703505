// aisrv phy — the in-process local channel (C++ API): an embedded application bound to one engine calls it
// directly, on its own thread, with no serialisation and no copies beyond the one into and out of the engine.
// Calls are serialised with every other client of the engine by the engine's lock.
#pragma once

#include <cstdint>
#include <span>

#include "aisrv/phy/aisrv_local.h"
#include "aisrv/protocol/result.hpp"

namespace aisrv::server {
class Server;
class EngineSlot;
}  // namespace aisrv::server

namespace aisrv::phy {

class LocalChannel {
 public:
  // Errc::bad_engine when `engine` does not exist.
  static Result<LocalChannel> open(server::Server& server, uint32_t engine);

  Status set_input(uint32_t tensor, std::span<const uint8_t> data);
  Status start_inference();
  Status get_output(uint32_t tensor, std::span<uint8_t> out);
  Status acquire_single();
  Result<uint32_t> input_length(uint32_t tensor);
  Result<uint32_t> output_length(uint32_t tensor);

  uint32_t engine() const;
  // The same channel for C code (valid as long as this object).
  aisrv_local_t* c_handle() { return reinterpret_cast<aisrv_local_t*>(this); }

 private:
  LocalChannel(server::Server& server, server::EngineSlot& slot) : server_(&server), slot_(&slot) {}
  Status noted(const char* what, Status st);

  server::Server* server_;
  server::EngineSlot* slot_;
};

}  // namespace aisrv::phy
