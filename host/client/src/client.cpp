// aisrv host — client library: typed commands, error mapping with the server's reason, version handshake.
#include "aisrv/client/client.hpp"

#include "aisrv/client/socket_transport.hpp"
#include "aisrv/client/usb_transport.hpp"
#include "aisrv/client/spi_transport.hpp"
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "aisrv/protocol/endpoint.hpp"
#include "aisrv/protocol/limits.h"

namespace aisrv::client {

using protocol::Command;

Result<std::unique_ptr<HostTransport>> open_transport(std::string_view target, const ConnectOptions& options) {
  if (target.rfind("unix:", 0) == 0 || target.rfind("tcp:", 0) == 0) {
    auto ep = AISRV_TRY(protocol::parse_socket_endpoint(target));
    auto t = AISRV_TRY(SocketTransport::connect(ep, options));
    return std::unique_ptr<HostTransport>(std::move(t));
  }
  if (target == "usb" || target.rfind("usb:", 0) == 0) {
    auto t = AISRV_TRY(UsbTransport::open(AISRV_TRY(parse_usb_target(target)), options));
    return std::unique_ptr<HostTransport>(std::move(t));
  }
  if (target.rfind("spi:", 0) == 0 || target.rfind("spi-sim:", 0) == 0) {
    auto t = AISRV_TRY(SpiTransport::open(target, options));
    return std::unique_ptr<HostTransport>(std::move(t));
  }
  return make_error(Errc::invalid_argument,
                    "cannot connect to '{}': expected unix:PATH, tcp:HOST:PORT, tcp:PORT, usb[:VID:PID[:SERIAL]], "
                    "spi:/dev/spidevB.C[:HZ] or spi-sim:PATH",
                    target);
}

Result<std::string> read_token_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return make_error(Errc::not_found, "cannot read the token file {}: {}", path, std::strerror(errno));
  std::string token(AISRV_MAX_TOKEN + 2, '\0');
  const size_t n = std::fread(token.data(), 1, token.size(), f);
  std::fclose(f);
  token.resize(n);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty() || token.size() > AISRV_MAX_TOKEN)
    return make_error(Errc::invalid_argument, "the token file {} holds {} bytes; a token is 1..{} bytes", path,
                      token.size(), AISRV_MAX_TOKEN);
  return token;
}

Result<Client> Client::connect(std::string_view target, const ConnectOptions& options) {
  auto transport = AISRV_TRY(open_transport(target, options));
  Client c(std::move(transport));
  AISRV_TRY(c.handshake());
  if (!options.token.empty()) AISRV_TRY(c.auth(options.token));
  return c;
}

Client::Client(std::unique_ptr<HostTransport> transport) : transport_(std::move(transport)) {}

Status Client::handshake() {
  version_ = AISRV_TRY(version());
  AISRV_TRY(protocol::check_compatible(version_, AISRV_PROTOCOL_MAJOR, AISRV_PROTOCOL_MIN_MAJOR));
  transport_->negotiated(version_);
  return ok();
}

Result<std::vector<uint8_t>> Client::call(uint32_t cmd, uint32_t engine, uint32_t tensor,
                                          std::span<const uint8_t> payload) {
  std::vector<uint8_t> out;
  AISRV_TRY(call(cmd, engine, tensor, payload, out));
  return out;
}

Status Client::call(uint32_t cmd, uint32_t engine, uint32_t tensor, std::span<const uint8_t> payload,
                    std::vector<uint8_t>& out) {
  // The answer is received into out's storage (transports keep a payload vector's capacity), then handed back.
  response_.payload.swap(out);
  Status st = transport_->transact(protocol::Header{cmd, engine, tensor}, payload, response_);
  response_.payload.swap(out);
  if (st && response_.status == AISRV_STATUS_OKAY) return ok();
  out.clear();
  AISRV_TRY(std::move(st));
  const uint32_t status = response_.status;
  Error e{from_status(status), std::string(protocol::status_name(status)) + " from " +
                                   std::string(protocol::command_name(cmd))};
  if (fetch_details_ && cmd != static_cast<uint32_t>(Command::GET_DEBUG_LOG)) {
    // The server logged why; the engine's log, or the server's when the engine number was the problem.
    const uint32_t log_engine =
        (e.code == Errc::bad_engine || (version_.engines && engine >= version_.engines)) ? AISRV_ENGINE_SERVER
                                                                                          : engine;
    // A server with sessions keeps this session's own lines apart: ask for the newest of those, so another client's
    // line logged meanwhile is never taken for ours.
    const uint32_t own = (version_.capabilities & AISRV_CAP_SESSIONS) ? AISRV_DEBUG_LOG_OWN : 0;
    protocol::Header h{static_cast<uint32_t>(Command::GET_DEBUG_LOG), log_engine, 1 | own};
    if (transport_->transact(h, {}, response_).ok() && response_.status == AISRV_STATUS_OKAY &&
        !response_.payload.empty()) {
      std::string line(response_.payload.begin(), response_.payload.end());
      while (!line.empty() && line.back() == '\n') line.pop_back();
      if (const size_t stamp_end = line.find("] "); line.rfind("[", 0) == 0 && stamp_end != std::string::npos)
        line = line.substr(stamp_end + 2);
      e.message = line;
    }
  }
  return e;
}

namespace {
template <typename T, typename Decode>
Result<T> decoded(Result<std::vector<uint8_t>> r, Decode decode) {
  if (!r) return std::move(r).error();
  return decode(*r);
}
uint32_t op(Command c) { return static_cast<uint32_t>(c); }
}  // namespace

Status Client::hello() {
  AISRV_TRY(call(op(Command::HELLO), 0, 0));
  return ok();
}

Result<uint32_t> Client::id() { return decoded<uint32_t>(call(op(Command::GET_ID), 0, 0), protocol::decode_u32); }

Result<protocol::VersionInfo> Client::version() {
  return decoded<protocol::VersionInfo>(call(op(Command::GET_VERSION), 0, 0), protocol::decode_version);
}

Result<uint32_t> Client::status(uint32_t engine) {
  return decoded<uint32_t>(call(op(Command::GET_STATUS), engine, 0), protocol::decode_u32);
}

Result<protocol::Spec> Client::spec(uint32_t engine, uint32_t tensor) {
  return decoded<protocol::Spec>(call(op(Command::GET_SPEC), engine, tensor), protocol::decode_spec);
}

Result<protocol::ModelTensors> Client::tensor_info(uint32_t engine) {
  return decoded<protocol::ModelTensors>(call(op(Command::GET_TENSOR_INFO), engine, 0),
                                         protocol::decode_tensor_info);
}

Result<protocol::ModelMetadata> Client::model_metadata(uint32_t engine) {
  if (!(server_version().capabilities & AISRV_CAP_MODEL_METADATA)) return protocol::ModelMetadata{};
  return decoded<protocol::ModelMetadata>(call(op(Command::GET_MODEL_METADATA), engine, 0),
                                          protocol::decode_model_metadata);
}

Result<protocol::EngineInfo> Client::engine_info(uint32_t engine) {
  return decoded<protocol::EngineInfo>(call(op(Command::GET_ENGINE_INFO), engine, 0),
                                       protocol::decode_engine_info);
}

Result<uint32_t> Client::input_length(uint32_t engine, uint32_t tensor) {
  return decoded<uint32_t>(call(op(Command::GET_INPUT_TENSOR_LENGTH), engine, tensor), protocol::decode_u32);
}

Result<uint32_t> Client::output_length(uint32_t engine, uint32_t tensor) {
  return decoded<uint32_t>(call(op(Command::GET_OUTPUT_TENSOR_LENGTH), engine, tensor), protocol::decode_u32);
}

Status Client::load_model(uint32_t engine, std::span<const uint8_t> model, Placement placement,
                          const HostTransport::SendProgress& progress) {
  const auto cmd = placement == Placement::arena ? Command::SET_MODEL_PRIMARY : Command::SET_MODEL_SECONDARY;
  if (progress) transport_->set_send_progress(progress);
  auto sent = call(op(cmd), engine, 0, model);
  if (progress) transport_->set_send_progress({});
  AISRV_TRY(std::move(sent));
  return ok();
}

Status Client::load_model_from_flash(uint32_t engine, Placement placement) {
  const auto cmd =
      placement == Placement::arena ? Command::SET_MODEL_PRIMARY_FLASH : Command::SET_MODEL_SECONDARY_FLASH;
  AISRV_TRY(call(op(cmd), engine, 0));
  return ok();
}

Status Client::unload_model(uint32_t engine) {
  AISRV_TRY(call(op(Command::UNLOAD_MODEL), engine, 0));
  return ok();
}

Status Client::set_input(uint32_t engine, uint32_t tensor, std::span<const uint8_t> data) {
  AISRV_TRY(call(op(Command::SET_INPUT_TENSOR), engine, tensor, data));
  return ok();
}

Result<std::vector<uint8_t>> Client::get_input(uint32_t engine, uint32_t tensor) {
  return call(op(Command::GET_INPUT_TENSOR), engine, tensor);
}

Status Client::start_inference(uint32_t engine) {
  AISRV_TRY(call(op(Command::START_INFER), engine, 0));
  return ok();
}

Result<std::vector<uint8_t>> Client::get_output(uint32_t engine, uint32_t tensor) {
  return call(op(Command::GET_OUTPUT_TENSOR), engine, tensor);
}

Status Client::get_output(uint32_t engine, uint32_t tensor, std::vector<uint8_t>& out) {
  return call(op(Command::GET_OUTPUT_TENSOR), engine, tensor, {}, out);
}

Status Client::acquire_single(uint32_t engine, const std::optional<Window>& window, bool infer) {
  std::vector<uint8_t> p;
  if (window) {
    for (uint16_t v : {window->x0, window->x1, window->y0, window->y1, uint16_t(0), uint16_t(0)}) {
      p.push_back(static_cast<uint8_t>(v));
      p.push_back(static_cast<uint8_t>(v >> 8));
    }
  }
  AISRV_TRY(call(op(Command::START_ACQUIRE_SINGLE), engine, infer ? AISRV_ACQUIRE_INFER : AISRV_ACQUIRE_FILL, p));
  return ok();
}

Status Client::acquire_stream(uint32_t engine, bool start) {
  std::vector<uint8_t> p;
  if (!start) protocol::encode_u32(AISRV_ACQUIRE_MODE_SINGLE, p);
  AISRV_TRY(call(op(Command::START_ACQUIRE_STREAM), engine, 0, p));
  return ok();
}

Result<uint32_t> Client::acquire_mode(uint32_t engine) {
  return protocol::decode_u32(AISRV_TRY(call(op(Command::GET_ACQUIRE_MODE), engine, 0)));
}

Result<std::vector<uint8_t>> Client::sensor_frame(uint32_t engine) {
  return call(op(Command::GET_SENSOR_TENSOR), engine, 0);
}

Status Client::i2c_write(uint32_t engine, uint8_t address, uint8_t reg, uint8_t value) {
  const uint8_t p[3] = {address, reg, value};
  AISRV_TRY(call(op(Command::START_ACQUIRE_SET_I2C), engine, 0, p));
  return ok();
}

Result<Client::GpioLine> Client::gpio_line(uint32_t engine, uint32_t line) {
  GpioLine g;
  g.enabled = AISRV_TRY(protocol::decode_u32(AISRV_TRY(call(op(Command::GET_OUTPUT_GPIO_EN), engine, line)))) != 0;
  const uint32_t bits =
      AISRV_TRY(protocol::decode_u32(AISRV_TRY(call(op(Command::GET_OUTPUT_GPIO_THRESH), engine, line))));
  if (AISRV_TRY(gpio_float_output(engine))) {
    float f = 0;
    std::memcpy(&f, &bits, 4);
    g.threshold = f;
  } else {
    g.threshold = static_cast<int32_t>(bits);
  }
  return g;
}

// Whether the engine's GPIO thresholds are floats: its model's output 0 is float32 (no model: i32).
Result<bool> Client::gpio_float_output(uint32_t engine) {
  auto info = tensor_info(engine);
  if (!info) {
    if (info.error().code == Errc::no_model) return false;
    return std::move(info).error();
  }
  return !info->outputs.empty() && info->outputs[0].dtype == protocol::DType::float32;
}

static std::vector<uint8_t> u32_bytes(uint32_t v) {
  std::vector<uint8_t> p;
  protocol::encode_u32(v, p);
  return p;
}

Status Client::set_gpio_enabled(uint32_t engine, uint32_t line, bool enabled) {
  AISRV_TRY(call(op(Command::SET_OUTPUT_GPIO_EN), engine, line, u32_bytes(enabled ? 1 : 0)));
  return ok();
}

Status Client::set_gpio_threshold(uint32_t engine, uint32_t line, double threshold) {
  uint32_t bits = 0;
  if (AISRV_TRY(gpio_float_output(engine))) {
    const float f = static_cast<float>(threshold);
    std::memcpy(&bits, &f, 4);
  } else {
    if (threshold != std::floor(threshold) || threshold < INT32_MIN || threshold > INT32_MAX)
      return make_error(Errc::invalid_argument, "GPIO threshold {} is not an i32 (output 0 of engine {} is not float32)",
                        threshold, engine);
    bits = static_cast<uint32_t>(static_cast<int32_t>(threshold));
  }
  AISRV_TRY(call(op(Command::SET_OUTPUT_GPIO_THRESH), engine, line, u32_bytes(bits)));
  return ok();
}

Result<uint32_t> Client::gpio_mode(uint32_t engine) {
  return protocol::decode_u32(AISRV_TRY(call(op(Command::GET_OUTPUT_GPIO_MODE), engine, 0)));
}

Status Client::set_gpio_mode(uint32_t engine, uint32_t mode) {
  AISRV_TRY(call(op(Command::SET_OUTPUT_GPIO_MODE), engine, 0, u32_bytes(mode)));
  return ok();
}

Status Client::cancel(uint32_t engine, bool any) {
  AISRV_TRY(call(op(Command::CANCEL_INFER), engine, any ? AISRV_CANCEL_ANY : AISRV_CANCEL_OWN));
  return ok();
}

Status Client::auth(std::string_view token) {
  const auto* p = reinterpret_cast<const uint8_t*>(token.data());
  AISRV_TRY(call(op(Command::AUTH), 0, 0, std::span<const uint8_t>(p, token.size()), infer_answer_));
  return ok();
}

Result<protocol::SessionInfo> Client::session_info() {
  return decoded<protocol::SessionInfo>(call(op(Command::GET_SESSION_INFO), 0, 0), protocol::decode_session_info);
}

Result<protocol::ServerStats> Client::server_stats() {
  return decoded<protocol::ServerStats>(call(op(Command::GET_SERVER_STATS), 0, 0), protocol::decode_server_stats);
}

Status Client::infer(uint32_t engine, std::span<const std::span<const uint8_t>> inputs,
                     std::vector<std::vector<uint8_t>>& outputs) {
  if (version_.capabilities & AISRV_CAP_INFER) {
    std::vector<protocol::InferTensor> tensors(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) tensors[i] = {static_cast<uint32_t>(i), inputs[i]};
    infer_request_.clear();
    protocol::encode_infer_request(tensors, infer_request_);
    AISRV_TRY(call(op(Command::INFER), engine, 0, infer_request_, infer_answer_));
    auto parts = protocol::decode_infer_answer(infer_answer_);
    if (!parts) return make_error(Errc::protocol_error, "INFER answer: {}", parts.error().message);
    outputs.resize(parts->size());
    for (size_t i = 0; i < parts->size(); ++i) outputs[i].assign((*parts)[i].begin(), (*parts)[i].end());
    return ok();
  }
  // A server without INFER: the XMOS sequence, three kinds of round trips.
  for (size_t i = 0; i < inputs.size(); ++i) AISRV_TRY(set_input(engine, static_cast<uint32_t>(i), inputs[i]));
  AISRV_TRY(start_inference(engine));
  const auto info = AISRV_TRY(tensor_info(engine));
  outputs.resize(info.outputs.size());
  for (size_t i = 0; i < info.outputs.size(); ++i) AISRV_TRY(get_output(engine, static_cast<uint32_t>(i), outputs[i]));
  return ok();
}

Result<std::vector<std::vector<uint8_t>>> Client::infer(uint32_t engine,
                                                        std::span<const std::span<const uint8_t>> inputs) {
  std::vector<std::vector<uint8_t>> outputs;
  AISRV_TRY(infer(engine, inputs, outputs));
  return outputs;
}

Result<std::vector<uint32_t>> Client::timings(uint32_t engine) {
  return decoded<std::vector<uint32_t>>(call(op(Command::GET_TIMINGS), engine, 0), protocol::decode_timings);
}

Result<protocol::TimingRecord> Client::timing_record(uint32_t engine) {
  return decoded<protocol::TimingRecord>(call(op(Command::GET_TIMING_RECORD), engine, 0),
                                         protocol::decode_timing_record);
}

Result<std::string> Client::debug_log(uint32_t engine, uint32_t lines) {
  auto r = AISRV_TRY(call(op(Command::GET_DEBUG_LOG), engine, lines));
  return std::string(r.begin(), r.end());
}

}  // namespace aisrv::client
