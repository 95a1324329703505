// aisrv protocol — the record codec: one encoder and one decoder that walk the field lists of records.def, so that the
// byte layout of every structured payload record is written once (the Python codec walks the same table, generated
// into host/python/aisrv/_records.py by tools/gen-python-protocol; the structs come from the same table, declared in
// payloads.hpp). payloads.cpp and flash_payloads.cpp expose it as the named encode()/decode_*() functions; tests and
// tools may visit records directly (tools: records_dump).
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "aisrv/protocol/bytes.hpp"
#include "aisrv/protocol/flash_payloads.hpp"
#include "aisrv/protocol/limits.h"
#include "aisrv/protocol/payloads.hpp"

namespace aisrv::protocol::records {

// The wire types of records.def (payloads.hpp declares them); records and enums are named by their own C++ types.
using namespace ::aisrv::protocol::wire;

// The field kinds of records.def (its first column; their meaning is described there).
struct Field {};
struct Enum {};
struct Zero {};
struct Count {};
struct List {};
struct Zip {};
struct Flags {};
struct Opt {};
struct Opt0 {};
struct Flag {};
struct When {};
struct Rest {};
struct Seq {};
struct Index {};
struct Blob {};
struct Blobs {};

template <class T>
using Type = std::type_identity<T>;

// Traits<Record>::name ("FlashBegin") and ::open (trailing bytes accepted), one per record of records.def.
template <class T>
struct Traits;
template <class T>
concept Record = requires { Traits<T>::name; };

// visit(op, record): calls op once per field of the record, in wire order, with the field's kind, wire type, member,
// name and arguments.
#define AISRV_F_FIELD(T, M, A, B) op(Field{}, Type<T>{}, v.M, #M, static_cast<uint64_t>(A));
#define AISRV_F_ENUM(T, M, A, B) op(Enum{}, Type<T>{}, v.M, #M, static_cast<uint64_t>(A));
#define AISRV_F_ZERO(T, M, A, B) op(Zero{}, Type<T>{}, #M);
#define AISRV_F_COUNT(T, M, A, B) op(Count{}, Type<T>{}, v.M, #M, static_cast<uint64_t>(A), static_cast<uint64_t>(B));
#define AISRV_F_LIST(T, M, A, B) op(List{}, Type<T>{}, v.M, #M);
#define AISRV_F_ZIP(T, M, T2, M2) op(Zip{}, Type<T>{}, v.M, Type<T2>{}, v.M2, #M);
#define AISRV_F_FLAGS(T, M, A, B) op(Flags{}, Type<T>{}, #M, static_cast<uint64_t>(A));
#define AISRV_F_OPT(T, M, A, B) op(Opt{}, Type<T>{}, v.M, #M, static_cast<uint64_t>(A));
#define AISRV_F_OPT0(T, M, A, B) op(Opt0{}, Type<T>{}, v.M, #M, static_cast<uint64_t>(A));
#define AISRV_F_FLAG(T, M, A, B) op(Flag{}, Type<T>{}, v.M, #M, static_cast<uint64_t>(A));
#define AISRV_F_WHEN(T, M, A, B) op(When{}, Type<T>{}, v.M, #M, static_cast<uint64_t>(A));
#define AISRV_F_REST(T, M, A, B) op(Rest{}, v.M, #M);
#define AISRV_F_SEQ(T, M, A, B) op(Seq{}, Type<T>{}, v.M, #M);
#define AISRV_F_INDEX(T, M, A, B)               \
  static_assert((A) <= 64, "INDEX: A <= 64"); \
  op(Index{}, Type<T>{}, v.M, #M, static_cast<uint64_t>(A));
#define AISRV_F_BLOB(T, M, A, B) op(Blob{}, Type<T>{}, v.M, #M);
#define AISRV_F_BLOBS(T, M, A, B) op(Blobs{}, Type<T>{}, v.M, #M);
#define AISRV_TAIL_EXACT false
#define AISRV_TAIL_OPEN true
#define F(KIND, T, M, A, B, ...) AISRV_F_##KIND(T, M, A, B)
#define AISRV_RECORD(NAME, TAIL, FIELDS)                                  \
  template <class Op, class V>                                            \
    requires std::same_as<std::remove_const_t<V>, NAME>                   \
  void visit(Op& op, V& v) {                                              \
    FIELDS                                                                \
  }                                                                       \
  template <>                                                             \
  struct Traits<NAME> {                                                   \
    static constexpr std::string_view name = #NAME;                       \
    static constexpr bool open = AISRV_TAIL_##TAIL;                       \
  };
#define AISRV_DECLARED_RECORD(NAME, TAIL, FIELDS) AISRV_RECORD(NAME, TAIL, FIELDS)
#include "aisrv/protocol/records.def"
#undef AISRV_RECORD

// fn(Type<Record>{}) for every record, in the table's order.
template <class Fn>
void for_each_record(Fn&& fn) {
#define AISRV_RECORD(NAME, TAIL, FIELDS) fn(Type<NAME>{});
#include "aisrv/protocol/records.def"
#undef AISRV_RECORD
}
#undef AISRV_DECLARED_RECORD
#undef F
#undef AISRV_TAIL_EXACT
#undef AISRV_TAIL_OPEN
#undef AISRV_F_FIELD
#undef AISRV_F_ENUM
#undef AISRV_F_ZERO
#undef AISRV_F_COUNT
#undef AISRV_F_LIST
#undef AISRV_F_ZIP
#undef AISRV_F_FLAGS
#undef AISRV_F_OPT
#undef AISRV_F_OPT0
#undef AISRV_F_FLAG
#undef AISRV_F_WHEN
#undef AISRV_F_REST
#undef AISRV_F_SEQ
#undef AISRV_F_INDEX
#undef AISRV_F_BLOB
#undef AISRV_F_BLOBS

// The element counts a record announced (COUNT), found again by the list they belong to (LIST, ZIP).
class Counts {
 public:
  void set(const void* list, uint64_t n) {
    for (auto& [l, c] : slots_)
      if (l == list || l == nullptr) {
        l = list;
        c = n;
        return;
      }
  }
  uint64_t get(const void* list) const {
    for (const auto& [l, c] : slots_)
      if (l == list) return c;
    return 0;
  }

 private:
  std::array<std::pair<const void*, uint64_t>, 4> slots_{};  // records.def: at most 4 lists per record (today 2)
};

// Writes a record. A first pass over the fields gathers the flag bits (a FLAGS word may precede the fields it
// describes), the second writes.
class Encoder {
 public:
  explicit Encoder(ByteWriter& w) : w_(w) {}

  template <Record R>
  void record(const R& v) {
    flags_ = 0;
    collecting_ = true;
    visit(*this, v);
    collecting_ = false;
    visit(*this, v);
  }

  template <class T, class M>
  void operator()(Field, Type<T> t, const M& m, const char*, uint64_t) {
    if (!collecting_) put(t, m);
  }
  template <class E>
  void operator()(Enum, Type<E>, const E& m, const char*, uint64_t) {
    if (!collecting_) w_.u8(static_cast<uint8_t>(m));
  }
  template <class T>
  void operator()(Zero, Type<T> t, const char*) {
    if (!collecting_) put(t, 0u);
  }
  template <class T, class M>
  void operator()(Count, Type<T> t, const std::vector<M>& m, const char*, uint64_t max, uint64_t) {
    if (collecting_) return;
    const uint64_t n = std::min<uint64_t>(m.size(), max);
    counts_.set(&m, n);
    put(t, n);
  }
  template <class T, class M>
  void operator()(List, Type<T> t, const std::vector<M>& m, const char*) {
    if (collecting_) return;
    const uint64_t n = counts_.get(&m);
    for (uint64_t i = 0; i < n; ++i) put(t, m[i]);
  }
  template <class T, class M, class T2, class M2>
  void operator()(Zip, Type<T> t, const std::vector<M>& m, Type<T2> t2, const std::vector<M2>& m2, const char*) {
    if (collecting_) return;
    const uint64_t n = counts_.get(&m);
    for (uint64_t i = 0; i < n; ++i) {
      put(t, m[i]);
      put(t2, i < m2.size() ? m2[i] : M2{});
    }
  }
  template <class T>
  void operator()(Flags, Type<T> t, const char*, uint64_t mask) {
    if (!collecting_) put(t, flags_ & mask);
  }
  template <class T, class M>
  void operator()(Opt, Type<T> t, const std::optional<M>& m, const char*, uint64_t bit) {
    if (collecting_) flags_ |= m ? bit : 0;
    else if (m) put(t, *m);
  }
  template <class T, class M>
  void operator()(Opt0, Type<T> t, const std::optional<M>& m, const char*, uint64_t bit) {
    if (collecting_) flags_ |= m ? bit : 0;
    else put(t, m ? *m : M{});
  }
  void operator()(Flag, Type<boolean>, bool m, const char*, uint64_t bit) {
    if (collecting_ && m) flags_ |= bit;
  }
  template <class T, class M>
  void operator()(When, Type<T> t, const M& m, const char*, uint64_t bit) {
    if (!collecting_ && (flags_ & bit)) put(t, m);
  }
  void operator()(Rest, std::span<const uint8_t> m, const char*) {
    if (!collecting_) w_.bytes(m);
  }
  template <class T, class M>
  void operator()(Seq, Type<T> t, const std::vector<M>& m, const char*) {
    if (!collecting_)
      for (const auto& e : m) put(t, e);
  }
  template <class T, class M>
  void operator()(Index, Type<T> t, const M& m, const char*, uint64_t) {
    if (!collecting_) put(t, m);
  }
  template <class T>
  void operator()(Blob, Type<T> t, std::span<const uint8_t> m, const char*) {
    if (!collecting_) put(t, m.size());
  }
  template <class T, class M>
  void operator()(Blobs, Type<T>, const std::vector<M>& m, const char*) {
    if (collecting_) return;
    const uint64_t n = counts_.get(&m);
    BlobWriter bw{w_};
    for (uint64_t i = 0; i < n; ++i) bw.element(m[i]);
  }

 private:
  // Writes the bytes of an element's BLOB fields (or of the element itself, a `blob`), as BLOBS stands.
  struct BlobWriter {
    ByteWriter& w;
    void element(std::span<const uint8_t> b) { w.bytes(b); }
    template <Record R>
    void element(const R& r) { visit(*this, r); }
    template <class K, class... X>
    void operator()(K, const X&... x) {
      if constexpr (std::is_same_v<K, Blob>) write(x...);
    }
    template <class T>
    void write(Type<T>, std::span<const uint8_t> m, const char*) { w.bytes(m); }
  };

  template <class X>
  void put(Type<u8>, X x) { w_.u8(static_cast<uint8_t>(x)); }
  template <class X>
  void put(Type<u16>, X x) { w_.u16(static_cast<uint16_t>(x)); }
  template <class X>
  void put(Type<u32>, X x) { w_.u32(static_cast<uint32_t>(x)); }
  template <class X>
  void put(Type<u64>, X x) { w_.u64(static_cast<uint64_t>(x)); }
  template <class X>
  void put(Type<i32>, X x) { w_.i32(static_cast<int32_t>(x)); }
  void put(Type<f32>, float x) { w_.f32(x); }
  void put(Type<boolean>, bool x) { w_.u8(x ? 1 : 0); }
  void put(Type<str8>, std::string_view x) { w_.str8(x); }
  void put(Type<str32>, std::string_view x) { w_.str32(x); }
  void put(Type<blob>, std::span<const uint8_t> x) { w_.u32(static_cast<uint32_t>(x.size())); }  // its length
  template <class E>
    requires std::is_enum_v<E>
  void put(Type<E>, E x) { w_.u8(static_cast<uint8_t>(x)); }
  template <Record R>
  void put(Type<R>, const R& x) { Encoder(w_).record(x); }

  ByteWriter& w_;
  uint64_t flags_ = 0;
  bool collecting_ = false;
  Counts counts_;
};

// Reads a record. Every read is bounds-checked by the ByteReader; counts above their limit, counts that cannot fit
// in the bytes left and unknown flag bits fail the reader before anything is allocated. A second pass applies flags
// that follow the fields they describe (OPT0).
class Decoder {
 public:
  explicit Decoder(ByteReader& r) : r_(r), lengths_(&own_lengths_) {}

  template <Record R>
  void record(R& v) {
    flags_ = 0;
    post_ = false;
    visit(*this, v);
    if (r_.failed()) return;
    post_ = true;
    visit(*this, v);
  }

  template <class T, class M>
  void operator()(Field, Type<T> t, M& m, const char* name, uint64_t a) {
    if (!post_) get(t, m, name, a);
  }
  template <class E>
  void operator()(Enum, Type<E>, E& m, const char* name, uint64_t max) {
    if (post_) return;
    const uint8_t code = r_.u8(name);
    m = static_cast<E>(code <= max ? code : 0);
  }
  template <class T>
  void operator()(Zero, Type<T> t, const char* name) {
    uint64_t ignored = 0;
    if (!post_) get(t, ignored, name, 0);
  }
  template <class T, class M>
  void operator()(Count, Type<T> t, std::vector<M>& m, const char* name, uint64_t max, uint64_t min_size) {
    if (post_) return;
    uint64_t n = 0;
    get(t, n, name, 0);
    if (r_.failed()) return;
    if (n > max)
      r_.refuse(make_error(Errc::protocol_error, "{}: {} elements, above the limit {}", name, n, max));
    else if (n * min_size > r_.remaining())
      r_.refuse(make_error(Errc::protocol_error, "{}: {} elements cannot fit in the {} bytes left", name, n,
                           r_.remaining()));
    else
      counts_.set(&m, n);
  }
  template <class T, class M>
  void operator()(List, Type<T> t, std::vector<M>& m, const char* name) {
    if (post_) return;
    const uint64_t n = counts_.get(&m);
    m.clear();
    m.reserve(std::min<uint64_t>(n, r_.remaining()));  // every element takes at least one byte
    uint64_t seen = 0;
    list_seen_ = &seen;
    for (uint64_t i = 0; i < n && !r_.failed(); ++i) {
      M e{};
      get(t, e, name, 0);
      m.push_back(std::move(e));
    }
    list_seen_ = nullptr;
  }
  template <class T, class M, class T2, class M2>
  void operator()(Zip, Type<T> t, std::vector<M>& m, Type<T2> t2, std::vector<M2>& m2, const char* name) {
    if (post_) return;
    const uint64_t n = counts_.get(&m);
    m.clear();
    m2.clear();
    for (uint64_t i = 0; i < n && !r_.failed(); ++i) {
      M a{};
      M2 b{};
      get(t, a, name, 0);
      get(t2, b, name, 0);
      m.push_back(a);
      m2.push_back(b);
    }
  }
  template <class T>
  void operator()(Flags, Type<T> t, const char* name, uint64_t mask) {
    if (post_) return;
    get(t, flags_, name, 0);
    if (!r_.failed() && (flags_ & ~mask))
      r_.refuse(make_error(Errc::protocol_error, "{}: unknown bits 0x{:x}", name, flags_ & ~mask));
  }
  template <class T, class M>
  void operator()(Opt, Type<T> t, std::optional<M>& m, const char* name, uint64_t bit) {
    if (post_) return;
    m.reset();
    if (!(flags_ & bit)) return;
    M x{};
    get(t, x, name, 0);
    m = std::move(x);
  }
  template <class T, class M>
  void operator()(Opt0, Type<T> t, std::optional<M>& m, const char* name, uint64_t bit) {
    if (post_) {
      if (!(flags_ & bit)) m.reset();
      return;
    }
    M x{};
    get(t, x, name, 0);
    m = std::move(x);
  }
  void operator()(Flag, Type<boolean>, bool& m, const char*, uint64_t bit) {
    if (!post_) m = (flags_ & bit) != 0;
  }
  template <class T, class M>
  void operator()(When, Type<T> t, M& m, const char* name, uint64_t bit) {
    if (!post_ && (flags_ & bit)) get(t, m, name, 0);
  }
  void operator()(Rest, std::span<const uint8_t>& m, const char* name) {
    if (!post_) m = r_.bytes(r_.remaining(), name);
  }
  template <class T, class M>
  void operator()(Seq, Type<T> t, std::vector<M>& m, const char* name) {
    if (post_) return;
    constexpr size_t size = sizeof(M);  // fixed-size wire types only: the C++ type has the wire size
    if (r_.remaining() % size != 0) {
      r_.refuse(make_error(Errc::protocol_error, "{}: {} bytes are not a whole number of {}-byte elements", name,
                           r_.remaining(), size));
      return;
    }
    m.assign(r_.remaining() / size, M{});
    for (auto& e : m) get(t, e, name, 0);
  }
  template <class T, class M>
  void operator()(Index, Type<T> t, M& m, const char* name, uint64_t limit) {
    if (post_) return;
    get(t, m, name, 0);
    if (r_.failed()) return;
    if (static_cast<uint64_t>(m) >= limit)
      r_.refuse(make_error(Errc::protocol_error, "{} {} is not below the limit {}", name, m, limit));
    else if (seen_ && (*seen_ & (uint64_t{1} << m)))
      r_.refuse(make_error(Errc::protocol_error, "{} {} given twice", name, m));
    else if (seen_)
      *seen_ |= uint64_t{1} << m;
  }
  template <class T>
  void operator()(Blob, Type<T> t, std::span<const uint8_t>& m, const char* name) {
    if (post_) return;
    uint64_t n = 0;
    get(t, n, name, 0);
    m = {};
    if (!r_.failed()) lengths_->push_back(n);
  }
  template <class T, class M>
  void operator()(Blobs, Type<T>, std::vector<M>& m, const char* name) {
    if (post_ || r_.failed()) return;
    uint64_t total = 0;
    for (uint64_t l : *lengths_) total += l;
    if (total != r_.remaining()) {
      r_.refuse(make_error(Errc::protocol_error, "{}: the lengths announce {} bytes, {} follow", name, total,
                           r_.remaining()));
      return;
    }
    BlobReader br{r_, *lengths_, 0, name};
    for (auto& e : m) br.element(e);
  }

 private:
  // Takes the bytes of an element's BLOB fields (or of the element itself, a `blob`) in the order their lengths came.
  struct BlobReader {
    ByteReader& r;
    const std::vector<uint64_t>& lengths;
    size_t next;
    const char* name;
    void element(std::span<const uint8_t>& b) { b = r.bytes(lengths[next++], name); }
    template <Record R>
    void element(R& x) { visit(*this, x); }
    template <class K, class... X>
    void operator()(K, X&&... x) {
      if constexpr (std::is_same_v<K, Blob>) take(x...);
    }
    template <class T>
    void take(Type<T>, std::span<const uint8_t>& m, const char*) { m = r.bytes(lengths[next++], name); }
  };

  template <class X>
  void get(Type<u8>, X& x, const char* f, uint64_t) { x = static_cast<X>(r_.u8(f)); }
  template <class X>
  void get(Type<u16>, X& x, const char* f, uint64_t) { x = static_cast<X>(r_.u16(f)); }
  template <class X>
  void get(Type<u32>, X& x, const char* f, uint64_t) { x = static_cast<X>(r_.u32(f)); }
  template <class X>
  void get(Type<u64>, X& x, const char* f, uint64_t) { x = static_cast<X>(r_.u64(f)); }
  void get(Type<i32>, int32_t& x, const char* f, uint64_t) { x = r_.i32(f); }
  void get(Type<f32>, float& x, const char* f, uint64_t) { x = r_.f32(f); }
  void get(Type<boolean>, bool& x, const char* f, uint64_t) { x = r_.u8(f) != 0; }
  void get(Type<str8>, std::string& x, const char* f, uint64_t) { x = r_.str8(f); }
  void get(Type<str32>, std::string& x, const char* f, uint64_t max) { x = r_.str32(f, max); }
  // A `blob` list element: its length now (BLOBS takes its bytes).
  void get(Type<blob>, std::span<const uint8_t>& x, const char* f, uint64_t) { (*this)(Blob{}, Type<u32>{}, x, f); }
  template <class E>
    requires std::is_enum_v<E>
  void get(Type<E>, E& x, const char* f, uint64_t) { x = static_cast<E>(r_.u8(f)); }
  // A record inside this one: its BLOB lengths join this record's, its INDEX fields are checked against the list's.
  template <Record R>
  void get(Type<R>, R& x, const char*, uint64_t) {
    Decoder d(r_);
    d.lengths_ = lengths_;
    d.seen_ = list_seen_;
    d.record(x);
  }

  ByteReader& r_;
  uint64_t flags_ = 0;
  bool post_ = false;
  Counts counts_;
  std::vector<uint64_t> own_lengths_;  // BLOB lengths in wire order, when this decoder reads the outermost record
  std::vector<uint64_t>* lengths_;     // where BLOB lengths go: own_lengths_ or the enclosing record's
  uint64_t* seen_ = nullptr;           // INDEX values given in the list this record is an element of (bit per value)
  uint64_t* list_seen_ = nullptr;      // the same for the list being read now
};

template <Record R>
void encode_record(const R& v, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  Encoder(w).record(v);
}

// The record in `in`: all of it (EXACT records) or its start (OPEN records, whose later minors may append fields).
template <Record R>
Result<R> decode_record(std::span<const uint8_t> in) {
  ByteReader r(in);
  R v{};
  Decoder(r).record(v);
  if (auto st = r.status(!Traits<R>::open); !st) return std::move(st).error();
  return v;
}

}  // namespace aisrv::protocol::records
