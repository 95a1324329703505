// aisrv protocol — codecs of the structured payloads (layouts in docs/protocol.md): the records of records.def through
// the record codec (records.hpp); INFER's and GET_TIMINGS' functions keep their vector-of-views signatures and hand
// the records InferRequest, InferAnswer and Timings to the same codec.
#include "aisrv/protocol/payloads.hpp"

#include <algorithm>
#include <cstdint>

#include "aisrv/protocol/bytes.hpp"
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

// encode(record, out) and decode_<name>(bytes) of each record of AISRV_PAYLOAD_CODECS: the generic codec.
#define AISRV_RECORD_CODEC(T, decode_name)                                                        \
  void encode(const T& v, std::vector<uint8_t>& out) { records::encode_record(v, out); }          \
  Result<T> decode_name(std::span<const uint8_t> in) { return records::decode_record<T>(in); }
AISRV_PAYLOAD_CODECS(AISRV_RECORD_CODEC)
#undef AISRV_RECORD_CODEC

const std::string* ModelMetadata::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

namespace {
// The generic decoder names the field; the debug log also needs the payload ("INFER request: index 0 given twice").
template <typename R>
Result<R> decode_named(std::span<const uint8_t> in, std::string_view what) {
  auto r = records::decode_record<R>(in);
  if (!r) return make_error(r.error().code, "{}: {}", what, r.error().message);
  return r;
}
}  // namespace

void encode_timings(std::span<const LayerTime> layers, std::vector<uint8_t>& out) {
  Timings t;
  t.ns.reserve(layers.size());
  for (const auto& l : layers) t.ns.push_back(static_cast<uint32_t>(std::min<uint64_t>(l.ns, UINT32_MAX)));
  records::encode_record(t, out);
}

Result<std::vector<uint32_t>> decode_timings(std::span<const uint8_t> in) {
  return std::move(AISRV_TRY(decode_named<Timings>(in, "timings")).ns);
}

void encode_infer_request(std::span<const InferTensor> inputs, std::vector<uint8_t>& out) {
  size_t bytes = 0;
  for (const auto& t : inputs) bytes += t.bytes.size();
  out.reserve(out.size() + 4 + 8 * inputs.size() + bytes);
  records::encode_record(InferRequest{{inputs.begin(), inputs.end()}}, out);
}

Result<std::vector<InferTensor>> decode_infer_request(std::span<const uint8_t> in) {
  return std::move(AISRV_TRY(decode_named<InferRequest>(in, "INFER request")).inputs);
}

void encode_infer_answer(std::span<const std::span<const uint8_t>> outputs, std::vector<uint8_t>& out) {
  size_t bytes = 0;
  for (const auto& o : outputs) bytes += o.size();
  out.clear();
  out.reserve(4 + 4 * outputs.size() + bytes);
  records::encode_record(InferAnswer{{outputs.begin(), outputs.end()}}, out);
}

Result<std::vector<std::span<const uint8_t>>> decode_infer_answer(std::span<const uint8_t> in) {
  return std::move(AISRV_TRY(decode_named<InferAnswer>(in, "INFER answer")).outputs);
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
