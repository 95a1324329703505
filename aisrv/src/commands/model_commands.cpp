// aisrv interpreter — model commands: SET_MODEL_PRIMARY/SECONDARY, UNLOAD_MODEL, GET_SPEC, GET_TENSOR_INFO,
// GET_INPUT/OUTPUT_TENSOR_LENGTH. (SET_MODEL_*_FLASH: flash_commands.cpp.)
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Status set_model_primary(CommandContext& c) {
  return c.slot->load_model(c.request.payload, engine::Placement::arena, "wire (arena)");
}

Status set_model_secondary(CommandContext& c) {
  return c.slot->load_model(c.request.payload, engine::Placement::external, "wire (external)");
}

Status unload_model(CommandContext& c) { return c.slot->unload_model(); }

Status get_spec(CommandContext& c) {
  auto spec = AISRV_TRY(c.slot->spec(c.request.header.tensor));
  protocol::encode(spec, c.response.payload);
  return ok();
}

Status get_tensor_info(CommandContext& c) {
  auto info = AISRV_TRY(c.slot->tensor_info());
  protocol::encode(info, c.response.payload);
  return ok();
}

Status get_input_length(CommandContext& c) {
  protocol::encode_u32(AISRV_TRY(c.slot->input_length(c.request.header.tensor)), c.response.payload);
  return ok();
}

Status get_output_length(CommandContext& c) {
  protocol::encode_u32(AISRV_TRY(c.slot->output_length(c.request.header.tensor)), c.response.payload);
  return ok();
}

}  // namespace

void add_model_commands(CommandTable& t) {
  t.add(Command::SET_MODEL_PRIMARY, {set_model_primary, Scope::engine, Payload::any});
  t.add(Command::SET_MODEL_SECONDARY, {set_model_secondary, Scope::engine, Payload::any});
  t.add(Command::UNLOAD_MODEL, {unload_model, Scope::engine});
  t.add(Command::GET_SPEC, {get_spec, Scope::engine, Payload::none, Run::quick});
  t.add(Command::GET_TENSOR_INFO, {get_tensor_info, Scope::engine, Payload::none, Run::quick});
  t.add(Command::GET_INPUT_TENSOR_LENGTH, {get_input_length, Scope::engine, Payload::none, Run::quick});
  t.add(Command::GET_OUTPUT_TENSOR_LENGTH, {get_output_length, Scope::engine, Payload::none, Run::quick});
}

}  // namespace aisrv::server
