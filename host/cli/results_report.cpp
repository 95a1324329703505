// aisrv CLI — decoded results in words or JSON (results_report.hpp).
#include "results_report.hpp"

#include <fmt/format.h>

#include <cmath>

namespace aisrv::cli {

namespace {

std::string name_of(int32_t id, const std::string& label) {
  return label.empty() ? fmt::format("class {}", id) : label;
}

long px(double v) { return std::lround(v); }

}  // namespace

nlohmann::json report_results(const results::Decoded& found, bool json) {
  nlohmann::json j{{"task", std::string(results::task_name(found.task))}, {"decoder", found.decoder}};
  switch (found.task) {
    case results::Task::detection: {
      nlohmann::json list = nlohmann::json::array();
      if (!json) fmt::print("{} object{} found:\n", found.detections.size(), found.detections.size() == 1 ? "" : "s");
      for (const auto& d : found.detections) {
        if (!json)
          fmt::print("  {} {:.2f} at ({},{})-({},{})\n", name_of(d.class_id, d.label), d.score, px(d.box.x0),
                     px(d.box.y0), px(d.box.x1), px(d.box.y1));
        list.push_back({{"class_id", d.class_id}, {"label", d.label}, {"score", d.score},
                        {"box", {d.box.x0, d.box.y0, d.box.x1, d.box.y1}}});
      }
      j["detections"] = list;
      break;
    }
    case results::Task::classification: {
      nlohmann::json list = nlohmann::json::array();
      if (!json) fmt::print("top classes:\n");
      for (const auto& c : found.classes) {
        if (!json) fmt::print("  {} {:.4f}\n", name_of(c.index, c.label), c.score);
        list.push_back({{"index", c.index}, {"label", c.label}, {"score", c.score}});
      }
      j["classes"] = list;
      break;
    }
    case results::Task::segmentation: {
      nlohmann::json present = nlohmann::json::array();
      if (found.mask) {
        if (!json) fmt::print("mask {}x{}, classes present:\n", found.mask->width, found.mask->height);
        for (const auto& a : found.mask->present) {
          if (!json)
            fmt::print("  {} {:.1f}% ({} cells)\n", name_of(a.class_id, a.label), 100.0 * a.fraction, a.pixels);
          present.push_back({{"class_id", a.class_id}, {"label", a.label}, {"pixels", a.pixels},
                             {"fraction", a.fraction}});
        }
        j["mask"] = {{"width", found.mask->width}, {"height", found.mask->height}, {"present", present}};
      }
      break;
    }
    case results::Task::pose: {
      nlohmann::json list = nlohmann::json::array();
      if (!json) fmt::print("keypoints:\n");
      for (const auto& k : found.keypoints) {
        if (!json) fmt::print("  {:<15} {:.2f} at ({},{})\n", k.name, k.score, px(k.x), px(k.y));
        list.push_back({{"name", k.name}, {"score", k.score}, {"x", k.x}, {"y", k.y}});
      }
      j["keypoints"] = list;
      break;
    }
  }
  return j;
}

}  // namespace aisrv::cli
