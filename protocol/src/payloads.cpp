// aisrv protocol — codecs of the structured payloads (layouts in docs/protocol.md): the records of records.def through
// the record codec (records.hpp), and INFER and GET_TIMINGS, which frame raw tensor bytes rather than records.
#include "aisrv/protocol/payloads.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "aisrv/protocol/bytes.hpp"
#include "aisrv/protocol/header.h"
#include "aisrv/protocol/limits.h"
#include "aisrv/protocol/records.hpp"

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

// encode(record, out) and decode_<name>(bytes) of each record: the generic codec walking records.def.
#define AISRV_RECORD_CODEC(T, decode_name)                                                        \
  void encode(const T& v, std::vector<uint8_t>& out) { records::encode_record(v, out); }          \
  Result<T> decode_name(std::span<const uint8_t> in) { return records::decode_record<T>(in); }
AISRV_RECORD_CODEC(Spec, decode_spec)
AISRV_RECORD_CODEC(VersionInfo, decode_version)
AISRV_RECORD_CODEC(ModelTensors, decode_tensor_info)
AISRV_RECORD_CODEC(EngineInfo, decode_engine_info)
AISRV_RECORD_CODEC(TimingRecord, decode_timing_record)
AISRV_RECORD_CODEC(SessionInfo, decode_session_info)
AISRV_RECORD_CODEC(ServerStats, decode_server_stats)
AISRV_RECORD_CODEC(ModelMetadata, decode_model_metadata)
#undef AISRV_RECORD_CODEC

const std::string* ModelMetadata::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
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

namespace {

// The tensor count that opens an INFER request ("INFER", "input") or answer ("INFER answer", "output"), refused above
// AISRV_MAX_TENSORS before anything is allocated.
Result<uint32_t> infer_count(ByteReader& r, const char* field, std::string_view what, std::string_view noun) {
  const uint32_t n = r.u32(field);
  if (r.failed()) return r.status().error();
  if (n > AISRV_MAX_TENSORS)
    return make_error(Errc::protocol_error, "{} carries {} {}s; the limit is {}", what, n, noun, AISRV_MAX_TENSORS);
  return n;
}

// The tensors' bytes must be exactly what follows their lengths.
Status infer_total(const ByteReader& r, uint64_t total, std::string_view what, std::string_view noun) {
  if (r.failed()) return r.status();
  if (total != r.remaining())
    return make_error(Errc::protocol_error, "{} announces {} bytes of {}s, {} follow", what, total, noun,
                      r.remaining());
  return ok();
}

}  // namespace

Result<std::vector<InferTensor>> decode_infer_request(std::span<const uint8_t> in) {
  ByteReader r(in);
  const uint32_t n = AISRV_TRY(infer_count(r, "input count", "INFER", "input"));
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
  AISRV_TRY(infer_total(r, total, "INFER", "input"));
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
  const uint32_t m = AISRV_TRY(infer_count(r, "output count", "INFER answer", "output"));
  std::vector<uint32_t> lengths(m);
  uint64_t total = 0;
  for (auto& l : lengths) {
    l = r.u32("output length");
    total += l;
  }
  AISRV_TRY(infer_total(r, total, "INFER answer", "output"));
  std::vector<std::span<const uint8_t>> outputs;
  outputs.reserve(m);
  for (uint32_t l : lengths) outputs.push_back(r.bytes(l, "output bytes"));
  if (auto st = r.status(); !st) return std::move(st).error();
  return outputs;
}

std::string_view role_name(Role r) { return r == Role::admin ? "admin" : "user"; }

void encode_u32(uint32_t v, std::vector<uint8_t>& out) { ByteWriter(out).u32(v); }

Result<uint32_t> decode_u32(std::span<const uint8_t> in) {
  ByteReader r(in);
  const uint32_t v = r.u32("value");
  if (auto st = r.status(); !st) return std::move(st).error();
  return v;
}

}  // namespace aisrv::protocol
