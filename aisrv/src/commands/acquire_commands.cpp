// aisrv interpreter — sensor acquisition commands: START_ACQUIRE_SINGLE/STREAM/SET_I2C, GET_ACQUIRE_MODE,
// GET/SET_SENSOR_TENSOR. They need a frame source attached to the engine (aisrvd --sensor); without one each answers
// ERROR_NOT_SUPPORTED and the debug log says what is missing. A single acquisition feeds the session's input 0 and
// leaves the frame and the outputs in the session; a stream belongs to the session that started it; starting or
// stopping a stream and writing sensor registers change shared hardware (admin).
#include "aisrv/image/tensor_image.hpp"
#include "aisrv/protocol/bytes.hpp"
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Error no_sensor(const EngineSlot& slot) {
  return make_error(Errc::not_supported, "engine {} has no sensor configured (start aisrvd with --sensor {}=PATH)",
                    slot.number(), slot.number());
}

// Payload: none (the whole picture) or XMOS's six u16 (little-endian): start x, end x, start y, end y (ends
// exclusive), required width, required height — the last two must be 0 or the input's width and height.
Status acquire_single(CommandContext& c) {
  const auto& p = c.request.payload;
  if (p.empty()) return c.server.acquire_single(c.session, *c.slot, c.queue_ns);
  if (p.size() != 12)
    return make_error(Errc::bad_length, "takes no payload or 12 bytes (u16 start x, end x, start y, end y, width, "
                                        "height), {} were sent", p.size());
  auto u16 = [&](size_t i) { return static_cast<uint32_t>(p[2 * i] | p[2 * i + 1] << 8); };
  AcquireWindow w{u16(0), u16(1), u16(2), u16(3)};
  if (w.x1 <= w.x0 || w.y1 <= w.y0)
    return make_error(Errc::bad_length, "acquire window x {}..{}, y {}..{} is empty (ends are exclusive)", w.x0, w.x1,
                      w.y0, w.y1);
  const uint32_t rw = u16(4), rh = u16(5);
  if (rw || rh) {
    const auto m = AISRV_TRY(model_of(c));
    if (m->info.inputs.empty()) return make_error(Errc::bad_tensor, "the model has no input for a sensor frame");
    // The input's picture size, read from its shape as the camera's preprocessing reads it.
    auto g = image::input_geometry(m->info.inputs[0]);
    if (!g) return make_error(Errc::bad_tensor, "input 0 does not take a picture: {}", g.error().message);
    if (rw != g->width || rh != g->height)
      return make_error(Errc::bad_length, "the window is resized to the input's {}x{}, not {}x{}", g->width, g->height,
                        rw, rh);
  }
  return c.server.acquire_single(c.session, *c.slot, c.queue_ns, w);
}

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
  if (c.session.read_frame(c.slot->number(), c.response.payload)) return ok();
  return c.server.stream_frame(c.slot->number(), c.response.payload);
}

Status set_sensor(CommandContext& c) {
  if (!c.slot->has_sensor()) return no_sensor(*c.slot);
  const auto m = AISRV_TRY(model_of(c));
  return c.session.inject_frame(*m, c.request.payload);
}

}  // namespace

void add_acquire_commands(CommandTable& t) {
  t.add(Command::START_ACQUIRE_SINGLE, {acquire_single, Scope::engine, Payload::any, Run::queued});
  t.add(Command::START_ACQUIRE_STREAM, {acquire_stream, Scope::engine, Payload::none, Run::queued, Access::admin});
  t.add(Command::START_ACQUIRE_SET_I2C, {set_i2c, Scope::engine, Payload::any, Run::queued, Access::admin});
  t.add(Command::GET_ACQUIRE_MODE, {get_mode, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_SENSOR_TENSOR, {get_sensor, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::SET_SENSOR_TENSOR, {set_sensor, Scope::engine, Payload::any, Run::immediate});
}

}  // namespace aisrv::server
