// aisrv interpreter (private) — the opcode -> handler table and the context a handler runs with. Handlers live in
// src/commands/, one file per command group; each group registers its rows. Dispatch does the checks every command
// shares (known opcode, engine range, payload allowed) before calling a handler, and turns a handler's error into
// the status word plus a debug-log line.
#pragma once

#include <array>
#include <cstdint>

#include "aisrv/protocol/protocol.hpp"
#include "aisrv/server.hpp"

namespace aisrv::server {

struct CommandContext {
  Server& server;
  EngineSlot* slot;  // the addressed engine; null for commands with Scope::server
  const protocol::Request& request;
  protocol::Response& response;
  uint64_t queue_ns;  // time the request waited for its engine
};

using HandlerFn = Status (*)(CommandContext&);

enum class Scope : uint8_t {
  engine,  // needs a valid engine number; runs in the engine's turn
  server,  // engine number not used (or checked by the handler); answered at once
};

enum class Payload : uint8_t { none, any };

// How submit() runs an engine-scope command.
enum class Run : uint8_t {
  queued,     // always in the engine's turn, on its strand (may call the backend's load/invoke: can be long)
  quick,      // on the caller's thread when nothing is queued for the engine, else in its turn (never long)
  immediate,  // at once, lock-free (status polls)
};

struct Handler {
  HandlerFn fn = nullptr;
  Scope scope = Scope::engine;
  Payload payload = Payload::none;
  Run run = Run::queued;
};

class CommandTable {
 public:
  void add(protocol::Command cmd, Handler h) { rows_[static_cast<uint32_t>(cmd) & 0xFF] = h; }
  const Handler* find(uint32_t cmd) const {
    if (cmd > 0xFF || !protocol::is_known(cmd)) return nullptr;
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

}  // namespace aisrv::server
