// aisrvd — Prometheus text exposition format 0.0.4 writer.
#include "metrics_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace aisrv::daemon {

namespace {
bool name_char(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}
const char* type_name(MetricType t) {
  switch (t) {
    case MetricType::counter: return "counter";
    case MetricType::gauge: return "gauge";
    case MetricType::histogram: return "histogram";
    case MetricType::untyped: break;
  }
  return "untyped";
}
}  // namespace

bool MetricsWriter::valid_metric_name(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, true)) return false;
  return true;
}

bool MetricsWriter::valid_label_name(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;  // reserved for Prometheus itself
  for (size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, false)) return false;
  return true;
}

std::string MetricsWriter::escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string MetricsWriter::escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string MetricsWriter::format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

bool MetricsWriter::family(std::string_view name, MetricType type, std::string_view help) {
  current_.clear();
  if (!valid_metric_name(name)) return false;
  // A histogram's series names (_bucket, _sum, _count) must not collide with another family either.
  std::vector<std::string> names{std::string(name)};
  if (type == MetricType::histogram)
    for (const char* s : {"_bucket", "_sum", "_count"}) names.push_back(std::string(name) + s);
  for (const auto& n : names)
    if (std::find(written_.begin(), written_.end(), n) != written_.end()) return false;
  written_.insert(written_.end(), names.begin(), names.end());
  current_ = std::string(name);
  type_ = type;
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape_help(help), name, type_name(type));
  return true;
}

void MetricsWriter::write_sample(std::string_view suffix, const MetricLabels& labels, const std::string* extra_le,
                                 const std::string& value) {
  out_ += current_;
  out_ += suffix;
  if (!labels.empty() || extra_le) {
    out_ += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!valid_label_name(k) || (extra_le && k == "le")) continue;
      out_ += fmt::format("{}{}=\"{}\"", first ? "" : ",", k, escape_label_value(v));
      first = false;
    }
    if (extra_le) out_ += fmt::format("{}le=\"{}\"", first ? "" : ",", *extra_le);
    out_ += '}';
  }
  out_ += ' ';
  out_ += value;
  out_ += '\n';
}

void MetricsWriter::sample(const MetricLabels& labels, double value, std::string_view suffix) {
  if (current_.empty() || type_ == MetricType::histogram) return;
  write_sample(suffix, labels, nullptr, format_value(value));
}

void MetricsWriter::sample(const MetricLabels& labels, uint64_t value, std::string_view suffix) {
  if (current_.empty() || type_ == MetricType::histogram) return;
  write_sample(suffix, labels, nullptr, fmt::format("{}", value));
}

void MetricsWriter::histogram(const MetricLabels& labels, std::span<const double> upper_bounds,
                              std::span<const uint64_t> buckets, double sum) {
  if (current_.empty() || type_ != MetricType::histogram || buckets.size() != upper_bounds.size() + 1) return;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    cumulative += buckets[i];
    const std::string le = format_value(upper_bounds[i]);
    write_sample("_bucket", labels, &le, fmt::format("{}", cumulative));
  }
  cumulative += buckets.back();
  const std::string inf = "+Inf";
  write_sample("_bucket", labels, &inf, fmt::format("{}", cumulative));
  write_sample("_sum", labels, nullptr, format_value(sum));
  write_sample("_count", labels, nullptr, fmt::format("{}", cumulative));
}

}  // namespace aisrv::daemon
