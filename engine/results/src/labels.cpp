// aisrv results — names: tasks, label files in both formats ("label" per line, or "ID label" with IDs placing the
// names), the model's metadata entries, and the label a class id gets.
#include <algorithm>
#include <cctype>

#include "decoders.hpp"

namespace aisrv::results {

std::string_view task_name(Task task) {
  switch (task) {
    case Task::classification: return "classification";
    case Task::detection: return "detection";
    case Task::segmentation: return "segmentation";
    case Task::pose: return "pose";
  }
  return "classification";
}

std::optional<Task> task_from_name(std::string_view name) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (n == "classification" || n == "classify") return Task::classification;
  if (n == "detection" || n == "detect") return Task::detection;
  if (n == "segmentation" || n == "segment") return Task::segmentation;
  if (n == "pose") return Task::pose;
  return std::nullopt;
}

namespace {

constexpr size_t kMaxLabelId = 1'000'000;  // an ID format file placing a name further out is refused

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// "ID label": digits, then whitespace or ':' (any mix), then a non-empty name.
struct IdLine {
  size_t id = 0;
  std::string_view name;
};
std::optional<IdLine> id_line(std::string_view line) {
  size_t i = 0;
  size_t id = 0;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) {
    id = std::min<size_t>(id * 10 + static_cast<size_t>(line[i] - '0'), kMaxLabelId + 1);
    ++i;
  }
  if (i == 0 || i == line.size() || !(line[i] == ':' || line[i] == ' ' || line[i] == '\t')) return std::nullopt;
  while (i < line.size() && (line[i] == ':' || line[i] == ' ' || line[i] == '\t')) ++i;
  auto name = trim(line.substr(i));
  if (name.empty()) return std::nullopt;
  return IdLine{id, name};
}

}  // namespace

// The first non-blank line decides the format: "ID label" when it has that form (Coral's rule), else one name per
// line. In the ID format every line must have it; an ID given twice or above 1000000 is refused.
Result<std::vector<std::string>> parse_labels(std::string_view text) {
  std::vector<std::string_view> lines;
  std::vector<size_t> numbers;
  size_t number = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    auto line = trim(text.substr(0, nl));
    ++number;
    if (!line.empty()) {
      lines.push_back(line);
      numbers.push_back(number);
    }
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  std::vector<std::string> labels;
  if (lines.empty() || !id_line(lines.front())) {
    for (auto l : lines) labels.emplace_back(l);
    return labels;
  }
  std::vector<bool> seen;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto l = id_line(lines[i]);
    if (!l)
      return make_error(Errc::invalid_argument,
                        "label line {} ('{}') is not 'ID label' like the lines before it", numbers[i], lines[i]);
    if (l->id > kMaxLabelId)
      return make_error(Errc::invalid_argument, "label line {}: ID above {}", numbers[i], kMaxLabelId);
    if (l->id >= labels.size()) {
      labels.resize(l->id + 1);
      seen.resize(l->id + 1);
    }
    if (seen[l->id]) return make_error(Errc::invalid_argument, "label line {}: ID {} given twice", numbers[i], l->id);
    seen[l->id] = true;
    labels[l->id] = std::string(l->name);
  }
  return labels;
}

std::vector<std::string> metadata_labels(const ModelDescription& model) {
  auto text = detail::metadata_value(model, "labels");
  if (!text) return {};
  auto labels = parse_labels(*text);
  return labels ? std::move(labels).value() : std::vector<std::string>{};
}

namespace detail {

std::optional<std::string_view> metadata_value(const ModelDescription& model, std::string_view key) {
  for (const auto& [k, v] : model.metadata)
    if (k == key) return std::string_view(v);
  return std::nullopt;
}

std::vector<std::string> labels_in_force(const ModelDescription& model, const Options& options) {
  return options.labels.empty() ? metadata_labels(model) : options.labels;
}

std::string label_of(const std::vector<std::string>& labels, int64_t id) {
  return id >= 0 && static_cast<uint64_t>(id) < labels.size() ? labels[static_cast<size_t>(id)] : std::string();
}

}  // namespace detail
}  // namespace aisrv::results
