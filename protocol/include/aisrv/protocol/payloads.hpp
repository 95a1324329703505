// aisrv protocol — structured payloads of the extension commands and their codecs (GET_SPEC, GET_VERSION,
// GET_TENSOR_INFO, GET_ENGINE_INFO, GET_TIMING_RECORD, GET_TIMINGS, INFER, GET_SESSION_INFO, GET_SERVER_STATS,
// GET_MODEL_METADATA; the model-store records are in flash_payloads.hpp). Layouts are specified in docs/protocol.md;
// every record is described once in records.def, which declares the structs below (the AISRV_RECORD expansion), drives
// these codecs (records.hpp) and the Python client's. Every decoder is bounds-checked and refuses trailing bytes
// (except where a later minor may append fields).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aisrv/protocol/limits.h"
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

// GET_SESSION_INFO: the role a session has.
enum class Role : uint8_t { user = 0, admin = 1 };
std::string_view role_name(Role r);  // "user", "admin"

// The two records whose C++ types records.def cannot declare (its header says why); their layout is in the table.
using MetadataEntry = std::pair<std::string, std::string>;  // key, value
struct ModelMetadata {
  std::vector<MetadataEntry> entries;

  // The value of `key`, or null.
  const std::string* find(std::string_view key) const;
};
inline constexpr size_t kMaxMetadataEntries = 256;

// The wire types records.def names, and the C++ type of a member of each (records and enums are their own type).
namespace wire {
struct u8 {};
struct u16 {};
struct u32 {};
struct u64 {};
struct i32 {};
struct f32 {};
struct boolean {};
struct str8 {};
struct str32 {};
struct blob {};  // a byte string: a view into the payload when decoded
using ::aisrv::protocol::DType;
using ::aisrv::protocol::MetadataEntry;
using ::aisrv::protocol::ModelMetadata;
using ::aisrv::protocol::Role;
}  // namespace wire
template <class T>
struct CTypeOf {
  using type = T;
};
template <> struct CTypeOf<wire::u8> { using type = uint8_t; };
template <> struct CTypeOf<wire::u16> { using type = uint16_t; };
template <> struct CTypeOf<wire::u32> { using type = uint32_t; };
template <> struct CTypeOf<wire::u64> { using type = uint64_t; };
template <> struct CTypeOf<wire::i32> { using type = int32_t; };
template <> struct CTypeOf<wire::f32> { using type = float; };
template <> struct CTypeOf<wire::boolean> { using type = bool; };
template <> struct CTypeOf<wire::str8> { using type = std::string; };
template <> struct CTypeOf<wire::str32> { using type = std::string; };
template <> struct CTypeOf<wire::blob> { using type = std::span<const uint8_t>; };
template <class T>
using CType = typename CTypeOf<T>::type;

// The record structs, declared from records.def: for each record a struct of its data members in wire order (a list
// where its COUNT stands; ZERO, FLAGS and BLOBS are not members), each initialised to the table's DEFAULT or zero.
// A first pass names every record (wire::Name) and the element type of each list (elems::Name::aisrv_elem_<member>:
// the COUNT that declares a list precedes the LIST that types it); the second declares the structs.
// AISRV_S_<KIND>(PASS, ...) gives a field's part of each pass: AISRV_PASS_ELEM(x, y) is x (the first pass: element
// types), AISRV_PASS_MEMBER(x, y) is y (the second: members).
#define AISRV_PASS_ELEM(X, Y) X
#define AISRV_PASS_MEMBER(X, Y) Y
#define AISRV_S_FIELD(P, T, M, A, B, ...) AISRV_PASS_##P(, CType<wire::T> M{__VA_ARGS__};)
#define AISRV_S_ENUM(P, T, M, A, B, ...) AISRV_PASS_##P(, CType<wire::T> M{__VA_ARGS__};)
#define AISRV_S_ZERO(P, T, M, A, B, ...)
#define AISRV_S_COUNT(P, T, M, A, B, ...) AISRV_PASS_##P(, std::vector<aisrv_elems::aisrv_elem_##M> M{};)
#define AISRV_S_LIST(P, T, M, A, B, ...) AISRV_PASS_##P(using aisrv_elem_##M = CType<wire::T>;, )
#define AISRV_S_ZIP(P, T, M, T2, M2, ...)                                                         \
  AISRV_PASS_##P(using aisrv_elem_##M = CType<wire::T>; using aisrv_elem_##M2 = CType<wire::T2>;, \
                 std::vector<aisrv_elems::aisrv_elem_##M2> M2{};)
#define AISRV_S_FLAGS(P, T, M, A, B, ...)
#define AISRV_S_OPT(P, T, M, A, B, ...) AISRV_PASS_##P(, std::optional<CType<wire::T>> M{};)
#define AISRV_S_OPT0(P, T, M, A, B, ...) AISRV_PASS_##P(, std::optional<CType<wire::T>> M{};)
#define AISRV_S_FLAG(P, T, M, A, B, ...) AISRV_PASS_##P(, bool M{__VA_ARGS__};)
#define AISRV_S_WHEN(P, T, M, A, B, ...) AISRV_PASS_##P(, CType<wire::T> M{__VA_ARGS__};)
#define AISRV_S_REST(P, T, M, A, B, ...) AISRV_PASS_##P(, std::span<const uint8_t> M{};)
#define AISRV_S_SEQ(P, T, M, A, B, ...) AISRV_PASS_##P(, std::vector<CType<wire::T>> M{};)
#define AISRV_S_INDEX(P, T, M, A, B, ...) AISRV_PASS_##P(, CType<wire::T> M{__VA_ARGS__};)
#define AISRV_S_BLOB(P, T, M, A, B, ...) AISRV_PASS_##P(, std::span<const uint8_t> M{};)
#define AISRV_S_BLOBS(P, T, M, A, B, ...)
#define F(KIND, T, M, A, B, ...) AISRV_S_##KIND(ELEM, T, M, A, B, __VA_ARGS__)
#define AISRV_RECORD(NAME, TAIL, FIELDS) \
  struct NAME;                           \
  namespace wire {                       \
  using ::aisrv::protocol::NAME;         \
  }                                      \
  namespace elems {                      \
  struct NAME {                          \
    FIELDS                               \
  };                                     \
  }
#define AISRV_DECLARED_RECORD(NAME, TAIL, FIELDS)
#include "aisrv/protocol/records.def"
#undef AISRV_RECORD
#undef F
#define F(KIND, T, M, A, B, ...) AISRV_S_##KIND(MEMBER, T, M, A, B, __VA_ARGS__)
#define AISRV_RECORD(NAME, TAIL, FIELDS) \
  struct NAME {                          \
    using aisrv_elems = elems::NAME;     \
    FIELDS                               \
  };
#include "aisrv/protocol/records.def"
#undef AISRV_RECORD
#undef AISRV_DECLARED_RECORD
#undef F
#undef AISRV_PASS_ELEM
#undef AISRV_PASS_MEMBER
#undef AISRV_S_FIELD
#undef AISRV_S_ENUM
#undef AISRV_S_ZERO
#undef AISRV_S_COUNT
#undef AISRV_S_LIST
#undef AISRV_S_ZIP
#undef AISRV_S_FLAGS
#undef AISRV_S_OPT
#undef AISRV_S_OPT0
#undef AISRV_S_FLAG
#undef AISRV_S_WHEN
#undef AISRV_S_REST
#undef AISRV_S_SEQ
#undef AISRV_S_INDEX
#undef AISRV_S_BLOB
#undef AISRV_S_BLOBS

// encode(record, out) (appends) and decode_<name>(bytes) of each record a command carries whole (payloads.cpp
// defines them from the same list): GET_SPEC, GET_VERSION, GET_TENSOR_INFO, GET_ENGINE_INFO, GET_TIMING_RECORD,
// GET_SESSION_INFO, GET_SERVER_STATS, GET_MODEL_METADATA.
#define AISRV_PAYLOAD_CODECS(X)                                                                                      \
  X(Spec, decode_spec)                                                                                               \
  X(VersionInfo, decode_version)                                                                                     \
  X(ModelTensors, decode_tensor_info)                                                                                \
  X(EngineInfo, decode_engine_info)                                                                                  \
  X(TimingRecord, decode_timing_record)                                                                              \
  X(SessionInfo, decode_session_info)                                                                                \
  X(ServerStats, decode_server_stats)                                                                                \
  X(ModelMetadata, decode_model_metadata)
#define AISRV_DECLARE_CODEC(T, decode_name)             \
  void encode(const T& v, std::vector<uint8_t>& out); \
  Result<T> decode_name(std::span<const uint8_t> in);
AISRV_PAYLOAD_CODECS(AISRV_DECLARE_CODEC)
#undef AISRV_DECLARE_CODEC

// Whether a peer speaking [peer.min_major, peer.major] can talk to us ([our_min, our_major]); explains why not.
Status check_compatible(const VersionInfo& peer, uint16_t our_major, uint16_t our_min_major);

// GET_TIMINGS (record Timings): each layer's nanoseconds, saturating at 0xFFFFFFFF.
void encode_timings(std::span<const LayerTime> layers, std::vector<uint8_t>& out);
Result<std::vector<uint32_t>> decode_timings(std::span<const uint8_t> in);

// INFER (records InferRequest, InferAnswer). Decoded tensors are views into the payload. The answer replaces what
// `out` held (the server reuses its buffer), the request is appended.
void encode_infer_request(std::span<const InferTensor> inputs, std::vector<uint8_t>& out);
Result<std::vector<InferTensor>> decode_infer_request(std::span<const uint8_t> in);
void encode_infer_answer(std::span<const std::span<const uint8_t>> outputs, std::vector<uint8_t>& out);
Result<std::vector<std::span<const uint8_t>>> decode_infer_answer(std::span<const uint8_t> in);

// u32 payloads (GET_STATUS, lengths, GET_ID, GPIO values).
void encode_u32(uint32_t v, std::vector<uint8_t>& out);
Result<uint32_t> decode_u32(std::span<const uint8_t> in);

}  // namespace aisrv::protocol
