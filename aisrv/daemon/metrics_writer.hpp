// aisrvd — writes the Prometheus text exposition format 0.0.4 (docs/metrics.md): metric families with their # HELP
// and # TYPE lines, samples with escaped label values, histograms as cumulative _bucket{le=...} series plus _sum and
// _count. It checks names and refuses a family twice, so parts of the daemon that add their own families (a
// MetricsSource) cannot break the page.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aisrv::daemon {

enum class MetricType { counter, gauge, histogram, untyped };

// Label name/value pairs of one sample, in the order written.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class MetricsWriter {
 public:
  // Starts family `name` (a counter's name ends in _total). False, and the samples until the next family are
  // dropped, when the name is not a valid metric name or the family was already written.
  bool family(std::string_view name, MetricType type, std::string_view help);
  // One sample of the current family: `suffix` is appended to the family's name ("" for counters and gauges).
  void sample(const MetricLabels& labels, double value, std::string_view suffix = {});
  void sample(const MetricLabels& labels, uint64_t value, std::string_view suffix = {});
  // A histogram of the current family: `upper_bounds` ascending, `buckets` one count per bound plus the +Inf bucket
  // (not cumulative: the writer sums them up), `sum` of the observations.
  void histogram(const MetricLabels& labels, std::span<const double> upper_bounds, std::span<const uint64_t> buckets,
                 double sum);

  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

  // The exposition format's escaping: label values escape \, " and newline; HELP text \ and newline.
  static std::string escape_label_value(std::string_view v);
  static std::string escape_help(std::string_view v);
  static bool valid_metric_name(std::string_view name);
  static bool valid_label_name(std::string_view name);
  // A sample value: integers without a fraction, +Inf / -Inf / NaN spelt as the format wants.
  static std::string format_value(double v);

 private:
  void write_sample(std::string_view suffix, const MetricLabels& labels, const std::string* extra_le,
                    const std::string& value);

  std::string out_;
  std::string current_;  // the family samples go to; empty: dropping
  MetricType type_ = MetricType::untyped;
  std::vector<std::string> written_;
};

// A part of the daemon that adds its own families to /metrics (e.g. the Frigate endpoint's counters). Runs on the
// metrics listener's thread for every scrape; it must only read (atomics, snapshots) and not block.
using MetricsSource = std::function<void(MetricsWriter&)>;

}  // namespace aisrv::daemon
