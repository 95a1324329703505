// aisrv host — the C++ client library: typed commands over any host transport. Errors come back as
// aisrv::Error whose Errc is mapped from the server's status bit (no_model, model_error, bad_tensor…) or is a local
// one (io_error, timeout, incompatible…); for server errors the message carries the server's own debug-log line.
// connect() checks the protocol version and refuses an incompatible server, saying why.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aisrv/client/transport.hpp"
#include "aisrv/protocol/payloads.hpp"

namespace aisrv::client {

enum class Placement { arena, external };  // SET_MODEL_PRIMARY / SET_MODEL_SECONDARY

// The version of this client library (libaisrv-client), e.g. "0.1.0".
std::string_view library_version();

// Parses a --connect target and opens the transport: unix:PATH, tcp:HOST:PORT, tcp:PORT, usb[:VID:PID[:SERIAL]]
// (more schemes are added by the SPI transport). Errc::invalid_argument for a target it cannot parse.
Result<std::unique_ptr<HostTransport>> open_transport(std::string_view target, const ConnectOptions& options);

class Client {
 public:
  // open_transport + handshake (+ AUTH when options.token is set).
  static Result<Client> connect(std::string_view target, const ConnectOptions& options = {});
  // Wraps an open transport; call handshake() before use to check the version.
  explicit Client(std::unique_ptr<HostTransport> transport);

  // GET_VERSION and the compatibility check (Errc::incompatible with the reason).
  Status handshake();
  const protocol::VersionInfo& server_version() const { return version_; }
  HostTransport& transport() { return *transport_; }
  // On a server error, fetch the engine's last debug-log line into the error message (default on).
  void set_fetch_error_details(bool on) { fetch_details_ = on; }

  Status hello();
  // AUTH: the server's shared secret (TCP sessions of a server started with --token-file).
  Status auth(std::string_view token);
  // GET_SESSION_INFO: who the server thinks this connection is (role, memory, limits).
  Result<protocol::SessionInfo> session_info();
  // GET_SERVER_STATS: uptime, sessions, every engine's counters (servers offering AISRV_CAP_STATS).
  Result<protocol::ServerStats> server_stats();
  Result<uint32_t> id();
  Result<protocol::VersionInfo> version();
  Result<uint32_t> status(uint32_t engine);
  Result<protocol::Spec> spec(uint32_t engine, uint32_t tensor = 0);
  Result<protocol::ModelTensors> tensor_info(uint32_t engine);
  // GET_MODEL_METADATA: what the engine read about the model's outputs (task, labels, NMS layout); empty from a
  // server without AISRV_CAP_MODEL_METADATA.
  Result<protocol::ModelMetadata> model_metadata(uint32_t engine);
  Result<protocol::EngineInfo> engine_info(uint32_t engine);
  Result<uint32_t> input_length(uint32_t engine, uint32_t tensor);
  Result<uint32_t> output_length(uint32_t engine, uint32_t tensor);

  // `progress` (optional) follows the upload where the transport can tell (sockets).
  Status load_model(uint32_t engine, std::span<const uint8_t> model, Placement placement = Placement::external,
                    const HostTransport::SendProgress& progress = {});
  Status load_model_from_flash(uint32_t engine, Placement placement = Placement::external);
  Status unload_model(uint32_t engine);

  Status set_input(uint32_t engine, uint32_t tensor, std::span<const uint8_t> data);
  Result<std::vector<uint8_t>> get_input(uint32_t engine, uint32_t tensor);
  Status start_inference(uint32_t engine);
  Result<std::vector<uint8_t>> get_output(uint32_t engine, uint32_t tensor);
  // The same into `out`, whose storage is reused: no allocation per call when outputs are read in a loop.
  Status get_output(uint32_t engine, uint32_t tensor, std::vector<uint8_t>& out);
  // CANCEL_INFER: this session's running inference, or (`any`, admin only) whatever runs on the engine.
  Status cancel(uint32_t engine, bool any = false);

  // One inference in one round trip (INFER, when the server offers AISRV_CAP_INFER; otherwise SET_INPUT_TENSOR for
  // each input, START_INFER and GET_OUTPUT_TENSOR for each output). `inputs[i]` is input i. The outputs are received
  // into `outputs`, whose storage is reused.
  Status infer(uint32_t engine, std::span<const std::span<const uint8_t>> inputs,
               std::vector<std::vector<uint8_t>>& outputs);
  Result<std::vector<std::vector<uint8_t>>> infer(uint32_t engine, std::span<const std::span<const uint8_t>> inputs);

  // Sensors and output GPIO (servers with AISRV_CAP_SENSOR / _I2C / _GPIO; docs/sensors-gpio.md).
  // START_ACQUIRE_SINGLE: capture and preprocess into input 0; with `infer` (tensor 1, an aisrv extension) also run
  // the inference in the same engine turn, else (tensor 0, as XMOS) the caller sends START_INFER. `window` (XMOS's
  // payload): start x, end x, start y, end y of the picture (ends exclusive), resized to the input.
  struct Window {
    uint16_t x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  };
  Status acquire_single(uint32_t engine, const std::optional<Window>& window = {}, bool infer = true);
  // START_ACQUIRE_STREAM: start as XMOS hosts do (no payload); stop with the u32 mode 0 payload (aisrv extension).
  Status acquire_stream(uint32_t engine, bool start);
  Result<uint32_t> acquire_mode(uint32_t engine);          // AISRV_ACQUIRE_MODE_SINGLE (0, not streaming) / _STREAM (1)
  Result<std::vector<uint8_t>> sensor_frame(uint32_t engine);  // GET_SENSOR_TENSOR: the last frame as fed
  Status i2c_write(uint32_t engine, uint8_t address, uint8_t reg, uint8_t value);  // START_ACQUIRE_SET_I2C
  struct GpioLine {
    bool enabled = false;
    double threshold = 0;  // a float32 output's may be fractional
  };
  Result<GpioLine> gpio_line(uint32_t engine, uint32_t line);  // Errc::bad_tensor past the last line
  Status set_gpio_enabled(uint32_t engine, uint32_t line, bool enabled);
  // Sent as an f32 when the engine's model has a float32 output 0, else as an i32 (Errc::invalid_argument for a
  // fractional or out-of-range value then).
  Status set_gpio_threshold(uint32_t engine, uint32_t line, double threshold);
  Result<uint32_t> gpio_mode(uint32_t engine);             // 0 threshold, 1 max
  Status set_gpio_mode(uint32_t engine, uint32_t mode);

  Result<std::vector<uint32_t>> timings(uint32_t engine);
  Result<protocol::TimingRecord> timing_record(uint32_t engine);
  // `lines` = 0: all lines. engine = AISRV_ENGINE_SERVER: the server log.
  Result<std::string> debug_log(uint32_t engine, uint32_t lines = 0);

  // Any command: the raw response payload, or the error its status maps to.
  Result<std::vector<uint8_t>> call(uint32_t cmd, uint32_t engine, uint32_t tensor,
                                    std::span<const uint8_t> payload = {});
  // The same with the answer in `out` (received into its storage when the transport can).
  Status call(uint32_t cmd, uint32_t engine, uint32_t tensor, std::span<const uint8_t> payload,
              std::vector<uint8_t>& out);

 private:
  Result<bool> gpio_float_output(uint32_t engine);
  std::unique_ptr<HostTransport> transport_;
  protocol::VersionInfo version_;
  bool fetch_details_ = true;
  protocol::Response response_;
  std::vector<uint8_t> infer_request_, infer_answer_;
};

}  // namespace aisrv::client
