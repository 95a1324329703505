// aisrv interpreter — sensor acquisition commands: START_ACQUIRE_SINGLE/STREAM/SET_I2C, GET_ACQUIRE_MODE,
// GET/SET_SENSOR_TENSOR. They need a frame source attached to the engine (aisrvd --sensor); without one each answers
// ERROR_NOT_SUPPORTED and the debug log says what is missing. The wire meanings are XMOS's, so XMOS host scripts work
// unchanged (docs/protocol.md, docs/sensors-gpio.md): START_ACQUIRE_SINGLE fills the session's input 0 only (tensor 1,
// an aisrv extension, also runs the inference); START_ACQUIRE_STREAM starts a stream whatever its tensor field (a u32
// payload 0, an aisrv extension, stops it); GET_ACQUIRE_MODE answers 0 single, 1 stream. Starting or stopping a stream
// and writing sensor registers change shared hardware (admin).
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
// Header tensor: 0 (what XMOS hosts send) acquires into input 0 only, as XMOS; 1 (aisrv extension) acquires and infers
// in the same engine turn.
Status acquire_single(CommandContext& c) {
  const auto& p = c.request.payload;
  const uint32_t then = c.request.header.tensor;
  if (then > 1)
    return make_error(Errc::bad_tensor, "START_ACQUIRE_SINGLE takes tensor 0 (acquire into input 0) or 1 (acquire "
                                        "and infer), not {}", then);
  const bool infer = then == 1;
  if (p.empty()) return c.server.acquisition().acquire_single(c.session, *c.slot, c.queue_ns, {}, infer);
  if (p.size() != 12)
    return make_error(Errc::bad_length, "takes no payload or 12 bytes (u16 start x, end x, start y, end y, width, "
                                        "height), {} were sent", p.size());
  auto u16 = [&](size_t i) { return static_cast<uint32_t>(p[2 * i] | p[2 * i + 1] << 8); };
  sensors::AcquireWindow w{u16(0), u16(1), u16(2), u16(3)};
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
  return c.server.acquisition().acquire_single(c.session, *c.slot, c.queue_ns, w, infer);
}

// XMOS hosts send no payload (and tensor 0; XMOS ignores the tensor field): start. The aisrv extension is a u32
// payload with the acquire mode to set, in GET_ACQUIRE_MODE's values: 1 stream (start), 0 single (stop the stream).
Status acquire_stream(CommandContext& c) {
  const auto& p = c.request.payload;
  uint32_t mode = 1;
  if (!p.empty()) {
    auto v = protocol::decode_u32(p);
    if (p.size() != 4 || !v)
      return make_error(Errc::bad_length, "takes no payload (start) or a u32 mode (1 start, 0 stop), {} bytes were "
                                          "sent", p.size());
    mode = *v;
    if (mode > 1)
      return make_error(Errc::bad_length, "acquire mode {} is unknown (1 stream: start, 0 single: stop)", mode);
  }
  if (mode == 0) {
    if (!c.server.acquisition().has_sensor(c.slot->number())) return no_sensor(*c.slot);
    c.server.acquisition().stop_stream(*c.slot);
    return ok();
  }
  return c.server.acquisition().start_stream(c.session, *c.slot);
}

// XMOS: u8 address, u8 register, u8 value. aisrv extension: u8 address, u16 register (little-endian), u8 value, for
// sensors with 16-bit register addresses (IMX219).
Status set_i2c(CommandContext& c) {
  const auto& p = c.request.payload;
  if (p.size() != 3 && p.size() != 4)
    return make_error(Errc::bad_length, "takes 3 bytes (address, register, value) or 4 (address, u16 register, "
                                        "value), {} were sent",
                      p.size());
  if (p[0] > 0x7F) return make_error(Errc::bad_length, "I2C address {:#04x} is not a 7-bit address", p[0]);
  Acquisition& a = c.server.acquisition();
  const uint32_t n = c.slot->number();
  if (p.size() == 4) return a.write_register16(n, p[0], static_cast<uint16_t>(p[1] | p[2] << 8), p[3]);
  return a.write_register(n, p[0], p[1], p[2]);
}

// XMOS's values: 0 single, 1 stream. An engine that is not streaming (idle, or in a single acquisition) answers 0, as
// XMOS does from its start (its mode is SINGLE until a stream starts).
Status get_mode(CommandContext& c) {
  if (!c.server.acquisition().has_sensor(c.slot->number())) return no_sensor(*c.slot);
  const bool streaming = c.server.acquisition().mode(c.slot->number()) == Acquisition::Mode::stream;
  protocol::encode_u32(streaming ? AISRV_ACQUIRE_MODE_STREAM : AISRV_ACQUIRE_MODE_SINGLE, c.response.payload);
  return ok();
}

Status get_sensor(CommandContext& c) {
  if (!c.server.acquisition().has_sensor(c.slot->number())) return no_sensor(*c.slot);
  if (c.session.read_frame(c.slot->number(), c.response.payload)) return ok();
  return c.server.acquisition().stream_frame(c.slot->number(), c.response.payload);
}

Status set_sensor(CommandContext& c) {
  if (!c.server.acquisition().has_sensor(c.slot->number())) return no_sensor(*c.slot);
  const auto m = AISRV_TRY(model_of(c));
  return c.session.inject_frame(*m, c.request.payload);
}

}  // namespace

void add_acquire_commands(CommandTable& t) {
  t.add(Command::START_ACQUIRE_SINGLE, {acquire_single, Scope::engine, Payload::any, Run::queued});
  t.add(Command::START_ACQUIRE_STREAM, {acquire_stream, Scope::engine, Payload::any, Run::queued, Access::admin});
  t.add(Command::START_ACQUIRE_SET_I2C, {set_i2c, Scope::engine, Payload::any, Run::queued, Access::admin});
  t.add(Command::GET_ACQUIRE_MODE, {get_mode, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_SENSOR_TENSOR, {get_sensor, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::SET_SENSOR_TENSOR, {set_sensor, Scope::engine, Payload::any, Run::immediate});
}

}  // namespace aisrv::server
