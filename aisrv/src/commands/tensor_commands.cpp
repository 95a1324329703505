// aisrv interpreter — tensor and inference commands: SET/GET_INPUT_TENSOR, GET_OUTPUT_TENSOR, GET_TIMINGS and
// GET_TIMING_RECORD work on the session's own tensors at once (no engine lock); START_INFER and INFER run in the
// engine's turn on the session's inputs and leave their outputs and timing in the session.
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

Status set_input(CommandContext& c) {
  const auto m = AISRV_TRY(model_of(c));
  return c.session.write_input(*m, c.request.header.tensor, c.request.payload, c.request.donor);
}

Status get_input(CommandContext& c) {
  const auto m = AISRV_TRY(model_of(c));
  return c.session.read_input(*m, c.request.header.tensor, c.response.payload);
}

Status get_output(CommandContext& c) {
  const auto m = AISRV_TRY(model_of(c));
  return c.session.read_output(*m, c.request.header.tensor, [&c](std::span<const uint8_t> bytes) {
    // A transport that can send the bytes from where they are takes them; else they are copied into the answer.
    if (c.request.sink && c.request.sink->write(bytes)) {
      c.response.sent = true;
      c.server.metrics().transport(c.session.peer().transport).response_bytes.fetch_add(bytes.size());
      return;
    }
    c.response.payload.assign(bytes.begin(), bytes.end());
  });
}

Status start_infer(CommandContext& c) { return c.server.acquisition().infer(c.session, *c.slot, c.queue_ns); }

Status infer(CommandContext& c) {
  (void)AISRV_TRY(model_of(c));
  if (c.request.header.tensor != 0)
    return make_error(Errc::bad_tensor, "INFER takes tensor = 0, not {}", c.request.header.tensor);
  auto inputs = protocol::decode_infer_request(c.request.payload);
  if (!inputs) return make_error(Errc::bad_length, "INFER request: {}", inputs.error().message);
  return c.server.acquisition().infer_call(c.session, *c.slot, *inputs, c.queue_ns, c.response.payload);
}

Status get_timings(CommandContext& c) {
  const auto m = AISRV_TRY(model_of(c));
  return c.session.timings(*m, c.response.payload);
}

Status get_timing_record(CommandContext& c) {
  const auto m = AISRV_TRY(model_of(c));
  protocol::encode(AISRV_TRY(c.session.timing_record(*m)), c.response.payload);
  return ok();
}

}  // namespace

void add_tensor_commands(CommandTable& t) {
  t.add(Command::SET_INPUT_TENSOR, {set_input, Scope::engine, Payload::any, Run::immediate});
  t.add(Command::GET_INPUT_TENSOR, {get_input, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_OUTPUT_TENSOR, {get_output, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::START_INFER, {start_infer, Scope::engine, Payload::none, Run::queued});
  t.add(Command::INFER, {infer, Scope::engine, Payload::any, Run::queued});
  t.add(Command::GET_TIMINGS, {get_timings, Scope::engine, Payload::none, Run::immediate});
  t.add(Command::GET_TIMING_RECORD, {get_timing_record, Scope::engine, Payload::none, Run::immediate});
}

}  // namespace aisrv::server
