// aisrv interpreter — output GPIO commands: GET/SET_OUTPUT_GPIO_EN/THRESH/MODE (docs/protocol.md, docs/sensors-gpio.md).
// `tensor` is the line's index among the engine's configured lines (MODE: engine-wide, tensor 0). The policy is the
// engine's (shared hardware): setting it needs the admin role; reading it does not. Without GPIO lines configured
// each answers ERROR_NOT_SUPPORTED and the debug log names the option.
//
// Payloads: aisrv's 4-byte forms, and XMOS's as its hosts send them — EN and MODE one byte (EN then sets every line,
// as XMOS has one flag), THRESH two bytes (u8 line index, i8 threshold; the index is in the payload, not `tensor`).
// A 4-byte THRESH is an IEEE-754 float when the loaded model's output 0 is float32, else an i32; GET_OUTPUT_GPIO_THRESH
// answers in the same form.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "aisrv/protocol/bytes.hpp"
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Result<sensors::OutputGpio*> gpio_of(CommandContext& c) {
  if (!c.slot->has_gpio())
    return make_error(Errc::not_supported, "engine {} has no GPIO outputs configured (start aisrvd with --gpio "
                                           "{}=CHIP:LINE[,LINE...])",
                      c.slot->number(), c.slot->number());
  return c.slot->gpio();
}

uint32_t u32_at(std::span<const uint8_t> p) {
  return static_cast<uint32_t>(p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24);
}

// EN and MODE: a u32 (aisrv) or a u8 (XMOS).
Result<uint32_t> flag_payload(CommandContext& c) {
  const auto& p = c.request.payload;
  if (p.size() == 1) return p[0];
  if (p.size() != 4)
    return make_error(Errc::bad_length, "takes a 4-byte value (or XMOS's 1 byte), {} bytes were sent", p.size());
  return u32_at(p);
}

// Whether thresholds are floats on this engine now: its model's output 0 is float32.
bool float_output(CommandContext& c) {
  const auto m = c.slot->model();
  return m && !m->info.outputs.empty() && m->info.outputs[0].dtype == protocol::DType::float32;
}

Status answer(CommandContext& c, uint32_t v) {
  protocol::encode_u32(v, c.response.payload);
  return ok();
}

Status get_en(CommandContext& c) {
  auto* g = AISRV_TRY(gpio_of(c));
  return answer(c, AISRV_TRY(g->enabled(c.request.header.tensor)));
}
Status set_en(CommandContext& c) {
  auto* g = AISRV_TRY(gpio_of(c));
  const uint32_t on = AISRV_TRY(flag_payload(c));
  if (c.request.payload.size() == 1) {
    // XMOS's form: one flag for every line; its hosts send tensor 0.
    if (c.request.header.tensor != 0)
      return make_error(Errc::bad_tensor, "a 1-byte GPIO enable (XMOS's form) sets every line: send tensor 0, not {} "
                                          "(or a 4-byte value for one line)",
                        c.request.header.tensor);
    return g->set_all_enabled(on);
  }
  return g->set_enabled(c.request.header.tensor, on);
}
Status get_thresh(CommandContext& c) {
  auto* g = AISRV_TRY(gpio_of(c));
  const double t = AISRV_TRY(g->threshold(c.request.header.tensor));
  if (float_output(c)) {
    const float f = static_cast<float>(t);
    uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    return answer(c, bits);
  }
  // Integer outputs: element > t is element > floor(t), so floor is the exact i32 form.
  const double lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  return answer(c, static_cast<uint32_t>(static_cast<int32_t>(std::clamp(std::floor(t), lo, hi))));
}
Status set_thresh(CommandContext& c) {
  auto* g = AISRV_TRY(gpio_of(c));
  const auto& p = c.request.payload;
  if (p.size() == 2)  // XMOS: u8 line index, i8 threshold (XMOS ignores `tensor`)
    return g->set_threshold(p[0], static_cast<int8_t>(p[1]));
  if (p.size() != 4)
    return make_error(Errc::bad_length, "takes a 4-byte threshold (i32, or f32 for a float32 output) or XMOS's 2 "
                                        "bytes (u8 line, i8 threshold), {} bytes were sent",
                      p.size());
  const uint32_t bits = u32_at(p);
  if (float_output(c)) {
    float f = 0;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) return make_error(Errc::bad_length, "the threshold is NaN (output 0 is float32: send a float)");
    return g->set_threshold(c.request.header.tensor, f);
  }
  return g->set_threshold(c.request.header.tensor, static_cast<int32_t>(bits));
}
Status check_mode_tensor(CommandContext& c) {
  if (c.request.header.tensor != 0)
    return make_error(Errc::bad_tensor, "the GPIO mode is engine-wide: send tensor 0, not {}",
                      c.request.header.tensor);
  return ok();
}
Status get_mode(CommandContext& c) {
  auto* g = AISRV_TRY(gpio_of(c));
  AISRV_TRY(check_mode_tensor(c));
  return answer(c, static_cast<uint32_t>(g->mode()));
}
Status set_mode(CommandContext& c) {
  auto* g = AISRV_TRY(gpio_of(c));
  AISRV_TRY(check_mode_tensor(c));
  return g->set_mode(AISRV_TRY(flag_payload(c)));
}

}  // namespace

void add_gpio_commands(CommandTable& t) {
  t.add(Command::GET_OUTPUT_GPIO_EN, {get_en, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::SET_OUTPUT_GPIO_EN, {set_en, Scope::engine, Payload::any, Run::immediate, Access::admin});
  t.add(Command::GET_OUTPUT_GPIO_THRESH, {get_thresh, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::SET_OUTPUT_GPIO_THRESH, {set_thresh, Scope::engine, Payload::any, Run::immediate, Access::admin});
  t.add(Command::GET_OUTPUT_GPIO_MODE, {get_mode, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::SET_OUTPUT_GPIO_MODE, {set_mode, Scope::engine, Payload::any, Run::immediate, Access::admin});
}

}  // namespace aisrv::server
