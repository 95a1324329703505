// aisrv interpreter — output GPIO commands: GET/SET_OUTPUT_GPIO_EN/THRESH/MODE (docs/protocol.md, docs/sensors-gpio.md).
// `tensor` is the line's index among the engine's configured lines (MODE: engine-wide, tensor 0). The policy is the
// engine's (shared hardware): setting it needs the admin role; reading it does not. Without GPIO lines configured
// each answers ERROR_NOT_SUPPORTED and the debug log names the option.
#include "aisrv/protocol/bytes.hpp"
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Result<OutputGpio*> gpio_of(CommandContext& c) {
  if (!c.slot->has_gpio())
    return make_error(Errc::not_supported, "engine {} has no GPIO outputs configured (start aisrvd with --gpio "
                                           "{}=CHIP:LINE[,LINE...])",
                      c.slot->number(), c.slot->number());
  return c.slot->gpio();
}

Result<uint32_t> u32_payload(CommandContext& c) {
  const auto& p = c.request.payload;
  if (p.size() != 4) return make_error(Errc::bad_length, "takes a 4-byte value, {} bytes were sent", p.size());
  return static_cast<uint32_t>(p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24);
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
  return g->set_enabled(c.request.header.tensor, AISRV_TRY(u32_payload(c)));
}
Status get_thresh(CommandContext& c) {
  auto* g = AISRV_TRY(gpio_of(c));
  return answer(c, static_cast<uint32_t>(AISRV_TRY(g->threshold(c.request.header.tensor))));
}
Status set_thresh(CommandContext& c) {
  auto* g = AISRV_TRY(gpio_of(c));
  return g->set_threshold(c.request.header.tensor, static_cast<int32_t>(AISRV_TRY(u32_payload(c))));
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
  return g->set_mode(AISRV_TRY(u32_payload(c)));
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
