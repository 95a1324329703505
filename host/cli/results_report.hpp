// aisrv CLI — decoded results (results::Decoded) shown the way people read them: the objects found with their boxes,
// the top classes, the classes of a mask with their areas, the keypoints of a pose; or the same as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include "aisrv/results/results.hpp"

namespace aisrv::cli {

// Prints (unless `json`) what was found; returns its JSON form.
nlohmann::json report_results(const results::Decoded& found, bool json);

}  // namespace aisrv::cli
