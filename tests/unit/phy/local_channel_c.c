/* Unit test helper in C: drives an engine through the aisrv_local_* C API (compiled as C99, proving the header is C).
 * Returns 0 when every step behaved, otherwise the number of the first failed step. */
#include <string.h>

#include "aisrv/phy/aisrv_local.h"

int local_channel_c_scenario(aisrv_local_t *ch, uint32_t in_len, uint32_t out_len) {
  uint8_t in[64], out[64], small[2];
  uint32_t len = 0;
  uint32_t i;
  if (in_len > sizeof in || out_len > sizeof out) return 100;
  for (i = 0; i < in_len; ++i) in[i] = (uint8_t)(i + 10);
  if (aisrv_local_get_input_length(ch, 0, &len) != AISRV_STATUS_OKAY || len != in_len) return 1;
  if (aisrv_local_get_output_length(ch, 0, &len) != AISRV_STATUS_OKAY || len != out_len) return 2;
  if (aisrv_local_set_input_tensor(ch, 0, in, in_len) != AISRV_STATUS_OKAY) return 3;
  if (aisrv_local_start_inference(ch) != AISRV_STATUS_OKAY) return 4;
  if (aisrv_local_get_output_tensor(ch, 0, out, out_len) != AISRV_STATUS_OKAY) return 5;
  for (i = 0; i < out_len; ++i)
    if (out[i] != (uint8_t)(in[i % in_len] + 1)) return 6;
  if (aisrv_local_set_input_tensor(ch, 0, in, in_len - 1) != AISRV_STATUS_ERROR_BAD_LENGTH) return 7;
  if (aisrv_local_set_input_tensor(ch, 3, in, in_len) != AISRV_STATUS_ERROR_BAD_TENSOR) return 8;
  if (aisrv_local_get_output_tensor(ch, 0, small, sizeof small) != AISRV_STATUS_ERROR_BAD_LENGTH) return 9;
  if (aisrv_local_acquire_single(ch) != AISRV_STATUS_ERROR_NOT_SUPPORTED) return 10;
  if (aisrv_local_set_input_tensor(ch, 0, NULL, 4) != AISRV_STATUS_ERROR_BAD_LENGTH) return 11;
  return 0;
}

/* With a sensor: aisrv_local_acquire_single captures the next frame into input 0 and infers. `frame` is what the
 * sensor delivers next. */
int local_channel_c_acquire(aisrv_local_t *ch, const uint8_t *frame, uint32_t len) {
  uint8_t out[64];
  uint32_t i;
  if (len > sizeof out) return 100;
  if (aisrv_local_acquire_single(ch) != AISRV_STATUS_OKAY) return 1;
  if (aisrv_local_get_output_tensor(ch, 0, out, len) != AISRV_STATUS_OKAY) return 2;
  for (i = 0; i < len; ++i)
    if (out[i] != (uint8_t)(frame[i] + 1)) return 3;
  return 0;
}
