// aisrv hailo8/hef — the parse-hef text (HailoRT 4.23 Hef::get_description, get_shape_str and the op description
// split) and the JSON form of a HEF.
#include "aisrv/engine/hailo8/hef/describe.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "aisrv/engine/hailo8/hef/reader.hpp"

namespace aisrv::engine::hailo8::hef {
namespace {

constexpr std::string_view kTab = "    ";

std::string tabs(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += kTab;
  return s;
}

std::string stream_shape(const StreamInfo& s) {
  const std::string head = fmt::format("{}, {}", format_type_name(s.type), format_order_name(s.order));
  switch (s.order) {
    case FormatOrder::nms_on_chip: return fmt::format("{}(maximum frame size: {})", head, s.hw_frame_size);
    case FormatOrder::nc: return fmt::format("{}({})", head, s.hw_shape.features);
    case FormatOrder::nhw: return fmt::format("{}({}x{})", head, s.hw_shape.height, s.hw_shape.width);
    default: return fmt::format("{}({}x{}x{})", head, s.hw_shape.height, s.hw_shape.width, s.hw_shape.features);
  }
}

std::string vstream_shape(const VStreamInfo& v) {
  const std::string head = fmt::format("{}, {}", format_type_name(v.type), format_order_name(v.order));
  switch (v.order) {
    case FormatOrder::nms_by_class:
      return fmt::format("{}(number of classes: {}, maximum bounding boxes per class: {}, maximum frame size: {})",
                         head, v.nms ? v.nms->number_of_classes : 0, v.nms ? v.nms->max_bboxes_per_class : 0,
                         v.frame_size());
    case FormatOrder::nc: return fmt::format("{}({})", head, v.shape.features);
    case FormatOrder::nhw: return fmt::format("{}({}x{})", head, v.shape.height, v.shape.width);
    default: return fmt::format("{}({}x{}x{})", head, v.shape.height, v.shape.width, v.shape.features);
  }
}

// HailoRT splits the op description at every ',' and drops the ", " (two characters) after it.
std::vector<std::string> split_description(std::string s) {
  std::vector<std::string> out;
  size_t pos;
  while ((pos = s.find(',')) != std::string::npos) {
    out.push_back(s.substr(0, pos));
    s.erase(0, pos + 2);
  }
  out.push_back(s);
  return out;
}

nlohmann::json json_quant(const QuantInfo& q) {
  return {{"zero_point", q.zero_point}, {"scale", q.scale}, {"limit_min", q.limit_min}, {"limit_max", q.limit_max}};
}

nlohmann::json json_shape(const Shape& s) {
  return {{"height", s.height}, {"width", s.width}, {"features", s.features}};
}

nlohmann::json json_nms_info(const NmsInfo& n) {
  return {{"number_of_classes", n.number_of_classes}, {"max_bboxes_per_class", n.max_bboxes_per_class},
          {"max_bboxes_total", n.max_bboxes_total},   {"bbox_size", n.bbox_size},
          {"chunks_per_frame", n.chunks_per_frame},   {"burst_size", n.burst_size},
          {"burst_type", nms_burst_type_name(n.burst_type)}, {"is_defused", n.is_defused}};
}

std::string_view direction_name(Direction d) { return d == Direction::host_to_device ? "input" : "output"; }

nlohmann::json json_vstream(const VStreamInfo& v) {
  nlohmann::json j = {{"name", v.name},
                      {"network", v.network_name},
                      {"direction", direction_name(v.direction)},
                      {"type", format_type_name(v.type)},
                      {"order", format_order_id(v.order)},
                      {"transposed", v.transposed},
                      {"frame_size", v.frame_size()}};
  if (v.nms)
    j["nms_shape"] = {{"number_of_classes", v.nms->number_of_classes},
                      {"max_bboxes_per_class", v.nms->max_bboxes_per_class},
                      {"max_bboxes_total", v.nms->max_bboxes_total}};
  else
    j["shape"] = json_shape(v.shape);
  if (v.quant_is_per_feature) {
    auto arr = nlohmann::json::array();
    for (const auto& q : v.quant_per_feature) arr.push_back(json_quant(q));
    j["quant_per_feature"] = std::move(arr);
  } else {
    j["quant"] = json_quant(v.quant);
  }
  return j;
}

nlohmann::json json_stream(const StreamInfo& s) {
  nlohmann::json j = {{"name", s.name},
                      {"index", s.index},
                      {"direction", direction_name(s.direction)},
                      {"type", format_type_name(s.type)},
                      {"order", format_order_id(s.order)},
                      {"hw_frame_size", s.hw_frame_size},
                      {"is_mux", s.is_mux}};
  if (s.nms) {
    j["nms"] = json_nms_info(*s.nms);
  } else {
    j["shape"] = json_shape(s.shape);
    j["hw_shape"] = json_shape(s.hw_shape);
  }
  j["quant"] = json_quant(s.quant);
  return j;
}

nlohmann::json json_op(const HostOp& op) {
  nlohmann::json j = {{"name", op.op_name},
                      {"type", op.type_name()},
                      {"description", op.description()},
                      {"inputs", op.input_names},
                      {"output", op.output.name}};
  if (op.is_nms()) {
    j["score_threshold"] = op.score_threshold;
    j["iou_threshold"] = op.iou_threshold;
    j["classes"] = op.classes;
    j["max_bboxes_per_class"] = op.max_proposals_per_class;
    j["image_height"] = op.image_height;
    j["image_width"] = op.image_width;
    j["background_removal"] = op.background_removal;
    if (op.kind == HostOp::Kind::yolov8 || op.kind == HostOp::Kind::yolov8_bbox_only)
      j["regression_length"] = op.regression_length;
    j["strides"] = op.strides;
  }
  return j;
}

nlohmann::json json_extensions(const std::vector<Extension>& list) {
  auto arr = nlohmann::json::array();
  for (const auto& e : list) arr.push_back({{"type", e.type}, {"name", e.name}});
  return arr;
}

}  // namespace

Result<std::string> describe(const Hef& hef, const DescribeOptions& options) {
  std::string out = fmt::format("Architecture HEF was compiled for: {}\n", device_arch_name(hef.device_arch()));
  for (const auto& g : hef.network_groups) {
    const std::string contexts =
        g.multi_context() ? fmt::format("Multi Context - Number of contexts: {}", g.context_count) : "Single Context";
    out += fmt::format("Network group name: {}, {}\n", g.name, contexts);
    for (const auto& n : g.networks) {
      out += tabs(1) + "Network name: " + n.name + "\n";
      if (options.streams) {
        out += tabs(2) + "Stream infos:\n";
        for (const auto& s : AISRV_TRY(input_stream_infos(g, n.name)))
          out += tabs(3) + "Input  " + s.name + " " + stream_shape(s) + "\n";
        for (const auto& s : AISRV_TRY(output_stream_infos(g, n.name)))
          out += tabs(3) + "Output " + s.name + " " + stream_shape(s) + "\n";
      }
      if (options.vstreams) {
        out += tabs(2) + "VStream infos:\n";
        for (const auto& v : AISRV_TRY(input_vstream_infos(g, n.name)))
          out += tabs(3) + "Input  " + v.name + " " + vstream_shape(v) + "\n";
        for (const auto& v : AISRV_TRY(output_vstream_infos(g, n.name)))
          out += tabs(3) + "Output " + v.name + " " + vstream_shape(v) + "\n";
        // HailoRT shows the description of the group's last host op only.
        if (!g.ops.empty()) {
          out += tabs(3) + "Operation:\n";
          for (const auto& token : split_description(g.ops.back().description())) out += tabs(4) + token + "\n";
        }
      }
    }
  }
  return out;
}

Result<nlohmann::json> to_json(const Hef& hef) {
  nlohmann::json j;
  const auto& c = hef.container;
  j["container"] = {{"version", c.version},
                    {"header_size", c.header_size},
                    {"file_size", c.file_size},
                    {"proto_size", c.proto_size},
                    {"ccws_size", c.ccws_size},
                    {"checksum", {{"kind", c.checksum_kind}, {"value", c.checksum_hex}}}};
  if (c.version == 3) {
    j["container"]["padding_size"] = c.padding_size;
    j["container"]["additional_info_size"] = c.additional_info_size;
  }
  j["hw_arch"] = hw_arch_name(hef.hw_arch);
  j["device_arch"] = device_arch_name(hef.device_arch());
  j["runs_on_hailo8"] = runs_on_hailo8(hef.hw_arch);
  j["sdk_version"] = hef.sdk_version;
  j["timestamp_ms"] = hef.timestamp_ms;
  j["format_version"] = hef.format_version;
  j["extensions"] = json_extensions(hef.extensions);
  j["optional_extensions"] = json_extensions(hef.optional_extensions);
  j["unsupported_extensions"] = hef.unsupported_extensions;
  j["periph_calculation_in_hailort"] = hef.periph_calculation_in_hailort;
  auto groups = nlohmann::json::array();
  for (const auto& g : hef.network_groups) {
    nlohmann::json jg = {{"name", g.name}, {"contexts", g.context_count}, {"multi_context", g.multi_context()}};
    if (g.layout_bitmap) jg["layout_bitmap"] = *g.layout_bitmap;
    auto networks = nlohmann::json::array();
    for (const auto& n : g.networks) {
      nlohmann::json jn = {{"name", n.name}};
      auto add = [](nlohmann::json& dst, const char* key, const auto& list, auto fn) {
        auto arr = nlohmann::json::array();
        for (const auto& x : list) arr.push_back(fn(x));
        dst[key] = std::move(arr);
      };
      add(jn, "inputs", AISRV_TRY(input_vstream_infos(g, n.name)), json_vstream);
      add(jn, "outputs", AISRV_TRY(output_vstream_infos(g, n.name)), json_vstream);
      add(jn, "input_streams", AISRV_TRY(input_stream_infos(g, n.name)), json_stream);
      add(jn, "output_streams", AISRV_TRY(output_stream_infos(g, n.name)), json_stream);
      networks.push_back(std::move(jn));
    }
    jg["networks"] = std::move(networks);
    auto ops = nlohmann::json::array();
    for (const auto& op : g.ops) ops.push_back(json_op(op));
    jg["ops"] = std::move(ops);
    groups.push_back(std::move(jg));
  }
  j["network_groups"] = std::move(groups);
  return j;
}

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<PathDescription> describe_path(const std::filesystem::path& path, const DescribeOptions& options) {
  std::error_code ec;
  PathDescription out;
  if (std::filesystem::is_directory(path, ec)) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      std::error_code fec;
      if (entry.is_regular_file(fec) && entry.path().extension() == ".hef") files.push_back(entry.path());
    }
    if (ec) return make_error(Errc::io_error, "{}: cannot list the directory: {}", path.string(), ec.message());
    if (files.empty()) return make_error(Errc::not_found, "no HEF files were found in the directory {}", path.string());
    std::sort(files.begin(), files.end());
    out.json = nlohmann::json::array();
    for (const auto& f : files) {
      // hailortcli joins the directory and the name with one '/'.
      std::string shown = path.string();
      if (shown.empty() || shown.back() != '/') shown += '/';
      shown += f.filename().string();
      out.text += std::string(80, '*') + "\n" + "Parsing " + shown + ":\n";
      nlohmann::json entry = {{"path", shown}};
      auto hef = read_hef_file(f);
      Result<std::string> text = hef ? describe(*hef, options) : Result<std::string>(hef.error());
      Result<nlohmann::json> js = hef ? to_json(*hef) : Result<nlohmann::json>(hef.error());
      if (text && js) {
        out.text += *text;
        entry["hef"] = std::move(*js);
      } else {
        const Error& e = !text ? text.error() : js.error();
        out.errors.push_back(hef ? fmt::format("{}: {}", shown, e.message) : e.message);  // read errors name the path
        entry["error"] = e.message;
      }
      out.json.push_back(std::move(entry));
    }
    return out;
  }
  if (!std::filesystem::exists(path, ec)) return make_error(Errc::not_found, "{}: no such file or directory", path.string());
  Hef hef = AISRV_TRY(read_hef_file(path));
  out.text = AISRV_TRY(describe(hef, options));
  out.json = AISRV_TRY(to_json(hef));
  return out;
}

}  // namespace aisrv::engine::hailo8::hef
