// aisrv protocol — structured payloads of the extension commands and their codecs (GET_SPEC, GET_VERSION,
// GET_TENSOR_INFO, GET_ENGINE_INFO, GET_TIMING_RECORD, GET_TIMINGS, INFER, GET_SESSION_INFO, GET_SERVER_STATS,
// GET_MODEL_METADATA). Layouts are specified in docs/protocol.md; the records' byte layouts are described once in
// records.def, which drives these codecs (records.hpp) and the Python client's. Every decoder is bounds-checked and
// refuses trailing bytes (except where a later minor may append fields).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace aisrv::protocol {

// Element types on the wire (GET_TENSOR_INFO). Values are part of the protocol.
enum class DType : uint8_t {
  float32 = 0,
  int8 = 1,
  uint8 = 2,
  int16 = 3,
  uint16 = 4,
  int32 = 5,
  int64 = 6,
  boolean = 7,
  float16 = 8,
  unknown = 255,
};
std::string_view dtype_name(DType t);  // "INT8", "FLOAT32", ...
size_t dtype_size(DType t);            // bytes per element, 0 for unknown

// GET_SPEC: the XMOS five words {0, 0, input length, output length, timings length}.
struct Spec {
  uint32_t input_length = 0;
  uint32_t output_length = 0;
  uint32_t timings_length = 0;
};
void encode(const Spec& s, std::vector<uint8_t>& out);
Result<Spec> decode_spec(std::span<const uint8_t> in);

// GET_VERSION.
struct VersionInfo {
  uint16_t major = 0;
  uint16_t minor = 0;
  uint16_t min_major = 0;  // oldest major the server still speaks
  uint32_t capabilities = 0;
  uint32_t max_payload = 0;
  uint32_t engines = 0;
  std::string server_version;
};
void encode(const VersionInfo& v, std::vector<uint8_t>& out);
Result<VersionInfo> decode_version(std::span<const uint8_t> in);
// Whether a peer speaking [peer.min_major, peer.major] can talk to us ([our_min, our_major]); explains why not.
Status check_compatible(const VersionInfo& peer, uint16_t our_major, uint16_t our_min_major);

// GET_TENSOR_INFO: one record per tensor.
struct TensorInfo {
  std::string name;
  DType dtype = DType::unknown;
  std::vector<int32_t> shape;
  uint32_t bytes = 0;
  int32_t quant_axis = -1;          // -1: per tensor
  std::vector<float> scale;         // empty: not quantized
  std::vector<int32_t> zero_point;  // same length as scale
};
struct ModelTensors {
  std::string format;          // "tflite", "hef", ...
  uint32_t model_bytes = 0;
  uint32_t arena_bytes = 0;    // activation memory the engine planned (0 when not applicable)
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
};
void encode(const ModelTensors& m, std::vector<uint8_t>& out);
Result<ModelTensors> decode_tensor_info(std::span<const uint8_t> in);

// GET_ENGINE_INFO.
struct EngineInfo {
  std::string kind;     // "cpu", "hailo8", ...
  std::string options;  // as configured, e.g. "kernels=opt"
  bool model_loaded = false;
  std::string model_format;
  uint32_t model_bytes = 0;
  std::string model_source;  // "wire", "flash", "boot"
  uint64_t inferences = 0;   // completed since start
  std::string chained_to;    // e.g. "1" when outputs feed engine 1, empty otherwise
};
void encode(const EngineInfo& e, std::vector<uint8_t>& out);
Result<EngineInfo> decode_engine_info(std::span<const uint8_t> in);

// GET_TIMING_RECORD: the whole timing of the last inference.
struct LayerTime {
  std::string name;  // tensor/layer name
  std::string op;    // operator type, e.g. "CONV_2D"
  uint64_t ns = 0;
};
struct TimingRecord {
  uint64_t queue_ns = 0;    // request received -> engine started
  uint64_t compute_ns = 0;  // backend invoke
  uint64_t total_ns = 0;    // request received -> response ready
  std::vector<LayerTime> layers;
};
void encode(const TimingRecord& t, std::vector<uint8_t>& out);
Result<TimingRecord> decode_timing_record(std::span<const uint8_t> in);

// GET_TIMINGS: u32 nanoseconds per operator (saturating at 0xFFFFFFFF).
void encode_timings(std::span<const LayerTime> layers, std::vector<uint8_t>& out);
Result<std::vector<uint32_t>> decode_timings(std::span<const uint8_t> in);

// INFER: all inputs in, all outputs out, one round trip.
//   request  u32 n | n x {u32 input index, u32 length} | the n inputs' bytes, in that order
//   answer   u32 m | m x u32 length | the m outputs' bytes, output 0 first
// Decoded tensors are views into the payload. Counts above AISRV_MAX_TENSORS, lengths that do not add up to exactly
// the bytes present, and (request) an input index given twice are refused before anything is allocated.
struct InferTensor {
  uint32_t index = 0;
  std::span<const uint8_t> bytes;
};
void encode_infer_request(std::span<const InferTensor> inputs, std::vector<uint8_t>& out);
Result<std::vector<InferTensor>> decode_infer_request(std::span<const uint8_t> in);
// Size of an answer carrying tensors of these lengths, then the answer written into `out` (resized to it).
size_t infer_answer_size(std::span<const uint32_t> lengths);
void encode_infer_answer(std::span<const std::span<const uint8_t>> outputs, std::vector<uint8_t>& out);
Result<std::vector<std::span<const uint8_t>>> decode_infer_answer(std::span<const uint8_t> in);

// GET_SESSION_INFO: who the server thinks this connection is.
enum class Role : uint8_t { user = 0, admin = 1 };
std::string_view role_name(Role r);  // "user", "admin"
struct SessionInfo {
  uint64_t id = 0;
  std::string transport;       // "unix", "tcp", "usb", "spi", "local"
  std::string peer;            // e.g. "uid 1000 gid 1000 pid 4242", "192.168.1.7:40112"
  Role role = Role::user;
  bool authenticated = false;  // false only on a link that needs AUTH and has not sent it
  uint64_t memory_used = 0;    // bytes of this session's tensors held by the server
  uint64_t memory_cap = 0;     // the per-session cap (aisrvd --session-memory)
  uint32_t max_queued = 0;     // requests this session may have waiting for engines (aisrvd --max-queued)
  uint32_t sessions = 0;       // sessions open on the server
};
void encode(const SessionInfo& s, std::vector<uint8_t>& out);
Result<SessionInfo> decode_session_info(std::span<const uint8_t> in);

// GET_SERVER_STATS: counters for monitors (aisrv monitor). Rates come from two records' differences.
struct EngineStats {
  uint32_t engine = 0;
  std::string kind;             // "cpu", "hailo8", ...
  uint32_t state = 0;           // the engine's GET_STATUS state bits now (BUSY, SENSING)
  bool model_loaded = false;
  std::string model_format;     // "tflite", "hef"
  std::string model_source;     // "wire", "flash", "boot"
  uint32_t model_bytes = 0;
  uint64_t inferences = 0;      // completed since start
  uint64_t failed = 0;          // ended with ERROR_INFER_ERR
  uint64_t cancelled = 0;       // ended with ERROR_CANCELLED
  uint64_t compute_ns = 0;      // sum of the completed inferences' compute times (busy time)
  uint64_t queue_ns = 0;        // sum of their waits for the engine
  uint64_t total_ns = 0;        // sum of their request-received -> answer-ready times
  uint64_t last_compute_ns = 0; // the last completed inference: compute
  uint64_t last_queue_ns = 0;   //   waiting for the engine
  uint64_t last_total_ns = 0;   //   request received -> answer ready
  uint64_t last_end_ns = 0;     //   when it ended, in server uptime (0: none yet)
  uint32_t queued = 0;          // requests waiting for the engine now
  uint64_t running_session = 0; // the session whose inference runs now (0: none)
};
struct ServerStats {
  uint64_t uptime_ns = 0;
  uint32_t sessions = 0;        // sessions open (clients connected, every transport)
  uint64_t sessions_total = 0;  // sessions opened since start
  std::vector<EngineStats> engines;
};
void encode(const ServerStats& s, std::vector<uint8_t>& out);
Result<ServerStats> decode_server_stats(std::span<const uint8_t> in);

// GET_MODEL_METADATA: key/value facts the engine read about the loaded model (docs/protocol.md 3.11), in the
// engine's order. Keys are short ASCII names ("task", "labels", "hailo.nms.classes"); values are text.
using MetadataEntry = std::pair<std::string, std::string>;  // key, value
struct ModelMetadata {
  std::vector<MetadataEntry> entries;

  // The value of `key`, or null.
  const std::string* find(std::string_view key) const;
};
inline constexpr size_t kMaxMetadataEntries = 256;
void encode(const ModelMetadata& m, std::vector<uint8_t>& out);
Result<ModelMetadata> decode_model_metadata(std::span<const uint8_t> in);

// u32 payloads (GET_STATUS, lengths, GET_ID, GPIO values).
void encode_u32(uint32_t v, std::vector<uint8_t>& out);
Result<uint32_t> decode_u32(std::span<const uint8_t> in);

}  // namespace aisrv::protocol
