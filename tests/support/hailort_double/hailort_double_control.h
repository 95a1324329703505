/* aisrv tests — control interface of the HailoRT test double (libhailort_double.so). Tests dlopen the same library
 * the backend loads and call these through dlsym to script it (vstreams, output data, failures, version) and to read
 * back what it recorded (call log, written input frames, the HEF bytes it was given). */
#ifndef AISRV_HAILORT_DOUBLE_CONTROL_H
#define AISRV_HAILORT_DOUBLE_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Forget everything: no vstreams, no failures, version 4.23.0, empty log. */
void aisrv_hailort_double_reset(void);
void aisrv_hailort_double_set_version(uint32_t major, uint32_t minor, uint32_t revision);
/* Declare one vstream of the (single) network group the double configures. direction 0 = input, 1 = output.
 * format_type/order are hailo_format_type_t/hailo_format_order_t values; frame_size is what the library reports. */
void aisrv_hailort_double_add_vstream(const char* name, int direction, uint32_t format_type, uint32_t format_order,
                                      uint32_t height, uint32_t width, uint32_t features, size_t frame_size);
/* Bytes every read of output `name` returns (must be frame_size long to be used). */
void aisrv_hailort_double_set_output(const char* name, const void* data, size_t size);
/* Make the next calls of `function` (e.g. "hailo_create_vdevice") return `status` (0 clears). */
void aisrv_hailort_double_fail(const char* function, int32_t status);
/* One line per call, "function key=value ...", joined with '\n'. Valid until the next call into the double. */
const char* aisrv_hailort_double_log(void);
/* The last frame written to input `name`; returns its size (0 if none), copies at most `capacity` bytes. */
size_t aisrv_hailort_double_written(const char* name, void* out, size_t capacity);
/* The HEF bytes given to hailo_create_hef_buffer; returns the size, copies at most `capacity` bytes. */
size_t aisrv_hailort_double_hef(void* out, size_t capacity);
/* The device ids hailo_scan_devices reports, comma-separated (e.g. "0000:03:00.0"); empty: none. */
void aisrv_hailort_double_set_devices(const char* ids);
/* Handles created and not yet released (vdevices + hefs + vstreams); 0 after a clean teardown. */
int aisrv_hailort_double_live_handles(void);

#ifdef __cplusplus
}
#endif

#endif
