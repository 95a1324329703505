// aisrv interpreter — acquisition (acquisition.hpp): single acquisitions, acquire streams and engine chains.
#include "aisrv/acquisition.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>

#include "engine_queue.hpp"

namespace aisrv::server {

// An engine's sensor: the frame source and its I2C bus, the grabber thread where frames are waited for, and the
// engine's acquisition mode.
struct Acquisition::Sensor {
  std::unique_ptr<sensors::FrameSource> source;
  std::unique_ptr<sensors::I2cBus> i2c;
  std::chrono::milliseconds interval{100};  // START_ACQUIRE_STREAM pace
  std::mutex mu;                            // the source's grab and register writes, one at a time
  std::atomic<Mode> mode{Mode::idle};
  std::unique_ptr<boost::asio::thread_pool> grabber = std::make_unique<boost::asio::thread_pool>(1);
};

// A running START_ACQUIRE_STREAM: engine activity an admin started. It runs in a session of its own (frames and
// outputs land there; the output GPIO lines follow them), so it outlives the client that started it and any admin
// stops it.
struct Acquisition::Stream {
  uint32_t engine = 0;
  std::shared_ptr<Session> session;  // the stream's own session ("stream of <starter>")
  uint64_t starter_id = 0;
  std::string starter;
  std::chrono::milliseconds interval{100};
  std::atomic<bool> stopped{false};
  // Frames inferred, and the camera's dropped count at the start and at the last report (engine's turn only).
  uint64_t frames = 0, dropped_start = 0, dropped_reported = 0;
  std::chrono::steady_clock::time_point last_report{};
  bool starter_over_limit = false;  // the starter was told its memory cap keeps the outputs out (engine's turn only)
  // The frame the grabber waited for, handed to the engine's turn with the round's second half (one round at a time).
  std::shared_ptr<Grab> grabbed;
  // Bad frames skipped (and at the last report), for the log lines.
  uint64_t bad = 0, bad_reported = 0;
  std::chrono::steady_clock::time_point last_bad_report{};
};

namespace {

// A sensor that failed (no frame in time, gone, an I2C write not acknowledged) is ERROR_SENSOR; refusals of the
// request itself (a window outside the picture, a feature the source lacks) keep their own code.
Error as_sensor_error(Error e) {
  if (e.code != Errc::bad_length && e.code != Errc::not_supported && e.code != Errc::bad_tensor &&
      e.code != Errc::invalid_argument && e.code != Errc::model_changed)
    e.code = Errc::sensor_error;
  return e;
}

Error no_sensor(uint32_t number) {
  return make_error(Errc::not_supported, "engine {} has no sensor configured (start aisrvd with --sensor {}=PATH)",
                    number, number);
}

}  // namespace

Acquisition::Acquisition(AcquisitionHost& host, const std::vector<std::unique_ptr<EngineSlot>>& engines)
    : host_(host), engines_(engines), sensors_(engines.size()), streams_(engines.size()) {}

Acquisition::~Acquisition() { join(); }

void Acquisition::join() {
  for (auto& s : sensors_)
    if (s) s->grabber->join();
}

void Acquisition::attach_sensor(uint32_t engine, std::unique_ptr<sensors::FrameSource> source,
                                std::unique_ptr<sensors::I2cBus> i2c, std::chrono::milliseconds interval) {
  auto s = std::make_unique<Sensor>();
  s->source = std::move(source);
  s->i2c = std::move(i2c);
  s->interval = interval;
  sensors_[engine] = std::move(s);
}

Acquisition::Sensor* Acquisition::sensor(uint32_t engine) const {
  return engine < sensors_.size() ? sensors_[engine].get() : nullptr;
}

bool Acquisition::has_sensor(uint32_t engine) const { return sensor(engine) != nullptr; }
bool Acquisition::has_i2c(uint32_t engine) const {
  const Sensor* s = sensor(engine);
  return s && s->i2c;
}
Acquisition::Mode Acquisition::mode(uint32_t engine) const {
  const Sensor* s = sensor(engine);
  return s ? s->mode.load() : Mode::idle;
}
uint64_t Acquisition::bad_frames(uint32_t engine) const {
  const Sensor* s = sensor(engine);
  return s ? s->source->bad_frames() : 0;
}
uint64_t Acquisition::frames_dropped(uint32_t engine) const {
  const Sensor* s = sensor(engine);
  return s ? s->source->dropped() : 0;
}
bool Acquisition::sensor_present(uint32_t engine) const {
  const Sensor* s = sensor(engine);
  return s && s->source->present();
}
std::chrono::milliseconds Acquisition::stream_interval(uint32_t engine) const {
  const Sensor* s = sensor(engine);
  return s ? s->interval : std::chrono::milliseconds(100);
}

// --- inference and chains -----------------------------------------------------------------------------------------

Status Acquisition::infer(Session& s, EngineSlot& slot, uint64_t queue_ns) {
  if (!slot.chain_target()) return slot.infer(s, queue_ns);
  std::vector<std::vector<uint8_t>> outputs;
  AISRV_TRY(slot.infer(s, queue_ns, &outputs));
  run_chain(s, slot.number(), std::move(outputs));
  return ok();
}

Status Acquisition::infer_call(Session& s, EngineSlot& slot, std::span<const protocol::InferTensor> inputs,
                               uint64_t queue_ns, std::vector<uint8_t>& answer) {
  if (!slot.chain_target()) return slot.infer_call(s, inputs, queue_ns, answer);
  std::vector<std::vector<uint8_t>> outputs;
  AISRV_TRY(slot.infer_call(s, inputs, queue_ns, answer, &outputs));
  run_chain(s, slot.number(), std::move(outputs));
  return ok();
}

void Acquisition::run_chain(Session& s, uint32_t from, std::vector<std::vector<uint8_t>> carry) {
  uint32_t at = from;
  while (auto to = engines_[at]->chain_target()) {
    EngineSlot& target = *engines_[*to];
    std::vector<std::vector<uint8_t>> next;
    const bool more = target.chain_target().has_value();
    Status st = target.infer_with(s, carry, more ? &next : nullptr);
    if (!st) {
      host_.note_error(s, *to, fmt::format("chain from engine {}", at), st.error());
      s.note(at, 0, fmt::format("chain to engine {} failed: {}", *to, st.error().message));
      return;
    }
    if (!more) return;
    carry = std::move(next);
    at = *to;
  }
}

// --- grabbing -------------------------------------------------------------------------------------------------------

Acquisition::Grab Acquisition::grab(EngineSlot& slot, Sensor& sensor) {
  Grab g;
  const auto m = slot.model();
  if (!m || m->info.inputs.empty()) {  // the engine's turn answers (no model, no input), or grabs if one came since
    g.skipped = true;
    return g;
  }
  std::lock_guard lock(sensor.mu);
  slot.set_sensing(true);
  const uint64_t bad_before = sensor.source->bad_frames();
  g.status = sensor.source->grab(m->info.inputs[0], g.frame);
  slot.set_sensing(false);
  g.bad = !g.status && sensor.source->bad_frames() != bad_before;
  if (!g.status) g.status = as_sensor_error(g.status.error());
  return g;
}

std::shared_ptr<Acquisition::Grab> Acquisition::grab_for(const Session& session, EngineSlot& slot) {
  const Sensor* s = sensor(slot.number());
  if (!s || !slot.has_model() || s->mode.load() == Mode::stream || session.has_injected_frame(slot.number()))
    return nullptr;
  return std::make_shared<Grab>();
}

void Acquisition::grab_async(uint32_t engine, std::shared_ptr<Grab> g, std::function<void()> then) {
  Sensor* s = sensor(engine);
  boost::asio::post(*s->grabber, [this, engine, s, g = std::move(g), then = std::move(then)] {
    *g = grab(*engines_[engine], *s);
    then();
  });
}

void Acquisition::stage(uint64_t session, uint32_t engine, std::shared_ptr<Grab> g) {
  std::lock_guard lock(mu_);
  if (g) staged_[{session, engine}] = std::move(g);
  else staged_.erase({session, engine});
}

// --- single acquisitions --------------------------------------------------------------------------------------------

Status Acquisition::acquire_frame(Session& session, EngineSlot& slot, Sensor& sensor, std::shared_ptr<Grab> staged,
                                  const std::optional<sensors::AcquireWindow>& window) {
  const auto m = slot.model();
  if (!m) return make_error(Errc::no_model, "engine {} has no model loaded", slot.number());
  if (m->info.inputs.empty()) return make_error(Errc::bad_tensor, "the model has no input for a sensor frame");
  if (auto injected = session.take_injected_frame(*m)) return session.adopt_frame(*m, *injected);
  if (!staged || staged->skipped) {  // nothing grabbed beforehand (an inline caller): wait here
    staged = std::make_shared<Grab>(grab(slot, sensor));
    if (slot.model() != m) return make_error(Errc::model_changed, "the model changed while the frame was grabbed");
  }
  if (!staged->status) return staged->status.error();
  // The one copy: a raw source's bytes are adopted as they were read; a camera's picture is resized and quantized
  // straight into the buffer that becomes the input tensor.
  std::vector<uint8_t> frame;
  const auto& input = m->info.inputs[0];
  if (staged->frame.picture.pixels.empty() && !window && staged->frame.bytes.size() == input.bytes) {
    frame = std::move(staged->frame.bytes);
  } else {
    frame.resize(input.bytes);
    if (auto st = sensor.source->fit(staged->frame, input, window, frame); !st) return as_sensor_error(st.error());
  }
  return session.adopt_frame(*m, frame);
}

Status Acquisition::acquire_single(Session& s, EngineSlot& slot, uint64_t queue_ns,
                                   const std::optional<sensors::AcquireWindow>& window, bool infer_after) {
  std::shared_ptr<Grab> staged;
  {
    std::lock_guard lock(mu_);
    if (auto it = staged_.find({s.id(), slot.number()}); it != staged_.end()) {
      staged = std::move(it->second);
      staged_.erase(it);
    }
  }
  Sensor* sn = sensor(slot.number());
  if (!sn) return no_sensor(slot.number());
  if (sn->mode.load() == Mode::stream)
    return make_error(Errc::bad_command, "engine {} is streaming; stop the stream first", slot.number());
  sn->mode.store(Mode::single);
  Status st = acquire_frame(s, slot, *sn, std::move(staged), window);
  Mode expected = Mode::single;
  sn->mode.compare_exchange_strong(expected, Mode::idle);
  AISRV_TRY(std::move(st));
  if (!infer_after) return ok();
  return infer(s, slot, queue_ns);
}

// --- streams ---------------------------------------------------------------------------------------------------------

// A stream round's outputs and timing, copied from the stream's own session to the session that started it (while
// that one is open), so the starter reads them with GET_OUTPUT_TENSOR / GET_TIMINGS as an XMOS host does. Engine's
// turn only. A starter whose memory cap the outputs would pass is told once (ERROR_LIMIT and a log line).
void Acquisition::hand_stream_outputs(Stream& stream, EngineSlot& slot) {
  std::shared_ptr<Session> starter = host_.find_session(stream.starter_id);
  const auto m = slot.model();
  if (!starter || starter->closed() || !m) return;
  std::vector<std::vector<uint8_t>> outputs(m->info.outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!stream.session->read_output(*m, static_cast<uint32_t>(i), [&](std::span<const uint8_t> b) {
          outputs[i].assign(b.begin(), b.end());
        }))
      return;
  auto timing = stream.session->timing_record(*m);
  if (!timing) return;
  if (Status room = starter->reserve_outputs(*m); !room) {
    if (!stream.starter_over_limit)
      starter->note(slot.number(), AISRV_STATUS_ERROR_LIMIT,
                    fmt::format("the acquire stream's outputs are not kept for this session: {}",
                                room.error().message));
    stream.starter_over_limit = true;
    return;
  }
  stream.starter_over_limit = false;
  starter->store_outputs(*m, [&](size_t i) { return std::span<const uint8_t>(outputs[i]); }, std::move(*timing));
}

Status Acquisition::start_stream(Session& s, EngineSlot& slot, std::chrono::milliseconds interval) {
  const uint32_t n = slot.number();
  Sensor* sn = sensor(n);
  if (!sn) return no_sensor(n);
  if (!slot.has_model()) return make_error(Errc::no_model, "engine {} has no model loaded", n);
  {
    std::lock_guard lock(mu_);
    if (auto& running = streams_[n]; running && !running->stopped) {
      if (running->starter_id == s.id()) return ok();
      return make_error(Errc::denied, "engine {} is streaming for {}; stop that stream first", n, running->starter);
    }
  }
  auto stream = std::make_shared<Stream>();
  stream->engine = n;
  stream->session = host_.open_internal_session("stream of " + s.name());
  stream->starter_id = s.id();
  stream->starter = s.name();
  stream->interval = interval;
  stream->dropped_start = stream->dropped_reported = sn->source->dropped();
  stream->last_report = std::chrono::steady_clock::now();
  std::string raced;  // another admin's stream started meanwhile
  {
    std::lock_guard lock(mu_);
    if (auto& running = streams_[n]; running && !running->stopped) raced = running->starter;
    else streams_[n] = stream;
  }
  if (!raced.empty()) {
    host_.close_session(*stream->session, "stream not started");
    return make_error(Errc::denied, "engine {} is streaming for {}; stop that stream first", n, raced);
  }
  sn->mode.store(Mode::stream);
  slot.log().add(fmt::format("acquire stream started by {}, one frame every {} ms", s.name(), interval.count()));
  // Each round acquires and infers in the engine's turn (queued as the stream session's work, so other sessions
  // interleave round robin), then schedules the next one. The camera is read for its newest frame: frames that came
  // while the engine was busy are dropped and counted, never queued. Rounds and timers hold the stream weakly, so
  // stopping it (streams_[n] reset) ends the chain of rounds.
  std::weak_ptr<Stream> weak = stream;
  EngineQueue::Job first = [this, weak](bool dropped) {
    if (auto st = weak.lock(); st && !dropped) round(st);
  };
  (void)host_.engine_queue(n).push(stream->session->id(), std::move(first));
  return ok();
}

// One round, in the engine's turn: without a frame, the first half sends the grabber for one and comes back; with
// one, the second half fits it, infers, hands the outputs to the starter and schedules the next round.
void Acquisition::round(const std::shared_ptr<Stream>& stream) {
  if (stream->stopped) return;
  const uint32_t n = stream->engine;
  EngineSlot& slot = *engines_[n];
  Sensor& sn = *sensors_[n];
  Session& session = *stream->session;
  std::weak_ptr<Stream> weak = stream;
  auto next_round = [this, weak](bool dropped) {
    if (auto st = weak.lock(); st && !dropped) round(st);
  };
  if (session.closed()) return stop_stream(slot);
  if (!stream->grabbed) {
    // First half: wait for the camera's next frame on the engine's grabber, outside the engine's turn (a stalled
    // camera holds no other session's work), then come back in the engine's turn with it.
    auto g = std::make_shared<Grab>();
    grab_async(n, g, [this, n, weak, g, next_round] {
      auto stream = weak.lock();
      if (!stream || stream->stopped) return;
      stream->grabbed = g;  // read in the engine's turn after the queue hands the job over
      EngineQueue::Job job = next_round;
      (void)host_.engine_queue(n).push(stream->session->id(), std::move(job));
    });
    return;
  }
  const auto grabbed = std::move(stream->grabbed);
  if (grabbed->bad) {
    // A frame the camera spoiled (driver error flag, short, corrupt JPEG) is skipped and counted; the stream goes
    // on. The first one and then at most one line a second say so.
    ++stream->bad;
    const auto now = std::chrono::steady_clock::now();
    if (stream->bad_reported == 0 || now - stream->last_bad_report >= std::chrono::seconds(1)) {
      slot.log().add(fmt::format("acquire stream: skipped {} bad frame(s) ({} in all), the last: {}",
                                 stream->bad - stream->bad_reported, stream->bad, grabbed->status.error().message));
      stream->bad_reported = stream->bad;
      stream->last_bad_report = now;
    }
    host_.engine_queue(n).push_after(session.id(), stream->interval, next_round);
    return;
  }
  Status st = acquire_frame(session, slot, sn, grabbed, std::nullopt);
  if (st) st = infer(session, slot, 0);
  if (st) hand_stream_outputs(*stream, slot);
  if (!st) {
    // Everyone using the engine learns it once: ERROR_SENSOR in their next GET_STATUS, and a log line.
    slot.log().add(fmt::format("acquire stream stopped after an error: {}", st.error().message));
    if (st.error().code == Errc::sensor_error)
      host_.note_all_sessions(n, AISRV_STATUS_ERROR_SENSOR,
                              "ERROR_SENSOR: the acquire stream stopped (the line before says why)");
    return stop_stream(slot);
  }
  ++stream->frames;
  const uint64_t dropped = sn.source->dropped();
  const auto now = std::chrono::steady_clock::now();
  if (dropped != stream->dropped_reported && now - stream->last_report >= std::chrono::seconds(1)) {
    slot.log().add(fmt::format("acquire stream: the camera delivered {} frame(s) the engine did not take in the "
                               "last {} ms ({} in all)",
                               dropped - stream->dropped_reported,
                               std::chrono::duration_cast<std::chrono::milliseconds>(now - stream->last_report).count(),
                               dropped - stream->dropped_start));
    stream->dropped_reported = dropped;
    stream->last_report = now;
  }
  host_.engine_queue(n).push_after(session.id(), stream->interval, next_round);
}

Status Acquisition::stream_frame(uint32_t engine, std::vector<uint8_t>& out) {
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard lock(mu_);
    if (engine < streams_.size()) stream = streams_[engine];
  }
  if (!stream || stream->stopped)
    return make_error(Errc::bad_command, "no frame on engine {}: this session acquired none and no stream runs",
                      engine);
  return stream->session->read_frame(engine, out);
}

void Acquisition::stop_stream(EngineSlot& slot) {
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard lock(mu_);
    stream = std::move(streams_[slot.number()]);
  }
  if (!stream || stream->stopped.exchange(true)) return;
  Sensor& sn = *sensors_[slot.number()];
  sn.mode.store(Mode::idle);
  host_.engine_queue(slot.number()).cancel_timer();
  slot.log().add(fmt::format("acquire stream of {} stopped: {} frame(s) inferred, {} dropped by the camera, {} bad "
                             "frame(s) skipped",
                             stream->starter, stream->frames, sn.source->dropped() - stream->dropped_start,
                             stream->bad));
  host_.close_session(*stream->session, "the stream stopped");
  rest_gpio(slot);
}

// The stream's last result no longer stands for what the camera sees: its output lines go back to their idle level
// (they stay held while the model is loaded; the next inference drives them again).
void Acquisition::rest_gpio(EngineSlot& slot) {
  sensors::OutputGpio* gpio = slot.gpio();
  if (gpio == nullptr) return;
  if (auto rested = gpio->rest(); !rested)
    slot.log().add(fmt::format("output GPIO not set to idle after the stream: {}", rested.error().message));
  else if (*rested)
    slot.log().add(fmt::format("output GPIO {} back to its idle level (the stream stopped)", gpio->describe()));
}

void Acquisition::stop_all() {
  for (auto& slot : engines_) stop_stream(*slot);
}

// --- sensor registers ------------------------------------------------------------------------------------------------

Status Acquisition::write_register(uint32_t engine, uint8_t address, uint8_t reg, uint8_t value) {
  Sensor* sn = sensor(engine);
  if (!sn) return no_sensor(engine);
  Status st = ok();
  if (sn->i2c) {
    st = sn->i2c->write_register(address, reg, value);
  } else {
    std::lock_guard lock(sn->mu);  // the source's own bus: not while the grabber uses the source
    st = sn->source->write_register(address, reg, value);
  }
  if (!st) return as_sensor_error(st.error());
  return ok();
}

Status Acquisition::write_register16(uint32_t engine, uint8_t address, uint16_t reg, uint8_t value) {
  Sensor* sn = sensor(engine);
  if (!sn) return no_sensor(engine);
  if (!sn->i2c)
    return make_error(Errc::not_supported, "engine {} has no sensor I2C bus for a 16-bit register (start aisrvd with "
                                           "--sensor-i2c {}=/dev/i2c-N)",
                      engine, engine);
  if (Status st = sn->i2c->write_register16(address, reg, value); !st) return as_sensor_error(st.error());
  return ok();
}

}  // namespace aisrv::server
