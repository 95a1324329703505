// aisrv phy frigate — detections into Frigate's 20x6 rows.
#include "frigate_rows.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace aisrv::phy::frigate {

namespace {
float unit(double v, uint32_t size) {
  if (size == 0 || !std::isfinite(v)) return 0.0f;
  return static_cast<float>(std::clamp(v / size, 0.0, 1.0));
}
}  // namespace

size_t fill_rows(std::span<const results::Detection> detections, uint32_t width, uint32_t height, float threshold,
                 Rows& rows) {
  rows.fill(0.0f);
  std::vector<const results::Detection*> order;
  order.reserve(detections.size());
  for (const auto& d : detections)
    if (std::isfinite(d.score)) order.push_back(&d);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->score > b->score; });
  size_t n = 0;
  for (const auto* d : order) {
    if (n == kRows || d->score < threshold) break;
    float* r = &rows[n * kRowValues];
    r[0] = static_cast<float>(d->class_id);
    r[1] = static_cast<float>(d->score);
    r[2] = unit(std::min(d->box.y0, d->box.y1), height);
    r[3] = unit(std::min(d->box.x0, d->box.x1), width);
    r[4] = unit(std::max(d->box.y0, d->box.y1), height);
    r[5] = unit(std::max(d->box.x0, d->box.x1), width);
    ++n;
  }
  return n;
}

}  // namespace aisrv::phy::frigate
