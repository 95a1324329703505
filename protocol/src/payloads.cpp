// aisrv protocol — codecs of the structured payloads (layouts in docs/protocol.md).
#include "aisrv/protocol/payloads.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "aisrv/protocol/bytes.hpp"
#include "aisrv/protocol/header.h"
#include "aisrv/protocol/limits.h"

namespace aisrv::protocol {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "FLOAT32";
    case DType::int8: return "INT8";
    case DType::uint8: return "UINT8";
    case DType::int16: return "INT16";
    case DType::uint16: return "UINT16";
    case DType::int32: return "INT32";
    case DType::int64: return "INT64";
    case DType::boolean: return "BOOL";
    case DType::float16: return "FLOAT16";
    default: return "UNKNOWN";
  }
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::int8:
    case DType::uint8:
    case DType::boolean: return 1;
    case DType::int16:
    case DType::uint16:
    case DType::float16: return 2;
    case DType::float32:
    case DType::int32: return 4;
    case DType::int64: return 8;
    default: return 0;
  }
}

void encode(const Spec& s, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(0);
  w.u32(0);
  w.u32(s.input_length);
  w.u32(s.output_length);
  w.u32(s.timings_length);
}

Result<Spec> decode_spec(std::span<const uint8_t> in) {
  ByteReader r(in);
  Spec s;
  r.u32("spec[0]");
  r.u32("spec[1]");
  s.input_length = r.u32("input length");
  s.output_length = r.u32("output length");
  s.timings_length = r.u32("timings length");
  if (auto st = r.status(); !st) return std::move(st).error();
  return s;
}

void encode(const VersionInfo& v, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u16(v.major);
  w.u16(v.minor);
  w.u16(v.min_major);
  w.u16(0);
  w.u32(v.capabilities);
  w.u32(v.max_payload);
  w.u32(v.engines);
  w.str8(v.server_version);
}

Result<VersionInfo> decode_version(std::span<const uint8_t> in) {
  ByteReader r(in);
  VersionInfo v;
  v.major = r.u16("major");
  v.minor = r.u16("minor");
  v.min_major = r.u16("min_major");
  r.u16("reserved");
  v.capabilities = r.u32("capabilities");
  v.max_payload = r.u32("max_payload");
  v.engines = r.u32("engines");
  v.server_version = r.str8("server_version");
  // Newer minors may append fields: accept trailing bytes.
  if (auto st = r.status(false); !st) return std::move(st).error();
  return v;
}

Status check_compatible(const VersionInfo& peer, uint16_t our_major, uint16_t our_min_major) {
  const uint16_t peer_min = peer.min_major ? peer.min_major : peer.major;
  const bool overlap = peer_min <= our_major && our_min_major <= peer.major;
  if (overlap) return ok();
  return make_error(Errc::incompatible,
                    "server speaks protocol {}.{} (majors {}..{}), this client speaks majors {}..{}; "
                    "upgrade the {}",
                    peer.major, peer.minor, peer_min, peer.major, our_min_major, our_major,
                    peer.major > our_major ? "client" : "server");
}

static void encode_tensor(ByteWriter& w, const TensorInfo& t) {
  w.str8(t.name);
  w.u8(static_cast<uint8_t>(t.dtype));
  w.u8(static_cast<uint8_t>(t.shape.size()));
  w.u32(t.bytes);
  for (int32_t d : t.shape) w.i32(d);
  w.i32(t.quant_axis);
  w.u32(static_cast<uint32_t>(t.scale.size()));
  for (size_t i = 0; i < t.scale.size(); ++i) {
    w.f32(t.scale[i]);
    w.i32(i < t.zero_point.size() ? t.zero_point[i] : 0);
  }
}

static TensorInfo decode_tensor(ByteReader& r) {
  TensorInfo t;
  t.name = r.str8("tensor name");
  t.dtype = static_cast<DType>(r.u8("dtype"));
  const uint8_t rank = r.u8("rank");
  t.bytes = r.u32("bytes");
  if (rank > AISRV_MAX_RANK) {
    r.bytes(r.remaining() + 1, "rank (above AISRV_MAX_RANK)");
    return t;
  }
  for (uint8_t i = 0; i < rank && !r.failed(); ++i) t.shape.push_back(r.i32("dim"));
  t.quant_axis = r.i32("quant_axis");
  const uint32_t n = r.u32("quant count");
  if (r.failed() || static_cast<uint64_t>(n) * 8 > r.remaining()) {
    r.bytes(r.remaining() + 1, "quantization parameters");
    return t;
  }
  t.scale.reserve(n);
  t.zero_point.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    t.scale.push_back(r.f32("scale"));
    t.zero_point.push_back(r.i32("zero_point"));
  }
  return t;
}

void encode(const ModelTensors& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.str8(m.format);
  w.u32(m.model_bytes);
  w.u32(m.arena_bytes);
  w.u8(static_cast<uint8_t>(m.inputs.size()));
  w.u8(static_cast<uint8_t>(m.outputs.size()));
  for (const auto& t : m.inputs) encode_tensor(w, t);
  for (const auto& t : m.outputs) encode_tensor(w, t);
}

Result<ModelTensors> decode_tensor_info(std::span<const uint8_t> in) {
  ByteReader r(in);
  ModelTensors m;
  m.format = r.str8("format");
  m.model_bytes = r.u32("model_bytes");
  m.arena_bytes = r.u32("arena_bytes");
  const uint8_t ni = r.u8("input count");
  const uint8_t no = r.u8("output count");
  if (ni > AISRV_MAX_TENSORS || no > AISRV_MAX_TENSORS)
    return make_error(Errc::protocol_error, "tensor counts {}/{} above the limit {}", ni, no, AISRV_MAX_TENSORS);
  for (uint8_t i = 0; i < ni && !r.failed(); ++i) m.inputs.push_back(decode_tensor(r));
  for (uint8_t i = 0; i < no && !r.failed(); ++i) m.outputs.push_back(decode_tensor(r));
  if (auto st = r.status(); !st) return std::move(st).error();
  return m;
}

const std::string* ModelMetadata::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void encode(const ModelMetadata& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  const size_t n = std::min(m.entries.size(), kMaxMetadataEntries);
  w.u32(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    w.str8(m.entries[i].first);
    w.str32(m.entries[i].second);
  }
}

Result<ModelMetadata> decode_model_metadata(std::span<const uint8_t> in) {
  ByteReader r(in);
  ModelMetadata m;
  const uint32_t n = r.u32("entry count");
  if (n > kMaxMetadataEntries)
    return make_error(Errc::protocol_error, "{} metadata entries, above the limit {}", n, kMaxMetadataEntries);
  for (uint32_t i = 0; i < n && !r.failed(); ++i) {
    std::string key = r.str8("metadata key");
    std::string value = r.str32("metadata value", AISRV_MAX_PAYLOAD);
    m.entries.emplace_back(std::move(key), std::move(value));
  }
  if (auto st = r.status(); !st) return std::move(st).error();
  return m;
}

void encode(const EngineInfo& e, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.str8(e.kind);
  w.str8(e.options);
  w.u8(e.model_loaded ? 1 : 0);
  w.str8(e.model_format);
  w.u32(e.model_bytes);
  w.str8(e.model_source);
  w.u64(e.inferences);
  w.str8(e.chained_to);
}

Result<EngineInfo> decode_engine_info(std::span<const uint8_t> in) {
  ByteReader r(in);
  EngineInfo e;
  e.kind = r.str8("kind");
  e.options = r.str8("options");
  e.model_loaded = r.u8("model_loaded") != 0;
  e.model_format = r.str8("model_format");
  e.model_bytes = r.u32("model_bytes");
  e.model_source = r.str8("model_source");
  e.inferences = r.u64("inferences");
  e.chained_to = r.str8("chained_to");
  if (auto st = r.status(); !st) return std::move(st).error();
  return e;
}

void encode(const TimingRecord& t, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u64(t.queue_ns);
  w.u64(t.compute_ns);
  w.u64(t.total_ns);
  w.u32(static_cast<uint32_t>(t.layers.size()));
  for (const auto& l : t.layers) {
    w.str8(l.name);
    w.str8(l.op);
    w.u64(l.ns);
  }
}

Result<TimingRecord> decode_timing_record(std::span<const uint8_t> in) {
  ByteReader r(in);
  TimingRecord t;
  t.queue_ns = r.u64("queue_ns");
  t.compute_ns = r.u64("compute_ns");
  t.total_ns = r.u64("total_ns");
  const uint32_t n = r.u32("layer count");
  // Each layer takes at least 10 bytes: refuse counts the payload cannot hold before reserving.
  if (!r.failed() && static_cast<uint64_t>(n) * 10 > r.remaining())
    return make_error(Errc::protocol_error, "timing record announces {} layers in {} bytes", n, r.remaining());
  t.layers.reserve(n);
  for (uint32_t i = 0; i < n && !r.failed(); ++i) {
    LayerTime l;
    l.name = r.str8("layer name");
    l.op = r.str8("layer op");
    l.ns = r.u64("layer ns");
    t.layers.push_back(std::move(l));
  }
  if (auto st = r.status(); !st) return std::move(st).error();
  return t;
}

void encode_timings(std::span<const LayerTime> layers, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  for (const auto& l : layers)
    w.u32(l.ns > std::numeric_limits<uint32_t>::max() ? std::numeric_limits<uint32_t>::max()
                                                      : static_cast<uint32_t>(l.ns));
}

Result<std::vector<uint32_t>> decode_timings(std::span<const uint8_t> in) {
  if (in.size() % 4 != 0)
    return make_error(Errc::protocol_error, "timings payload of {} bytes is not a multiple of 4", in.size());
  std::vector<uint32_t> v(in.size() / 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = aisrv_get_u32(in.data() + 4 * i);
  return v;
}

void encode_infer_request(std::span<const InferTensor> inputs, std::vector<uint8_t>& out) {
  size_t total = 4 + 8 * inputs.size();
  for (const auto& t : inputs) total += t.bytes.size();
  out.reserve(out.size() + total);
  ByteWriter w(out);
  w.u32(static_cast<uint32_t>(inputs.size()));
  for (const auto& t : inputs) {
    w.u32(t.index);
    w.u32(static_cast<uint32_t>(t.bytes.size()));
  }
  for (const auto& t : inputs) w.bytes(t.bytes);
}

Result<std::vector<InferTensor>> decode_infer_request(std::span<const uint8_t> in) {
  ByteReader r(in);
  const uint32_t n = r.u32("input count");
  if (r.failed()) return r.status().error();
  if (n > AISRV_MAX_TENSORS)
    return make_error(Errc::protocol_error, "INFER carries {} inputs; the limit is {}", n, AISRV_MAX_TENSORS);
  std::vector<InferTensor> inputs(n);
  uint64_t total = 0;
  uint32_t seen = 0;  // bit per index below 32 (AISRV_MAX_TENSORS <= 32)
  for (auto& t : inputs) {
    t.index = r.u32("input index");
    const uint32_t length = r.u32("input length");
    if (r.failed()) return r.status().error();
    if (t.index >= AISRV_MAX_TENSORS)
      return make_error(Errc::protocol_error, "INFER names input {}; the limit is {} inputs", t.index,
                        AISRV_MAX_TENSORS);
    if (seen & (1u << t.index)) return make_error(Errc::protocol_error, "INFER gives input {} twice", t.index);
    seen |= 1u << t.index;
    total += length;
    t.bytes = std::span<const uint8_t>(in.data(), length);  // placeholder: positioned below
  }
  if (total != r.remaining())
    return make_error(Errc::protocol_error, "INFER announces {} bytes of inputs, {} follow", total, r.remaining());
  for (auto& t : inputs) t.bytes = r.bytes(t.bytes.size(), "input bytes");
  if (auto st = r.status(); !st) return std::move(st).error();
  return inputs;
}

size_t infer_answer_size(std::span<const uint32_t> lengths) {
  size_t total = 4 + 4 * lengths.size();
  for (uint32_t l : lengths) total += l;
  return total;
}

void encode_infer_answer(std::span<const std::span<const uint8_t>> outputs, std::vector<uint8_t>& out) {
  std::vector<uint32_t> lengths;
  lengths.reserve(outputs.size());
  for (const auto& o : outputs) lengths.push_back(static_cast<uint32_t>(o.size()));
  out.resize(infer_answer_size(lengths));
  uint8_t* p = out.data();
  aisrv_put_u32(p, static_cast<uint32_t>(outputs.size()));
  p += 4;
  for (uint32_t l : lengths) {
    aisrv_put_u32(p, l);
    p += 4;
  }
  for (const auto& o : outputs) {
    if (!o.empty()) std::memcpy(p, o.data(), o.size());
    p += o.size();
  }
}

Result<std::vector<std::span<const uint8_t>>> decode_infer_answer(std::span<const uint8_t> in) {
  ByteReader r(in);
  const uint32_t m = r.u32("output count");
  if (r.failed()) return r.status().error();
  if (m > AISRV_MAX_TENSORS)
    return make_error(Errc::protocol_error, "INFER answer carries {} outputs; the limit is {}", m, AISRV_MAX_TENSORS);
  std::vector<uint32_t> lengths(m);
  uint64_t total = 0;
  for (auto& l : lengths) {
    l = r.u32("output length");
    total += l;
  }
  if (r.failed()) return r.status().error();
  if (total != r.remaining())
    return make_error(Errc::protocol_error, "INFER answer announces {} bytes of outputs, {} follow", total,
                      r.remaining());
  std::vector<std::span<const uint8_t>> outputs;
  outputs.reserve(m);
  for (uint32_t l : lengths) outputs.push_back(r.bytes(l, "output bytes"));
  if (auto st = r.status(); !st) return std::move(st).error();
  return outputs;
}

std::string_view role_name(Role r) { return r == Role::admin ? "admin" : "user"; }

void encode(const SessionInfo& s, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u64(s.id);
  w.str8(s.transport);
  w.str8(s.peer);
  w.u8(static_cast<uint8_t>(s.role));
  w.u8(s.authenticated ? 1 : 0);
  w.u64(s.memory_used);
  w.u64(s.memory_cap);
  w.u32(s.max_queued);
  w.u32(s.sessions);
}

Result<SessionInfo> decode_session_info(std::span<const uint8_t> in) {
  ByteReader r(in);
  SessionInfo s;
  s.id = r.u64("id");
  s.transport = r.str8("transport");
  s.peer = r.str8("peer");
  const uint8_t role = r.u8("role");
  s.role = role == 1 ? Role::admin : Role::user;
  s.authenticated = r.u8("authenticated") != 0;
  s.memory_used = r.u64("memory_used");
  s.memory_cap = r.u64("memory_cap");
  s.max_queued = r.u32("max_queued");
  s.sessions = r.u32("sessions");
  // Later minors may append fields.
  if (auto st = r.status(false); !st) return std::move(st).error();
  return s;
}

void encode(const ServerStats& s, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u64(s.uptime_ns);
  w.u32(s.sessions);
  w.u64(s.sessions_total);
  w.u32(static_cast<uint32_t>(s.engines.size()));
  for (const auto& e : s.engines) {
    w.u32(e.engine);
    w.str8(e.kind);
    w.u32(e.state);
    w.u8(e.model_loaded ? 1 : 0);
    w.str8(e.model_format);
    w.str8(e.model_source);
    w.u32(e.model_bytes);
    w.u64(e.inferences);
    w.u64(e.failed);
    w.u64(e.cancelled);
    w.u64(e.compute_ns);
    w.u64(e.queue_ns);
    w.u64(e.total_ns);
    w.u64(e.last_compute_ns);
    w.u64(e.last_queue_ns);
    w.u64(e.last_total_ns);
    w.u64(e.last_end_ns);
    w.u32(e.queued);
    w.u64(e.running_session);
  }
}

Result<ServerStats> decode_server_stats(std::span<const uint8_t> in) {
  ByteReader r(in);
  ServerStats s;
  s.uptime_ns = r.u64("uptime_ns");
  s.sessions = r.u32("sessions");
  s.sessions_total = r.u64("sessions_total");
  const uint32_t n = r.u32("engine count");
  if (r.status(false) && n > AISRV_MAX_ENGINES)
    return make_error(Errc::protocol_error, "statistics of {} engines; at most {}", n, AISRV_MAX_ENGINES);
  for (uint32_t i = 0; i < n && r.status(false); ++i) {
    EngineStats e;
    e.engine = r.u32("engine");
    e.kind = r.str8("kind");
    e.state = r.u32("state");
    e.model_loaded = r.u8("model_loaded") != 0;
    e.model_format = r.str8("model_format");
    e.model_source = r.str8("model_source");
    e.model_bytes = r.u32("model_bytes");
    e.inferences = r.u64("inferences");
    e.failed = r.u64("failed");
    e.cancelled = r.u64("cancelled");
    e.compute_ns = r.u64("compute_ns");
    e.queue_ns = r.u64("queue_ns");
    e.total_ns = r.u64("total_ns");
    e.last_compute_ns = r.u64("last_compute_ns");
    e.last_queue_ns = r.u64("last_queue_ns");
    e.last_total_ns = r.u64("last_total_ns");
    e.last_end_ns = r.u64("last_end_ns");
    e.queued = r.u32("queued");
    e.running_session = r.u64("running_session");
    s.engines.push_back(std::move(e));
  }
  // Later minors may append fields after the engines.
  if (auto st = r.status(false); !st) return std::move(st).error();
  return s;
}

void encode_u32(uint32_t v, std::vector<uint8_t>& out) { ByteWriter(out).u32(v); }

Result<uint32_t> decode_u32(std::span<const uint8_t> in) {
  ByteReader r(in);
  const uint32_t v = r.u32("value");
  if (auto st = r.status(); !st) return std::move(st).error();
  return v;
}

}  // namespace aisrv::protocol
