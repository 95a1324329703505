// aisrv hailo8/hef — names, mappings and size formulas of the HEF metadata model (HailoRT's strings and
// defaults as documented in hailo8-facts.md §1.5-1.6).
#include "aisrv/engine/hailo8/hef/types.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace aisrv::engine::hailo8::hef {

bool is_known_hw_arch(uint32_t value) {
  return value <= 6 || (value >= 100 && value <= 106) || value == 108;
}

std::string_view hw_arch_name(HwArch arch) {
  switch (arch) {
    case HwArch::hailo8: return "HAILO8";
    case HwArch::hailo8p: return "HAILO8P";
    case HwArch::hailo8r: return "HAILO8R";
    case HwArch::hailo8l: return "HAILO8L";
    case HwArch::hailo15m: return "HAILO15M";
    case HwArch::hailo10h: return "HAILO10H";
    case HwArch::hailo15l: return "HAILO15L";
    case HwArch::sage_a0: return "SAGE_A0";
    case HwArch::sage_b0: return "SAGE_B0";
    case HwArch::paprika_b0: return "PAPRIKA_B0";
    case HwArch::hailo15h: return "HAILO15H";
    case HwArch::ginger: return "GINGER";
    case HwArch::lavender: return "LAVENDER";
    case HwArch::pluto: return "PLUTO";
    case HwArch::mars: return "MARS";
  }
  return "UNKNOWN";
}

DeviceArch device_arch_of(HwArch arch) {
  switch (arch) {
    case HwArch::sage_a0: return DeviceArch::hailo8_a0;
    case HwArch::hailo8:
    case HwArch::hailo8p:
    case HwArch::hailo8r:
    case HwArch::sage_b0:
    case HwArch::paprika_b0: return DeviceArch::hailo8;
    case HwArch::hailo8l: return DeviceArch::hailo8l;
    case HwArch::hailo15h:
    case HwArch::ginger:
    case HwArch::lavender: return DeviceArch::hailo15h;
    case HwArch::pluto:
    case HwArch::hailo15l: return DeviceArch::hailo15l;
    case HwArch::hailo15m: return DeviceArch::hailo15m;
    case HwArch::hailo10h: return DeviceArch::hailo10h;
    case HwArch::mars: return DeviceArch::mars;
  }
  return DeviceArch::hailo8;
}

std::string_view device_arch_name(DeviceArch arch) {
  switch (arch) {
    case DeviceArch::hailo8_a0: return "HAILO8_A0";
    case DeviceArch::hailo8: return "HAILO8";
    case DeviceArch::hailo8l: return "HAILO8L";
    case DeviceArch::hailo15h: return "HAILO15H";
    case DeviceArch::hailo15l: return "HAILO15L";
    case DeviceArch::hailo15m: return "HAILO15M";
    case DeviceArch::hailo10h: return "HAILO10H";
    case DeviceArch::mars: return "MARS";
  }
  return "UNKNOWN ARCHITECTURE";
}

std::optional<DeviceArch> device_arch_from_code(uint32_t code) {
  if (code > static_cast<uint32_t>(DeviceArch::mars)) return std::nullopt;
  return static_cast<DeviceArch>(code);
}

bool runs_on_hailo8(HwArch arch) {
  return arch == HwArch::hailo8p || arch == HwArch::hailo8r || arch == HwArch::hailo8l;
}

std::string_view format_order_name(FormatOrder order) {
  switch (order) {
    case FormatOrder::nhwc: return "NHWC";
    case FormatOrder::nhcw: return "NHCW";
    case FormatOrder::fcr: return "FCR";
    case FormatOrder::f8cr: return "F8CR";
    case FormatOrder::nhw: return "NHW";
    case FormatOrder::nc: return "NC";
    case FormatOrder::bayer_rgb: return "BAYER RGB";
    case FormatOrder::bayer_rgb_12bit: return "12 BIT BAYER RGB";
    case FormatOrder::rgb888: return "RGB 888";
    case FormatOrder::nchw: return "NCHW";
    case FormatOrder::yuy2: return "YUY2";
    case FormatOrder::nv12: return "NV12";
    case FormatOrder::yyuv: return "YYUV";
    case FormatOrder::nv21: return "NV21";
    case FormatOrder::yyvu: return "YYVU";
    case FormatOrder::rgb4: return "RGB4";
    case FormatOrder::i420: return "I420";
    case FormatOrder::yyyyuv: return "YYYYUV";
    case FormatOrder::nms_with_byte_mask: return "HAILO NMS WITH BYTE MASK";
    case FormatOrder::nms_on_chip: return "HAILO NMS ON CHIP";
    case FormatOrder::nms_by_class: return "HAILO NMS BY CLASS";
    case FormatOrder::nms_by_score: return "HAILO NMS BY SCORE";
    case FormatOrder::auto_:
    case FormatOrder::hailo_nms: break;
  }
  return "Nan";
}

std::string_view format_order_id(FormatOrder order) {
  switch (order) {
    case FormatOrder::auto_: return "AUTO";
    case FormatOrder::nhwc: return "NHWC";
    case FormatOrder::nhcw: return "NHCW";
    case FormatOrder::fcr: return "FCR";
    case FormatOrder::f8cr: return "F8CR";
    case FormatOrder::nhw: return "NHW";
    case FormatOrder::nc: return "NC";
    case FormatOrder::bayer_rgb: return "BAYER_RGB";
    case FormatOrder::bayer_rgb_12bit: return "12_BIT_BAYER_RGB";
    case FormatOrder::hailo_nms: return "HAILO_NMS";
    case FormatOrder::rgb888: return "RGB888";
    case FormatOrder::nchw: return "NCHW";
    case FormatOrder::yuy2: return "YUY2";
    case FormatOrder::nv12: return "NV12";
    case FormatOrder::nv21: return "NV21";
    case FormatOrder::yyuv: return "HAILO_YYUV";
    case FormatOrder::yyvu: return "HAILO_YYVU";
    case FormatOrder::rgb4: return "RGB4";
    case FormatOrder::i420: return "I420";
    case FormatOrder::yyyyuv: return "HAILO_YYYYUV";
    case FormatOrder::nms_with_byte_mask: return "HAILO_NMS_WITH_BYTE_MASK";
    case FormatOrder::nms_on_chip: return "HAILO_NMS_ON_CHIP";
    case FormatOrder::nms_by_class: return "HAILO_NMS_BY_CLASS";
    case FormatOrder::nms_by_score: return "HAILO_NMS_BY_SCORE";
  }
  return "UNKNOWN";
}

std::optional<FormatOrder> default_host_order(FormatOrder device_order) {
  switch (device_order) {
    case FormatOrder::nhwc:
    case FormatOrder::nhcw:
    case FormatOrder::rgb888: return FormatOrder::nhwc;
    case FormatOrder::fcr:
    case FormatOrder::f8cr:
    case FormatOrder::nhw:
    case FormatOrder::nc:
    case FormatOrder::bayer_rgb:
    case FormatOrder::bayer_rgb_12bit:
    case FormatOrder::nchw:
    case FormatOrder::yuy2: return device_order;
    case FormatOrder::yyuv: return FormatOrder::nv12;
    case FormatOrder::yyvu: return FormatOrder::nv21;
    case FormatOrder::yyyyuv: return FormatOrder::i420;
    case FormatOrder::nms_on_chip: return FormatOrder::nms_by_class;
    default: return std::nullopt;
  }
}

std::string_view format_type_name(FormatType type) {
  switch (type) {
    case FormatType::uint8: return "UINT8";
    case FormatType::uint16: return "UINT16";
    case FormatType::float32: return "FLOAT32";
    case FormatType::auto_: return "AUTO";
  }
  return "Nan";
}

uint32_t format_type_bytes(FormatType type) {
  switch (type) {
    case FormatType::uint8: return 1;
    case FormatType::uint16: return 2;
    case FormatType::float32: return 4;
    case FormatType::auto_: return 0;
  }
  return 0;
}

std::string_view nms_burst_type_name(NmsBurstType type) {
  switch (type) {
    case NmsBurstType::h8_bbox: return "H8_BBOX";
    case NmsBurstType::h8_per_class: return "H8_PER_CLASS";
    case NmsBurstType::h15_bbox: return "H15_BBOX";
    case NmsBurstType::h15_per_class: return "H15_PER_CLASS";
    case NmsBurstType::h15_per_frame: return "H15_PER_FRAME";
  }
  return "UNKNOWN";
}

uint64_t NmsInfo::hw_frame_size() const {
  // get_nms_hw_frame_size: per class a u16 counter and bbox_size * max(burst, max bboxes); per frame `chunks` of
  // those, plus one extra burst.
  const uint64_t per_class = 2 + uint64_t{bbox_size} * std::max(burst_size, max_bboxes_per_class);
  const uint64_t per_chunk = uint64_t{number_of_classes} * per_class;
  return uint64_t{chunks_per_frame} * per_chunk + uint64_t{bbox_size} * burst_size;
}

uint64_t VStreamInfo::frame_size() const {
  if (nms) return nms_by_class_floats(nms->number_of_classes, nms->max_bboxes_per_class) * format_type_bytes(type);
  return uint64_t{shape.height} * shape.width * shape.features * format_type_bytes(type);
}

bool HostOp::is_nms() const {
  return kind != Kind::argmax && kind != Kind::softmax;
}

std::string_view HostOp::type_name() const {
  switch (kind) {
    case Kind::yolov5:
    case Kind::yolov5_bbox_only: return "YOLOV5";
    case Kind::yolox: return "YOLOX";
    case Kind::ssd: return "SSD";
    case Kind::iou: return "IOU";
    case Kind::yolov8:
    case Kind::yolov8_bbox_only: return "YOLOV8";
    case Kind::argmax: return "ARGMAX";
    case Kind::softmax: return "SOFTMAX";
  }
  return "Nan";
}

std::string HostOp::description() const {
  // The op descriptions of HailoRT 4.23 (NmsOpMetadata::get_nms_config_description and the get_op_description of
  // each op type).
  const int ih = static_cast<int>(image_height);
  const int iw = static_cast<int>(image_width);
  switch (kind) {
    case Kind::argmax:
    case Kind::softmax: return fmt::format("{} Op, Name: {}", type_name(), display_name);
    case Kind::yolov5_bbox_only:
    case Kind::yolov8_bbox_only:
      return fmt::format("Op {}, Name: {}, Classes: {}, Image height: {:d}, Image width: {:d}", type_name(),
                         display_name, classes, ih, iw);
    default: break;
  }
  std::string nms = fmt::format("Score threshold: {:.3f}, IoU threshold: {:.2f}, Classes: {}", score_threshold,
                                iou_threshold, classes);
  if (output.order == FormatOrder::nms_by_class || output.order == FormatOrder::nhwc)
    nms += fmt::format(", Max bboxes per class: {}", max_proposals_per_class);
  if (output.order == FormatOrder::nms_by_score)
    nms += fmt::format(", Max bboxes total: {}", max_proposals_per_class * classes);
  if (background_removal) nms += fmt::format(", Background removal index: {}", background_removal_index);
  switch (kind) {
    case Kind::iou: return fmt::format("Op {}, Name: {}, {}", type_name(), display_name, nms);
    case Kind::ssd:
      return fmt::format(
          "Op {}, Name: {}, {}, Image height: {:d}, Image width: {:d}, Centers scales factor: {}, Bbox dimension "
          "scale factor: {}, Normalize boxes: {}",
          type_name(), display_name, nms, ih, iw, ssd_centers_scale_factor, ssd_bbox_dimensions_scale_factor, false);
    default:
      return fmt::format("Op {}, Name: {}, {}, Image height: {:d}, Image width: {:d}", type_name(), display_name, nms,
                         ih, iw);
  }
}

bool Hef::has_extension(uint32_t type) const {
  return std::any_of(extensions.begin(), extensions.end(), [type](const Extension& e) { return e.type == type; });
}

namespace extension {
bool known_to_hailort(uint32_t type) {
  // SUPPORTED_EXTENSIONS of HailoRT 4.23: every id 0..32 except TEST_ONE (7) and the optional-only
  // MULTI_NETWORK_VARIABLE_BATCH_SIZE (8).
  return type <= 32 && type != 7 && type != 8;
}
}  // namespace extension

}  // namespace aisrv::engine::hailo8::hef
