// Test tool: the C++ side of the cross-codec test (host/python/tests/test_codec.py, CrossCodec). With no argument it
// prints, for every record of records.def and each sample variant, `Name variant hex` of the C++ encoding of a
// record filled by a fixed rule (variant 0: lists empty, options absent; variant 1: two elements per list, every
// option present, byte strings of 3 bytes; variant 2: every list at its limit (at most 16 elements: INFER's 16
// tensors), byte strings empty; scalars numbered in wire order), then INFER's and GET_TIMINGS' samples written through
// the named functions of payloads.hpp (`InferRequest fn`, ...). With `decode` it reads lines `Name hex` from stdin and
// answers each with the hex of the C++ decoder's record encoded again, or `error <errc>`; `-` stands for no bytes.
#include <cstdio>
#include <deque>
#include <iostream>
#include <string>
#include <vector>

#include "aisrv/protocol/records.hpp"

using namespace aisrv::protocol;
using namespace aisrv::protocol::records;

namespace {

std::string hex(const std::vector<uint8_t>& b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t c : b) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> b;
  for (size_t i = 0; i + 1 < s.size(); i += 2)
    b.push_back(static_cast<uint8_t>(std::stoi(s.substr(i, 2), nullptr, 16)));
  return b;
}

// The fill rule the Python test repeats: k counts the values filled, in wire order, across nested records.
class Filler {
 public:

  template <Record R>
  void record(R& v) { visit(*this, v); }

  template <class T, class M>
  void operator()(Field, Type<T> t, M& m, const char*, uint64_t) { fill(t, m); }
  template <class E>
  void operator()(Enum, Type<E>, E& m, const char*, uint64_t max) { m = static_cast<E>(++k_ % (max + 1)); }
  template <class T>
  void operator()(Zero, Type<T>, const char*) {}
  template <class T, class M>
  void operator()(Count, Type<T>, std::vector<M>& m, const char*, uint64_t max, uint64_t) {
    m.resize(variant_ == 0 ? 0 : std::min<uint64_t>(variant_ == 1 ? 2 : 16, max));
  }
  template <class T, class M>
  void operator()(List, Type<T> t, std::vector<M>& m, const char*) {
    for (auto& e : m) fill(t, e);
  }
  template <class T, class M, class T2, class M2>
  void operator()(Zip, Type<T> t, std::vector<M>& m, Type<T2> t2, std::vector<M2>& m2, const char*) {
    m2.resize(m.size());
    for (size_t i = 0; i < m.size(); ++i) {
      fill(t, m[i]);
      fill(t2, m2[i]);
    }
  }
  template <class T>
  void operator()(Flags, Type<T>, const char*, uint64_t) {}
  template <class T, class M>
  void operator()(Opt, Type<T> t, std::optional<M>& m, const char*, uint64_t) { option(t, m); }
  template <class T, class M>
  void operator()(Opt0, Type<T> t, std::optional<M>& m, const char*, uint64_t) { option(t, m); }
  void operator()(Flag, Type<boolean>, bool& m, const char*, uint64_t) { m = variant_ != 0; }
  template <class T, class M>
  void operator()(When, Type<T> t, M& m, const char*, uint64_t) {
    if (variant_) fill(t, m);
  }
  void operator()(Rest, std::span<const uint8_t>& m, const char*) {
    if (!variant_) return;
    const uint64_t k = ++k_;
    m = bytes(k);
  }
  template <class T, class M>
  void operator()(Seq, Type<T> t, std::vector<M>& m, const char*) {
    m.resize(variant_ == 0 ? 0 : variant_ == 1 ? 2 : 16);
    for (auto& e : m) fill(t, e);
  }
  template <class T, class M>
  void operator()(Index, Type<T>, M& m, const char*, uint64_t max) { m = static_cast<M>(++k_ % max); }
  template <class T>
  void operator()(Blob, Type<T>, std::span<const uint8_t>& m, const char*) { m = bytes(k_); }  // k_ not counted
  template <class T, class M>
  void operator()(Blobs, Type<T>, std::vector<M>&, const char*) {}

 private:
  template <class T, class M>
  void option(Type<T> t, std::optional<M>& m) {
    if (!variant_) return;
    M x{};
    fill(t, x);
    m = std::move(x);
  }
  void fill(Type<u8>, uint8_t& x) { x = static_cast<uint8_t>(++k_ & 0x7F); }
  void fill(Type<u16>, uint16_t& x) { x = static_cast<uint16_t>(0x0100 + ++k_); }
  void fill(Type<u32>, uint32_t& x) { x = static_cast<uint32_t>(0x01020300 + ++k_); }
  void fill(Type<u64>, uint64_t& x) { x = 0x0102030405060700ull + ++k_; }
  void fill(Type<i32>, int32_t& x) { x = -static_cast<int32_t>(++k_); }
  void fill(Type<f32>, float& x) { x = static_cast<float>(++k_) + 0.5f; }
  void fill(Type<boolean>, bool& x) { x = (++k_ % 2) == 1; }
  void fill(Type<str8>, std::string& x) { x = "s" + std::to_string(++k_); }
  void fill(Type<str32>, std::string& x) { x = "long value " + std::to_string(++k_); }
  template <class E>
    requires std::is_enum_v<E>
  void fill(Type<E>, E& x) { x = static_cast<E>(++k_ % 9); }
  void fill(Type<blob>, std::span<const uint8_t>& x) { x = bytes(k_); }
  template <Record R>
  void fill(Type<R>, R& x) { Filler(variant_, k_, store_).record(x); }

  // Variant 1: the 3 bytes k, k+1, k+2; variant 2: none. Kept alive for the record's views.
  std::span<const uint8_t> bytes(uint64_t k) {
    if (variant_ != 1) return {};
    store_.push_back({static_cast<uint8_t>(k), static_cast<uint8_t>(k + 1), static_cast<uint8_t>(k + 2)});
    return store_.back();
  }

 public:
  Filler(int variant, uint64_t& k, std::deque<std::vector<uint8_t>>& store) : variant_(variant), k_(k), store_(store) {}

 private:
  int variant_;
  uint64_t& k_;
  std::deque<std::vector<uint8_t>>& store_;
};

template <Record R>
void dump(int variant) {
  uint64_t k = 0;
  R v{};
  std::deque<std::vector<uint8_t>> store;
  Filler filler(variant, k, store);
  filler.record(v);
  std::vector<uint8_t> out;
  encode_record(v, out);
  std::printf("%s %d %s\n", std::string(Traits<R>::name).c_str(), variant, out.empty() ? "-" : hex(out).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "decode") {
    std::string name, h;
    while (std::cin >> name >> h) {
      const std::vector<uint8_t> in = unhex(h == "-" ? "" : h);
      bool known = false;
      for_each_record([&]<class R>(Type<R>) {
        if (Traits<R>::name != name) return;
        known = true;
        auto r = decode_record<R>(in);
        std::vector<uint8_t> out;
        if (r) encode_record(*r, out);
        std::printf("%s\n", r ? (out.empty() ? "-" : hex(out).c_str())
                              : ("error " + std::string(aisrv::errc_name(r.error().code))).c_str());
      });
      if (!known) std::printf("unknown record %s\n", name.c_str());
      std::fflush(stdout);
    }
    return 0;
  }
  for (int variant = 0; variant < 3; ++variant) for_each_record([&]<class R>(Type<R>) { dump<R>(variant); });
  // The named functions servers and clients call: two inputs given in reverse order (4 bytes, an empty one), the
  // answer likewise; timings of three layers, the last above u32 (saturated).
  const std::vector<uint8_t> a{0x0a, 0x0b, 0x0c, 0x0d};
  const std::vector<InferTensor> inputs{{1, a}, {0, {}}};
  std::vector<uint8_t> request{0xEE}, answer{0xEE}, timings;  // the request is appended, the answer replaces
  encode_infer_request(inputs, request);
  const std::vector<std::span<const uint8_t>> outputs{a, {}};
  encode_infer_answer(outputs, answer);
  const std::vector<LayerTime> layers{{"a", "CONV_2D", 7}, {"b", "ADD", 0}, {"c", "SOFTMAX", 0x100000000ull}};
  encode_timings(layers, timings);
  std::printf("InferRequest fn %s\nInferAnswer fn %s\nTimings fn %s\n", hex(request).c_str(), hex(answer).c_str(),
              hex(timings).c_str());
  return 0;
}
