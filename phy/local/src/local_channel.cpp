// aisrv phy/local — the in-process channel: C++ API and the C functions over it. Each call is a request through the
// port (aisrv/port.hpp, Port::call_inline): the same checks and handlers as every transport, run on the application's
// thread without a queue hop; an output tensor goes from the session straight into the caller's buffer (a
// PayloadSink), so a call copies once in and once out.
#include "aisrv/phy/local_channel.hpp"

#include <cstring>

#include <fmt/format.h>

#include "aisrv/port.hpp"
#include "aisrv/protocol/payloads.hpp"

namespace aisrv::phy {

using protocol::Command;

struct LocalChannel::SessionOwner {
  SessionOwner(server::Port& p, std::shared_ptr<server::Session> s) : port(p), session(std::move(s)) {}
  ~SessionOwner() { port.close_session(*session, "the local channel was closed"); }
  SessionOwner(const SessionOwner&) = delete;
  SessionOwner& operator=(const SessionOwner&) = delete;
  server::Port& port;
  std::shared_ptr<server::Session> session;
};

LocalChannel::LocalChannel(server::Port& port, uint32_t engine, std::shared_ptr<SessionOwner> owner)
    : port_(&port), engine_(engine), owner_(std::move(owner)), session_(owner_->session.get()) {}

LocalChannel::~LocalChannel() = default;
LocalChannel::LocalChannel(LocalChannel&&) noexcept = default;
LocalChannel& LocalChannel::operator=(LocalChannel&&) noexcept = default;

namespace {
// The channel's argument, not a command's check: a channel is bound to an engine that exists.
Status engine_exists(const server::Port& port, uint32_t engine) {
  const uint32_t n = port.limits().engines;
  if (engine >= n) return make_error(Errc::bad_engine, "engine {} does not exist (the server has {})", engine, n);
  return ok();
}
}  // namespace

Result<LocalChannel> LocalChannel::open(server::Port& port, uint32_t engine, std::string name) {
  AISRV_TRY(engine_exists(port, engine));
  auto owner = std::make_shared<SessionOwner>(
      port, port.open_session(server::Peer::of(server::Trust::process, "local", std::move(name))));
  return LocalChannel(port, engine, std::move(owner));
}

Result<LocalChannel> LocalChannel::to_engine(uint32_t engine) const {
  AISRV_TRY(engine_exists(*port_, engine));
  return LocalChannel(*port_, engine, owner_);
}

Status LocalChannel::call(Command cmd, uint32_t tensor, std::span<const uint8_t> payload,
                          protocol::PayloadSink* sink) {
  protocol::Request request{protocol::Header{static_cast<uint32_t>(cmd), engine_, tensor}, payload};
  request.sink = sink;
  port_->call_inline(*session_, request, response_);
  if (response_.status == AISRV_STATUS_OKAY) return ok();
  // The handler's reason is the session's newest line of this engine ("COMMAND: message").
  return Error{from_status(response_.status), port_->last_line(*session_, engine_)};
}

Result<uint32_t> LocalChannel::call_u32(Command cmd, uint32_t tensor) {
  AISRV_TRY(call(cmd, tensor, {}, nullptr));
  auto v = protocol::decode_u32(response_.payload);
  if (!v) return make_error(Errc::internal, "{}: {}", protocol::command_name(static_cast<uint32_t>(cmd)),
                            v.error().message);
  return *v;
}

Status LocalChannel::set_input(uint32_t tensor, std::span<const uint8_t> data) {
  return call(Command::SET_INPUT_TENSOR, tensor, data, nullptr);
}

Status LocalChannel::start_inference() { return call(Command::START_INFER, 0, {}, nullptr); }

namespace {
// GET_OUTPUT_TENSOR's bytes straight into the application's buffer when they fit it exactly.
class BufferSink final : public protocol::PayloadSink {
 public:
  explicit BufferSink(std::span<uint8_t> out) : out_(out) {}
  bool write(std::span<const uint8_t> payload) override {
    if (payload.size() != out_.size()) return false;  // the answer stays in the response: the caller says why
    if (!payload.empty()) std::memcpy(out_.data(), payload.data(), payload.size());
    return true;
  }

 private:
  std::span<uint8_t> out_;
};
}  // namespace

Status LocalChannel::get_output(uint32_t tensor, std::span<uint8_t> out) {
  BufferSink sink(out);
  AISRV_TRY(call(Command::GET_OUTPUT_TENSOR, tensor, {}, &sink));
  if (response_.sent) return ok();
  // The tensor is not the size of the caller's buffer: the channel's own framing check, logged like a transport's.
  Error e{Errc::bad_length, fmt::format("output tensor {} is {} bytes, the buffer holds {}", tensor,
                                        response_.payload.size(), out.size())};
  port_->note_error(*session_, engine_, "local get_output_tensor", e);
  return e;
}

Status LocalChannel::acquire_single() {
  return call(Command::START_ACQUIRE_SINGLE, 1, {}, nullptr);  // tensor 1: acquire into input 0, then infer
}

Result<uint32_t> LocalChannel::input_length(uint32_t tensor) {
  return call_u32(Command::GET_INPUT_TENSOR_LENGTH, tensor);
}

Result<uint32_t> LocalChannel::output_length(uint32_t tensor) {
  return call_u32(Command::GET_OUTPUT_TENSOR_LENGTH, tensor);
}

uint32_t LocalChannel::status() {
  auto s = call_u32(Command::GET_STATUS, 0);
  return s ? *s : response_.status;
}

}  // namespace aisrv::phy

namespace {
aisrv::phy::LocalChannel* cast(aisrv_local_t* c) { return reinterpret_cast<aisrv::phy::LocalChannel*>(c); }
uint32_t status_of(const aisrv::Status& st) { return st ? AISRV_STATUS_OKAY : aisrv::to_status(st.error().code); }
}  // namespace

extern "C" {

uint32_t aisrv_local_set_input_tensor(aisrv_local_t* channel, uint32_t tensor, const void* data, size_t length) {
  if (!channel || (!data && length)) return AISRV_STATUS_ERROR_BAD_LENGTH;
  return status_of(cast(channel)->set_input(tensor, std::span(static_cast<const uint8_t*>(data), length)));
}

uint32_t aisrv_local_start_inference(aisrv_local_t* channel) {
  if (!channel) return AISRV_STATUS_ERROR_BAD_ENGINE;
  return status_of(cast(channel)->start_inference());
}

uint32_t aisrv_local_get_output_tensor(aisrv_local_t* channel, uint32_t tensor, void* data, size_t length) {
  if (!channel || (!data && length)) return AISRV_STATUS_ERROR_BAD_LENGTH;
  return status_of(cast(channel)->get_output(tensor, std::span(static_cast<uint8_t*>(data), length)));
}

uint32_t aisrv_local_acquire_single(aisrv_local_t* channel) {
  if (!channel) return AISRV_STATUS_ERROR_BAD_ENGINE;
  return status_of(cast(channel)->acquire_single());
}

uint32_t aisrv_local_get_input_length(aisrv_local_t* channel, uint32_t tensor, uint32_t* length) {
  if (!channel || !length) return AISRV_STATUS_ERROR_BAD_LENGTH;
  auto r = cast(channel)->input_length(tensor);
  if (!r) return aisrv::to_status(r.error().code);
  *length = *r;
  return AISRV_STATUS_OKAY;
}

uint32_t aisrv_local_get_output_length(aisrv_local_t* channel, uint32_t tensor, uint32_t* length) {
  if (!channel || !length) return AISRV_STATUS_ERROR_BAD_LENGTH;
  auto r = cast(channel)->output_length(tensor);
  if (!r) return aisrv::to_status(r.error().code);
  *length = *r;
  return AISRV_STATUS_OKAY;
}

}  // extern "C"
