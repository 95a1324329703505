// aisrv interpreter — tensor and inference commands: SET/GET_INPUT_TENSOR, GET_OUTPUT_TENSOR, START_INFER,
// GET_TIMINGS, GET_TIMING_RECORD.
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Status set_input(CommandContext& c) {
  return c.slot->write_input(c.request.header.tensor, c.request.payload, c.request.donor);
}

Status get_input(CommandContext& c) { return c.slot->read_input(c.request.header.tensor, c.response.payload); }

Status get_output(CommandContext& c) {
  if (!c.request.sink) return c.slot->read_output(c.request.header.tensor, c.response.payload);
  c.response.sent = AISRV_TRY(c.slot->read_output(c.request.header.tensor, *c.request.sink, c.response.payload));
  return ok();
}

Status start_infer(CommandContext& c) { return c.server.start_inference(*c.slot, c.queue_ns); }

Status get_timings(CommandContext& c) { return c.slot->timings(c.response.payload); }

Status get_timing_record(CommandContext& c) {
  auto record = AISRV_TRY(c.slot->timing_record());
  protocol::encode(record, c.response.payload);
  return ok();
}

}  // namespace

void add_tensor_commands(CommandTable& t) {
  t.add(Command::SET_INPUT_TENSOR, {set_input, Scope::engine, Payload::any, Run::quick});
  t.add(Command::GET_INPUT_TENSOR, {get_input, Scope::engine, Payload::none, Run::quick});
  t.add(Command::GET_OUTPUT_TENSOR, {get_output, Scope::engine, Payload::none, Run::quick});
  t.add(Command::START_INFER, {start_infer, Scope::engine});
  t.add(Command::GET_TIMINGS, {get_timings, Scope::engine, Payload::none, Run::quick});
  t.add(Command::GET_TIMING_RECORD, {get_timing_record, Scope::engine, Payload::none, Run::quick});
}

}  // namespace aisrv::server
