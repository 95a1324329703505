// aisrv hailo8/verify — HailoRT's stream and vstream records in our vocabulary, and their field-by-field comparison
// with what aisrv's HEF reader derives (pure functions; the library is driven in hailort_check.cpp).
#include <cstring>
#include <map>

#include "aisrv/engine/hailo8/verify/hailort_check.hpp"

namespace aisrv::engine::hailo8::verify {

namespace abi = hailort_abi;
using hef::Direction;
using hef::FormatOrder;
using hef::FormatType;

namespace {

std::string bounded(const char* p, size_t n) { return std::string(p, strnlen(p, n)); }

hef::QuantInfo quant_from(const abi::hailo_quant_info_t& q) {
  return hef::QuantInfo{q.qp_zp, q.qp_scale, q.limvals_min, q.limvals_max};
}

// Device orders whose stream record holds hailo_nms_info_t in its union, host orders whose vstream record holds
// hailo_nms_shape_t.
bool is_nms_order(FormatOrder o) {
  return o == FormatOrder::hailo_nms || o == FormatOrder::nms_with_byte_mask || o == FormatOrder::nms_on_chip ||
         o == FormatOrder::nms_by_class || o == FormatOrder::nms_by_score;
}

// HailoRT's hailo_nms_burst_type_t numbering (H8_BBOX 0, H15_BBOX 1, H8_PER_CLASS 2, H15_PER_CLASS 3,
// H15_PER_FRAME 4) to ours.
hef::NmsBurstType burst_from(uint32_t v) {
  switch (v) {
    case 0: return hef::NmsBurstType::h8_bbox;
    case 1: return hef::NmsBurstType::h15_bbox;
    case 2: return hef::NmsBurstType::h8_per_class;
    case 3: return hef::NmsBurstType::h15_per_class;
    default: return hef::NmsBurstType::h15_per_frame;
  }
}

std::string order_str(FormatOrder o) { return fmt::format("{}({})", hef::format_order_name(o), uint32_t(o)); }
std::string type_str(FormatType t) { return fmt::format("{}({})", hef::format_type_name(t), uint32_t(t)); }
std::string dir_str(Direction d) { return d == Direction::host_to_device ? "H2D" : "D2H"; }
uint32_t flags_of(bool transposed) { return transposed ? 2u : 0u; }

void compare_quant(const std::string& where, const hef::QuantInfo& a, const hef::QuantInfo& b, Comparison& c) {
  c.fact(where + ": qp_zp", a.zero_point, b.zero_point);
  c.fact(where + ": qp_scale", a.scale, b.scale);
  c.fact(where + ": limvals_min", a.limit_min, b.limit_min);
  c.fact(where + ": limvals_max", a.limit_max, b.limit_max);
}

void compare_shape(const std::string& where, const hef::Shape& a, const hef::Shape& b, Comparison& c) {
  c.fact(where, fmt::format("{}x{}x{}", a.height, a.width, a.features),
         fmt::format("{}x{}x{}", b.height, b.width, b.features));
}

template <typename Info>
void compare_lists(const std::string& group, const char* kind, const std::vector<Info>& ours,
                   const std::vector<Info>& theirs, const std::vector<uint32_t>& their_flags, Comparison& c,
                   void (*one)(const std::string&, const Info&, const Info&, uint32_t, Comparison&)) {
  std::map<std::string, size_t> mine;
  for (size_t i = 0; i < ours.size(); ++i) mine.emplace(ours[i].name, i);
  c.fact(fmt::format("{}: number of {}", group, kind), ours.size(), theirs.size());
  for (size_t i = 0; i < theirs.size(); ++i) {
    const std::string where = fmt::format("{}/{} ({})", group, theirs[i].name, kind);
    const auto it = mine.find(theirs[i].name);
    if (it == mine.end()) {
      c.differ(where, "absent", "listed");
      continue;
    }
    c.fact(where + ": position", it->second, i);
    one(where, ours[it->second], theirs[i], i < their_flags.size() ? their_flags[i] : 0, c);
    mine.erase(it);
  }
  for (const auto& [name, i] : mine) c.differ(fmt::format("{}/{} ({})", group, name, kind), "listed", "absent");
}

}  // namespace

hef::StreamInfo stream_from_hailort(const abi::hailo_stream_info_t& s, uint32_t* raw_flags) {
  hef::StreamInfo r;
  r.name = bounded(s.name, sizeof s.name);
  r.direction = s.direction == abi::HAILO_D2H_STREAM ? Direction::device_to_host : Direction::host_to_device;
  r.order = static_cast<FormatOrder>(s.format.order);
  r.type = static_cast<FormatType>(s.format.type);
  r.transposed = (s.format.flags & 2u) != 0;
  if (raw_flags) *raw_flags = s.format.flags;
  r.hw_data_bytes = s.hw_data_bytes;
  r.hw_frame_size = s.hw_frame_size;
  r.index = s.index;
  r.quant = quant_from(s.quant_info);
  r.is_mux = s.is_mux;
  if (is_nms_order(r.order)) {
    const auto& n = s.nms_info;
    hef::NmsInfo m;
    m.number_of_classes = n.number_of_classes;
    m.max_bboxes_per_class = n.max_bboxes_per_class;
    m.max_bboxes_total = n.max_bboxes_total;
    m.bbox_size = n.bbox_size;
    m.chunks_per_frame = n.chunks_per_frame;
    m.is_defused = n.is_defused;
    m.class_group_index = n.defuse_info.class_group_index;
    m.original_name = bounded(n.defuse_info.original_name, sizeof n.defuse_info.original_name);
    m.burst_size = n.burst_size;
    m.burst_type = burst_from(n.burst_type);
    r.nms = m;
  } else {
    r.shape = {s.shapes.shape.height, s.shapes.shape.width, s.shapes.shape.features};
    r.hw_shape = {s.shapes.hw_shape.height, s.shapes.hw_shape.width, s.shapes.hw_shape.features};
  }
  return r;
}

hef::VStreamInfo vstream_from_hailort(const abi::hailo_vstream_info_t& v, uint32_t* raw_flags) {
  hef::VStreamInfo r;
  r.name = bounded(v.name, sizeof v.name);
  r.network_name = bounded(v.network_name, sizeof v.network_name);
  r.direction = v.direction == abi::HAILO_D2H_STREAM ? Direction::device_to_host : Direction::host_to_device;
  r.order = static_cast<FormatOrder>(v.format.order);
  r.type = static_cast<FormatType>(v.format.type);
  r.transposed = (v.format.flags & 2u) != 0;
  if (raw_flags) *raw_flags = v.format.flags;
  if (is_nms_order(r.order)) {
    r.nms = hef::NmsShape{v.nms_shape.number_of_classes, v.nms_shape.max_bboxes_per_class,
                          v.nms_shape.max_bboxes_total};
  } else {
    r.shape = {v.shape.height, v.shape.width, v.shape.features};
  }
  r.quant = quant_from(v.quant_info);
  return r;
}

void compare_stream(const std::string& where, const hef::StreamInfo& a, const hef::StreamInfo& b,
                    uint32_t their_flags, Comparison& c) {
  c.fact(where + ": direction", dir_str(a.direction), dir_str(b.direction));
  c.fact(where + ": format order", order_str(a.order), order_str(b.order));
  c.fact(where + ": format type", type_str(a.type), type_str(b.type));
  c.fact(where + ": format flags", flags_of(a.transposed), their_flags);
  c.fact(where + ": hw_data_bytes", a.hw_data_bytes, b.hw_data_bytes);
  c.fact(where + ": hw_frame_size", a.hw_frame_size, b.hw_frame_size);
  c.fact(where + ": index", uint32_t{a.index}, uint32_t{b.index});
  c.fact(where + ": is_mux", a.is_mux, b.is_mux);
  compare_quant(where, a.quant, b.quant, c);
  if (a.nms.has_value() != b.nms.has_value()) {
    c.differ(where + ": NMS info", a.nms ? "present" : "absent", b.nms ? "present" : "absent");
    return;
  }
  if (a.nms) {
    const auto &x = *a.nms, &y = *b.nms;
    c.fact(where + ": nms number_of_classes", x.number_of_classes, y.number_of_classes);
    c.fact(where + ": nms max_bboxes_per_class", x.max_bboxes_per_class, y.max_bboxes_per_class);
    c.fact(where + ": nms max_bboxes_total", x.max_bboxes_total, y.max_bboxes_total);
    c.fact(where + ": nms bbox_size", x.bbox_size, y.bbox_size);
    c.fact(where + ": nms chunks_per_frame", x.chunks_per_frame, y.chunks_per_frame);
    c.fact(where + ": nms is_defused", x.is_defused, y.is_defused);
    c.fact(where + ": nms class_group_index", x.class_group_index, y.class_group_index);
    c.fact(where + ": nms original_name", x.original_name, y.original_name);
    c.fact(where + ": nms burst_size", x.burst_size, y.burst_size);
    c.fact(where + ": nms burst_type", std::string(hef::nms_burst_type_name(x.burst_type)),
           std::string(hef::nms_burst_type_name(y.burst_type)));
  } else {
    compare_shape(where + ": shape", a.shape, b.shape, c);
    compare_shape(where + ": hw_shape", a.hw_shape, b.hw_shape, c);
  }
}

void compare_vstream(const std::string& where, const hef::VStreamInfo& a, const hef::VStreamInfo& b,
                     uint32_t their_flags, Comparison& c) {
  c.fact(where + ": network name", a.network_name, b.network_name);
  c.fact(where + ": direction", dir_str(a.direction), dir_str(b.direction));
  c.fact(where + ": format order", order_str(a.order), order_str(b.order));
  c.fact(where + ": format type", type_str(a.type), type_str(b.type));
  c.fact(where + ": format flags", flags_of(a.transposed), their_flags);
  compare_quant(where, a.quant, b.quant, c);
  if (a.nms.has_value() != b.nms.has_value()) {
    c.differ(where + ": NMS shape", a.nms ? "present" : "absent", b.nms ? "present" : "absent");
    return;
  }
  if (a.nms) {
    c.fact(where + ": nms number_of_classes", a.nms->number_of_classes, b.nms->number_of_classes);
    c.fact(where + ": nms max_bboxes_per_class", a.nms->max_bboxes_per_class, b.nms->max_bboxes_per_class);
    c.fact(where + ": nms max_bboxes_total", a.nms->max_bboxes_total, b.nms->max_bboxes_total);
  } else {
    compare_shape(where + ": shape", a.shape, b.shape, c);
  }
}

void compare_streams(const std::string& group, const std::vector<hef::StreamInfo>& ours,
                     const std::vector<hef::StreamInfo>& theirs, const std::vector<uint32_t>& their_flags,
                     Comparison& c) {
  compare_lists<hef::StreamInfo>(group, "stream", ours, theirs, their_flags, c, &compare_stream);
}

void compare_vstreams(const std::string& group, const std::vector<hef::VStreamInfo>& ours,
                      const std::vector<hef::VStreamInfo>& theirs, const std::vector<uint32_t>& their_flags,
                      Comparison& c) {
  compare_lists<hef::VStreamInfo>(group, "vstream", ours, theirs, their_flags, c, &compare_vstream);
}

}  // namespace aisrv::engine::hailo8::verify
