// aisrv tests — the public detection, segmentation and pose model cases of tests/data/models/cases.json: each
// input is made from a picture of the shared test data with the project's own image pipeline (aisrv::image, the
// preprocessing `aisrv infer --image` uses; its sha256 is pinned, so a change of the pipeline is reported as such),
// a block of zeros or a byte pattern; each expected output is the reference kernels' bytes (TensorFlow Lite Micro's,
// docs/testing.md), kept as a small file or, for large tensors, as its sha256 and one xxh64 per block so that a
// mismatch still says where it is. Shared by the engine's model tests and bench_cpu.
#pragma once

#include <openssl/evp.h>
#include <xxhash.h>

#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "aisrv/image/image.hpp"
#include "aisrv/image/tensor_image.hpp"
#include "testdata.hpp"

#ifndef AISRV_MODEL_CASES
#error "AISRV_MODEL_CASES must name tests/data/models"
#endif

namespace aisrv::test {

struct ModelCaseInput {
  std::string picture;  // test-data path of a picture; empty for zeros / pattern
  image::Preprocess preprocess;
  bool zeros = false;
  int pattern_mul = 0, pattern_add = 0;  // byte k = (k * mul + add) mod 256, when mul != 0
  std::string sha256;
};

struct ModelCaseOutput {
  size_t bytes = 0;
  std::string sha256;
  std::string file;            // tests/data/models/<file> when the bytes are kept
  size_t block_bytes = 0;      // otherwise: one xxh64 per block
  std::vector<uint64_t> blocks;
};

struct ModelCase {
  std::string name, model, reference;
  bool heavy = false;  // a large network: fewer configurations where time is short (ASan, qemu)
  std::vector<ModelCaseInput> inputs;
  std::vector<ModelCaseOutput> outputs;
};

inline std::string model_cases_dir() { return AISRV_MODEL_CASES; }

inline std::vector<ModelCase> load_model_cases() {
  std::ifstream in(model_cases_dir() + "/cases.json");
  if (!in) throw std::runtime_error("cannot read " + model_cases_dir() + "/cases.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<ModelCase> cases;
  for (const auto& c : j.at("cases")) {
    ModelCase m;
    m.name = c.at("name");
    m.model = c.at("model");
    m.reference = c.value("reference", "");
    m.heavy = c.value("heavy", false);
    for (const auto& i : c.at("inputs")) {
      ModelCaseInput x;
      x.sha256 = i.at("sha256");
      if (i.contains("picture")) {
        x.picture = i.at("picture");
        if (i.value("fit", "stretch") == "letterbox") x.preprocess.fit = image::Fit::letterbox;
        if (i.contains("mean")) x.preprocess.mean = {i.at("mean").get<float>()};
        if (i.contains("std")) x.preprocess.std = {i.at("std").get<float>()};
      } else if (i.value("zeros", false)) {
        x.zeros = true;
      } else {
        x.pattern_mul = i.at("pattern_mul");
        x.pattern_add = i.at("pattern_add");
      }
      m.inputs.push_back(std::move(x));
    }
    for (const auto& o : c.at("outputs")) {
      ModelCaseOutput y;
      y.bytes = o.at("bytes");
      y.sha256 = o.at("sha256");
      y.file = o.value("file", "");
      y.block_bytes = o.value("block_bytes", size_t{0});
      for (const auto& b : o.value("block_xxh64", std::vector<std::string>{})) y.blocks.push_back(std::stoull(b, nullptr, 16));
      m.outputs.push_back(std::move(y));
    }
    cases.push_back(std::move(m));
  }
  return cases;
}

inline std::string sha256_hex(std::span<const uint8_t> bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &n, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

// The bytes of input `i` for a tensor described by `tensor`; throws when the picture cannot be made.
inline std::vector<uint8_t> make_case_input(const ModelCaseInput& in, const protocol::TensorInfo& tensor) {
  if (!in.picture.empty()) {
    auto picture = image::read_image(testdata_path(in.picture).string());
    if (!picture) throw std::runtime_error(picture.error().what());
    auto t = image::image_to_tensor(*picture, tensor, in.preprocess);
    if (!t) throw std::runtime_error(t.error().what());
    return std::move(*t);
  }
  std::vector<uint8_t> bytes(tensor.bytes, 0);
  if (!in.zeros)
    for (size_t k = 0; k < bytes.size(); ++k)
      bytes[k] = static_cast<uint8_t>((k * static_cast<size_t>(in.pattern_mul) + static_cast<size_t>(in.pattern_add)) & 0xFF);
  return bytes;
}

// "" when `got` is the expected output; otherwise where and how it differs.
inline std::string compare_case_output(const ModelCaseOutput& want, std::span<const uint8_t> got) {
  if (got.size() != want.bytes) return fmt::format("{} bytes, expected {}", got.size(), want.bytes);
  if (sha256_hex(got) == want.sha256) return "";
  if (!want.file.empty()) {
    const auto bytes = read_file(model_cases_dir() + "/" + want.file);
    size_t first = 0, count = 0;
    for (size_t i = 0; i < bytes.size() && i < got.size(); ++i)
      if (bytes[i] != got[i] && count++ == 0) first = i;
    return fmt::format("{} of {} bytes differ, the first at byte {} (got {}, expected {})", count, got.size(), first,
                       got[first], bytes[first]);
  }
  std::string blocks;
  size_t differing = 0;
  for (size_t b = 0; b < want.blocks.size(); ++b) {
    const size_t at = b * want.block_bytes, n = std::min(want.block_bytes, got.size() - at);
    if (XXH64(got.data() + at, n, 0) != want.blocks[b] && differing++ < 8)
      blocks += fmt::format("{}bytes {}..{}", blocks.empty() ? "" : ", ", at, at + n - 1);
  }
  return fmt::format("sha256 differs; {} of {} blocks differ ({}{})", differing, want.blocks.size(), blocks,
                     differing > 8 ? ", ..." : "");
}

}  // namespace aisrv::test
