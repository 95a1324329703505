// aisrv phy — the Frigate detector endpoint: serves Frigate's `zmq` detector protocol (a ZeroMQ REQ client sending
// [JSON header, NHWC uint8 pixels] and expecting 20 rows of [class, score, y_min, x_min, y_max, x_max]) on one
// ZeroMQ endpoint for one engine, as a transport of the interpreter. Every Frigate connection is a session of its
// own (user role, counted and limited like any client), its detections go through the server's INFER command in
// the engine's queue, so Frigate shares the engine with every other client; the model it asks for is looked up in
// (and, when allowed, written into) the flash model store. docs/frigate.md describes the protocol and the options.
//
// The socket is a ROUTER, wire-compatible with Frigate's REQ client: unlike a REP socket it names the connection
// each request came from (its routing id), which is what gives each Frigate connection its own session and lets the
// endpoint close the sessions of connections that went away (idle timeout, a bounded number of peers).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace spdlog {
class logger;
}
namespace aisrv::server {
class Port;
}

namespace aisrv::phy::frigate {

// One `--frigate ENDPOINT=ENGINE[,option...]` value.
struct EndpointConfig {
  std::string endpoint;   // ipc:///tmp/cache/zmq_detector, tcp://127.0.0.1:5555
  uint32_t engine = 0;
  bool accept_models = false;    // model_data from Frigate may write the store and load the model
  float threshold = 0.4f;        // rows stop at the first score below it (Frigate's CPU detector: 0.4)
  std::vector<float> mean, std;  // float inputs: real = (pixel - mean) / std; empty: the engine's default rules
  uint32_t max_peers = 32;       // Frigate connections with a session at once; the least recently used goes first
  std::chrono::seconds idle{120};  // a connection silent this long loses its session
  uint64_t max_message = 32ull << 20;  // largest message part (model file, pixels); a larger one drops the peer
};

// Parses "ENDPOINT=ENGINE[,accept-models][,threshold=F][,mean=M[:M:M]][,std=S[:S:S]][,peers=N][,idle=SECONDS]
// [,max-message=SIZE]". Errc::invalid_argument naming what is wrong. `engines`: the engine count (the number must
// be below it); `allow_remote`: a TCP endpoint on an address other than loopback needs it.
Result<EndpointConfig> parse_endpoint_spec(std::string_view spec, uint32_t engines, bool allow_remote);

// What the endpoint did since it started (plain counters; read with FrigateEndpoint::stats()).
struct EndpointStats {
  uint64_t requests = 0;           // messages answered (all kinds)
  uint64_t detect_requests = 0;    // detection requests
  uint64_t detections = 0;         // rows with a detection replied, summed over replies
  // Detection requests answered with all-zero rows, by reason.
  uint64_t zeros_no_model = 0;       // the engine has no model
  uint64_t zeros_bad_message = 0;    // wrong part count, bad JSON, missing fields
  uint64_t zeros_mismatch = 0;       // shape, dtype or byte count does not fit the model's input
  uint64_t zeros_model_type = 0;     // a model_type whose output format is not decoded
  uint64_t zeros_inference = 0;      // the inference or the decoding failed (also refused: limits, shutdown)
  uint64_t model_requests = 0;     // model_request messages
  uint64_t model_data = 0;         // model_data messages
  uint64_t models_saved = 0;       // model files written into the store
  uint64_t models_loaded = 0;      // models the endpoint loaded on the engine
  uint64_t peers_open = 0;         // sessions of Frigate connections open now
  uint64_t peers_opened = 0;       // since start
  uint64_t peers_dropped = 0;      // closed by the endpoint: idle, or the least recently used over max_peers
};

class FrigateEndpoint {
 public:
  // Binds the socket (Errc::io_error with libzmq's reason, e.g. a missing directory of an ipc:// path). The
  // endpoint serves once start() is called.
  static Result<std::unique_ptr<FrigateEndpoint>> bind(server::Port& server, EndpointConfig config,
                                                       std::shared_ptr<spdlog::logger> logger);
  ~FrigateEndpoint();  // stop()
  FrigateEndpoint(const FrigateEndpoint&) = delete;
  FrigateEndpoint& operator=(const FrigateEndpoint&) = delete;

  void start();  // the serving thread
  // Stops serving: the thread ends after the request it is working on, every session closes, the socket closes.
  // Idempotent.
  void stop();
  EndpointStats stats() const;
  const EndpointConfig& config() const;
  std::string describe() const;  // "ipc:///tmp/cache/zmq_detector for engine 0"

  class Impl;

 private:
  explicit FrigateEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace aisrv::phy::frigate
