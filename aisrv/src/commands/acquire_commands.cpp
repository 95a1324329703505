// aisrv interpreter — sensor acquisition commands: START_ACQUIRE_SINGLE/STREAM/SET_I2C, GET_ACQUIRE_MODE,
// GET/SET_SENSOR_TENSOR. They need a frame source attached to the engine (aisrvd --sensor); without one each answers
// ERROR_NOT_SUPPORTED and the debug log says what is missing.
#include "aisrv/protocol/bytes.hpp"
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Status acquire_single(CommandContext& c) { return c.server.acquire_single(*c.slot, c.queue_ns); }

Status acquire_stream(CommandContext& c) {
  if (c.request.header.tensor == 0) {
    if (!c.slot->has_sensor())
      return make_error(Errc::not_supported, "engine {} has no sensor configured (start aisrvd with --sensor {}=PATH)",
                        c.slot->number(), c.slot->number());
    c.server.stop_stream(*c.slot);
    return ok();
  }
  if (c.request.header.tensor != 1)
    return make_error(Errc::bad_tensor, "START_ACQUIRE_STREAM takes tensor = 1 (start) or 0 (stop), not {}",
                      c.request.header.tensor);
  return c.server.start_stream(*c.slot, c.server.stream_interval(c.slot->number()));
}

Status set_i2c(CommandContext& c) {
  if (c.request.payload.size() != 3)
    return make_error(Errc::bad_length, "takes 3 bytes (address, register, value), {} were sent",
                      c.request.payload.size());
  const auto& p = c.request.payload;
  return c.slot->write_sensor_register(p[0], p[1], p[2]);
}

Status get_mode(CommandContext& c) {
  if (!c.slot->has_sensor())
    return make_error(Errc::not_supported, "engine {} has no sensor configured (start aisrvd with --sensor {}=PATH)",
                      c.slot->number(), c.slot->number());
  protocol::encode_u32(static_cast<uint32_t>(c.slot->acquire_mode()), c.response.payload);
  return ok();
}

Status get_sensor(CommandContext& c) { return c.slot->read_frame(c.response.payload); }

Status set_sensor(CommandContext& c) { return c.slot->inject_frame(c.request.payload); }

}  // namespace

void add_acquire_commands(CommandTable& t) {
  t.add(Command::START_ACQUIRE_SINGLE, {acquire_single, Scope::engine});
  t.add(Command::START_ACQUIRE_STREAM, {acquire_stream, Scope::engine});
  t.add(Command::START_ACQUIRE_SET_I2C, {set_i2c, Scope::engine, Payload::any});
  t.add(Command::GET_ACQUIRE_MODE, {get_mode, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_SENSOR_TENSOR, {get_sensor, Scope::engine, Payload::none, Run::quick});
  t.add(Command::SET_SENSOR_TENSOR, {set_sensor, Scope::engine, Payload::any, Run::quick});
}

}  // namespace aisrv::server
