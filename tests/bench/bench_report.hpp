// aisrv benchmarks — the one-line report every benchmark prints:
//   bench NAME: VALUE UNIT vs BASELINE VALUE UNIT = RATIO x
// plus a Google Benchmark reporter that collects real time per iteration by benchmark name.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace aisrv::bench {

// `ratio` is computed by the caller (value / baseline, whichever direction the figure has); printed as given.
inline void report(const std::string& name, double value, const std::string& unit, const std::string& baseline_name,
                   double baseline, const std::string& baseline_unit, double ratio) {
  std::printf("bench %s: %.3f %s vs %s %.3f %s = %.3f x\n", name.c_str(), value, unit.c_str(), baseline_name.c_str(),
              baseline, baseline_unit.c_str(), ratio);
  std::fflush(stdout);
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

// Collects the real time per iteration (ns) of each Google Benchmark run, and prints nothing itself.
class Collector : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs)
      if (r.run_type == Run::RT_Iteration) ns_[r.run_name.function_name] = r.GetAdjustedRealTime();
  }
  double ns(const std::string& name) const {
    auto it = ns_.find(name);
    return it == ns_.end() ? 0 : it->second;
  }

 private:
  std::map<std::string, double> ns_;
};

}  // namespace aisrv::bench
