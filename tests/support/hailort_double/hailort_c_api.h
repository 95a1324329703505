/* aisrv tests — the HailoRT 4.21-4.23 C API as the HailoRT test double declares it: its own transcription of the
 * types in hailort.h (one and the same file in 4.21.0, 4.22.0 and 4.23.0), from ../shared/design/
 * hailort-c-api-facts.md §3 and §5 — independent of the product's engine/hailo8/runtime/.../hailort_abi.hpp, so that a
 * wrong declaration in the product is not mirrored by the double (tests/unit/hailo8_backend/test_hailort_layouts.cpp
 * checks the product's side). Only what the double implements. Test-only. */
#ifndef AISRV_TESTS_HAILORT_C_API_H
#define AISRV_TESTS_HAILORT_C_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* hailo_status: 0..93 in 4.21-4.23 (HAILO_STATUS_COUNT = 94), names in the order of the header's X-macro. */
#define HAILORT_DOUBLE_STATUSES(X)                                                                                   \
  X(0, HAILO_SUCCESS) X(1, HAILO_UNINITIALIZED) X(2, HAILO_INVALID_ARGUMENT) X(3, HAILO_OUT_OF_HOST_MEMORY)          \
  X(4, HAILO_TIMEOUT) X(5, HAILO_INSUFFICIENT_BUFFER) X(6, HAILO_INVALID_OPERATION) X(7, HAILO_NOT_IMPLEMENTED)      \
  X(8, HAILO_INTERNAL_FAILURE) X(9, HAILO_DATA_ALIGNMENT_FAILURE) X(10, HAILO_CHUNK_TOO_LARGE)                       \
  X(11, HAILO_INVALID_LOGGER_LEVEL) X(12, HAILO_CLOSE_FAILURE) X(13, HAILO_OPEN_FILE_FAILURE)                        \
  X(14, HAILO_FILE_OPERATION_FAILURE) X(15, HAILO_UNSUPPORTED_CONTROL_PROTOCOL_VERSION)                             \
  X(16, HAILO_UNSUPPORTED_FW_VERSION) X(17, HAILO_INVALID_CONTROL_RESPONSE) X(18, HAILO_FW_CONTROL_FAILURE)          \
  X(19, HAILO_ETH_FAILURE) X(20, HAILO_ETH_INTERFACE_NOT_FOUND) X(21, HAILO_ETH_RECV_FAILURE)                        \
  X(22, HAILO_ETH_SEND_FAILURE) X(23, HAILO_INVALID_FIRMWARE) X(24, HAILO_INVALID_CONTEXT_COUNT)                     \
  X(25, HAILO_INVALID_FRAME) X(26, HAILO_INVALID_HEF) X(27, HAILO_PCIE_NOT_SUPPORTED_ON_PLATFORM)                    \
  X(28, HAILO_INTERRUPTED_BY_SIGNAL) X(29, HAILO_START_VDMA_CHANNEL_FAIL) X(30, HAILO_SYNC_VDMA_BUFFER_FAIL)         \
  X(31, HAILO_STOP_VDMA_CHANNEL_FAIL) X(32, HAILO_CLOSE_VDMA_CHANNEL_FAIL)                                          \
  X(33, HAILO_ATR_TABLES_CONF_VALIDATION_FAIL) X(34, HAILO_EVENT_CREATE_FAIL) X(35, HAILO_READ_EVENT_FAIL)           \
  X(36, HAILO_DRIVER_OPERATION_FAILED) X(37, HAILO_INVALID_FIRMWARE_MAGIC) X(38, HAILO_INVALID_FIRMWARE_CODE_SIZE)   \
  X(39, HAILO_INVALID_KEY_CERTIFICATE_SIZE) X(40, HAILO_INVALID_CONTENT_CERTIFICATE_SIZE)                           \
  X(41, HAILO_MISMATCHING_FIRMWARE_BUFFER_SIZES) X(42, HAILO_INVALID_FIRMWARE_CPU_ID)                               \
  X(43, HAILO_CONTROL_RESPONSE_MD5_MISMATCH) X(44, HAILO_GET_CONTROL_RESPONSE_FAIL)                                 \
  X(45, HAILO_GET_D2H_EVENT_MESSAGE_FAIL) X(46, HAILO_MUTEX_INIT_FAIL) X(47, HAILO_OUT_OF_DESCRIPTORS)               \
  X(48, HAILO_UNSUPPORTED_OPCODE) X(49, HAILO_USER_MODE_RATE_LIMITER_NOT_SUPPORTED)                                 \
  X(50, HAILO_RATE_LIMIT_MAXIMUM_BANDWIDTH_EXCEEDED) X(51, HAILO_ANSI_TO_UTF16_CONVERSION_FAILED)                   \
  X(52, HAILO_UTF16_TO_ANSI_CONVERSION_FAILED) X(53, HAILO_UNEXPECTED_INTERFACE_INFO_FAILURE)                       \
  X(54, HAILO_UNEXPECTED_ARP_TABLE_FAILURE) X(55, HAILO_MAC_ADDRESS_NOT_FOUND) X(56, HAILO_NO_IPV4_INTERFACES_FOUND) \
  X(57, HAILO_SHUTDOWN_EVENT_SIGNALED) X(58, HAILO_THREAD_ALREADY_ACTIVATED) X(59, HAILO_THREAD_NOT_ACTIVATED)       \
  X(60, HAILO_THREAD_NOT_JOINABLE) X(61, HAILO_NOT_FOUND) X(62, HAILO_COMMUNICATION_CLOSED) X(63, HAILO_STREAM_ABORT) \
  X(64, HAILO_DRIVER_NOT_INSTALLED) X(65, HAILO_NOT_AVAILABLE) X(66, HAILO_TRAFFIC_CONTROL_FAILURE)                  \
  X(67, HAILO_INVALID_SECOND_STAGE) X(68, HAILO_INVALID_PIPELINE) X(69, HAILO_NETWORK_GROUP_NOT_ACTIVATED)           \
  X(70, HAILO_VSTREAM_PIPELINE_NOT_ACTIVATED) X(71, HAILO_OUT_OF_FW_MEMORY) X(72, HAILO_STREAM_NOT_ACTIVATED)        \
  X(73, HAILO_DEVICE_IN_USE) X(74, HAILO_OUT_OF_PHYSICAL_DEVICES) X(75, HAILO_INVALID_DEVICE_ARCHITECTURE)           \
  X(76, HAILO_INVALID_DRIVER_VERSION) X(77, HAILO_RPC_FAILED) X(78, HAILO_INVALID_SERVICE_VERSION)                   \
  X(79, HAILO_NOT_SUPPORTED) X(80, HAILO_NMS_BURST_INVALID_DATA) X(81, HAILO_OUT_OF_HOST_CMA_MEMORY)                 \
  X(82, HAILO_QUEUE_IS_FULL) X(83, HAILO_DMA_MAPPING_ALREADY_EXISTS) X(84, HAILO_CANT_MEET_BUFFER_REQUIREMENTS)      \
  X(85, HAILO_DRIVER_INVALID_RESPONSE) X(86, HAILO_DRIVER_INVALID_IOCTL) X(87, HAILO_DRIVER_TIMEOUT)                 \
  X(88, HAILO_DRIVER_INTERRUPTED) X(89, HAILO_CONNECTION_REFUSED) X(90, HAILO_DRIVER_WAIT_CANCELED)                  \
  X(91, HAILO_HEF_FILE_CORRUPTED) X(92, HAILO_HEF_NOT_SUPPORTED) X(93, HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE)

typedef enum {
#define HAILORT_DOUBLE_ENUM(value, name) name = value,
  HAILORT_DOUBLE_STATUSES(HAILORT_DOUBLE_ENUM)
#undef HAILORT_DOUBLE_ENUM
  HAILO_STATUS_COUNT,
  HAILO_STATUS_MAX_ENUM = 0x7FFFFFFF
} hailo_status;

#define HAILO_MAX_NAME_SIZE 128
#define HAILO_MAX_NETWORK_NAME_SIZE 257
#define HAILO_MAX_DEVICE_ID_LENGTH 32
#define HAILO_MAX_STREAMS_COUNT 40
#define HAILO_MAX_NETWORK_GROUPS 8
#define HAILO_MAX_NETWORKS_IN_NETWORK_GROUP 8
#define HAILO_DEFAULT_VSTREAM_TIMEOUT_MS 10000
#define HAILO_DEFAULT_VSTREAM_QUEUE_SIZE 2

typedef enum { HAILO_FORMAT_TYPE_AUTO = 0, HAILO_FORMAT_TYPE_UINT8, HAILO_FORMAT_TYPE_UINT16,
               HAILO_FORMAT_TYPE_FLOAT32, HAILO_FORMAT_TYPE_MAX_ENUM = 0x7FFFFFFF } hailo_format_type_t;
typedef enum { HAILO_FORMAT_ORDER_AUTO = 0, HAILO_FORMAT_ORDER_MAX_ENUM = 0x7FFFFFFF } hailo_format_order_t;
typedef enum { HAILO_FORMAT_FLAGS_NONE = 0, HAILO_FORMAT_FLAGS_MAX_ENUM = 0x7FFFFFFF } hailo_format_flags_t;
typedef enum { HAILO_H2D_STREAM = 0, HAILO_D2H_STREAM = 1, HAILO_STREAM_DIRECTION_MAX_ENUM = 0x7FFFFFFF }
    hailo_stream_direction_t;
typedef enum { HAILO_SCHEDULING_ALGORITHM_NONE = 0, HAILO_SCHEDULING_ALGORITHM_ROUND_ROBIN,
               HAILO_SCHEDULING_ALGORITHM_MAX_ENUM = 0x7FFFFFFF } hailo_scheduling_algorithm_t;

typedef struct { uint32_t major, minor, revision; } hailo_version_t;
typedef struct { char id[HAILO_MAX_DEVICE_ID_LENGTH]; } hailo_device_id_t;
typedef struct { hailo_format_type_t type; hailo_format_order_t order; hailo_format_flags_t flags; } hailo_format_t;
typedef struct { uint32_t height, width, features; } hailo_3d_image_shape_t;
typedef struct { float qp_zp, qp_scale, limvals_min, limvals_max; } hailo_quant_info_t;
typedef struct {
  uint32_t number_of_classes, max_bboxes_per_class, max_bboxes_total, max_accumulated_mask_size;
} hailo_nms_shape_t;
typedef struct {
  char name[HAILO_MAX_NAME_SIZE];
  char network_name[HAILO_MAX_NETWORK_NAME_SIZE];
  hailo_stream_direction_t direction;
  hailo_format_t format;
  union {
    hailo_3d_image_shape_t shape;
    hailo_nms_shape_t nms_shape;
  };
  hailo_quant_info_t quant_info;
} hailo_vstream_info_t;
typedef struct {
  hailo_format_t user_buffer_format;
  uint32_t timeout_ms;
  uint32_t queue_size;
  uint32_t vstream_stats_flags;            /* hailo_vstream_stats_flags_t */
  uint32_t pipeline_elements_stats_flags;  /* hailo_pipeline_elem_stats_flags_t */
} hailo_vstream_params_t;
typedef struct { char name[HAILO_MAX_NAME_SIZE]; hailo_vstream_params_t params; } hailo_input_vstream_params_by_name_t;
typedef struct { char name[HAILO_MAX_NAME_SIZE]; hailo_vstream_params_t params; } hailo_output_vstream_params_by_name_t;
typedef struct {
  uint32_t device_count;
  hailo_device_id_t* device_ids;
  hailo_scheduling_algorithm_t scheduling_algorithm;
  const char* group_id;
  bool multi_process_service;
} hailo_vdevice_params_t;
typedef struct {
  uint32_t stream_interface; /* hailo_stream_interface_t */
  hailo_stream_direction_t direction;
  uint32_t flags;            /* hailo_stream_flags_t */
  union { uint32_t largest_interface_params[17]; }; /* MIPI input: 68 bytes */
} hailo_stream_parameters_t;
typedef struct { char name[HAILO_MAX_NAME_SIZE]; hailo_stream_parameters_t stream_params; } hailo_stream_parameters_by_name_t;
typedef struct { uint16_t batch_size; } hailo_network_parameters_t;
typedef struct { char name[HAILO_MAX_NETWORK_NAME_SIZE]; hailo_network_parameters_t network_params; }
    hailo_network_parameters_by_name_t;
typedef struct {
  char name[HAILO_MAX_NAME_SIZE];
  uint16_t batch_size;
  uint32_t power_mode;   /* hailo_power_mode_t */
  uint32_t latency;      /* hailo_latency_measurement_flags_t */
  size_t stream_params_by_name_count;
  hailo_stream_parameters_by_name_t stream_params_by_name[HAILO_MAX_STREAMS_COUNT];
  size_t network_params_by_name_count;
  hailo_network_parameters_by_name_t network_params_by_name[HAILO_MAX_NETWORKS_IN_NETWORK_GROUP];
} hailo_configure_network_group_params_t;
typedef struct {
  size_t network_group_params_count;
  hailo_configure_network_group_params_t network_group_params[HAILO_MAX_NETWORK_GROUPS];
} hailo_configure_params_t;

typedef struct _hailo_vdevice* hailo_vdevice;
typedef struct _hailo_hef* hailo_hef;
typedef struct _hailo_configured_network_group* hailo_configured_network_group;
typedef struct _hailo_input_vstream* hailo_input_vstream;
typedef struct _hailo_output_vstream* hailo_output_vstream;

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
/* The double's own check of its transcription (facts §3): sizes and the offsets that matter. */
static_assert(sizeof(hailo_status) == 4, "4-byte enum");
static_assert(sizeof(hailo_vstream_info_t) == 436 && offsetof(hailo_vstream_info_t, quant_info) == 420, "facts §3.5");
static_assert(sizeof(hailo_vstream_params_t) == 28 && sizeof(hailo_input_vstream_params_by_name_t) == 156, "§3.4");
static_assert(sizeof(hailo_vdevice_params_t) == 40 && offsetof(hailo_vdevice_params_t, group_id) == 24, "§3.3");
static_assert(sizeof(hailo_stream_parameters_t) == 80 && sizeof(hailo_stream_parameters_by_name_t) == 208, "§3.7");
static_assert(sizeof(hailo_network_parameters_by_name_t) == 260, "§3.7");
static_assert(sizeof(hailo_configure_network_group_params_t) == 10560, "§3.7");
static_assert(sizeof(hailo_configure_params_t) == 84488, "§3.7");
static_assert(HAILO_STATUS_COUNT == 94, "4.21-4.23");
#endif

#endif
