/* aisrv protocol — THE command table (C99 and C++).
 *
 * Every opcode the server understands is one row of AISRV_COMMAND_TABLE. The server, the C++ client, the CLI,
 * the C99 microcontroller client and the docs checker all expand this one table; nothing else defines opcodes.
 *
 * Columns: X(NAME, byte value, kind, request payload, response payload)
 *   kind  AISRV_KIND_GET   the host receives data (bit 0x80 clear)
 *         AISRV_KIND_SET   the host sends data (bit 0x80 set); the response carries only a status
 *         AISRV_KIND_CALL  the host sends data and receives data (bit 0x80 set; e.g. INFER)
 * The request header's third word is called `tensor`; some commands use it as a small argument (documented).
 * Values marked "ext" are aisrv extensions beyond the XMOS seed set.
 */
#ifndef AISRV_PROTOCOL_COMMANDS_H
#define AISRV_PROTOCOL_COMMANDS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AISRV_KIND_GET 0
#define AISRV_KIND_SET 1
#define AISRV_KIND_CALL 2

/* clang-format off */
#define AISRV_COMMAND_TABLE(X) \
  X(NONE,                      0x00, AISRV_KIND_GET, "none", "none (always ERROR_BAD_CMD)") \
  X(GET_STATUS,                0x01, AISRV_KIND_GET, "none", "u32 engine status word (BUSY/SENSING + error bits since last read)") \
  X(GET_INPUT_TENSOR,          0x03, AISRV_KIND_GET, "none; tensor = input index", "input tensor bytes") \
  X(SET_INPUT_TENSOR,          0x83, AISRV_KIND_SET, "input tensor bytes (exact length); tensor = input index", "none") \
  X(SET_SERVER,                0x04, AISRV_KIND_GET, "none", "none (server upgrade: ERROR_NOT_SUPPORTED)") \
  X(START_INFER,               0x84, AISRV_KIND_SET, "none", "none") \
  X(GET_OUTPUT_TENSOR,         0x05, AISRV_KIND_GET, "none; tensor = output index", "output tensor bytes") \
  X(SET_MODEL_PRIMARY,         0x86, AISRV_KIND_SET, "model bytes (placed in the engine arena)", "none") \
  X(SET_MODEL_SECONDARY,       0x87, AISRV_KIND_SET, "model bytes (kept in external memory)", "none") \
  X(SET_MODEL_PRIMARY_FLASH,   0x96, AISRV_KIND_SET, "none (loads the engine's stored model into the arena)", "none") \
  X(SET_MODEL_SECONDARY_FLASH, 0x97, AISRV_KIND_SET, "none (loads the engine's stored model, external memory)", "none") \
  X(GET_SPEC,                  0x08, AISRV_KIND_GET, "none; tensor = tensor index", "u32[5] {0, 0, input length, output length, timings length}") \
  X(GET_TIMINGS,               0x09, AISRV_KIND_GET, "none", "u32 per operator of the last inference, nanoseconds (saturating)") \
  X(GET_INPUT_TENSOR_LENGTH,   0x0A, AISRV_KIND_GET, "none; tensor = input index", "u32 byte length") \
  X(GET_OUTPUT_TENSOR_LENGTH,  0x0B, AISRV_KIND_GET, "none; tensor = output index", "u32 byte length") \
  X(START_ACQUIRE_SINGLE,      0x8C, AISRV_KIND_SET, "none or XMOS's window (6 x u16); tensor = 0 fill input 0 (XMOS), 1 also infer (ext)", "none") \
  X(START_ACQUIRE_STREAM,      0x8E, AISRV_KIND_SET, "none (start, any tensor, as XMOS); ext: u32 mode 1 start, 0 stop", "none") \
  X(START_ACQUIRE_SET_I2C,     0x8F, AISRV_KIND_SET, "u8 address, u8 register, u8 value; ext: u8 address, u16 register, u8 value", "none") \
  X(GET_ACQUIRE_MODE,          0x0E, AISRV_KIND_GET, "none", "u32 mode (0 single: not streaming, 1 stream)") \
  X(GET_SENSOR_TENSOR,         0x0D, AISRV_KIND_GET, "none", "last acquired sensor frame") \
  X(SET_SENSOR_TENSOR,         0x8D, AISRV_KIND_SET, "sensor frame bytes (injected as the next frame)", "none") \
  X(GET_DEBUG_LOG,             0x0F, AISRV_KIND_GET, "none; tensor = max lines (0 = all); engine 0xFFFFFFFF = server log", "text lines, '\\n'-separated") \
  X(GET_ID,                    0x10, AISRV_KIND_GET, "none", "u32 server id (0x41495356)") \
  X(GET_OUTPUT_GPIO_EN,        0x11, AISRV_KIND_GET, "none; tensor = gpio index", "u32 enabled") \
  X(SET_OUTPUT_GPIO_EN,        0x91, AISRV_KIND_SET, "u32 enabled; tensor = gpio index (u8: every line, XMOS)", "none") \
  X(GET_OUTPUT_GPIO_THRESH,    0x12, AISRV_KIND_GET, "none; tensor = gpio index", "i32 threshold") \
  X(SET_OUTPUT_GPIO_THRESH,    0x92, AISRV_KIND_SET, "i32 threshold (f32 for a float32 output); tensor = gpio index (XMOS: u8 index, i8 threshold)", "none") \
  X(GET_OUTPUT_GPIO_MODE,      0x13, AISRV_KIND_GET, "none; tensor = gpio index", "u32 mode") \
  X(SET_OUTPUT_GPIO_MODE,      0x93, AISRV_KIND_SET, "u32 or u8 mode; tensor = 0", "none") \
  X(HELLO,                     0x55, AISRV_KIND_GET, "none", "none") \
  /* ext: protocol version, introspection, model lifecycle */ \
  X(GET_VERSION,               0x20, AISRV_KIND_GET, "none", "version record (protocol.md)") \
  X(GET_TENSOR_INFO,           0x21, AISRV_KIND_GET, "none", "tensor-info record: every input and output tensor") \
  X(GET_ENGINE_INFO,           0x22, AISRV_KIND_GET, "none", "engine-info record: kind, options, model state") \
  X(GET_TIMING_RECORD,         0x23, AISRV_KIND_GET, "none", "timing record of the last inference (queue, compute, per layer)") \
  X(GET_SESSION_INFO,          0x24, AISRV_KIND_GET, "none (engine not used)", "session record: id, peer, role, memory used and cap (protocol.md)") \
  X(GET_SERVER_STATS,          0x25, AISRV_KIND_GET, "none (engine not used)", "statistics record: uptime, sessions, per engine state, model, counters, last times, queue depth (protocol.md)") \
  X(GET_MODEL_METADATA,        0x26, AISRV_KIND_GET, "none", "model-metadata record: what the engine read about the model's outputs (task, labels, NMS layout; protocol.md)") \
  X(UNLOAD_MODEL,              0xA0, AISRV_KIND_SET, "none", "none") \
  X(CANCEL_INFER,              0xA1, AISRV_KIND_SET, "none; tensor = 0 this session's inference, 1 whatever runs (admin)", "none (a running inference ends with ERROR_CANCELLED)") \
  X(AUTH,                      0xA2, AISRV_KIND_SET, "the shared-secret token (engine not used)", "none (ERROR_DENIED for a wrong token)") \
  X(INFER,                     0xA3, AISRV_KIND_CALL, "infer request: u32 n, n x (u32 input index, u32 length), the n inputs' bytes", "infer answer: u32 m, m x u32 length, the m outputs' bytes") \
  /* ext: model store (flash); records in flash_payloads.hpp, docs/flash-format.md */ \
  X(GET_FLASH_CATALOGUE,       0x30, AISRV_KIND_GET, "none (engine ignored)", "catalogue record: store geometry, read chunk size, one entry per client") \
  X(GET_FLASH_MODEL,           0x31, AISRV_KIND_GET, "none; tensor = chunk index", "chunk `tensor` of the engine's stored model (chunk size from the catalogue; the last one is shorter)") \
  X(GET_FLASH_WRITE_STATE,     0x32, AISRV_KIND_GET, "none", "write-state record of the engine's unfinished transfer (next offset, received, expected)") \
  X(SET_FLASH_BEGIN,           0xB0, AISRV_KIND_SET, "begin record: u64 size, u64 xxh64, u32 format, str8 name", "none (replaces any unfinished transfer)") \
  X(SET_FLASH_CHUNK,           0xB1, AISRV_KIND_SET, "u64 offset, model bytes (offsets in order)", "none") \
  X(SET_FLASH_COMMIT,          0xB2, AISRV_KIND_SET, "none", "none (read back, hash checked, then the new model is the engine's stored model)") \
  X(SET_FLASH_ABORT,           0xB3, AISRV_KIND_SET, "none", "none (drops the unfinished transfer)") \
  X(SET_FLASH_ERASE,           0xB4, AISRV_KIND_SET, "none", "none (removes the engine's stored model)")
/* clang-format on */

/* Opcode ranges reserved for extensions: 0x20-0x2F / 0xA0-0xAF introspection and lifecycle,
 * 0x30-0x3F / 0xB0-0xBF model store (flash). */

typedef enum aisrv_cmd {
#define AISRV_X_ENUM(name, value, kind, req, resp) AISRV_CMD_##name = value,
  AISRV_COMMAND_TABLE(AISRV_X_ENUM)
#undef AISRV_X_ENUM
} aisrv_cmd_t;

/* The host-sends-data bit of an opcode. */
#define AISRV_CMD_SET_BIT 0x80u

/* Whether the host sends a payload with this opcode (bit 0x80: SET and CALL commands). */
int aisrv_command_sends_data(uint32_t value);
/* Whether the server answers with a payload (GET and CALL commands; for an opcode that is not in the table, whether
 * bit 0x80 is clear). */
int aisrv_command_returns_data(uint32_t value);

/* Row of the table for a given opcode. */
typedef struct aisrv_command_info {
  const char *name;         /* e.g. "SET_INPUT_TENSOR" */
  uint32_t value;           /* opcode */
  int kind;                 /* AISRV_KIND_GET / AISRV_KIND_SET / AISRV_KIND_CALL */
  const char *request;      /* what the host sends */
  const char *response;     /* what the server answers */
} aisrv_command_info_t;

/* NULL for an opcode that is not in the table. */
const aisrv_command_info_t *aisrv_command_info(uint32_t value);
/* "UNKNOWN" for an opcode that is not in the table. */
const char *aisrv_command_name(uint32_t value);
/* Number of rows and row access, for tools that list the table. */
unsigned aisrv_command_count(void);
const aisrv_command_info_t *aisrv_command_at(unsigned index);

#ifdef __cplusplus
}
#endif
#endif
