// aisrv interpreter — sensor acquisition commands: START_ACQUIRE_SINGLE/STREAM/SET_I2C, GET_ACQUIRE_MODE,
// GET/SET_SENSOR_TENSOR. They need a frame source attached to the engine (aisrvd --sensor); without one each answers
// ERROR_NOT_SUPPORTED and the debug log says what is missing. A single acquisition feeds the session's input 0 and
// leaves the frame and the outputs in the session; a stream belongs to the session that started it; starting or
// stopping a stream and writing sensor registers change shared hardware (admin).
#include "aisrv/protocol/bytes.hpp"
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Error no_sensor(const EngineSlot& slot) {
  return make_error(Errc::not_supported, "engine {} has no sensor configured (start aisrvd with --sensor {}=PATH)",
                    slot.number(), slot.number());
}

Status acquire_single(CommandContext& c) { return c.server.acquire_single(c.session, *c.slot, c.queue_ns); }

Status acquire_stream(CommandContext& c) {
  if (c.request.header.tensor == 0) {
    if (!c.slot->has_sensor()) return no_sensor(*c.slot);
    c.server.stop_stream(*c.slot);
    return ok();
  }
  if (c.request.header.tensor != 1)
    return make_error(Errc::bad_tensor, "START_ACQUIRE_STREAM takes tensor = 1 (start) or 0 (stop), not {}",
                      c.request.header.tensor);
  return c.server.start_stream(c.session, *c.slot, c.server.stream_interval(c.slot->number()));
}

Status set_i2c(CommandContext& c) {
  if (c.request.payload.size() != 3)
    return make_error(Errc::bad_length, "takes 3 bytes (address, register, value), {} were sent",
                      c.request.payload.size());
  const auto& p = c.request.payload;
  return c.slot->write_sensor_register(p[0], p[1], p[2]);
}

Status get_mode(CommandContext& c) {
  if (!c.slot->has_sensor()) return no_sensor(*c.slot);
  protocol::encode_u32(static_cast<uint32_t>(c.slot->acquire_mode()), c.response.payload);
  return ok();
}

Status get_sensor(CommandContext& c) {
  if (!c.slot->has_sensor()) return no_sensor(*c.slot);
  return c.session.read_frame(c.slot->number(), c.response.payload);
}

Status set_sensor(CommandContext& c) {
  if (!c.slot->has_sensor()) return no_sensor(*c.slot);
  const auto m = AISRV_TRY(model_of(c));
  return c.session.inject_frame(*m, c.request.payload);
}

}  // namespace

void add_acquire_commands(CommandTable& t) {
  t.add(Command::START_ACQUIRE_SINGLE, {acquire_single, Scope::engine, Payload::none, Run::queued});
  t.add(Command::START_ACQUIRE_STREAM, {acquire_stream, Scope::engine, Payload::none, Run::queued, Access::admin});
  t.add(Command::START_ACQUIRE_SET_I2C, {set_i2c, Scope::engine, Payload::any, Run::queued, Access::admin});
  t.add(Command::GET_ACQUIRE_MODE, {get_mode, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_SENSOR_TENSOR, {get_sensor, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::SET_SENSOR_TENSOR, {set_sensor, Scope::engine, Payload::any, Run::immediate});
}

}  // namespace aisrv::server
