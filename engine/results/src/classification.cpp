// aisrv results — classification: the top classes of one score vector ([C], [1,C], [1,1,1,C]), dequantized and
// reported as they are (probabilities or logits alike; no softmax is applied). Highest score first, equal scores in
// class order; NaN is never selected; the threshold (when given) is a minimum score; top 5 unless told.
#include <algorithm>
#include <cmath>

#include "decoders.hpp"

namespace aisrv::results::detail {

Status decode_classification(const Context& c, Decoded& out) {
  const Tensor& t = c.tensors[c.plan.output];
  const size_t max = c.options.max_results ? c.options.max_results : kClassificationTop;
  std::vector<std::pair<double, int32_t>> scores;
  scores.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    const double s = t.at(i);
    if (std::isnan(s) || (c.options.threshold >= 0 && !(s >= c.options.threshold))) continue;
    scores.emplace_back(s, static_cast<int32_t>(i));
  }
  auto better = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  const size_t n = std::min(max, scores.size());
  std::partial_sort(scores.begin(), scores.begin() + static_cast<std::ptrdiff_t>(n), scores.end(), better);
  for (size_t i = 0; i < n; ++i)
    out.classes.push_back(ClassScore{scores[i].second, label_of(c.labels, scores[i].second), scores[i].first});
  return ok();
}

}  // namespace aisrv::results::detail
