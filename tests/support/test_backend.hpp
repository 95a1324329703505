// aisrv tests — a test double of InferenceBackend (tests only; the product ships no fake engine).
//
// Its "model" is a small binary description, so tests can make models of any shape:
//   "AIST" | u8 inputs | u8 outputs | u16 layers | u32 delay_us per layer | u32 size per input | u32 size per output
//   [| u32 padding length | padding bytes]   (optional: makes a model of any size, e.g. for chunked uploads)
// invoke() computes output j byte k = input0[k % size0] + j + 1 (mod 256), so data flow is checkable; an input whose
// first byte is 0xEE makes invoke fail ("poisoned input"); each layer sleeps delay_us and checks for cancel.
// It also asserts that it is never called concurrently (the interpreter must serialise calls per engine).
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "aisrv/engine/backend.hpp"
#include "aisrv/protocol/bytes.hpp"

namespace aisrv::test {

struct TestModelSpec {
  std::vector<uint32_t> inputs{4};
  std::vector<uint32_t> outputs{4};
  uint16_t layers = 3;
  uint32_t delay_us = 0;
  uint32_t padding = 0;  // extra bytes at the end of the model (0: none)
};

inline std::vector<uint8_t> make_test_model(const TestModelSpec& s) {
  std::vector<uint8_t> m{'A', 'I', 'S', 'T'};
  protocol::ByteWriter w(m);
  w.u8(static_cast<uint8_t>(s.inputs.size()));
  w.u8(static_cast<uint8_t>(s.outputs.size()));
  w.u16(s.layers);
  w.u32(s.delay_us);
  for (auto v : s.inputs) w.u32(v);
  for (auto v : s.outputs) w.u32(v);
  if (s.padding) {
    w.u32(s.padding);
    for (uint32_t i = 0; i < s.padding; ++i) w.u8(static_cast<uint8_t>(i * 31 + 7));
  }
  return m;
}

// Expected output j for a given input 0.
inline std::vector<uint8_t> expected_output(const std::vector<uint8_t>& input0, uint32_t size, uint32_t j) {
  std::vector<uint8_t> out(size);
  for (uint32_t k = 0; k < size; ++k)
    out[k] = input0.empty() ? static_cast<uint8_t>(j + 1) : static_cast<uint8_t>(input0[k % input0.size()] + j + 1);
  return out;
}

class TestBackend final : public engine::InferenceBackend {
 public:
  std::string_view kind() const override { return "test"; }
  std::string options() const override { return "double"; }

  Result<engine::ModelInfo> load(std::span<const uint8_t> model, const engine::LoadOptions&) override {
    Guard g(active_);
    unload_locked();
    if (model.size() < 12 || std::memcmp(model.data(), "AIST", 4) != 0)
      return make_error(Errc::model_error, "not a test model (magic 'AIST' missing)");
    protocol::ByteReader r(model.subspan(4));
    const uint8_t ni = r.u8("inputs"), no = r.u8("outputs");
    layers_ = r.u16("layers");
    delay_us_ = r.u32("delay");
    engine::ModelInfo info;
    info.format = "test";
    info.layer_count = layers_;
    for (uint8_t i = 0; i < ni; ++i) info.inputs.push_back(desc("in" + std::to_string(i), r.u32("input size")));
    for (uint8_t i = 0; i < no; ++i) info.outputs.push_back(desc("out" + std::to_string(i), r.u32("output size")));
    if (!r.failed() && r.remaining() > 0) (void)r.bytes(r.u32("padding length"), "padding");
    if (auto st = r.status(); !st) return make_error(Errc::model_error, "test model: {}", st.error().message);
    for (auto& t : info.inputs) {
      if (t.bytes > (64u << 20)) return make_error(Errc::model_error, "test model: tensor too large");
      inputs_.emplace_back(t.bytes);
    }
    for (auto& t : info.outputs) {
      if (t.bytes > (64u << 20)) return make_error(Errc::model_error, "test model: tensor too large");
      outputs_.emplace_back(t.bytes);
    }
    info.arena_bytes = 0;
    return info;
  }

  void unload() override {
    Guard g(active_);
    unload_locked();
  }

  std::span<uint8_t> input(size_t i) override { return i < inputs_.size() ? std::span(inputs_[i]) : std::span<uint8_t>{}; }
  std::span<const uint8_t> output(size_t i) const override {
    return i < outputs_.size() ? std::span<const uint8_t>(outputs_[i]) : std::span<const uint8_t>{};
  }

  Result<std::vector<engine::LayerTime>> invoke(const engine::InvokeContext& ctx) override {
    Guard g(active_);
    invocations.fetch_add(1);
    std::vector<engine::LayerTime> layers;
    for (uint16_t l = 0; l < layers_; ++l) {
      const auto t0 = std::chrono::steady_clock::now();
      if (delay_us_) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
      if (ctx.cancelled()) return make_error(Errc::cancelled, "cancelled at layer {}", l);
      layers.push_back({"layer" + std::to_string(l), "TEST_OP",
                        static_cast<uint64_t>((std::chrono::steady_clock::now() - t0).count())});
    }
    const std::vector<uint8_t> empty;
    const auto& in0 = inputs_.empty() ? empty : inputs_[0];
    if (!in0.empty() && in0[0] == 0xEE) {
      if (ctx.log) ctx.log("test backend: poisoned input byte 0xEE");
      return make_error(Errc::infer_error, "poisoned input");
    }
    for (size_t j = 0; j < outputs_.size(); ++j)
      outputs_[j] = expected_output(in0, static_cast<uint32_t>(outputs_[j].size()), static_cast<uint32_t>(j));
    return layers;
  }

  std::atomic<int> invocations{0};

 private:
  // Throws (fails the test) if two calls overlap: the interpreter must serialise them.
  struct Guard {
    explicit Guard(std::atomic<bool>& f) : flag(f) {
      if (flag.exchange(true)) throw std::logic_error("TestBackend called concurrently");
    }
    ~Guard() { flag.store(false); }
    std::atomic<bool>& flag;
  };
  static engine::TensorDesc desc(std::string name, uint32_t bytes) {
    engine::TensorDesc t;
    t.name = std::move(name);
    t.dtype = protocol::DType::uint8;
    t.shape = {1, static_cast<int32_t>(bytes)};
    t.bytes = bytes;
    t.scale = {0.5f};
    t.zero_point = {3};
    return t;
  }
  void unload_locked() {
    inputs_.clear();
    outputs_.clear();
    layers_ = 0;
    delay_us_ = 0;
  }

  std::atomic<bool> active_{false};
  std::vector<std::vector<uint8_t>> inputs_, outputs_;
  uint16_t layers_ = 0;
  uint32_t delay_us_ = 0;
};

}  // namespace aisrv::test
