// aisrv phy — the in-process local channel (C++ API): an embedded application bound to one engine calls it
// directly, on its own thread, with no serialisation and no queue hop: one copy in and one copy out. Each call is a
// request through the port (Port::call_inline): the same checks and handlers as every transport. Each channel is one
// interpreter session of Trust::process: its input tensors, outputs and error bits are its own, whatever other
// clients of the engine do; the model and the engine are shared, and calls are serialised with every other client
// of the engine by the engine's lock. Move-only; one thread at a time per channel; the session closes when the last
// channel sharing it is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "aisrv/phy/aisrv_local.h"
#include "aisrv/protocol/protocol.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::server {
class Port;
class Session;
}  // namespace aisrv::server

namespace aisrv::phy {

class LocalChannel {
 public:
  // Errc::bad_engine when `engine` does not exist. `name` says who the application is in the server's logs.
  // `port` is the interpreter (its Server implements aisrv/port.hpp) and must outlive the channel.
  static Result<LocalChannel> open(server::Port& port, uint32_t engine, std::string name = "in-process");
  // A channel to another engine in the same session (the same client): e.g. the chain target of this engine, whose
  // outputs this session's inferences produce. The session closes when the last channel sharing it is destroyed.
  Result<LocalChannel> to_engine(uint32_t engine) const;
  ~LocalChannel();
  LocalChannel(LocalChannel&&) noexcept;
  LocalChannel& operator=(LocalChannel&&) noexcept;
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

  uint32_t engine() const { return engine_; }
  server::Session& session() { return *session_; }  // valid while the channel lives
  // The same channel for C code (valid as long as this object).
  aisrv_local_t* c_handle() { return reinterpret_cast<aisrv_local_t*>(this); }

 private:
  // Closes the session when the last channel using it goes.
  struct SessionOwner;
  LocalChannel(server::Port& port, uint32_t engine, std::shared_ptr<SessionOwner> owner);
  // One request through the port on this thread; an error carries the handler's log line.
  Status call(protocol::Command cmd, uint32_t tensor, std::span<const uint8_t> payload, protocol::PayloadSink* sink);
  Result<uint32_t> call_u32(protocol::Command cmd, uint32_t tensor);

  server::Port* port_;
  uint32_t engine_;
  std::shared_ptr<SessionOwner> owner_;
  server::Session* session_;
  protocol::Response response_;  // reused between calls
};

}  // namespace aisrv::phy
