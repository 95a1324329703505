// aisrv interpreter — output GPIO commands: GET/SET_OUTPUT_GPIO_EN/THRESH/MODE. They need GPIO outputs configured
// for the engine; without them each answers ERROR_NOT_SUPPORTED and the debug log says what is missing.
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Status no_gpio(CommandContext& c) {
  return make_error(Errc::not_supported, "{}: engine {} has no GPIO outputs configured (start aisrvd with --gpio {}=...)",
                    protocol::command_name(c.request.header.cmd), c.slot->number(), c.slot->number());
}

}  // namespace

void add_gpio_commands(CommandTable& t) {
  t.add(Command::GET_OUTPUT_GPIO_EN, {no_gpio, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::SET_OUTPUT_GPIO_EN, {no_gpio, Scope::engine, Payload::any, Run::queued, Access::admin});
  t.add(Command::GET_OUTPUT_GPIO_THRESH, {no_gpio, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::SET_OUTPUT_GPIO_THRESH, {no_gpio, Scope::engine, Payload::any, Run::queued, Access::admin});
  t.add(Command::GET_OUTPUT_GPIO_MODE, {no_gpio, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::SET_OUTPUT_GPIO_MODE, {no_gpio, Scope::engine, Payload::any, Run::queued, Access::admin});
}

}  // namespace aisrv::server
