// aisrv phy — the in-process local channel (C++ API): an embedded application bound to one engine calls it
// directly, on its own thread, with no serialisation and no queue hop: one copy in and one copy out. Each channel
// is one interpreter session: its input tensors, outputs and error bits are its own, whatever other clients of the
// engine do; the model and the engine are shared, and calls are serialised with every other client of the engine
// by the engine's lock. Move-only; the session closes when the channel is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "aisrv/phy/aisrv_local.h"
#include "aisrv/protocol/result.hpp"

namespace aisrv::server {
class Server;
class EngineSlot;
class Session;
}  // namespace aisrv::server

namespace aisrv::phy {

class LocalChannel {
 public:
  // Errc::bad_engine when `engine` does not exist. `name` says who the application is in the server's logs.
  static Result<LocalChannel> open(server::Server& server, uint32_t engine, std::string name = "in-process");
  // A channel to another engine in the same session (the same client): e.g. the chain target of this engine, whose
  // outputs this session's inferences produce. The session closes when the last channel sharing it is destroyed.
  Result<LocalChannel> to_engine(uint32_t engine) const;
  ~LocalChannel();
  LocalChannel(LocalChannel&&) noexcept = default;
  LocalChannel& operator=(LocalChannel&&) noexcept = default;
  LocalChannel(const LocalChannel&) = delete;
  LocalChannel& operator=(const LocalChannel&) = delete;

  Status set_input(uint32_t tensor, std::span<const uint8_t> data);
  Status start_inference();
  Status get_output(uint32_t tensor, std::span<uint8_t> out);
  Status acquire_single();
  Result<uint32_t> input_length(uint32_t tensor);
  Result<uint32_t> output_length(uint32_t tensor);
  // GET_STATUS of this channel: the engine's state bits and this channel's error bits (cleared by reading).
  uint32_t status();

  uint32_t engine() const;
  server::Session& session() { return *session_; }  // valid while the channel lives
  // The same channel for C code (valid as long as this object).
  aisrv_local_t* c_handle() { return reinterpret_cast<aisrv_local_t*>(this); }

 private:
  // Closes the session when the last channel using it goes.
  struct SessionOwner;
  LocalChannel(server::Server& server, server::EngineSlot& slot, std::shared_ptr<SessionOwner> owner);
  Status noted(const char* what, Status st);

  server::Server* server_;
  server::EngineSlot* slot_;
  std::shared_ptr<SessionOwner> owner_;
  server::Session* session_;
};

}  // namespace aisrv::phy
