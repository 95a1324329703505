// aisrv interpreter — sensor acquisition commands: START_ACQUIRE_SINGLE/STREAM/SET_I2C, GET_ACQUIRE_MODE,
// GET/SET_SENSOR_TENSOR. They need a frame source configured for the engine; without one each answers
// ERROR_NOT_SUPPORTED and the debug log says what is missing.
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Status no_sensor(CommandContext& c) {
  return make_error(Errc::not_supported, "{}: engine {} has no sensor configured (start aisrvd with --sensor {}=...)",
                    protocol::command_name(c.request.header.cmd), c.slot->number(), c.slot->number());
}

}  // namespace

void add_acquire_commands(CommandTable& t) {
  t.add(Command::START_ACQUIRE_SINGLE, {no_sensor, Scope::engine});
  t.add(Command::START_ACQUIRE_STREAM, {no_sensor, Scope::engine});
  t.add(Command::START_ACQUIRE_SET_I2C, {no_sensor, Scope::engine, Payload::any});
  t.add(Command::GET_ACQUIRE_MODE, {no_sensor, Scope::engine});
  t.add(Command::GET_SENSOR_TENSOR, {no_sensor, Scope::engine});
  t.add(Command::SET_SENSOR_TENSOR, {no_sensor, Scope::engine, Payload::any});
}

}  // namespace aisrv::server
