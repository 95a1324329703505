// aisrv interpreter — identity, status and session commands: NONE, GET_STATUS, GET_ID, HELLO, GET_VERSION,
// GET_DEBUG_LOG, GET_ENGINE_INFO, GET_SESSION_INFO, GET_SERVER_STATS, CANCEL_INFER, AUTH, SET_SERVER.
#include "aisrv/build_info.hpp"
#include "aisrv/protocol/bytes.hpp"
#include "auth_throttle.hpp"
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Status none(CommandContext&) {
  return make_error(Errc::bad_command, "NONE (0x00) is not a command");
}

// The engine's state bits and this session's error bits (which reading clears).
Status get_status(CommandContext& c) {
  protocol::encode_u32(c.slot->state_bits() | c.session.take_errors(c.slot->number()), c.response.payload);
  return ok();
}

Status get_id(CommandContext& c) {
  protocol::encode_u32(AISRV_SERVER_ID, c.response.payload);
  return ok();
}

Status hello(CommandContext&) { return ok(); }

Status get_version(CommandContext& c) {
  protocol::VersionInfo v;
  v.major = AISRV_PROTOCOL_MAJOR;
  v.minor = AISRV_PROTOCOL_MINOR;
  v.min_major = AISRV_PROTOCOL_MIN_MAJOR;
  v.capabilities = c.server.capabilities();
  v.max_payload = c.server.max_payload();
  v.engines = c.server.engine_count();
  v.server_version = "aisrvd " AISRV_VERSION_STRING;
  protocol::encode(v, c.response.payload);
  return ok();
}

// Shared lines of the engine (or the server) merged with this session's own. A session that has not authenticated
// yet reads only its own lines (why it was refused), nothing of the server's.
Status get_debug_log(CommandContext& c) {
  const uint32_t engine = c.request.header.engine;
  const uint32_t arg = c.request.header.tensor;
  const bool only_new = (arg & AISRV_DEBUG_LOG_NEW) != 0;
  const bool own_only = (arg & AISRV_DEBUG_LOG_OWN) != 0 || !c.session.authenticated();
  const size_t lines = arg & ~(AISRV_DEBUG_LOG_NEW | AISRV_DEBUG_LOG_OWN);
  std::string text;
  if (engine == protocol::kEngineServer) {
    text = c.session.read_log(c.server.engine_count(), c.server.log(), lines, only_new, own_only);
  } else if (auto* slot = c.server.engine(engine)) {
    text = c.session.read_log(engine, slot->log(), lines, only_new, own_only);
  } else {
    return make_error(Errc::bad_engine, "engine {} does not exist (the server has {}; {:#x} reads the server log)",
                      engine, c.server.engine_count(), protocol::kEngineServer);
  }
  c.response.payload.assign(text.begin(), text.end());
  return ok();
}

Status get_engine_info(CommandContext& c) {
  protocol::encode(c.slot->info(), c.response.payload);
  return ok();
}

Status get_session_info(CommandContext& c) {
  protocol::SessionInfo s;
  s.id = c.session.id();
  s.transport = c.session.peer().transport;
  s.peer = c.session.peer().describe();
  s.role = c.session.role();
  s.authenticated = c.session.authenticated();
  s.memory_used = c.session.memory_used();
  s.memory_cap = c.session.limits().memory;
  s.max_queued = c.session.limits().max_queued;
  s.sessions = static_cast<uint32_t>(c.server.session_count());
  protocol::encode(s, c.response.payload);
  return ok();
}

Status get_server_stats(CommandContext& c) {
  protocol::encode(c.server.stats(), c.response.payload);
  return ok();
}

// tensor 0: this session's running inference (nothing running is fine); 1: whatever runs on the engine (admin).
Status cancel_infer(CommandContext& c) {
  switch (c.request.header.tensor) {
    case AISRV_CANCEL_OWN:
      c.slot->cancel(c.session.id());
      return ok();
    case AISRV_CANCEL_ANY: {
      if (!c.session.is_admin())
        return make_error(Errc::denied, "cancelling another session's inference needs the admin role; {} has the "
                                        "role user (tensor 0 cancels this session's own)",
                          c.session.name());
      const uint64_t victim = c.slot->running_session();
      if (c.slot->cancel(0) && victim != c.session.id())
        c.slot->log().add(fmt::format("{} cancelled the inference of session {}", c.session.name(), victim));
      return ok();
    }
    default:
      return make_error(Errc::bad_tensor, "CANCEL_INFER takes tensor = 0 (this session's inference) or 1 (any), not "
                                          "{}",
                        c.request.header.tensor);
  }
}

// Constant-time comparison: the time taken does not depend on where the bytes differ.
bool same_secret(std::span<const uint8_t> given, std::string_view expected) {
  uint8_t diff = given.size() == expected.size() ? 0 : 1;
  const size_t n = std::max(given.size(), expected.size());
  for (size_t i = 0; i < n; ++i) {
    const uint8_t a = i < given.size() ? given[i] : 0;
    const uint8_t b = i < expected.size() ? static_cast<uint8_t>(expected[i]) : 0;
    diff |= static_cast<uint8_t>(a ^ b);
  }
  return diff == 0;
}

Status auth(CommandContext& c) {
  const std::string& token = c.server.access().token;
  if (token.empty()) {
    if (c.request.payload.empty()) return ok();
    return make_error(Errc::not_supported, "this server has no token configured (aisrvd --token-file); AUTH is not "
                                           "needed");
  }
  // Guessing is throttled per peer address (the port changes with every connection) and for the whole server.
  const server::Peer& peer = c.session.peer();
  const std::string address = peer.address.empty() ? peer.describe() : peer.address.substr(0, peer.address.rfind(':'));
  AuthThrottle& throttle = c.server.auth_throttle();
  AISRV_TRY(throttle.admit(address));
  if (c.request.payload.size() > AISRV_MAX_TOKEN || !same_secret(c.request.payload, token)) {
    throttle.failed(address);
    return make_error(Errc::denied, "wrong token from {}", c.session.name());
  }
  throttle.succeeded(address);
  c.session.authenticate(protocol::Role::admin);
  return ok();
}

Status set_server(CommandContext&) {
  return make_error(Errc::not_supported,
                    "SET_SERVER (server upgrade) is not supported: update aisrvd through the host's package manager");
}

}  // namespace

void add_info_commands(CommandTable& t) {
  t.add(Command::NONE, {none, Scope::server, Payload::none, Run::immediate, Access::open});
  t.add(Command::GET_STATUS, {get_status, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_ID, {get_id, Scope::server, Payload::none, Run::immediate, Access::open});
  t.add(Command::HELLO, {hello, Scope::server, Payload::none, Run::immediate, Access::open});
  t.add(Command::GET_VERSION, {get_version, Scope::server, Payload::none, Run::immediate, Access::open});
  t.add(Command::GET_DEBUG_LOG, {get_debug_log, Scope::server, Payload::none, Run::immediate, Access::open});
  t.add(Command::GET_ENGINE_INFO, {get_engine_info, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_SESSION_INFO, {get_session_info, Scope::server, Payload::none, Run::immediate});
  t.add(Command::GET_SERVER_STATS, {get_server_stats, Scope::server, Payload::none, Run::immediate});
  t.add(Command::CANCEL_INFER, {cancel_infer, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::AUTH, {auth, Scope::server, Payload::any, Run::immediate, Access::open});
  t.add(Command::SET_SERVER, {set_server, Scope::server, Payload::none, Run::immediate});
}

}  // namespace aisrv::server
