// aisrv tests — one operator through the whole CPU engine: a small model built with the writer, loaded by a
// CpuBackend (kernels=ref, and kernels=opt at every SIMD level of this processor on 1 and 3 threads), run on given
// input bytes; the outputs come back as bytes. run_everywhere() also checks that every backend gives the reference
// backend's bytes, so an operator test written against it covers ref and opt at once.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "test_models.hpp"

namespace aisrv::test {

using Bytes = std::vector<uint8_t>;

// Little-endian bytes of typed values, and back.
template <typename T>
Bytes bytes_of(const std::vector<T>& values) {
  Bytes b(values.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), values.data(), b.size());
  return b;
}
template <typename T>
std::vector<T> values_of(const Bytes& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

// An activation tensor without quantization (float32, int32, int64, bool).
inline int32_t plain_tensor(tw::ModelBuilder& b, const char* name, DType type, std::vector<int32_t> shape) {
  return b.add_tensor(tw::TensorDef{name, type, std::move(shape), std::nullopt, {}, std::nullopt, false});
}

// Loads `model` on `backend`; the load error's message, or "" when it loads.
inline std::string load_error(engine::cpu::CpuBackend& backend, const Bytes& model) {
  auto info = backend.load(model, {});
  return info.ok() ? std::string() : info.error().message;
}
// Loads `model` with kernels=ref; the load error's message, or "" when it loads.
inline std::string load_error(const Bytes& model) {
  auto backend = engine::cpu::CpuBackend::create(engine::cpu::CpuOptions{.kernels = "ref"});
  REQUIRE(backend.ok());
  return load_error(**backend, model);
}

// Runs `model` once on `backend` with these input bytes (one entry per graph input, each exactly the input's size);
// returns every output's bytes. REQUIREs that the model loads and runs.
inline std::vector<Bytes> run_model(engine::cpu::CpuBackend& backend, const Bytes& model,
                                    const std::vector<Bytes>& inputs) {
  auto info = backend.load(model, {});
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? "" : info.error().what()));
  REQUIRE(info->inputs.size() == inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto in = backend.input(i);
    REQUIRE_MESSAGE(in.size() == inputs[i].size(), "input " << i << " is " << in.size() << " bytes, given "
                                                            << inputs[i].size());
    std::copy(inputs[i].begin(), inputs[i].end(), in.begin());
  }
  auto timings = backend.invoke({});
  REQUIRE_MESSAGE(timings.ok(), (timings.ok() ? "" : timings.error().what()));
  std::vector<Bytes> outputs;
  for (size_t k = 0; k < info->outputs.size(); ++k) {
    const auto out = backend.output(k);
    outputs.emplace_back(out.begin(), out.end());
  }
  return outputs;
}

// Runs `model` with kernels=ref; returns its outputs.
inline std::vector<Bytes> run_ref(const Bytes& model, const std::vector<Bytes>& inputs) {
  auto backend = engine::cpu::CpuBackend::create(engine::cpu::CpuOptions{.kernels = "ref"});
  REQUIRE(backend.ok());
  return run_model(**backend, model, inputs);
}

// The error of an inference that fails (the model must load); "" when it succeeds.
inline std::string invoke_error(const Bytes& model, const std::vector<Bytes>& inputs, const std::string& kernels = "ref") {
  auto backend = engine::cpu::CpuBackend::create(engine::cpu::CpuOptions{.kernels = kernels});
  REQUIRE(backend.ok());
  auto info = (*backend)->load(model, {});
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? "" : info.error().what()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto in = (*backend)->input(i);
    REQUIRE(in.size() == inputs[i].size());
    std::copy(inputs[i].begin(), inputs[i].end(), in.begin());
  }
  auto timings = (*backend)->invoke({});
  return timings.ok() ? std::string() : timings.error().message;
}

// Runs `model` with kernels=ref, then kernels=opt at every SIMD level on 1 and 3 threads, and with verify=on; CHECKs
// that every run gives the reference's bytes. Returns the reference's outputs.
inline std::vector<Bytes> run_everywhere(const Bytes& model, const std::vector<Bytes>& inputs) {
  using namespace engine::cpu;
  const std::vector<Bytes> want = run_ref(model, inputs);
  for (SimdLevel level : available_simd_levels())
    for (size_t threads : {size_t{1}, size_t{3}}) {
      CpuOptions o;
      o.threads = threads;
      CpuBackend backend(o, make_optimized_kernel_backend(level, threads), nullptr);
      const std::vector<Bytes> got = run_model(backend, model, inputs);
      REQUIRE(got.size() == want.size());
      for (size_t k = 0; k < want.size(); ++k)
        CHECK_MESSAGE(got[k] == want[k], "output " << k << " of kernels=opt (" << simd_level_name(level) << ", "
                                                   << threads << " threads) differs from kernels=ref");
    }
  auto verify = CpuBackend::create(CpuOptions{.verify = true});
  REQUIRE(verify.ok());
  const std::vector<Bytes> checked = run_model(**verify, model, inputs);
  for (size_t k = 0; k < want.size(); ++k) CHECK(checked[k] == want[k]);
  return want;
}

}  // namespace aisrv::test
