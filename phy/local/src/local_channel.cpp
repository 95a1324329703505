// aisrv phy/local — in-process channel: C++ API and the C functions over it.
#include "aisrv/phy/local_channel.hpp"

#include <cstring>

#include "aisrv/server.hpp"

namespace aisrv::phy {

struct LocalChannel::SessionOwner {
  SessionOwner(server::Server& s, std::shared_ptr<server::Session> ss) : server(s), session(std::move(ss)) {}
  ~SessionOwner() { server.close_session(*session, "the local channel was closed"); }
  SessionOwner(const SessionOwner&) = delete;
  SessionOwner& operator=(const SessionOwner&) = delete;
  server::Server& server;
  std::shared_ptr<server::Session> session;
};

LocalChannel::LocalChannel(server::Server& server, server::EngineSlot& slot, std::shared_ptr<SessionOwner> owner)
    : server_(&server), slot_(&slot), owner_(std::move(owner)), session_(owner_->session.get()) {}

LocalChannel::~LocalChannel() = default;

Result<LocalChannel> LocalChannel::open(server::Server& server, uint32_t engine, std::string name) {
  auto* slot = server.engine(engine);
  if (!slot)
    return make_error(Errc::bad_engine, "engine {} does not exist (the server has {})", engine, server.engine_count());
  auto owner =
      std::make_shared<SessionOwner>(server, server.open_session(server::Peer::of("local", std::move(name))));
  return LocalChannel(server, *slot, std::move(owner));
}

Result<LocalChannel> LocalChannel::to_engine(uint32_t engine) const {
  auto* slot = server_->engine(engine);
  if (!slot)
    return make_error(Errc::bad_engine, "engine {} does not exist (the server has {})", engine,
                      server_->engine_count());
  return LocalChannel(*server_, *slot, owner_);
}

uint32_t LocalChannel::engine() const { return slot_->number(); }

Status LocalChannel::noted(const char* what, Status st) {
  if (!st) server_->note_error(*session_, slot_->number(), what, st.error());
  return st;
}

Status LocalChannel::set_input(uint32_t tensor, std::span<const uint8_t> data) {
  auto m = slot_->model();
  if (!m) return noted("local set_input_tensor", make_error(Errc::no_model, "engine {} has no model loaded", engine()));
  return noted("local set_input_tensor", session_->write_input(*m, tensor, data));
}

Status LocalChannel::start_inference() {
  return noted("local start_inference", server_->start_inference(*session_, *slot_, 0));
}

Status LocalChannel::get_output(uint32_t tensor, std::span<uint8_t> out) {
  auto m = slot_->model();
  Status st = ok();
  if (!m) {
    st = make_error(Errc::no_model, "engine {} has no model loaded", engine());
  } else if (tensor < m->info.outputs.size() && m->info.outputs[tensor].bytes != out.size()) {
    st = make_error(Errc::bad_length, "output tensor {} is {} bytes, the buffer holds {}", tensor,
                    m->info.outputs[tensor].bytes, out.size());
  } else {
    st = session_->read_output(*m, tensor, [&](std::span<const uint8_t> bytes) {
      std::memcpy(out.data(), bytes.data(), bytes.size());
    });
  }
  return noted("local get_output_tensor", std::move(st));
}

Status LocalChannel::acquire_single() {
  return noted("local acquire_single", server_->acquire_single(*session_, *slot_, 0));
}

namespace {
Result<uint32_t> length_of(const server::EngineSlot& slot, bool input, uint32_t tensor) {
  auto m = slot.model();
  if (!m) return make_error(Errc::no_model, "engine {} has no model loaded", slot.number());
  const auto& list = input ? m->info.inputs : m->info.outputs;
  if (tensor >= list.size())
    return make_error(Errc::bad_tensor, "{} tensor {} does not exist (the model has {})", input ? "input" : "output",
                      tensor, list.size());
  return list[tensor].bytes;
}
}  // namespace

Result<uint32_t> LocalChannel::input_length(uint32_t tensor) {
  auto r = length_of(*slot_, true, tensor);
  if (!r) server_->note_error(*session_, slot_->number(), "local get_input_length", r.error());
  return r;
}

Result<uint32_t> LocalChannel::output_length(uint32_t tensor) {
  auto r = length_of(*slot_, false, tensor);
  if (!r) server_->note_error(*session_, slot_->number(), "local get_output_length", r.error());
  return r;
}

uint32_t LocalChannel::status() { return slot_->state_bits() | session_->take_errors(slot_->number()); }

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
