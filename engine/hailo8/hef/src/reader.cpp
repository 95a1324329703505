// aisrv hailo8/hef — turns the protobuf of a verified HEF container into the metadata model, following HailoRT
// 4.23's rules (hailo8-facts.md §1.4-1.5): features from extensions, the core op of each network group (net-flow or
// legacy, partial layouts for Hailo-8L), boundary edge layers with their host/device shapes, quantization and NMS,
// the sorted output order and the host post-process ops. Every field that HailoRT narrows or indexes with is
// range-checked here; problems become Errc::model_error naming the group, layer and value.
#include "aisrv/engine/hailo8/hef/reader.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <new>
#include <set>

#include <fmt/format.h>

#include "aisrv/engine/hailo8/hef/container.hpp"
#include "hef_reduced.pb.h"

namespace aisrv::engine::hailo8::hef {
namespace {

namespace pb = aisrv::engine::hailo8::hefpb;
template <typename T>
using Repeated = google::protobuf::RepeatedPtrField<T>;

constexpr size_t kMaxStreamName = 128;   // HAILO_MAX_STREAM_NAME_SIZE, including the terminator
constexpr size_t kMaxNetworkName = 257;  // HAILO_MAX_NETWORK_NAME_SIZE
constexpr uint32_t kNmsFormat = 6;       // edge_layer_base.format of on-chip NMS
constexpr uint32_t kBboxParams = 5;      // y_min, x_min, y_max, x_max, score
constexpr uint32_t kMaxNmsBurstBytes = 65536;
constexpr uint32_t kMaxDefusedLayers = 9;

Error bad(std::string message) { return Error{Errc::model_error, std::move(message)}; }

template <typename T>
Result<uint32_t> narrow_u32(T value, std::string_view what) {
  if (value > std::numeric_limits<uint32_t>::max())
    return bad(fmt::format("{} {} out of range (at most {})", what, value, std::numeric_limits<uint32_t>::max()));
  return static_cast<uint32_t>(value);
}

// Features the HEF declares (extensions for format_version > 0, legacy flags otherwise).
struct Features {
  bool multi_network = false;
  bool net_flow = false;
  bool scale_per_feature = false;
  bool hw_padding_in_dfc = false;
  bool nms_burst = false;
  bool periph_calc = false;
};

// A core op, whichever message it comes from (legacy network group or net-flow CoreOp).
struct CoreView {
  const pb::GroupMetadata* metadata = nullptr;
  const Repeated<pb::Context>* contexts = nullptr;
  const Repeated<std::string>* sorted_outputs = nullptr;
  const pb::FusedLayers* fused = nullptr;
  const Repeated<std::string>* network_names = nullptr;
};

template <typename Msg>
CoreView view_of(const Msg& m) {
  return CoreView{&m.metadata(), &m.contexts(), &m.sorted_outputs(), &m.fused_layers(), &m.network_names()};
}

Result<FormatOrder> device_order_of(uint32_t format, std::string_view layer) {
  switch (format) {
    case 0: return FormatOrder::nhwc;
    case 1: return FormatOrder::nhcw;
    case 2: return FormatOrder::nc;
    case 3: return FormatOrder::fcr;
    case 4: return FormatOrder::bayer_rgb;
    case 5: return FormatOrder::nhw;
    case 6: return FormatOrder::nms_on_chip;
    case 7: return FormatOrder::f8cr;
    case 8: return FormatOrder::rgb888;
    case 11: return FormatOrder::yuy2;
    case 13: return FormatOrder::nhwc;
    case 14: return FormatOrder::yyuv;
    case 15: return FormatOrder::yyvu;
    case 16: return FormatOrder::yyyyuv;
    default: return bad(fmt::format("edge layer '{}': format {} is not a known device format order", layer, format));
  }
}

Result<FormatType> type_of_data_bytes(uint32_t data_bytes, std::string_view layer) {
  if (data_bytes == 1) return FormatType::uint8;
  if (data_bytes == 2) return FormatType::uint16;
  return bad(fmt::format("edge layer '{}': data_bytes {} out of range (1 or 2)", layer, data_bytes));
}

bool is_hailo8_family(HwArch a) {
  return a == HwArch::hailo8 || a == HwArch::hailo8p || a == HwArch::hailo8r || a == HwArch::sage_b0 ||
         a == HwArch::hailo8l;
}
bool is_hailo15_family(HwArch a) {
  return a == HwArch::hailo15h || a == HwArch::hailo15m || a == HwArch::hailo10h || a == HwArch::ginger ||
         a == HwArch::lavender || a == HwArch::pluto || a == HwArch::hailo15l;
}

// Largest periph buffer of the architecture (HAILO8_INBOUND_DATA_STREAM_SIZE / HAILO1X_..._MAX_SIZE).
uint32_t max_periph_bytes(HwArch arch) {
  switch (device_arch_of(arch)) {
    case DeviceArch::hailo8_a0:
    case DeviceArch::hailo8:
    case DeviceArch::hailo8l: return 0x10000;
    default: return 0x2000;
  }
}

QuantInfo quant_of(const pb::NumericInfo& n) {
  return QuantInfo{n.zero_point(), n.scale(), n.limit_min(), n.limit_max()};
}

bool same_bits(const QuantInfo& a, const QuantInfo& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

class Reader {
 public:
  Reader(const pb::File& file, HwArch arch, const Features& f) : file_(file), arch_(arch), f_(f) {}

  Result<NetworkGroup> group(const pb::NetworkGroup& g, size_t index);

 private:
  Result<NmsInfo> nms_info(const pb::NmsInfo& n, std::string_view layer) const;
  Status base_info(const pb::EdgeBase& base, const CoreView& core, bool transposed, bool part_of_mux,
                   Layer& layer) const;
  Status info_layer(const pb::EdgeInfo& info, const CoreView& core, Direction dir, const std::string& network_name,
                    bool part_of_mux, Layer& layer) const;
  Status mux_layer(const pb::EdgeMux& mux, const CoreView& core, Direction dir, const std::string& network_name,
                   Layer& layer, int depth) const;
  Status planes_layer(const pb::EdgePlanes& planes, const CoreView& core, Direction dir,
                      const std::string& network_name, Layer& layer) const;
  Result<Layer> boundary_layer(const pb::EdgeLayer& e, const CoreView& core, uint32_t context_index) const;
  Status host_ops(const pb::NetworkGroup& g, NetworkGroup& out) const;

  const pb::File& file_;
  HwArch arch_;
  Features f_;
};

Result<NmsInfo> Reader::nms_info(const pb::NmsInfo& n, std::string_view layer) const {
  NmsInfo out;
  const std::string where = fmt::format("edge layer '{}' NMS", layer);
  out.number_of_classes = AISRV_TRY(narrow_u32(n.classes(), where + " number_of_classes"));
  out.bbox_size = AISRV_TRY(narrow_u32(n.bbox_size(), where + " bbox_size"));
  out.max_bboxes_per_class = AISRV_TRY(narrow_u32(n.max_boxes_per_class(), where + " max_output_size"));
  out.max_bboxes_total = AISRV_TRY(narrow_u32(uint64_t{out.max_bboxes_per_class} * out.number_of_classes,
                                              where + " max_bboxes_total (classes x max boxes)"));
  out.chunks_per_frame = AISRV_TRY(narrow_u32(n.division_factor(), where + " input_division_factor"));
  const bool h8 = is_hailo8_family(arch_);
  const bool h15 = is_hailo15_family(arch_);
  if (!h8 && !h15)
    return bad(fmt::format("{}: on-chip NMS is not defined for architecture {}", where, hw_arch_name(arch_)));
  if (f_.nms_burst) {
    out.burst_size = n.burst_size();
    if (h8) {
      if (n.burst_type() != 1)
        return bad(fmt::format("{}: burst_type {} is not supported on {} (1 = per class expected)", where,
                               n.burst_type(), hw_arch_name(arch_)));
      out.burst_type = NmsBurstType::h8_per_class;
    } else {
      if (n.burst_type() == 2) out.burst_type = NmsBurstType::h15_per_class;
      else if (n.burst_type() == 3) out.burst_type = NmsBurstType::h15_per_frame;
      else
        return bad(fmt::format("{}: burst_type {} is not supported on {}", where, n.burst_type(), hw_arch_name(arch_)));
    }
    if (uint64_t{out.burst_size} * out.bbox_size > kMaxNmsBurstBytes)
      return bad(fmt::format("{}: burst of {} bytes ({} boxes of {}) exceeds the maximum {}", where,
                             uint64_t{out.burst_size} * out.bbox_size, out.burst_size, out.bbox_size,
                             kMaxNmsBurstBytes));
  } else {
    if (n.burst_type() != 0)
      return bad(fmt::format("{}: burst_type {} set although the HEF has no NMS burst extension", where,
                             n.burst_type()));
    out.burst_size = 1;
    out.burst_type = h8 ? NmsBurstType::h8_bbox : NmsBurstType::h15_bbox;
  }
  if (out.chunks_per_frame == 0) out.chunks_per_frame = 1;
  out.is_defused = n.is_defused();
  if (n.defuse().class_group_index() >= kMaxDefusedLayers)
    return bad(fmt::format("{}: class_group_index {} out of range (below {})", where, n.defuse().class_group_index(),
                           kMaxDefusedLayers));
  out.class_group_index = static_cast<uint32_t>(n.defuse().class_group_index());
  if (n.defuse().original_name().size() + 1 > kMaxStreamName)
    return bad(fmt::format("{}: original_name of {} bytes is too long (at most {})", where,
                           n.defuse().original_name().size(), kMaxStreamName - 1));
  out.original_name = n.defuse().original_name();
  // The on-chip NMS buffer size must be representable (HailoRT computes it in 32 bits).
  AISRV_TRY(narrow_u32(out.hw_frame_size(), where + " hardware frame size"));
  return out;
}

// fill_layer_info_with_base_info: orders, shapes, padding, stream registers, NMS.
Status Reader::base_info(const pb::EdgeBase& base, const CoreView& core, bool transposed, bool part_of_mux,
                         Layer& layer) const {
  const std::string& name = layer.name;
  layer.device_order = AISRV_TRY(device_order_of(base.format(), name));
  if (base.format() == kNmsFormat) {
    const auto& n = base.additional().nms();
    layer.shape.height = AISRV_TRY(narrow_u32(n.classes(), "edge layer '" + name + "' NMS number_of_classes"));
    layer.shape.width = kBboxParams;
    uint64_t f = 0;
    if (__builtin_mul_overflow(n.max_boxes_per_class(), n.division_factor(), &f))
      return bad(fmt::format("edge layer '{}': NMS max_output_size {} x input_division_factor {} overflows", name,
                             n.max_boxes_per_class(), n.division_factor()));
    layer.shape.features = AISRV_TRY(narrow_u32(f, "edge layer '" + name + "' NMS shape features"));
  } else {
    layer.shape = Shape{base.height(), base.width(), base.features()};
  }
  layer.hw_data_bytes = base.data_bytes();
  if ((core.metadata->transposed_net() || transposed) && layer.device_order != FormatOrder::nc) {
    std::swap(layer.shape.height, layer.shape.width);
    layer.transposed = true;
  }
  if (base.host_argmax())
    return bad(fmt::format("edge layer '{}' uses the legacy host argmax; HailoRT refuses it (recompile the model)",
                           name));
  layer.type = AISRV_TRY(type_of_data_bytes(layer.hw_data_bytes, name));

  const uint32_t arch_max = max_periph_bytes(arch_);
  const uint32_t max_periph = base.max_shmifo_size() == 0 ? arch_max : std::min(arch_max, base.max_shmifo_size());
  if (base.core_buffers_per_frame() > 0xFFFF)
    return bad(fmt::format("edge layer '{}': core_buffers_per_frame {} out of range (at most 65535)", name,
                           base.core_buffers_per_frame()));
  if (base.core_bytes_per_buffer() > 0xFFFF)
    return bad(fmt::format("edge layer '{}': core_bytes_per_buffer {} out of range (at most 65535)", name,
                           base.core_bytes_per_buffer()));
  layer.core_buffers_per_frame = static_cast<uint16_t>(base.core_buffers_per_frame());
  layer.core_bytes_per_buffer = static_cast<uint16_t>(base.core_bytes_per_buffer());

  // Core HW padding (is_core_hw_padding_supported): boundary, non-mux NHCW layers whose rows fit a periph buffer.
  bool hw_padding = false;
  if (!part_of_mux && !layer.is_mux && !f_.hw_padding_in_dfc && layer.device_order == FormatOrder::nhcw) {
    uint32_t h = layer.shape.height, w = layer.shape.width;
    if (layer.transposed) std::swap(h, w);
    const uint64_t row = uint64_t{w} * layer.shape.features;
    hw_padding = layer.core_buffers_per_frame == h && row % 8 == 0 && row * layer.hw_data_bytes <= max_periph - 1;
  }
  const uint64_t padded_bytes =
      uint64_t{base.padded_width()} * base.padded_features() * base.padded_height() * base.data_bytes();
  if (padded_bytes > std::numeric_limits<uint32_t>::max())
    return bad(fmt::format("edge layer '{}': padded shape {}x{}x{} of {}-byte elements is too big ({} bytes)", name,
                           base.padded_height(), base.padded_width(), base.padded_features(), base.data_bytes(),
                           padded_bytes));
  if (hw_padding && uint64_t{base.width()} * base.data_bytes() > 0xFFFF)
    return bad(fmt::format("edge layer '{}': frame width {} too big for HW padding", name,
                           uint64_t{base.width()} * base.data_bytes()));
  layer.hw_shape = hw_padding ? Shape{base.height(), base.width(), base.features()}
                              : Shape{base.padded_height(), base.padded_width(), base.padded_features()};
  if (base.sys_index() > 0xFF)
    return bad(fmt::format("edge layer '{}': sys_index {} out of range (at most 255)", name, base.sys_index()));
  if (base.engine_id() > 0xFF)
    return bad(fmt::format("edge layer '{}': engine_id {} out of range (at most 255)", name, base.engine_id()));
  layer.stream_index = static_cast<uint8_t>(base.sys_index());
  layer.dma_engine = static_cast<uint8_t>(base.engine_id());
  if (layer.device_order == FormatOrder::nms_on_chip) layer.nms = AISRV_TRY(nms_info(base.additional().nms(), name));
  layer.max_shmifo_size = base.max_shmifo_size();
  // The host frame must be addressable in 32 bits as in HailoRT.
  const uint64_t host_bytes = uint64_t{layer.shape.height} * layer.shape.width * layer.shape.features * 4;
  if (host_bytes > std::numeric_limits<uint32_t>::max())
    return bad(fmt::format("edge layer '{}': shape {}x{}x{} is too big", name, layer.shape.height, layer.shape.width,
                           layer.shape.features));
  return ok();
}

Status check_names(std::string_view layer, std::string_view partial_network) {
  if (layer.size() + 1 > kMaxStreamName)
    return bad(fmt::format("edge layer name of {} bytes is too long (at most {}): '{}'", layer.size(),
                           kMaxStreamName - 1, layer.substr(0, 64)));
  if (partial_network.size() + 1 > kMaxNetworkName)
    return bad(fmt::format("network name of {} bytes is too long (at most {})", partial_network.size(),
                           kMaxNetworkName - 1));
  return ok();
}

// fill_layer_info: names, quantization (per tensor / per feature), defused NMS.
Status Reader::info_layer(const pb::EdgeInfo& info, const CoreView& core, Direction dir,
                          const std::string& partial_network, bool part_of_mux, Layer& layer) const {
  AISRV_TRY(check_names(info.name(), partial_network));
  layer.name = info.name();
  layer.network_name = core.metadata->name() + "/" + partial_network;
  layer.is_mux = false;
  layer.direction = dir;
  layer.quant = quant_of(info.numeric());
  AISRV_TRY(base_info(info.base(), core, info.transposed(), part_of_mux, layer));

  const bool nms = layer.device_order == FormatOrder::nms_on_chip;
  const uint32_t qps = nms ? 2 : layer.shape.features;
  const auto& zps = info.numeric().zero_points();
  const auto& scales = info.numeric().scales();
  // Outputs must carry one zero point and scale per feature with OUTPUT_SCALE_PER_FEATURE (HailoRT checks it);
  // inputs use them when present (HailoRT indexes them unchecked) and the per-tensor values otherwise.
  const bool output = dir == Direction::device_to_host;
  const bool vectors = static_cast<uint64_t>(zps.size()) >= qps && static_cast<uint64_t>(scales.size()) >= qps;
  if (f_.scale_per_feature && output &&
      (static_cast<uint64_t>(zps.size()) != qps || static_cast<uint64_t>(scales.size()) != qps))
    return bad(fmt::format("edge layer '{}': per-feature quantization has {} zero points and {} scales, {} expected",
                           layer.name, zps.size(), scales.size(), qps));
  if (f_.scale_per_feature && (output || vectors)) {
    if (output) {
      layer.quant = QuantInfo{};
      layer.quant_is_per_feature = true;
    }
    layer.quant_per_feature.reserve(qps);
    for (uint32_t i = 0; i < qps; ++i)
      layer.quant_per_feature.push_back(QuantInfo{static_cast<float>(zps[static_cast<int>(i)]),
                                                  static_cast<float>(scales[static_cast<int>(i)]),
                                                  info.numeric().limit_min(), info.numeric().limit_max()});
  } else {
    layer.quant_per_feature.push_back(quant_of(info.numeric()));
  }
  if (dir == Direction::host_to_device) {
    for (const auto& q : layer.quant_per_feature)
      if (!same_bits(q, layer.quant_per_feature.front()))
        return bad(fmt::format("input '{}' has different quantization per feature (HailoRT requires one for inputs)",
                               layer.name));
  }

  layer.is_defused_nms = core.fused->has_fused_layers() && nms && layer.nms->is_defused;
  if (layer.is_defused_nms) {
    const pb::FusedLayer* found = nullptr;
    for (const auto& fl : core.fused->layers())
      if (fl.info().name() == layer.nms->original_name) {
        found = &fl;
        break;
      }
    if (!found)
      return bad(fmt::format("edge layer '{}': its fused NMS layer '{}' is missing", layer.name,
                             layer.nms->original_name));
    Layer fused;
    const auto& base = found->info().base();
    fused.name = found->info().name();
    if (fused.name.size() + 1 > kMaxStreamName)
      return bad(fmt::format("fused NMS layer name of {} bytes is too long", fused.name.size()));
    fused.device_order = AISRV_TRY(device_order_of(base.format(), fused.name));
    fused.shape.height = AISRV_TRY(narrow_u32(found->nms().classes(), "fused NMS number_of_classes"));
    fused.shape.width = kBboxParams;
    uint64_t feat = 0;
    if (__builtin_mul_overflow(found->nms().max_boxes_per_class(), found->nms().division_factor(), &feat))
      return bad(fmt::format("fused NMS layer '{}': shape overflows", fused.name));
    fused.shape.features = AISRV_TRY(narrow_u32(feat, "fused NMS shape features"));
    fused.hw_data_bytes = base.data_bytes();
    fused.type = AISRV_TRY(type_of_data_bytes(fused.hw_data_bytes, fused.name));
    fused.nms = AISRV_TRY(nms_info(found->nms(), fused.name));
    fused.network_name = layer.network_name;
    fused.direction = Direction::device_to_host;
    fused.quant = layer.quant;  // HailoRT: the fused layer's own quant info is empty, the defused one is used
    fused.quant_per_feature = {layer.quant};
    layer.fused_nms_layers.push_back(std::move(fused));
  }
  return ok();
}

Status Reader::mux_layer(const pb::EdgeMux& mux, const CoreView& core, Direction dir,
                         const std::string& partial_network, Layer& layer, int depth) const {
  if (depth > 16) return bad(fmt::format("mux layer '{}' nests too deep", mux.name()));
  AISRV_TRY(check_names(mux.name(), partial_network));
  layer.name = mux.name();
  layer.network_name = core.metadata->name() + "/" + partial_network;
  layer.is_mux = true;
  layer.direction = dir;
  AISRV_TRY(base_info(mux.base(), core, false, true, layer));
  const uint32_t count = mux.mux_data().predecessor_count();
  if (count > static_cast<uint32_t>(mux.predecessors_size()))
    return bad(fmt::format("mux layer '{}': number_of_predecessors {} but {} predecessors present", layer.name, count,
                           mux.predecessors_size()));
  for (uint32_t i = 0; i < count; ++i) {
    const pb::Edge& e = mux.predecessors(static_cast<int>(i));
    Layer pred;
    if (e.has_info()) {
      AISRV_TRY(info_layer(e.info(), core, dir, partial_network, true, pred));
    } else if (e.has_mux()) {
      AISRV_TRY(mux_layer(e.mux(), core, dir, partial_network, pred, depth + 1));
    } else {
      return bad(fmt::format("mux layer '{}': predecessor {} is neither a layer nor a mux", layer.name, i));
    }
    layer.predecessors.push_back(std::move(pred));
  }
  return ok();
}

Status Reader::planes_layer(const pb::EdgePlanes& planes, const CoreView& core, Direction dir,
                            const std::string& partial_network, Layer& layer) const {
  AISRV_TRY(check_names(planes.name(), partial_network));
  layer.direction = dir;
  layer.shape = layer.hw_shape = Shape{planes.height(), planes.width(), planes.features()};
  switch (planes.planes_format()) {
    case 0: layer.device_order = FormatOrder::nv12; break;
    case 1: layer.device_order = FormatOrder::nv21; break;
    case 2: layer.device_order = FormatOrder::i420; break;
    default:
      return bad(fmt::format("planes layer '{}': planes_format {} out of range (0-2)", planes.name(),
                             planes.planes_format()));
  }
  layer.quant = QuantInfo{};
  layer.quant_per_feature = {QuantInfo{}};
  layer.name = planes.name();
  layer.network_name = core.metadata->name() + "/" + partial_network;
  layer.is_multi_planar = true;
  if (planes.planes_size() == 0) return bad(fmt::format("planes layer '{}' has no planes", planes.name()));
  for (int i = 0; i < planes.planes_size(); ++i) {
    if (!planes.planes(i).has_info())
      return bad(fmt::format("planes layer '{}': plane {} is not a plain layer", planes.name(), i));
    Layer plane;
    AISRV_TRY(info_layer(planes.planes(i).info(), core, dir, partial_network, false, plane));
    layer.planes.push_back(std::move(plane));
  }
  layer.hw_data_bytes = layer.planes.front().hw_data_bytes;
  for (const auto& p : layer.planes)
    if (p.hw_data_bytes != layer.hw_data_bytes)
      return bad(fmt::format("planes layer '{}': planes differ in element size", planes.name()));
  layer.type = AISRV_TRY(type_of_data_bytes(layer.hw_data_bytes, planes.name()));
  return ok();
}

Result<Layer> Reader::boundary_layer(const pb::EdgeLayer& e, const CoreView& core, uint32_t context_index) const {
  if (e.direction() > 1)
    return bad(fmt::format("context {}: edge layer direction {} out of range (0 or 1)", context_index, e.direction()));
  const Direction dir = e.direction() == 1 ? Direction::device_to_host : Direction::host_to_device;
  const uint32_t network_index = f_.multi_network ? e.network_index() : 0;
  std::string partial;
  if (f_.multi_network) {
    if (network_index >= static_cast<uint32_t>(core.network_names->size()))
      return bad(fmt::format("context {}: edge layer network_index {} out of range ({} networks in group '{}')",
                             context_index, network_index, core.network_names->size(), core.metadata->name()));
    partial = (*core.network_names)[static_cast<int>(network_index)];
  } else {
    partial = core.metadata->name();
  }
  Layer layer;
  switch (e.kind()) {
    case 0:
      if (!e.has_info()) return bad(fmt::format("context {}: info edge layer without layer info", context_index));
      AISRV_TRY(info_layer(e.info(), core, dir, partial, false, layer));
      break;
    case 1:
      if (!e.has_mux()) return bad(fmt::format("context {}: mux edge layer without mux info", context_index));
      AISRV_TRY(mux_layer(e.mux(), core, dir, partial, layer, 0));
      break;
    case 2:
      if (!e.has_planes()) return bad(fmt::format("context {}: planes edge layer without planes", context_index));
      AISRV_TRY(planes_layer(e.planes(), core, dir, partial, layer));
      break;
    default:
      return bad(fmt::format("context {}: edge layer type {} out of range (0-2)", context_index, e.kind()));
  }
  layer.direction = dir;
  layer.context_index = context_index;
  layer.network_index = static_cast<uint8_t>(network_index);
  if (e.has_pad_index()) layer.pad_index = e.pad_index();
  return layer;
}

VStreamInfo nms_op_output(const HostOp& op, const std::string& name, const std::string& network) {
  VStreamInfo v;
  v.name = name;
  v.network_name = network;
  v.direction = Direction::device_to_host;
  v.type = FormatType::float32;
  v.quant.scale = 1;
  return v;
}

Status Reader::host_ops(const pb::NetworkGroup& g, NetworkGroup& out) const {
  // Core output layers by the pad they feed, and op input pads -> core output pads.
  std::map<uint32_t, const Layer*> by_pad;
  for (const auto& l : out.output_layers)
    if (l.pad_index) by_pad.emplace(*l.pad_index, &l);
  std::map<uint32_t, uint32_t> input_to_output;
  for (const auto& e : g.pad_edges()) input_to_output.emplace(e.dst(), e.src());
  const std::string network = out.name + "/" + out.name;  // ops belong to the group's default network

  auto stream_of_pad = [&](uint32_t pad, std::string_view what) -> Result<const Layer*> {
    auto it = by_pad.find(pad);
    if (it == by_pad.end())
      return bad(fmt::format("group '{}': {} refers to pad {}, which no core output stream feeds", out.name, what,
                             pad));
    return it->second;
  };
  auto op_input = [&](const pb::Op& op, const pb::Pad& pad) -> Result<const Layer*> {
    auto it = input_to_output.find(pad.index());
    if (it == input_to_output.end())
      return bad(fmt::format("group '{}': op '{}' input pad {} is not connected to the core op", out.name, op.name(),
                             pad.index()));
    auto s = by_pad.find(it->second);
    if (s == by_pad.end())
      return bad(fmt::format("group '{}': pad {} of op '{}' is not connected to any core output stream", out.name,
                             pad.index(), op.name()));
    return s->second;
  };

  for (const auto& op : g.ops()) {
    if (op.has_core_op()) continue;
    HostOp h;
    h.op_name = op.name();
    if (op.output_pads_size() == 0) return bad(fmt::format("group '{}': op '{}' has no output pad", out.name, op.name()));
    const pb::Pad& out_pad = op.output_pads(0);
    if (out_pad.name().size() + 1 > kMaxStreamName)
      return bad(fmt::format("group '{}': op output name of {} bytes is too long", out.name, out_pad.name().size()));

    if (op.has_nms_op()) {
      const pb::NmsOp& n = op.nms_op();
      std::vector<const Layer*> inputs;
      for (const auto& pad : op.input_pads()) inputs.push_back(AISRV_TRY(op_input(op, pad)));
      h.score_threshold = static_cast<float>(n.score_threshold());
      h.iou_threshold = static_cast<float>(n.iou_threshold());
      h.max_proposals_per_class = n.max_proposals_per_class();
      h.classes = n.classes();
      h.background_removal = n.background_removal();
      h.background_removal_index = n.background_removal_index();
      const bool bbox_only = n.bbox_decoding_only();
      uint64_t proposals = 0;  // bbox-only outputs
      switch (n.decoder_case()) {
        case pb::NmsOp::kYolov5: {
          h.kind = bbox_only ? HostOp::Kind::yolov5_bbox_only : HostOp::Kind::yolov5;
          h.display_name = bbox_only ? "YOLOv5Bbox-Only-Post-Process" : "YOLOv5-Post-Process";
          h.image_height = static_cast<float>(n.yolov5().image_height());
          h.image_width = static_cast<float>(n.yolov5().image_width());
          for (const auto& a : n.yolov5().anchors()) {
            if (a.h_size() != a.w_size())
              return bad(fmt::format("group '{}': YOLOv5 anchors have {} heights and {} widths", out.name, a.h_size(),
                                     a.w_size()));
            const Layer* l = AISRV_TRY(stream_of_pad(a.pad_index(), "a YOLOv5 decoder"));
            proposals += uint64_t{static_cast<uint32_t>(a.h_size())} * l->shape.height * l->shape.width;
            h.strides.push_back(a.stride());
          }
          break;
        }
        case pb::NmsOp::kYolox:
          h.kind = HostOp::Kind::yolox;
          h.display_name = "YOLOX-Post-Process";
          h.image_height = static_cast<float>(n.yolox().image_height());
          h.image_width = static_cast<float>(n.yolox().image_width());
          for (const auto& a : n.yolox().anchors()) {
            AISRV_TRY(stream_of_pad(a.reg_pad_index(), "a YOLOX decoder"));
            AISRV_TRY(stream_of_pad(a.cls_pad_index(), "a YOLOX decoder"));
            AISRV_TRY(stream_of_pad(a.obj_pad_index(), "a YOLOX decoder"));
            h.strides.push_back(a.stride());
          }
          break;
        case pb::NmsOp::kSsd:
          h.kind = HostOp::Kind::ssd;
          h.display_name = "SSD-Post-Process";
          h.image_height = static_cast<float>(n.ssd().image_height());
          h.image_width = static_cast<float>(n.ssd().image_width());
          h.ssd_centers_scale_factor = n.ssd().centers_scale_factor();
          h.ssd_bbox_dimensions_scale_factor = n.ssd().bbox_dimensions_scale_factor();
          for (const auto& a : n.ssd().anchors()) {
            AISRV_TRY(stream_of_pad(a.reg_pad_index(), "an SSD decoder"));
            AISRV_TRY(stream_of_pad(a.cls_pad_index(), "an SSD decoder"));
          }
          break;
        case pb::NmsOp::kIou:
          h.kind = HostOp::Kind::iou;
          h.display_name = "IoU-Post-Process";
          break;
        case pb::NmsOp::kYolov5Seg:
          return bad(fmt::format("group '{}': host op '{}' is YOLOv5-seg NMS (output with byte masks), which this "
                                 "reader does not support",
                                 out.name, op.name()));
        case pb::NmsOp::kYolov8: {
          h.kind = bbox_only ? HostOp::Kind::yolov8_bbox_only : HostOp::Kind::yolov8;
          h.display_name = bbox_only ? "YOLOv8Bbox-Only-Post-Process" : "YOLOV8-Post-Process";
          h.image_height = static_cast<float>(n.yolov8().image_height());
          h.image_width = static_cast<float>(n.yolov8().image_width());
          h.regression_length = n.yolov8().regression_length();
          for (const auto& a : n.yolov8().anchors()) {
            AISRV_TRY(stream_of_pad(a.reg_pad_index(), "a YOLOv8 decoder (regression)"));
            AISRV_TRY(stream_of_pad(a.cls_pad_index(), "a YOLOv8 decoder (classes)"));
            h.strides.push_back(a.stride());
          }
          for (const Layer* l : inputs) proposals += uint64_t{l->shape.height} * l->shape.width;
          proposals /= 2;  // one regression and one class layer per scale
          break;
        }
        default:
          return bad(fmt::format("group '{}': NMS op '{}' has no known decoder", out.name, op.name()));
      }
      for (const Layer* l : inputs)
        if (std::find(h.input_names.begin(), h.input_names.end(), l->name) == h.input_names.end())
          h.input_names.push_back(l->name);
      h.output = nms_op_output(h, out_pad.name(), network);
      if (bbox_only) {
        h.output.order = FormatOrder::nhwc;
        const uint32_t per = (h.kind == HostOp::Kind::yolov8_bbox_only ? 4 : 5) + h.classes;
        h.output.shape = Shape{1, AISRV_TRY(narrow_u32(proposals, "bbox-only proposals")), per};
      } else {
        h.output.order = FormatOrder::nms_by_class;
        NmsShape s;
        s.number_of_classes = h.classes;
        if (h.background_removal && s.number_of_classes > 0) --s.number_of_classes;
        s.max_bboxes_per_class = h.max_proposals_per_class;
        s.max_bboxes_total = AISRV_TRY(narrow_u32(uint64_t{h.max_proposals_per_class} * h.classes,
                                                  "NMS op max_proposals_per_class x classes"));
        h.output.nms = s;
        AISRV_TRY(narrow_u32(h.output.frame_size(), "NMS op output frame size"));
      }
    } else if (op.has_logits_op()) {
      if (op.input_pads_size() != 1 || op.output_pads_size() != 1)
        return bad(fmt::format("group '{}': logits op '{}' needs 1 input and 1 output pad, has {} and {}", out.name,
                               op.name(), op.input_pads_size(), op.output_pads_size()));
      const Layer* in = AISRV_TRY(op_input(op, op.input_pads(0)));
      h.input_names = {in->name};
      if (op.logits_op().type() > 1)
        return bad(fmt::format("group '{}': logits op '{}' type {} out of range (0 argmax, 1 softmax)", out.name,
                               op.name(), op.logits_op().type()));
      const bool argmax = op.logits_op().type() == 0;
      h.kind = argmax ? HostOp::Kind::argmax : HostOp::Kind::softmax;
      h.display_name = argmax ? "Argmax-Post-Process" : "Softmax-Post-Process";
      VStreamInfo v;
      v.name = out_pad.name();
      v.network_name = network;
      v.direction = Direction::device_to_host;
      if (out_pad.format_order() > 16 || out_pad.format_type() > 2)
        return bad(fmt::format("group '{}': logits op '{}' output format order {} / type {} out of range", out.name,
                               op.name(), out_pad.format_order(), out_pad.format_type()));
      v.order = static_cast<FormatOrder>(out_pad.format_order());
      v.type = static_cast<FormatType>(out_pad.format_type());
      if (argmax) {
        if (v.type == FormatType::auto_) v.type = in->type;
        if (v.order == FormatOrder::auto_) {
          if (in->device_order == FormatOrder::nhcw || in->device_order == FormatOrder::nhwc ||
              in->device_order == FormatOrder::f8cr)
            v.order = FormatOrder::nhw;
          if (in->device_order == FormatOrder::nc) v.order = FormatOrder::nc;
        }
        v.shape = Shape{in->shape.height, in->shape.width, 1};
      } else {
        if (v.type == FormatType::auto_) v.type = FormatType::float32;
        if (v.order == FormatOrder::auto_) v.order = default_host_order(in->device_order).value_or(FormatOrder::auto_);
        v.shape = in->shape;
      }
      v.quant = in->quant;
      v.quant_per_feature = {in->quant};
      h.output = std::move(v);
    } else {
      return bad(fmt::format("group '{}': op '{}' is of an unsupported kind", out.name, op.name()));
    }
    out.ops.push_back(std::move(h));
  }
  return ok();
}

Result<NetworkGroup> Reader::group(const pb::NetworkGroup& g, size_t index) {
  NetworkGroup out;
  out.net_flow = f_.net_flow;
  out.name = g.partial_groups_size() > 0 ? g.partial_groups(0).group().metadata().name() : g.metadata().name();
  if (out.name.empty()) return bad(fmt::format("network group #{} has no name", index));
  if (out.name.size() + 1 > kMaxStreamName)
    return bad(fmt::format("network group name of {} bytes is too long (at most {})", out.name.size(),
                           kMaxStreamName - 1));

  // The core op: the net-flow op of kind core_op, else the group's own fields.
  CoreView main;
  std::vector<std::pair<CoreView, uint32_t>> partials;  // with their layout bitmaps
  if (f_.net_flow) {
    const pb::Op* core = nullptr;
    for (const auto& op : g.ops())
      if (op.has_core_op()) {
        core = &op;
        break;
      }
    if (!core) return bad(fmt::format("network group '{}' uses net-flow but has no core op", out.name));
    main = view_of(core->core_op());
    for (const auto& p : core->core_op().partial_core_ops())
      partials.emplace_back(view_of(p.core_op()), p.layout().clusters_bitmap());
  } else {
    main = view_of(g);
    for (const auto& p : g.partial_groups()) partials.emplace_back(view_of(p.group()), p.layout().clusters_bitmap());
  }

  // Multi-layout HEFs (Hailo-8L, Hailo-15M) describe one partial layout per cluster bitmap; HailoRT lists the
  // group with the first partial and takes the layers from the smallest bitmap.
  CoreView layers_from = main;
  CoreView contexts_from = main;
  if (arch_ == HwArch::hailo8l || arch_ == HwArch::hailo15m) {
    if (partials.empty())
      return bad(fmt::format("network group '{}' of a {} HEF has no partial layouts", out.name, hw_arch_name(arch_)));
    size_t best = 0;
    for (size_t i = 1; i < partials.size(); ++i)
      if (partials[i].second <= partials[best].second) best = i;
    layers_from = partials[best].first;
    out.layout_bitmap = partials[best].second;
    contexts_from = partials[0].first;
  }
  out.core_op_name = layers_from.metadata->name();
  out.context_count = static_cast<size_t>(contexts_from.contexts->size());
  if (layers_from.contexts->empty()) return bad(fmt::format("network group '{}' has no contexts", out.name));
  if (layers_from.contexts->size() > 0xFFFF)
    return bad(fmt::format("network group '{}' has {} contexts, more than 65535", out.name,
                           layers_from.contexts->size()));

  // Networks.
  if (f_.multi_network) {
    if (g.network_names_size() != 0) {
      for (const auto& n : *main.network_names) out.networks.push_back(Network{out.name + "/" + n});
    } else if (g.partial_groups_size() != 0) {
      for (const auto& n : g.partial_groups(0).group().network_names())
        out.networks.push_back(Network{out.name + "/" + n});
    }
  }
  if (out.networks.empty()) out.networks.push_back(Network{out.name + "/" + out.name});
  for (const auto& n : out.networks)
    if (n.name.size() + 1 > kMaxNetworkName)
      return bad(fmt::format("network name of {} bytes is too long (at most {})", n.name.size(), kMaxNetworkName - 1));

  // Boundary layers of every context.
  for (int ci = 0; ci < layers_from.contexts->size(); ++ci) {
    const auto& ctx = (*layers_from.contexts)[ci];
    for (const auto& e : ctx.metadata().edge_layers()) {
      const uint32_t conn = e.switch_info().connection();
      if (conn == 0) {
        Layer l = AISRV_TRY(boundary_layer(e, layers_from, static_cast<uint32_t>(ci)));
        (l.direction == Direction::host_to_device ? out.input_layers : out.output_layers).push_back(std::move(l));
      } else if (conn > 3) {
        return bad(fmt::format("network group '{}' context {}: edge connection type {} out of range (0-3)", out.name,
                               ci, conn));
      }
    }
  }
  std::set<std::string> names;
  for (const auto* list : {&out.input_layers, &out.output_layers})
    for (const auto& l : *list)
      if (!names.insert(l.name).second)
        return bad(fmt::format("network group '{}': layer name '{}' appears more than once", out.name, l.name));
  if (out.input_layers.empty()) return bad(fmt::format("network group '{}' has no input layer", out.name));

  // Sorted output names.
  if (main.fused->has_fused_layers()) {
    out.sorted_output_names.assign(main.fused->updated_sorted_outputs().begin(),
                                   main.fused->updated_sorted_outputs().end());
  } else if (!f_.net_flow && g.partial_groups_size() != 0 && g.partial_groups(0).group().sorted_outputs_size() != 0) {
    const auto& s = g.partial_groups(0).group().sorted_outputs();
    out.sorted_output_names.assign(s.begin(), s.end());
  } else if (g.sorted_outputs_size() != 0) {
    out.sorted_output_names.assign(g.sorted_outputs().begin(), g.sorted_outputs().end());
  } else {
    if (main.contexts->empty() || (*main.contexts)[main.contexts->size() - 1].metadata().sorted_outputs_size() == 0)
      return bad(fmt::format("network group '{}': the HEF does not give the sorted output names", out.name));
    const auto& last = (*main.contexts)[main.contexts->size() - 1].metadata().sorted_outputs();
    out.sorted_output_names.assign(last.begin(), last.end());
  }

  if (f_.net_flow) AISRV_TRY(host_ops(g, out));
  return out;
}

Result<Features> features_of(const pb::File& f, Hef& hef) {
  Features out;
  const bool use_extensions = f.header().format_version() > 0;
  auto has = [&](uint32_t type) {
    if (use_extensions)
      return std::any_of(f.extensions().begin(), f.extensions().end(),
                         [type](const pb::Extension& e) { return e.type() == type; });
    const auto& l = f.legacy_features();
    switch (type) {
      case 3: return l.padded_ddr_buffers();
      case 4: return l.is_multi_context();
      default: return false;
    }
  };
  auto has_optional = [&](uint32_t type) {
    return use_extensions && std::any_of(f.optional_extensions().begin(), f.optional_extensions().end(),
                                         [type](const pb::Extension& e) { return e.type() == type; });
  };
  out.multi_network = has_optional(extension::multi_network_variable_batch_size);
  out.net_flow = has(extension::hailo_net_flow);
  out.scale_per_feature = has(extension::output_scale_per_feature);
  out.hw_padding_in_dfc = has_optional(extension::hw_padding);
  out.nms_burst = has(extension::nms_output_burst);
  out.periph_calc = has(extension::periph_calculation_in_hailort);
  hef.multi_network_support = out.multi_network;
  hef.net_flow = out.net_flow;
  hef.output_scale_per_feature = out.scale_per_feature;
  hef.hw_padding_in_dfc = out.hw_padding_in_dfc;
  hef.nms_burst = out.nms_burst;
  hef.periph_calculation_in_hailort = out.periph_calc;
  return out;
}

bool in_network(const NetworkGroup& g, const Layer& l, std::string_view network) {
  return network.empty() || l.network_name == network || network == g.core_op_name + "/" + g.core_op_name;
}

void append_vstreams(const Layer& l, std::vector<VStreamInfo>& out);

VStreamInfo vstream_of(const Layer& l) {
  VStreamInfo v;
  v.name = l.name;
  v.network_name = l.network_name;
  v.direction = l.direction;
  v.type = l.type;
  v.transposed = l.transposed;
  v.order = l.is_multi_planar ? l.device_order : default_host_order(l.device_order).value_or(FormatOrder::auto_);
  if (l.nms) {
    NmsShape s;
    s.max_bboxes_per_class = l.nms->max_bboxes_per_class * l.nms->chunks_per_frame;
    s.number_of_classes = l.nms->number_of_classes;
    s.max_bboxes_total = s.max_bboxes_per_class * l.nms->number_of_classes;
    v.nms = s;
    v.type = FormatType::float32;
  } else {
    v.shape = l.shape;
  }
  v.quant = l.quant;
  v.quant_per_feature = l.quant_per_feature;
  v.quant_is_per_feature = l.quant_is_per_feature;
  return v;
}

bool contains_name(const std::vector<VStreamInfo>& v, const std::string& name) {
  return std::any_of(v.begin(), v.end(), [&](const VStreamInfo& i) { return i.name == name; });
}

void append_vstreams(const Layer& l, std::vector<VStreamInfo>& out) {
  if (l.is_mux) {
    for (const auto& p : l.predecessors) append_vstreams(p, out);
  } else if (l.is_defused_nms) {
    for (const auto& f : l.fused_nms_layers)
      if (!contains_name(out, f.name)) out.push_back(vstream_of(f));
  } else {
    out.push_back(vstream_of(l));
  }
}

void append_streams(const Layer& l, std::vector<StreamInfo>& out) {
  const size_t n = l.is_multi_planar ? l.planes.size() : 1;
  for (size_t i = 0; i < n; ++i) {
    const Layer& s = l.is_multi_planar ? l.planes[i] : l;
    StreamInfo info;
    info.name = s.name;
    info.direction = s.direction;
    info.order = s.device_order;
    info.type = s.type;
    info.transposed = s.transposed;
    info.hw_data_bytes = s.hw_data_bytes;
    if (s.device_order == FormatOrder::nms_on_chip && s.nms) {
      info.nms = s.nms;
      info.hw_frame_size = s.nms->hw_frame_size();
    } else {
      info.shape = s.shape;
      info.hw_shape = s.hw_shape;
      info.hw_frame_size = hw_frame_bytes(s.hw_shape, s.hw_data_bytes);
    }
    info.index = s.stream_index;
    info.quant = s.quant;
    info.is_mux = s.is_mux;
    out.push_back(std::move(info));
  }
}

Result<std::vector<const Layer*>> layers_of(const NetworkGroup& g, const std::vector<Layer>& layers,
                                            std::string_view network) {
  std::vector<const Layer*> out;
  for (const auto& l : layers)
    if (in_network(g, l, network)) out.push_back(&l);
  if (out.empty()) return bad(fmt::format("network '{}' not found in network group '{}'", network, g.name));
  return out;
}

}  // namespace

Result<Hef> read_hef(std::span<const uint8_t> file) {
  Container c = AISRV_TRY(open_container(file));
  Hef hef;
  hef.container = c.facts;
  if (c.proto.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return bad(fmt::format("HEF protobuf of {} bytes is too large to parse", c.proto.size()));
  pb::File msg;
  if (!msg.ParseFromArray(c.proto.data(), static_cast<int>(c.proto.size())))
    return bad(fmt::format("HEF protobuf ({} bytes after the {}-byte v{} header) does not parse", c.proto.size(),
                           c.facts.header_size, c.facts.version));
  if (!msg.has_header()) return bad("HEF protobuf has no header message");
  if (!is_known_hw_arch(msg.header().hw_arch()))
    return bad(fmt::format("HEF hw_arch {} is not a known Hailo architecture", msg.header().hw_arch()));
  hef.hw_arch = static_cast<HwArch>(msg.header().hw_arch());
  hef.sdk_version = msg.header().sdk_version();
  hef.timestamp_ms = msg.header().timestamp_ms();
  hef.format_version = msg.header().format_version();
  for (const auto& e : msg.extensions()) {
    hef.extensions.push_back(Extension{e.type(), e.name()});
    if (!extension::known_to_hailort(e.type())) hef.unsupported_extensions.push_back(e.name());
  }
  for (const auto& e : msg.optional_extensions()) hef.optional_extensions.push_back(Extension{e.type(), e.name()});
  const Features features = AISRV_TRY(features_of(msg, hef));
  if (msg.network_groups_size() == 0) return bad("HEF has no network group");

  Reader reader(msg, hef.hw_arch, features);
  for (int i = 0; i < msg.network_groups_size(); ++i) {
    NetworkGroup g = AISRV_TRY(reader.group(msg.network_groups(i), static_cast<size_t>(i)));
    for (const auto& other : hef.network_groups)
      if (other.name == g.name) return bad(fmt::format("HEF has two network groups named '{}'", g.name));
    hef.network_groups.push_back(std::move(g));
  }
  std::sort(hef.network_groups.begin(), hef.network_groups.end(),
            [](const NetworkGroup& a, const NetworkGroup& b) { return a.name < b.name; });
  // Every network of every group must resolve to vstreams (HailoRT fails parse-hef otherwise).
  for (const auto& g : hef.network_groups)
    for (const auto& n : g.networks) {
      AISRV_TRY(input_vstream_infos(g, n.name));
      AISRV_TRY(output_vstream_infos(g, n.name));
    }
  return hef;
}

Result<Hef> read_hef_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return make_error(Errc::not_found, "{}: no such HEF file", path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::io_error, "{}: cannot open", path.string());
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size < 0) return make_error(Errc::io_error, "{}: cannot determine the size", path.string());
  std::vector<uint8_t> bytes;
  try {
    bytes.resize(static_cast<size_t>(size));
  } catch (const std::bad_alloc&) {  // a file larger than the memory we can get: refuse, do not crash
    return make_error(Errc::io_error, "{}: {} bytes do not fit in memory", path.string(), size);
  }
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size))
    return make_error(Errc::io_error, "{}: read failed", path.string());
  auto hef = read_hef(bytes);
  if (!hef) return Error{hef.error().code, fmt::format("{}: {}", path.string(), hef.error().message)};
  return hef;
}

Result<std::vector<StreamInfo>> input_stream_infos(const NetworkGroup& group, std::string_view network) {
  std::vector<StreamInfo> out;
  for (const Layer* l : AISRV_TRY(layers_of(group, group.input_layers, network))) append_streams(*l, out);
  return out;
}

Result<std::vector<StreamInfo>> output_stream_infos(const NetworkGroup& group, std::string_view network) {
  std::vector<StreamInfo> out;
  for (const Layer* l : AISRV_TRY(layers_of(group, group.output_layers, network))) append_streams(*l, out);
  return out;
}

Result<std::vector<VStreamInfo>> input_vstream_infos(const NetworkGroup& group, std::string_view network) {
  std::vector<VStreamInfo> out;
  for (const Layer* l : AISRV_TRY(layers_of(group, group.input_layers, network))) append_vstreams(*l, out);
  if (out.empty()) return bad(fmt::format("no input vstreams for network '{}'", network));
  return out;
}

Result<std::vector<VStreamInfo>> output_vstream_infos(const NetworkGroup& group, std::string_view network) {
  std::vector<VStreamInfo> out;
  for (const Layer* l : AISRV_TRY(layers_of(group, group.output_layers, network))) {
    const bool consumed = std::any_of(group.ops.begin(), group.ops.end(), [&](const HostOp& op) {
      return std::find(op.input_names.begin(), op.input_names.end(), l->name) != op.input_names.end();
    });
    if (consumed) continue;  // replaced by the op's output
    std::vector<VStreamInfo> mine;
    append_vstreams(*l, mine);
    for (auto& v : mine)
      if (!contains_name(out, v.name)) out.push_back(std::move(v));
  }
  for (const auto& op : group.ops) out.push_back(op.output);
  const auto& order = group.sorted_output_names;
  for (const auto& v : out)
    if (std::find(order.begin(), order.end(), v.name) == order.end())
      return bad(fmt::format("network group '{}': output '{}' is not in the sorted output names", group.name, v.name));
  std::stable_sort(out.begin(), out.end(), [&](const VStreamInfo& a, const VStreamInfo& b) {
    return std::find(order.begin(), order.end(), a.name) < std::find(order.begin(), order.end(), b.name);
  });
  if (out.empty()) return bad(fmt::format("no output vstreams for network '{}'", network));
  return out;
}

}  // namespace aisrv::engine::hailo8::hef
