// Test tool: the C++ side of the cross-codec test (host/python/tests/test_codec.py, CrossCodec). With no argument it
// prints, for every record of records.def and both sample variants, `Name variant hex` of the C++ encoding of a
// record filled by a fixed rule (variant 0: lists empty, options absent; variant 1: two elements per list, every
// option present; scalars numbered in wire order), then samples of the INFER framings. With `decode` it reads lines
// `Name hex` from stdin and answers each with the hex of the C++ decoder's record encoded again, or `error <errc>`.
#include <cstdio>
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
  Filler(int variant, uint64_t& k) : variant_(variant), k_(k) {}

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
    m.resize(variant_ ? std::min<uint64_t>(2, max) : 0);
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
    rest_ = {static_cast<uint8_t>(k), static_cast<uint8_t>(k + 1), static_cast<uint8_t>(k + 2)};
    m = rest_;
  }

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
  template <Record R>
  void fill(Type<R>, R& x) { Filler(variant_, k_).record(x); }

  int variant_;
  uint64_t& k_;
  std::vector<uint8_t> rest_;
};

template <Record R>
void dump(int variant) {
  uint64_t k = 0;
  R v{};
  Filler filler(variant, k);
  filler.record(v);
  std::vector<uint8_t> out;
  encode_record(v, out);
  std::printf("%s %d %s\n", std::string(Traits<R>::name).c_str(), variant, hex(out).c_str());
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
  for (int variant = 0; variant < 2; ++variant) for_each_record([&]<class R>(Type<R>) { dump<R>(variant); });
  // The INFER framings, written by hand on both sides: two inputs (4 bytes, 1 byte), the answer likewise.
  const std::vector<uint8_t> a{0x0a, 0x0b, 0x0c, 0x0d}, b{0x01};
  const std::vector<InferTensor> inputs{{0, a}, {1, b}};
  std::vector<uint8_t> request, answer;
  encode_infer_request(inputs, request);
  const std::vector<std::span<const uint8_t>> outputs{a, b};
  encode_infer_answer(outputs, answer);
  std::printf("InferRequest 1 %s\nInferAnswer 1 %s\n", hex(request).c_str(), hex(answer).c_str());
  return 0;
}
