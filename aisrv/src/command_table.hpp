// aisrv interpreter (private) — the opcode -> handler table and the context a handler runs with. Handlers live in
// src/commands/, one file per command group; each group registers its rows. Dispatch does the checks every command
// shares (known opcode, engine range, payload allowed, access) before calling a handler, and turns a handler's error
// into the session's status bit plus a debug-log line.
#pragma once

#include <array>
#include <cstdint>

#include "aisrv/protocol/protocol.hpp"
#include "aisrv/server.hpp"

namespace aisrv::server {

struct CommandContext {
  Server& server;
  Session& session;
  EngineSlot* slot;  // the addressed engine; null for commands with Scope::server
  const protocol::Request& request;
  protocol::Response& response;
  uint64_t queue_ns;  // time the request waited for its engine
};

using HandlerFn = Status (*)(CommandContext&);

enum class Scope : uint8_t {
  engine,  // needs a valid engine number
  server,  // engine number not used (or checked by the handler)
};

enum class Payload : uint8_t { none, any };

// Where a command runs.
enum class Run : uint8_t {
  immediate,  // on the caller's thread, without the engine's lock (status, identity, the session's own tensors)
  queued,     // in the engine's turn (server scope: the server's queue); may call the backend's load/invoke
};

// Who may send it (docs/security.md).
enum class Access : uint8_t {
  open,   // also before AUTH (HELLO, GET_VERSION, GET_ID, AUTH)
  use,    // any authenticated session: its own tensors, inference, status, reading shared facts
  admin,  // changes what every session shares: models, the store, streams, sensor registers
};

struct Handler {
  HandlerFn fn = nullptr;
  Scope scope = Scope::engine;
  Payload payload = Payload::none;
  Run run = Run::queued;
  Access access = Access::use;
};

class CommandTable {
 public:
  // Only opcodes of protocol/'s command table get a row, so a row with a handler is a known opcode and find() needs
  // no search of that table (it runs for every request).
  void add(protocol::Command cmd, Handler h) {
    const auto op = static_cast<uint32_t>(cmd);
    if (op <= 0xFF && protocol::is_known(op)) rows_[op] = h;
  }
  const Handler* find(uint32_t cmd) const {
    if (cmd > 0xFF) return nullptr;
    const Handler& h = rows_[cmd];
    return h.fn ? &h : nullptr;
  }

 private:
  std::array<Handler, 256> rows_{};
};

// Command groups (src/commands/*.cpp).
void add_info_commands(CommandTable& table);
void add_model_commands(CommandTable& table);
void add_tensor_commands(CommandTable& table);
void add_acquire_commands(CommandTable& table);
void add_gpio_commands(CommandTable& table);
void add_flash_commands(CommandTable& table);

// A handler's engine model, or Errc::no_model.
Result<std::shared_ptr<const LoadedModel>> model_of(CommandContext& c);

}  // namespace aisrv::server
