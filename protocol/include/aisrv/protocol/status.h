/* aisrv protocol — THE status table (C99 and C++).
 *
 * A response carries a u32 status word: 0 (OKAY) or exactly one error bit. GET_STATUS returns, as its payload, the
 * engine's status word: the state bits BUSY / SENSING plus every error bit raised since the last GET_STATUS
 * (self-clearing, as on XMOS). Bits 0x01..0x20 are the XMOS seed values; the rest are aisrv extensions. Error bits
 * belong to the session (connection) whose command raised them; the state bits are the engine's.
 *
 * Columns: X(NAME, bit, meaning)
 */
#ifndef AISRV_PROTOCOL_STATUS_H
#define AISRV_PROTOCOL_STATUS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* clang-format off */
#define AISRV_STATUS_TABLE(X) \
  X(BUSY,                0x0001u, "the engine is running an inference or a model load") \
  X(SENSING,             0x0002u, "the engine is acquiring a sensor frame") \
  X(ERROR_NO_MODEL,      0x0004u, "no model is loaded on this engine") \
  X(ERROR_MODEL_ERR,     0x0008u, "the model was refused (malformed, unsupported, too large)") \
  X(ERROR_INFER_ERR,     0x0010u, "the inference failed") \
  X(ERROR_BAD_CMD,       0x0020u, "unknown opcode or command not valid here") \
  X(ERROR_BAD_ENGINE,    0x0040u, "engine number out of range") \
  X(ERROR_BAD_TENSOR,    0x0080u, "tensor index out of range") \
  X(ERROR_BAD_LENGTH,    0x0100u, "payload length wrong for this command (or any payload on one that takes none)") \
  X(ERROR_NOT_SUPPORTED, 0x0200u, "the hardware or feature this command needs is not configured") \
  X(ERROR_FLASH,         0x0400u, "model store error (missing, corrupt, full, write failed)") \
  X(ERROR_CRC,           0x0800u, "payload integrity check failed") \
  X(ERROR_CANCELLED,     0x1000u, "the operation was cancelled") \
  X(ERROR_INTERNAL,      0x2000u, "internal server error (see the debug log)") \
  X(ERROR_MODEL_CHANGED, 0x4000u, "the engine's model changed since this session wrote its inputs or ran its inference") \
  X(ERROR_DENIED,        0x8000u, "not allowed for this session (access rule, token, or another session owns it)") \
  X(ERROR_LIMIT,         0x10000u, "a configured limit was reached (session memory, queued requests)") \
  X(ERROR_SENSOR,        0x20000u, "the sensor failed: no frame in time, the camera went away, an I2C write failed")
/* clang-format on */

#define AISRV_STATUS_OKAY 0u
#define AISRV_X_STATUS(name, bit, text) static const uint32_t AISRV_STATUS_##name = bit;
AISRV_STATUS_TABLE(AISRV_X_STATUS)
#undef AISRV_X_STATUS

/* State bits (never an error). */
#define AISRV_STATUS_STATE_MASK 0x0003u
/* Every defined error bit. */
#define AISRV_STATUS_ERROR_MASK 0x3FFFCu

/* Name of the lowest set bit ("OKAY" for 0, "UNKNOWN" for an undefined bit). */
const char *aisrv_status_name(uint32_t status);
/* One-line meaning of the lowest set bit. */
const char *aisrv_status_text(uint32_t status);

#ifdef __cplusplus
}
#endif
#endif
