// aisrv hailo8/hef — `hef info`: the text `hailortcli parse-hef` of HailoRT 4.23 prints for a HEF (format in
// hailo8-facts.md §1.6; vstream lines by default, stream lines with `streams`), and a JSON form with everything the
// reader knows. A directory is described file by file like hailortcli does (80 '*' and "Parsing <path>:" before
// each *.hef), in name order.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aisrv/engine/hailo8/hef/types.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::hef {

struct DescribeOptions {
  bool streams = false;   // hailortcli --parse-streams
  bool vstreams = true;   // hailortcli --parse-vstreams (its default)
};

// The parse-hef text of one HEF (each line ends with '\n').
Result<std::string> describe(const Hef& hef, const DescribeOptions& options = {});

// Everything about one HEF as JSON (container, header, extensions, groups, networks, streams, vstreams, ops).
Result<nlohmann::json> to_json(const Hef& hef);

// Serialises JSON from to_json()/describe_path(); strings from the HEF that are not valid UTF-8 are written with
// U+FFFD instead of throwing.
std::string dump_json(const nlohmann::json& j, int indent = 2);

// A file or a directory described as hailortcli would. Files that fail to parse are listed in `errors`
// ("<path>: <message>") and described no further; `text` holds what could be described.
struct PathDescription {
  std::string text;
  nlohmann::json json;  // an object for a file, an array of {"path", "hef"|"error"} for a directory
  std::vector<std::string> errors;
};
// Errc::not_found when the path does not exist or a directory holds no *.hef file.
Result<PathDescription> describe_path(const std::filesystem::path& path, const DescribeOptions& options = {});

}  // namespace aisrv::engine::hailo8::hef
