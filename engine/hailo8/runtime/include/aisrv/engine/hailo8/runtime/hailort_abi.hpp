// aisrv hailo8/runtime — our own declarations of the few HailoRT C API types and functions the engine calls, for
// loading libhailort at run time (no build-time dependency on HailoRT). Layouts, values and signatures are those of
// HailoRT 4.21-4.23 (one and the same hailort.h) as measured in hailort-c-api-facts.md §2-3; every struct size and the offsets
// we rely on are pinned by static_asserts. LP64 only (x86_64, aarch64), like the measurements.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aisrv::engine::hailo8::hailort_abi {

static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8, "the HailoRT layouts below are the LP64 ones");

// hailo_status is a 4-byte enum; the values we name (stable from 4.12 to 4.23, facts §5).
using hailo_status = int32_t;
inline constexpr hailo_status HAILO_SUCCESS = 0;
inline constexpr hailo_status HAILO_INVALID_ARGUMENT = 2;
inline constexpr hailo_status HAILO_TIMEOUT = 4;
inline constexpr hailo_status HAILO_INSUFFICIENT_BUFFER = 5;
inline constexpr hailo_status HAILO_INVALID_OPERATION = 6;
inline constexpr hailo_status HAILO_OPEN_FILE_FAILURE = 13;
inline constexpr hailo_status HAILO_UNSUPPORTED_FW_VERSION = 16;
inline constexpr hailo_status HAILO_INVALID_HEF = 26;
inline constexpr hailo_status HAILO_DRIVER_OPERATION_FAILED = 36;
inline constexpr hailo_status HAILO_NOT_FOUND = 61;
inline constexpr hailo_status HAILO_DRIVER_NOT_INSTALLED = 64;
inline constexpr hailo_status HAILO_NETWORK_GROUP_NOT_ACTIVATED = 69;
inline constexpr hailo_status HAILO_DEVICE_IN_USE = 73;
inline constexpr hailo_status HAILO_OUT_OF_PHYSICAL_DEVICES = 74;
inline constexpr hailo_status HAILO_INVALID_DEVICE_ARCHITECTURE = 75;
inline constexpr hailo_status HAILO_INVALID_DRIVER_VERSION = 76;
inline constexpr hailo_status HAILO_NOT_SUPPORTED = 79;
inline constexpr hailo_status HAILO_DRIVER_INVALID_IOCTL = 86;
inline constexpr hailo_status HAILO_HEF_FILE_CORRUPTED = 91;
inline constexpr hailo_status HAILO_HEF_NOT_SUPPORTED = 92;
inline constexpr hailo_status HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE = 93;

// Enums (4 bytes each; values from facts §3.1).
using hailo_format_type_t = uint32_t;  // AUTO 0, UINT8 1, UINT16 2, FLOAT32 3
using hailo_format_order_t = uint32_t; // = hef::FormatOrder
using hailo_format_flags_t = uint32_t; // NONE 0, QUANTIZED 1, TRANSPOSED 2
using hailo_stream_direction_t = uint32_t;  // H2D 0, D2H 1
using hailo_scheduling_algorithm_t = uint32_t;  // NONE 0, ROUND_ROBIN 1
inline constexpr hailo_format_type_t HAILO_FORMAT_TYPE_AUTO = 0;
inline constexpr hailo_stream_direction_t HAILO_H2D_STREAM = 0;
inline constexpr hailo_stream_direction_t HAILO_D2H_STREAM = 1;

inline constexpr size_t HAILO_MAX_NAME_SIZE = 128;
inline constexpr size_t HAILO_MAX_NETWORK_NAME_SIZE = 257;
inline constexpr size_t HAILO_MAX_DEVICE_ID_LENGTH = 32;
inline constexpr size_t HAILO_MAX_STREAMS_COUNT = 40;
inline constexpr size_t HAILO_MAX_NETWORK_GROUPS = 8;
inline constexpr size_t HAILO_MAX_NETWORKS_IN_NETWORK_GROUP = 8;

// Opaque handles (pointers to library-private structs).
struct hailo_vdevice_s;
struct hailo_hef_s;
struct hailo_configured_network_group_s;
struct hailo_input_vstream_s;
struct hailo_output_vstream_s;
using hailo_vdevice = hailo_vdevice_s*;
using hailo_hef = hailo_hef_s*;
using hailo_configured_network_group = hailo_configured_network_group_s*;
using hailo_input_vstream = hailo_input_vstream_s*;
using hailo_output_vstream = hailo_output_vstream_s*;

struct hailo_version_t {
  uint32_t major;
  uint32_t minor;
  uint32_t revision;
};
static_assert(sizeof(hailo_version_t) == 12);

struct hailo_device_id_t {
  char id[HAILO_MAX_DEVICE_ID_LENGTH];
};
static_assert(sizeof(hailo_device_id_t) == 32 && alignof(hailo_device_id_t) == 1);

struct hailo_format_t {
  hailo_format_type_t type;
  hailo_format_order_t order;
  hailo_format_flags_t flags;
};
static_assert(sizeof(hailo_format_t) == 12);

struct hailo_3d_image_shape_t {
  uint32_t height;
  uint32_t width;
  uint32_t features;
};
static_assert(sizeof(hailo_3d_image_shape_t) == 12);

struct hailo_quant_info_t {
  float qp_zp;
  float qp_scale;
  float limvals_min;
  float limvals_max;
};
static_assert(sizeof(hailo_quant_info_t) == 16);

// 4.21+ layout. 4.20.x differs (a union of max_bboxes_per_class / max_bboxes_total at 4, max_accumulated_mask_size
// at 8, order_type at 12) and 4.17-4.19 lack max_bboxes_total: the loader refuses both.
struct hailo_nms_shape_t {
  uint32_t number_of_classes;
  uint32_t max_bboxes_per_class;
  uint32_t max_bboxes_total;
  uint32_t max_accumulated_mask_size;
};
static_assert(sizeof(hailo_nms_shape_t) == 16);

struct hailo_vstream_info_t {
  char name[HAILO_MAX_NAME_SIZE];
  char network_name[HAILO_MAX_NETWORK_NAME_SIZE];
  hailo_stream_direction_t direction;
  hailo_format_t format;
  union {
    hailo_3d_image_shape_t shape;
    hailo_nms_shape_t nms_shape;
  };
  hailo_quant_info_t quant_info;
};
static_assert(sizeof(hailo_vstream_info_t) == 436 && alignof(hailo_vstream_info_t) == 4);
static_assert(offsetof(hailo_vstream_info_t, network_name) == 128);
static_assert(offsetof(hailo_vstream_info_t, direction) == 388);
static_assert(offsetof(hailo_vstream_info_t, format) == 392);
static_assert(offsetof(hailo_vstream_info_t, shape) == 404);
static_assert(offsetof(hailo_vstream_info_t, quant_info) == 420);

struct hailo_vstream_params_t {
  hailo_format_t user_buffer_format;
  uint32_t timeout_ms;
  uint32_t queue_size;
  uint32_t vstream_stats_flags;
  uint32_t pipeline_elements_stats_flags;
};
static_assert(sizeof(hailo_vstream_params_t) == 28);

struct hailo_input_vstream_params_by_name_t {
  char name[HAILO_MAX_NAME_SIZE];
  hailo_vstream_params_t params;
};
struct hailo_output_vstream_params_by_name_t {
  char name[HAILO_MAX_NAME_SIZE];
  hailo_vstream_params_t params;
};
static_assert(sizeof(hailo_input_vstream_params_by_name_t) == 156);
static_assert(sizeof(hailo_output_vstream_params_by_name_t) == 156);
static_assert(offsetof(hailo_input_vstream_params_by_name_t, params) == 128);

struct hailo_vdevice_params_t {
  uint32_t device_count;
  hailo_device_id_t* device_ids;
  hailo_scheduling_algorithm_t scheduling_algorithm;
  const char* group_id;
  bool multi_process_service;
};
static_assert(sizeof(hailo_vdevice_params_t) == 40 && alignof(hailo_vdevice_params_t) == 8);
static_assert(offsetof(hailo_vdevice_params_t, device_ids) == 8);
static_assert(offsetof(hailo_vdevice_params_t, scheduling_algorithm) == 16);
static_assert(offsetof(hailo_vdevice_params_t, group_id) == 24);
static_assert(offsetof(hailo_vdevice_params_t, multi_process_service) == 32);

// Configure parameters: we only allocate them for the library to fill (hailo_init_configure_params_by_vdevice) and
// hand them back, so the per-interface union stays opaque.
struct hailo_stream_parameters_t {
  uint32_t stream_interface;
  hailo_stream_direction_t direction;
  uint32_t flags;
  alignas(4) uint8_t interface_params[68];
};
static_assert(sizeof(hailo_stream_parameters_t) == 80 && alignof(hailo_stream_parameters_t) == 4);

struct hailo_stream_parameters_by_name_t {
  char name[HAILO_MAX_NAME_SIZE];
  hailo_stream_parameters_t stream_params;
};
static_assert(sizeof(hailo_stream_parameters_by_name_t) == 208);

struct hailo_network_parameters_t {
  uint16_t batch_size;
};
struct hailo_network_parameters_by_name_t {
  char name[HAILO_MAX_NETWORK_NAME_SIZE];
  hailo_network_parameters_t network_params;
};
static_assert(sizeof(hailo_network_parameters_by_name_t) == 260 && alignof(hailo_network_parameters_by_name_t) == 2);
static_assert(offsetof(hailo_network_parameters_by_name_t, network_params) == 258);

struct hailo_configure_network_group_params_t {
  char name[HAILO_MAX_NAME_SIZE];
  uint16_t batch_size;
  uint32_t power_mode;
  uint32_t latency;
  size_t stream_params_by_name_count;
  hailo_stream_parameters_by_name_t stream_params_by_name[HAILO_MAX_STREAMS_COUNT];
  size_t network_params_by_name_count;
  hailo_network_parameters_by_name_t network_params_by_name[HAILO_MAX_NETWORKS_IN_NETWORK_GROUP];
};
static_assert(sizeof(hailo_configure_network_group_params_t) == 10560);
static_assert(offsetof(hailo_configure_network_group_params_t, batch_size) == 128);
static_assert(offsetof(hailo_configure_network_group_params_t, power_mode) == 132);
static_assert(offsetof(hailo_configure_network_group_params_t, latency) == 136);
static_assert(offsetof(hailo_configure_network_group_params_t, stream_params_by_name_count) == 144);
static_assert(offsetof(hailo_configure_network_group_params_t, stream_params_by_name) == 152);
static_assert(offsetof(hailo_configure_network_group_params_t, network_params_by_name_count) == 8472);
static_assert(offsetof(hailo_configure_network_group_params_t, network_params_by_name) == 8480);

struct hailo_configure_params_t {
  size_t network_group_params_count;
  hailo_configure_network_group_params_t network_group_params[HAILO_MAX_NETWORK_GROUPS];
};
static_assert(sizeof(hailo_configure_params_t) == 84488 && alignof(hailo_configure_params_t) == 8);

// HEF inspection and host transforms without a device (used by `aisrv hef verify-hailort`, facts §2.4, §3.6 and
// hailort.h of 4.21-4.23).
struct hailo_input_transform_context_s;
struct hailo_output_transform_context_s;
using hailo_input_transform_context = hailo_input_transform_context_s*;
using hailo_output_transform_context = hailo_output_transform_context_s*;
using hailo_stream_transform_mode_t = uint32_t;  // NO_TRANSFORM 0, TRANSFORM_COPY 1
inline constexpr hailo_stream_transform_mode_t HAILO_STREAM_TRANSFORM_COPY = 1;
using hailo_nms_burst_type_t = uint32_t;  // H8_BBOX 0, H15_BBOX 1, H8_PER_CLASS 2, H15_PER_CLASS 3, H15_PER_FRAME 4

struct hailo_nms_defuse_info_t {
  uint32_t class_group_index;
  char original_name[HAILO_MAX_NAME_SIZE];
};
static_assert(sizeof(hailo_nms_defuse_info_t) == 132 && alignof(hailo_nms_defuse_info_t) == 4);

struct hailo_nms_info_t {
  uint32_t number_of_classes;
  uint32_t max_bboxes_per_class;
  uint32_t max_bboxes_total;
  uint32_t bbox_size;
  uint32_t chunks_per_frame;
  bool is_defused;
  hailo_nms_defuse_info_t defuse_info;
  uint32_t burst_size;
  hailo_nms_burst_type_t burst_type;
};
static_assert(sizeof(hailo_nms_info_t) == 164 && alignof(hailo_nms_info_t) == 4);
static_assert(offsetof(hailo_nms_info_t, defuse_info) == 24 && offsetof(hailo_nms_info_t, burst_size) == 156);

struct hailo_stream_info_t {
  union {
    struct {
      hailo_3d_image_shape_t shape;
      hailo_3d_image_shape_t hw_shape;
    } shapes;
    hailo_nms_info_t nms_info;
  };
  uint32_t hw_data_bytes;
  uint32_t hw_frame_size;
  hailo_format_t format;
  hailo_stream_direction_t direction;
  uint8_t index;
  char name[HAILO_MAX_NAME_SIZE];
  hailo_quant_info_t quant_info;
  bool is_mux;
};
static_assert(sizeof(hailo_stream_info_t) == 340 && alignof(hailo_stream_info_t) == 4);
static_assert(offsetof(hailo_stream_info_t, hw_data_bytes) == 164 && offsetof(hailo_stream_info_t, format) == 172);
static_assert(offsetof(hailo_stream_info_t, index) == 188 && offsetof(hailo_stream_info_t, name) == 189);
static_assert(offsetof(hailo_stream_info_t, quant_info) == 320 && offsetof(hailo_stream_info_t, is_mux) == 336);

struct hailo_transform_params_t {
  hailo_stream_transform_mode_t transform_mode;
  hailo_format_t user_buffer_format;
};
static_assert(sizeof(hailo_transform_params_t) == 16);

struct hailo_network_group_info_t {
  char name[HAILO_MAX_NAME_SIZE];
  bool is_multi_context;
};
static_assert(sizeof(hailo_network_group_info_t) == 129 && alignof(hailo_network_group_info_t) == 1);

// The functions, as pointer types (C linkage in the library; names are the dlsym names).
extern "C" {
using hailo_get_library_version_fn = hailo_status (*)(hailo_version_t* version);
// params must be NULL (a placeholder struct); `*device_ids_length` in: capacity, out: devices found.
using hailo_scan_devices_fn = hailo_status (*)(void* params, hailo_device_id_t* device_ids, size_t* device_ids_length);
using hailo_get_status_message_fn = const char* (*)(hailo_status status);
using hailo_init_vdevice_params_fn = hailo_status (*)(hailo_vdevice_params_t* params);
using hailo_create_vdevice_fn = hailo_status (*)(hailo_vdevice_params_t* params, hailo_vdevice* vdevice);
using hailo_release_vdevice_fn = hailo_status (*)(hailo_vdevice vdevice);
using hailo_create_hef_buffer_fn = hailo_status (*)(hailo_hef* hef, const void* buffer, size_t size);
using hailo_release_hef_fn = hailo_status (*)(hailo_hef hef);
using hailo_init_configure_params_by_vdevice_fn = hailo_status (*)(hailo_hef hef, hailo_vdevice vdevice,
                                                                   hailo_configure_params_t* params);
using hailo_configure_vdevice_fn = hailo_status (*)(hailo_vdevice vdevice, hailo_hef hef,
                                                    hailo_configure_params_t* params,
                                                    hailo_configured_network_group* network_groups,
                                                    size_t* number_of_network_groups);
using hailo_make_input_vstream_params_fn = hailo_status (*)(hailo_configured_network_group network_group, bool unused,
                                                            hailo_format_type_t format_type,
                                                            hailo_input_vstream_params_by_name_t* input_params,
                                                            size_t* input_params_count);
using hailo_make_output_vstream_params_fn = hailo_status (*)(hailo_configured_network_group network_group,
                                                             bool unused, hailo_format_type_t format_type,
                                                             hailo_output_vstream_params_by_name_t* output_params,
                                                             size_t* output_params_count);
using hailo_create_input_vstreams_fn = hailo_status (*)(hailo_configured_network_group network_group,
                                                        const hailo_input_vstream_params_by_name_t* inputs_params,
                                                        size_t inputs_count, hailo_input_vstream* input_vstreams);
using hailo_create_output_vstreams_fn = hailo_status (*)(hailo_configured_network_group network_group,
                                                         const hailo_output_vstream_params_by_name_t* outputs_params,
                                                         size_t outputs_count, hailo_output_vstream* output_vstreams);
using hailo_release_input_vstreams_fn = hailo_status (*)(const hailo_input_vstream* input_vstreams,
                                                         size_t inputs_count);
using hailo_release_output_vstreams_fn = hailo_status (*)(const hailo_output_vstream* output_vstreams,
                                                          size_t outputs_count);
using hailo_get_input_vstream_info_fn = hailo_status (*)(hailo_input_vstream input_vstream,
                                                         hailo_vstream_info_t* vstream_info);
using hailo_get_output_vstream_info_fn = hailo_status (*)(hailo_output_vstream output_vstream,
                                                          hailo_vstream_info_t* vstream_info);
using hailo_get_input_vstream_frame_size_fn = hailo_status (*)(hailo_input_vstream input_vstream, size_t* frame_size);
using hailo_get_output_vstream_frame_size_fn = hailo_status (*)(hailo_output_vstream output_vstream,
                                                                size_t* frame_size);
using hailo_vstream_write_raw_buffer_fn = hailo_status (*)(hailo_input_vstream input_vstream, const void* buffer,
                                                           size_t buffer_size);
using hailo_vstream_read_raw_buffer_fn = hailo_status (*)(hailo_output_vstream output_vstream, void* buffer,
                                                          size_t buffer_size);

// HEF inspection and host transforms (no device).
using hailo_create_hef_file_fn = hailo_status (*)(hailo_hef* hef, const char* file_name);
using hailo_get_network_groups_infos_fn = hailo_status (*)(hailo_hef hef, hailo_network_group_info_t* infos,
                                                           size_t* number_of_infos);
// `name`: a network group or network name, NULL for the first network group. Too small an array: status 5 and the
// needed count in *number_of_streams / *vstream_infos_count.
using hailo_hef_get_all_stream_infos_fn = hailo_status (*)(hailo_hef hef, const char* name,
                                                           hailo_stream_info_t* stream_infos,
                                                           size_t stream_infos_length, size_t* number_of_streams);
using hailo_hef_get_all_vstream_infos_fn = hailo_status (*)(hailo_hef hef, const char* name,
                                                            hailo_vstream_info_t* vstream_infos,
                                                            size_t* vstream_infos_count);
using hailo_get_vstream_frame_size_fn = hailo_status (*)(hailo_vstream_info_t* vstream_info,
                                                         hailo_format_t* user_buffer_format, size_t* frame_size);
using hailo_get_host_frame_size_fn = size_t (*)(const hailo_stream_info_t* stream_info,
                                                const hailo_transform_params_t* transform_params);
using hailo_create_input_transform_context_fn = hailo_status (*)(const hailo_stream_info_t* stream_info,
                                                                 const hailo_transform_params_t* transform_params,
                                                                 hailo_input_transform_context* transform_context);
using hailo_release_input_transform_context_fn = hailo_status (*)(hailo_input_transform_context transform_context);
using hailo_transform_frame_by_input_transform_context_fn = hailo_status (*)(
    hailo_input_transform_context transform_context, const void* src, size_t src_size, void* dst, size_t dst_size);
using hailo_create_output_transform_context_fn = hailo_status (*)(const hailo_stream_info_t* stream_info,
                                                                  const hailo_transform_params_t* transform_params,
                                                                  hailo_output_transform_context* transform_context);
using hailo_release_output_transform_context_fn = hailo_status (*)(hailo_output_transform_context transform_context);
using hailo_transform_frame_by_output_transform_context_fn = hailo_status (*)(
    hailo_output_transform_context transform_context, const void* src, size_t src_size, void* dst, size_t dst_size);
}

}  // namespace aisrv::engine::hailo8::hailort_abi
