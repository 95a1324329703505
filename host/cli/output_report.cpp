// aisrv CLI — output tensors shown as text or JSON (output_report.hpp).
#include "output_report.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "aisrv/results/results.hpp"

#include "tensor_format.hpp"

namespace aisrv::cli {

Result<std::vector<std::string>> read_labels(const std::string& path) {
  if (path.empty()) return std::vector<std::string>{};
  std::ifstream in(path);
  if (!in) return make_error(Errc::invalid_argument, "cannot read labels file {}", path);
  std::ostringstream text;
  text << in.rdbuf();
  auto labels = results::parse_labels(text.str());
  if (!labels) return make_error(labels.error().code, "labels file {}: {}", path, labels.error().message);
  return labels;
}

// Prints or collects one output tensor; returns its JSON form.
nlohmann::json report_output(const protocol::TensorInfo& t, size_t index, std::span<const uint8_t> bytes,
                             const OutputArgs& args, const std::vector<std::string>& labels, bool json) {
  const auto raw = element_values(t, bytes);
  const auto values = dequantized(t, bytes);
  nlohmann::json j{{"index", index}, {"name", t.name}, {"dtype", std::string(protocol::dtype_name(t.dtype))},
                   {"shape", t.shape}, {"bytes", bytes.size()}};
  auto label_of = [&](size_t i) { return i < labels.size() ? labels[i] : std::string(); };
  if (values.size() <= 10) {
    j["raw"] = raw;
    j["values"] = values;
    if (!json) {
      std::string line;
      for (size_t i = 0; i < values.size(); ++i)
        line += fmt::format("{}{}: {:g} ({:g}){}", i ? ", " : "", i, raw[i], values[i],
                            label_of(i).empty() ? "" : " [" + label_of(i) + "]");
      fmt::print("output {} '{}' {}: {}\n", index, t.name, shape_text(t.shape), line);
    }
  } else if (!json) {
    fmt::print("output {} '{}' {} ({} values), top {}:\n", index, t.name, shape_text(t.shape), values.size(), args.top);
  }
  if (!values.empty()) {
    const auto best = top_k(values, args.top);
    nlohmann::json top = nlohmann::json::array();
    for (size_t i : best) {
      top.push_back({{"index", i}, {"raw", raw[i]}, {"value", values[i]}, {"label", label_of(i)}});
      if (!json && values.size() > 10)
        fmt::print("  {:>6}: {:>10.6f} (raw {:g}){}\n", i, values[i], raw[i],
                   label_of(i).empty() ? "" : "  " + label_of(i));
    }
    j["top"] = top;
    if (!json && values.size() <= 10 && values.size() > 1)
      fmt::print("  argmax: {}{}\n", best[0], label_of(best[0]).empty() ? "" : " [" + label_of(best[0]) + "]");
  }
  return j;
}

}  // namespace aisrv::cli
