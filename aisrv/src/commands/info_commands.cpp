// aisrv interpreter — identity and status commands: NONE, GET_STATUS, GET_ID, HELLO, GET_VERSION, GET_DEBUG_LOG,
// GET_ENGINE_INFO, CANCEL_INFER, SET_SERVER.
#include "aisrv/build_info.hpp"
#include "aisrv/protocol/bytes.hpp"
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Status none(CommandContext&) {
  return make_error(Errc::bad_command, "NONE (0x00) is not a command");
}

Status get_status(CommandContext& c) {
  protocol::encode_u32(c.slot->take_status(), c.response.payload);
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

Status get_debug_log(CommandContext& c) {
  const uint32_t engine = c.request.header.engine;
  DebugLog* log = nullptr;
  if (engine == protocol::kEngineServer) {
    log = &c.server.log();
  } else if (auto* slot = c.server.engine(engine)) {
    log = &slot->log();
  } else {
    return make_error(Errc::bad_engine, "engine {} does not exist (the server has {}; {:#x} reads the server log)",
                      engine, c.server.engine_count(), protocol::kEngineServer);
  }
  const std::string text = log->tail(c.request.header.tensor);
  c.response.payload.assign(text.begin(), text.end());
  return ok();
}

Status get_engine_info(CommandContext& c) {
  protocol::encode(c.slot->info(), c.response.payload);
  return ok();
}

Status cancel_infer(CommandContext& c) {
  c.slot->cancel();
  return ok();
}

Status set_server(CommandContext&) {
  return make_error(Errc::not_supported,
                    "SET_SERVER (server upgrade) is not supported: update aisrvd through the host's package manager");
}

}  // namespace

void add_info_commands(CommandTable& t) {
  t.add(Command::NONE, {none, Scope::server});
  t.add(Command::GET_STATUS, {get_status, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_ID, {get_id, Scope::server});
  t.add(Command::HELLO, {hello, Scope::server});
  t.add(Command::GET_VERSION, {get_version, Scope::server});
  t.add(Command::GET_DEBUG_LOG, {get_debug_log, Scope::server});
  t.add(Command::GET_ENGINE_INFO, {get_engine_info, Scope::engine, Payload::none, Run::quick});
  t.add(Command::CANCEL_INFER, {cancel_infer, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::SET_SERVER, {set_server, Scope::server});
}

}  // namespace aisrv::server
