// aisrv CLI — how output tensors are shown: values (raw and dequantized) for small tensors, the top-k with labels
// for large ones, in text or as JSON (infer, acquire single).
#pragma once

#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <vector>

#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::cli {

struct OutputArgs {
  std::vector<std::string> outputs;  // files for output tensors 0, 1, ...
  std::string labels;                // one label per line
  unsigned top = 5;
};

// Class names from a label file (one per line, or "ID name" lines; results::parse_labels); an empty path gives none.
Result<std::vector<std::string>> read_labels(const std::string& path);

// Prints (unless `json`) one output tensor; returns its JSON form.
nlohmann::json report_output(const protocol::TensorInfo& t, size_t index, std::span<const uint8_t> bytes,
                             const OutputArgs& args, const std::vector<std::string>& labels, bool json);

}  // namespace aisrv::cli
