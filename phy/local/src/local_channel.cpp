// aisrv phy/local — in-process channel: C++ API and the C functions over it.
#include "aisrv/phy/local_channel.hpp"

#include "aisrv/server.hpp"

namespace aisrv::phy {

Result<LocalChannel> LocalChannel::open(server::Server& server, uint32_t engine) {
  auto* slot = server.engine(engine);
  if (!slot)
    return make_error(Errc::bad_engine, "engine {} does not exist (the server has {})", engine, server.engine_count());
  return LocalChannel(server, *slot);
}

uint32_t LocalChannel::engine() const { return slot_->number(); }

Status LocalChannel::noted(const char* what, Status st) {
  if (!st) slot_->note_error(what, st.error());
  return st;
}

Status LocalChannel::set_input(uint32_t tensor, std::span<const uint8_t> data) {
  return noted("local set_input_tensor", slot_->write_input(tensor, data));
}

Status LocalChannel::start_inference() { return noted("local start_inference", server_->start_inference(*slot_, 0)); }

Status LocalChannel::get_output(uint32_t tensor, std::span<uint8_t> out) {
  return noted("local get_output_tensor", slot_->copy_output(tensor, out));
}

Status LocalChannel::acquire_single() { return noted("local acquire_single", server_->acquire_single(*slot_, 0)); }

Result<uint32_t> LocalChannel::input_length(uint32_t tensor) {
  auto r = slot_->input_length(tensor);
  if (!r) slot_->note_error("local get_input_length", r.error());
  return r;
}

Result<uint32_t> LocalChannel::output_length(uint32_t tensor) {
  auto r = slot_->output_length(tensor);
  if (!r) slot_->note_error("local get_output_length", r.error());
  return r;
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
