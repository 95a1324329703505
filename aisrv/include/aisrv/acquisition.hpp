// aisrv interpreter — acquisition: what runs on an engine beyond a request's own tensors. Sensor frames go into a
// session's input 0 (START_ACQUIRE_SINGLE), acquire streams run round after round in a session of their own
// (START_ACQUIRE_STREAM), and every inference a command starts is followed by its engine chain. It sits below the
// command handlers and above the engines: a request's path is handler → Acquisition → frame source (the converted
// frame written straight into the session's input tensor, one copy from the capture buffer) → EngineSlot (infer,
// output GPIO) → Session (outputs), in one direction. The frame is waited for outside the engine's turn, on the
// engine's grabber thread, so a stalled camera holds no other session's work.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "aisrv/engine_slot.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/result.hpp"
#include "aisrv/sensors/frame_source.hpp"
#include "aisrv/sensors/i2c_bus.hpp"
#include "aisrv/session.hpp"

namespace boost::asio {
class thread_pool;
}

namespace aisrv::server {

class EngineQueue;

// What the acquisition needs from the server it belongs to: its session registry (a stream's own session, the
// starter that reads a stream's outputs, everyone told that a stream stopped) and the engines' queues (a stream's
// rounds are queued work like a client's).
class AcquisitionHost {
 public:
  virtual ~AcquisitionHost() = default;
  virtual std::shared_ptr<Session> open_internal_session(std::string name) = 0;
  virtual std::shared_ptr<Session> find_session(uint64_t id) = 0;
  virtual void close_session(Session& session, std::string_view why) = 0;
  virtual void note_all_sessions(uint32_t engine, uint32_t bits, const std::string& line) = 0;
  virtual void note_error(Session& session, uint32_t engine, std::string_view context, const Error& error) = 0;
  virtual EngineQueue& engine_queue(uint32_t engine) = 0;
};

class Acquisition {
 public:
  // `engines`: the server's, which outlive this.
  Acquisition(AcquisitionHost& host, const std::vector<std::unique_ptr<EngineSlot>>& engines);
  ~Acquisition();
  Acquisition(const Acquisition&) = delete;
  Acquisition& operator=(const Acquisition&) = delete;

  // --- configuration (before serving) -----------------------------------------------------------------------------
  void attach_sensor(uint32_t engine, std::unique_ptr<sensors::FrameSource> source,
                     std::unique_ptr<sensors::I2cBus> i2c, std::chrono::milliseconds stream_interval);
  bool has_sensor(uint32_t engine) const;
  bool has_i2c(uint32_t engine) const;

  // --- inference and chains ---------------------------------------------------------------------------------------
  // One inference on `slot` with `session`'s tensors, then its chain (if any). A failure further down a chain is
  // reported to the session on the engine that failed (status word + debug log) and does not fail this call.
  Status infer(Session& session, EngineSlot& slot, uint64_t queue_ns);
  // INFER: inputs from the request, outputs into `answer`, then the chain.
  Status infer_call(Session& session, EngineSlot& slot, std::span<const protocol::InferTensor> inputs,
                    uint64_t queue_ns, std::vector<uint8_t>& answer);

  // --- single acquisitions ----------------------------------------------------------------------------------------
  // A frame grabbed outside the engine's turn, waiting for it.
  struct Grab {
    Status status = ok();
    sensors::SensorFrame frame;
    bool bad = false;      // the sensor delivered a bad frame (counted; a stream skips it)
    bool skipped = false;  // no model input to grab for then: the acquisition grabs in its turn
  };
  // START_ACQUIRE_SINGLE about to be queued for `session` on `engine`: a grab to wait for before its turn, or null
  // when nothing is to be grabbed beforehand (no sensor or model, streaming, a frame injected by the session).
  std::shared_ptr<Grab> grab_for(const Session& session, EngineSlot& slot);
  // Waits for the frame on the engine's grabber thread, then calls `then` there.
  void grab_async(uint32_t engine, std::shared_ptr<Grab> grab, std::function<void()> then);
  // The grab a queued request of `session` takes in its turn (set before its handler runs, cleared after).
  void stage(uint64_t session, uint32_t engine, std::shared_ptr<Grab> grab);
  // Fits a frame into the session's input 0 — the session's injected one, else the staged grab, else one grabbed
  // now — then, with `infer`, runs the inference and its chain. Errc::sensor_error for a sensor that failed or
  // delivered a bad frame (the reason in the message).
  Status acquire_single(Session& session, EngineSlot& slot, uint64_t queue_ns,
                        const std::optional<sensors::AcquireWindow>& window = {}, bool infer = true);

  // --- streams ----------------------------------------------------------------------------------------------------
  // Continuous acquire + infer every `interval` in the engine's turn, in a session of its own, until stop_stream or an
  // error. Each round's outputs and timings are also handed to `session` (the starter) while it is open, so it reads
  // them with GET_OUTPUT_TENSOR as on XMOS. Bad frames are skipped and counted. When it stops, the engine's output
  // GPIO lines go back to their idle level.
  Status start_stream(Session& session, EngineSlot& slot, std::chrono::milliseconds interval);
  Status start_stream(Session& session, EngineSlot& slot) {
    return start_stream(session, slot, stream_interval(slot.number()));
  }
  void stop_stream(EngineSlot& slot);
  void stop_all();
  // GET_SENSOR_TENSOR for a session that acquired nothing itself: the running stream's last frame.
  Status stream_frame(uint32_t engine, std::vector<uint8_t>& out);
  std::chrono::milliseconds stream_interval(uint32_t engine) const;

  // --- sensor state ----------------------------------------------------------------------------------------------
  enum class Mode : uint32_t { idle = 0, single = 1, stream = 2 };
  Mode mode(uint32_t engine) const;
  uint64_t bad_frames(uint32_t engine) const;
  uint64_t frames_dropped(uint32_t engine) const;
  bool sensor_present(uint32_t engine) const;
  Status write_register(uint32_t engine, uint8_t address, uint8_t reg, uint8_t value);
  // 16-bit register addresses (START_ACQUIRE_SET_I2C's 4-byte extension): needs the sensor's I2C bus.
  Status write_register16(uint32_t engine, uint8_t address, uint16_t reg, uint8_t value);

  // Waits for the grabber threads' work to end (the server's shutdown, before its queues go).
  void join();

 private:
  struct Sensor;
  struct Stream;
  Sensor* sensor(uint32_t engine) const;
  Grab grab(EngineSlot& slot, Sensor& sensor);
  // The frame into the session's input 0 (no inference).
  Status acquire_frame(Session& session, EngineSlot& slot, Sensor& sensor, std::shared_ptr<Grab> staged,
                       const std::optional<sensors::AcquireWindow>& window);
  void run_chain(Session& session, uint32_t from, std::vector<std::vector<uint8_t>> outputs);
  void rest_gpio(EngineSlot& slot);  // a stream stopped: its output lines to their idle level
  void round(const std::shared_ptr<Stream>& stream);
  void hand_stream_outputs(Stream& stream, EngineSlot& slot);

  AcquisitionHost& host_;
  const std::vector<std::unique_ptr<EngineSlot>>& engines_;
  std::vector<std::unique_ptr<Sensor>> sensors_;  // per engine; null without a sensor
  mutable std::mutex mu_;                         // streams_, staged_
  std::vector<std::shared_ptr<Stream>> streams_;  // per engine: the running stream
  std::map<std::pair<uint64_t, uint32_t>, std::shared_ptr<Grab>> staged_;  // by (session, engine)
};

}  // namespace aisrv::server
