// aisrv interpreter — model commands: SET_MODEL_PRIMARY/SECONDARY, UNLOAD_MODEL (admin: the model is shared), and the
// introspection every session may use from the model snapshot: GET_SPEC, GET_TENSOR_INFO, GET_MODEL_METADATA,
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
  const auto m = AISRV_TRY(model_of(c));
  const uint32_t tensor = c.request.header.tensor;
  const auto& info = m->info;
  if (tensor >= info.inputs.size() && tensor >= info.outputs.size())
    return make_error(Errc::bad_tensor, "tensor {} does not exist (the model has {} inputs, {} outputs)", tensor,
                      info.inputs.size(), info.outputs.size());
  protocol::Spec s;
  s.input_length = tensor < info.inputs.size() ? info.inputs[tensor].bytes : 0;
  s.output_length = tensor < info.outputs.size() ? info.outputs[tensor].bytes : 0;
  s.timings_length = info.layer_count * 4;
  protocol::encode(s, c.response.payload);
  return ok();
}

Status get_tensor_info(CommandContext& c) {
  const auto m = AISRV_TRY(model_of(c));
  protocol::ModelTensors t;
  t.format = m->info.format;
  t.model_bytes = m->bytes;
  t.arena_bytes = static_cast<uint32_t>(m->info.arena_bytes);
  t.inputs = m->info.inputs;
  t.outputs = m->info.outputs;
  protocol::encode(t, c.response.payload);
  return ok();
}

Status get_model_metadata(CommandContext& c) {
  const auto m = AISRV_TRY(model_of(c));
  protocol::ModelMetadata meta;
  meta.entries = m->info.metadata;
  protocol::encode(meta, c.response.payload);
  return ok();
}

Status get_input_length(CommandContext& c) {
  const auto m = AISRV_TRY(model_of(c));
  const uint32_t i = c.request.header.tensor;
  if (i >= m->info.inputs.size())
    return make_error(Errc::bad_tensor, "input tensor {} does not exist (the model has {})", i, m->info.inputs.size());
  protocol::encode_u32(m->info.inputs[i].bytes, c.response.payload);
  return ok();
}

Status get_output_length(CommandContext& c) {
  const auto m = AISRV_TRY(model_of(c));
  const uint32_t i = c.request.header.tensor;
  if (i >= m->info.outputs.size())
    return make_error(Errc::bad_tensor, "output tensor {} does not exist (the model has {})", i,
                      m->info.outputs.size());
  protocol::encode_u32(m->info.outputs[i].bytes, c.response.payload);
  return ok();
}

}  // namespace

void add_model_commands(CommandTable& t) {
  t.add(Command::SET_MODEL_PRIMARY, {set_model_primary, Scope::engine, Payload::any, Run::queued, Access::admin});
  t.add(Command::SET_MODEL_SECONDARY, {set_model_secondary, Scope::engine, Payload::any, Run::queued, Access::admin});
  t.add(Command::UNLOAD_MODEL, {unload_model, Scope::engine, Payload::none, Run::queued, Access::admin});
  t.add(Command::GET_SPEC, {get_spec, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_TENSOR_INFO, {get_tensor_info, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_MODEL_METADATA, {get_model_metadata, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_INPUT_TENSOR_LENGTH, {get_input_length, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_OUTPUT_TENSOR_LENGTH, {get_output_length, Scope::engine, Payload::none, Run::immediate});
}

}  // namespace aisrv::server
