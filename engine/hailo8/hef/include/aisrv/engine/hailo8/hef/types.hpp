// aisrv hailo8/hef — the metadata model of a HEF file as the HEF reader produces it: architecture, SDK version,
// extensions, network groups with their networks, boundary layers (device side), the stream and vstream views a
// user sees (hardware and host side), quantization, NMS info and host post-process ops, and the frame-size formulas
// that follow from them. Enum values follow the HailoRT C API (hailo_format_order_t etc., hailort-c-api-facts.md
// §3.1) so that the runtime glue can compare them with what libhailort reports. This is the one vocabulary of the
// Hailo-8 engine: the host transforms and the backend use these types too (library aisrv_hailo8_hef_types).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aisrv::engine::hailo8::hef {

// ProtoHEFHwArch values as stored in the HEF header (hailo8-facts.md §1.4).
enum class HwArch : uint32_t {
  hailo8 = 0,
  hailo8p = 1,
  hailo8r = 2,
  hailo8l = 3,
  hailo15m = 4,
  hailo10h = 5,
  hailo15l = 6,
  sage_a0 = 100,
  sage_b0 = 101,
  paprika_b0 = 102,
  hailo15h = 103,
  ginger = 104,
  lavender = 105,
  pluto = 106,
  mars = 108,
};
// Whether `value` is one of the HwArch values above.
bool is_known_hw_arch(uint32_t value);
std::string_view hw_arch_name(HwArch arch);  // "HAILO8P", "HAILO8L", ...

// The device family a HEF architecture maps to (what parse-hef prints). The values are hailo_device_architecture_t,
// the codes the firmware's IDENTIFY reports, so the driver layer names them with the same function.
enum class DeviceArch : uint32_t {
  hailo8_a0 = 0,
  hailo8 = 1,
  hailo8l = 2,
  hailo15h = 3,
  hailo15l = 4,
  hailo15m = 5,
  hailo10h = 6,
  mars = 7,
};
DeviceArch device_arch_of(HwArch arch);
std::string_view device_arch_name(DeviceArch arch);  // "HAILO8", "HAILO8L", ...; "UNKNOWN ARCHITECTURE" otherwise
// A device architecture code (IDENTIFY) as DeviceArch; nullopt for codes this model does not know.
std::optional<DeviceArch> device_arch_from_code(uint32_t code);
// Whether a Hailo-8 device accepts a HEF compiled for `arch` (HailoRT: HAILO8P, HAILO8R and HAILO8L do).
bool runs_on_hailo8(HwArch arch);

// hailo_format_order_t values.
enum class FormatOrder : uint32_t {
  auto_ = 0,
  nhwc = 1,
  nhcw = 2,
  fcr = 3,
  f8cr = 4,
  nhw = 5,
  nc = 6,
  bayer_rgb = 7,
  bayer_rgb_12bit = 8,
  hailo_nms = 9,
  rgb888 = 10,
  nchw = 11,
  yuy2 = 12,
  nv12 = 13,
  nv21 = 14,
  yyuv = 15,
  yyvu = 16,
  rgb4 = 17,
  i420 = 18,
  yyyyuv = 19,
  nms_with_byte_mask = 20,
  nms_on_chip = 21,
  nms_by_class = 22,
  nms_by_score = 23,
};
std::string_view format_order_name(FormatOrder order);  // as hailortcli prints it: "NHWC", "HAILO NMS BY CLASS"
std::string_view format_order_id(FormatOrder order);    // identifier for JSON: "NHWC", "HAILO_NMS_BY_CLASS"
// The host (vstream) order HailoRT uses by default for a device order (DEFAULT_FORMAT_ORDER_MAP).
std::optional<FormatOrder> default_host_order(FormatOrder device_order);

// hailo_format_type_t values.
enum class FormatType : uint32_t { auto_ = 0, uint8 = 1, uint16 = 2, float32 = 3 };
std::string_view format_type_name(FormatType type);  // "UINT8", "UINT16", "FLOAT32"
uint32_t format_type_bytes(FormatType type);         // 1, 2, 4 (0 for auto)

enum class Direction { host_to_device, device_to_host };

// Height × width × features of a frame (NC frames are 1×1×C, NHW frames H×W×1).
struct Shape {
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t features = 0;
  bool operator==(const Shape&) const = default;
};

// The Hailo-8 moves whole 8-byte words per frame (HailoRT's HW_DATA_ALIGNMENT).
inline constexpr uint32_t kHwDataAlignment = 8;
// Bytes of a device frame of padded shape `hw` with `element_bytes`-byte elements, rounded up to whole 8-byte words
// (get_periph_frame_size). 64-bit arithmetic: no overflow for 32-bit dimensions and element sizes up to 4.
inline uint64_t align_to_hw_words(uint64_t bytes) {
  return (bytes + kHwDataAlignment - 1) / kHwDataAlignment * kHwDataAlignment;
}
inline uint64_t hw_frame_bytes(const Shape& hw, uint32_t element_bytes) {
  return align_to_hw_words(uint64_t{hw.height} * hw.width * hw.features * element_bytes);
}

// hailo_quant_info_t: dequantize (q - zero_point) * scale; quantize x / scale + zero_point, clipped to the limits.
struct QuantInfo {
  float zero_point = 0;
  float scale = 0;
  float limit_min = 0;
  float limit_max = 0;
  bool operator==(const QuantInfo&) const = default;
  // HailoRT's identity test: scale exactly 1 and zero point exactly 0 (then quantizing only rounds, no clipping).
  bool is_identity() const { return scale == 1.0f && zero_point == 0.0f; }
};

enum class NmsBurstType { h8_bbox, h8_per_class, h15_bbox, h15_per_class, h15_per_frame };
std::string_view nms_burst_type_name(NmsBurstType type);

// On-chip NMS parameters of a device->host layer (hailo_nms_info_t).
struct NmsInfo {
  uint32_t number_of_classes = 0;
  uint32_t max_bboxes_per_class = 0;
  uint32_t max_bboxes_total = 0;
  uint32_t bbox_size = 0;
  uint32_t chunks_per_frame = 1;
  uint32_t burst_size = 1;
  NmsBurstType burst_type = NmsBurstType::h8_bbox;
  bool is_defused = false;
  uint32_t class_group_index = 0;
  std::string original_name;

  // Bytes the device writes per frame (get_nms_hw_frame_size): chunks · classes · (2 + bbox_size ·
  // max(burst_size, max_bboxes_per_class)) + bbox_size · burst_size.
  uint64_t hw_frame_size() const;
};

// Floats of a HAILO_NMS_BY_CLASS frame: per class a count and `max_bboxes_per_class` boxes of 5 values
// (y_min, x_min, y_max, x_max, score): classes · (1 + 5 · max_bboxes_per_class).
inline uint64_t nms_by_class_floats(uint32_t classes, uint64_t max_bboxes_per_class) {
  return uint64_t{classes} * (1 + 5 * max_bboxes_per_class);
}

// One boundary edge layer of a core op as the device sees it (HailoRT's LayerInfo, boundary part).
struct Layer {
  std::string name;
  std::string network_name;  // "<group>/<network>"
  Direction direction = Direction::host_to_device;
  FormatOrder device_order = FormatOrder::nhwc;
  FormatType type = FormatType::uint8;
  bool transposed = false;
  Shape shape;     // logical shape
  Shape hw_shape;  // padded shape on the device
  uint32_t hw_data_bytes = 1;
  QuantInfo quant;                         // per tensor; all zero when the layer is quantized per feature
  std::vector<QuantInfo> quant_per_feature;  // one entry when per tensor, `features` entries when per feature
  bool quant_is_per_feature = false;
  std::optional<NmsInfo> nms;  // when device_order is nms_on_chip
  uint8_t stream_index = 0;
  uint8_t dma_engine = 0;
  uint32_t max_shmifo_size = 0;
  uint16_t core_bytes_per_buffer = 0;
  uint16_t core_buffers_per_frame = 0;
  uint32_t context_index = 0;
  uint8_t network_index = 0;
  std::optional<uint32_t> pad_index;  // net-flow: the core op's output pad this layer feeds
  bool is_mux = false;
  std::vector<Layer> predecessors;  // demuxed parts of a mux layer
  bool is_defused_nms = false;
  std::vector<Layer> fused_nms_layers;  // the fused NMS output a defused layer belongs to
  bool is_multi_planar = false;
  std::vector<Layer> planes;
};

// Device-side view of one stream (hailo_stream_info_t).
struct StreamInfo {
  std::string name;
  Direction direction = Direction::host_to_device;
  FormatOrder order = FormatOrder::nhwc;  // device order
  FormatType type = FormatType::uint8;
  bool transposed = false;
  uint32_t hw_data_bytes = 1;  // bytes per element on the device
  Shape shape;
  Shape hw_shape;
  std::optional<NmsInfo> nms;
  uint64_t hw_frame_size = 0;
  uint8_t index = 0;
  QuantInfo quant;
  bool is_mux = false;
};

// Maximum shape of an NMS output on the host (hailo_nms_shape_t).
struct NmsShape {
  uint32_t number_of_classes = 0;
  uint32_t max_bboxes_per_class = 0;
  uint32_t max_bboxes_total = 0;
};

// Host-side view of one tensor a user writes or reads (hailo_vstream_info_t plus per-feature quantization).
struct VStreamInfo {
  std::string name;
  std::string network_name;
  Direction direction = Direction::host_to_device;
  FormatOrder order = FormatOrder::nhwc;  // host order
  FormatType type = FormatType::uint8;    // host type with user type AUTO
  bool transposed = false;
  Shape shape;                      // when not NMS
  std::optional<NmsShape> nms;      // NMS orders
  QuantInfo quant;
  std::vector<QuantInfo> quant_per_feature;
  bool quant_is_per_feature = false;

  bool is_nms() const { return nms.has_value(); }
  // Bytes of one frame on the host with user type AUTO (= `type`) and the default host order.
  uint64_t frame_size() const;
};

// A host post-process op of a net-flow network group (YOLOv8 NMS, argmax, ...).
struct HostOp {
  enum class Kind { yolov5, yolov5_bbox_only, yolox, ssd, iou, yolov8, yolov8_bbox_only, argmax, softmax };
  Kind kind = Kind::yolov8;
  std::string op_name;      // the op's name in the HEF, e.g. "yolov8n/yolov8_nms_postprocess"
  std::string display_name; // HailoRT's name of the op type, e.g. "YOLOV8-Post-Process"
  std::vector<std::string> input_names;  // core output layers feeding the op
  // NMS parameters (NMS kinds only)
  float score_threshold = 0;
  float iou_threshold = 0;
  uint32_t classes = 0;
  uint32_t max_proposals_per_class = 0;
  bool background_removal = false;
  uint32_t background_removal_index = 0;
  float image_height = 0;
  float image_width = 0;
  uint32_t regression_length = 0;  // YOLOv8
  std::vector<uint32_t> strides;   // per decoder
  uint32_t ssd_centers_scale_factor = 0;
  uint32_t ssd_bbox_dimensions_scale_factor = 0;
  VStreamInfo output;  // the op's single output vstream

  bool is_nms() const;
  std::string_view type_name() const;  // "YOLOV8", "ARGMAX", ...
  // The one-line description HailoRT prints (get_op_description), before it is split at ", ".
  std::string description() const;
};

struct Network {
  std::string name;  // "<group>/<network>"
};

struct NetworkGroup {
  std::string name;
  std::string core_op_name;  // name in the metadata of the core op the layers come from (normally == name)
  size_t context_count = 0;  // dynamic contexts
  bool multi_context() const { return context_count > 1; }
  bool net_flow = false;
  std::vector<Network> networks;
  std::vector<Layer> input_layers;   // in context order
  std::vector<Layer> output_layers;  // in context order
  std::vector<std::string> sorted_output_names;
  std::vector<HostOp> ops;
  std::optional<uint32_t> layout_bitmap;  // multi-layout HEFs (Hailo-8L): the partial layout described
};

struct Extension {
  uint32_t type = 0;
  std::string name;
};

// Container facts (header, sizes, integrity) — see container.hpp.
struct ContainerFacts {
  uint32_t version = 0;
  uint32_t header_size = 0;
  uint64_t file_size = 0;
  uint32_t proto_size = 0;
  uint64_t ccws_size = 0;  // v1-v3 (v3: without its padding)
  uint32_t padding_size = 0;          // v3
  uint64_t additional_info_size = 0;  // v3
  std::string checksum_kind;          // "MD5", "CRC32", "XXH3-64"
  std::string checksum_hex;           // as stored (= computed, since it was verified)
};

struct Hef {
  ContainerFacts container;
  HwArch hw_arch = HwArch::hailo8p;
  std::string sdk_version;
  uint64_t timestamp_ms = 0;
  uint64_t format_version = 0;
  std::vector<Extension> extensions;
  std::vector<Extension> optional_extensions;
  std::vector<std::string> unsupported_extensions;  // extensions HailoRT 4.23 does not know (it refuses the HEF)
  bool periph_calculation_in_hailort = false;       // HailoRT >= 4.14 refuses HEFs without it
  bool multi_network_support = false;
  bool net_flow = false;
  bool output_scale_per_feature = false;
  bool hw_padding_in_dfc = false;
  bool nms_burst = false;
  std::vector<NetworkGroup> network_groups;  // sorted by name, as HailoRT lists them

  bool has_extension(uint32_t type) const;
  DeviceArch device_arch() const { return device_arch_of(hw_arch); }
};

// Extension type ids we name (ProtoHEFExtensionType).
namespace extension {
inline constexpr uint32_t is_multi_contexts = 4;
inline constexpr uint32_t multi_network_variable_batch_size = 8;
inline constexpr uint32_t hw_padding = 11;
inline constexpr uint32_t ko_run_asap = 12;
inline constexpr uint32_t hailo_net_flow = 13;
inline constexpr uint32_t nms_output_burst = 19;
inline constexpr uint32_t output_scale_per_feature = 25;
inline constexpr uint32_t periph_calculation_in_hailort = 26;
inline constexpr uint32_t batch_register_config = 28;
inline constexpr uint32_t shared_config = 32;
// Whether HailoRT 4.23 knows the extension (SUPPORTED_EXTENSIONS).
bool known_to_hailort(uint32_t type);
}  // namespace extension

}  // namespace aisrv::engine::hailo8::hef
