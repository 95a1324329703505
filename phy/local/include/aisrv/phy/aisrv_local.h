/* aisrv phy — the in-process local channel, C API (XMOS aisrv_local_*). An embedded application that links the
 * server calls an engine directly: no serialisation, one copy in and one copy out. Every function returns the wire
 * status word (AISRV_STATUS_OKAY or one error bit, see aisrv/protocol/status.h); on an error the engine's debug log
 * has a line saying why. Obtain a channel from C++ with aisrv::phy::LocalChannel::c_handle(). */
#ifndef AISRV_PHY_AISRV_LOCAL_H
#define AISRV_PHY_AISRV_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include "aisrv/protocol/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aisrv_local aisrv_local_t;

/* Copies `length` bytes (exactly the tensor's length) into input tensor `tensor`. */
uint32_t aisrv_local_set_input_tensor(aisrv_local_t *channel, uint32_t tensor, const void *data, size_t length);
/* Runs one inference (and the engine's chain, if configured); returns when it is done. */
uint32_t aisrv_local_start_inference(aisrv_local_t *channel);
/* Copies output tensor `tensor` into `data`; `length` must be exactly the tensor's length. */
uint32_t aisrv_local_get_output_tensor(aisrv_local_t *channel, uint32_t tensor, void *data, size_t length);
/* Acquires one sensor frame into input tensor 0 and runs one inference. */
uint32_t aisrv_local_acquire_single(aisrv_local_t *channel);
/* Byte lengths of a tensor of the loaded model. */
uint32_t aisrv_local_get_input_length(aisrv_local_t *channel, uint32_t tensor, uint32_t *length);
uint32_t aisrv_local_get_output_length(aisrv_local_t *channel, uint32_t tensor, uint32_t *length);

#ifdef __cplusplus
}
#endif
#endif
