/* aisrv protocol — limits shared by the server and every client (C99 and C++). */
#ifndef AISRV_PROTOCOL_LIMITS_H
#define AISRV_PROTOCOL_LIMITS_H

/* Protocol version spoken by this build. A peer is compatible when the majors' ranges overlap
 * (see GET_VERSION in docs/protocol.md); minors only add commands/capabilities. */
#define AISRV_PROTOCOL_MAJOR 1u
#define AISRV_PROTOCOL_MINOR 3u
/* Oldest protocol major this build still speaks. */
#define AISRV_PROTOCOL_MIN_MAJOR 1u

/* Largest payload of one request or response, in bytes (a server may configure less). */
#define AISRV_MAX_PAYLOAD (64u * 1024u * 1024u)
/* Engines per server, tensors per direction per model. */
#define AISRV_MAX_ENGINES 16u
#define AISRV_MAX_TENSORS 16u
/* Tensor rank and tensor-name length in GET_TENSOR_INFO. */
#define AISRV_MAX_RANK 8u
#define AISRV_MAX_NAME 255u
/* Debug-log ring: lines kept per engine and bytes per line. */
#define AISRV_DEBUG_LOG_LINES 256u
#define AISRV_DEBUG_LOG_LINE_MAX 240u

/* Engine number that addresses the server itself (GET_DEBUG_LOG of the server log). */
#define AISRV_ENGINE_SERVER 0xFFFFFFFFu

/* GET_ID answer. */
#define AISRV_SERVER_ID 0x41495356u /* "AISV" */

/* The command header: {u32 cmd, u32 engine, u32 tensor}, little-endian. */
#define AISRV_HEADER_SIZE 12u

/* Capability bits announced in GET_VERSION. */
#define AISRV_CAP_CRC32 0x0001u         /* USB: CRC32 trailer over each payload (transport-usb.md) */
#define AISRV_CAP_FLASH 0x0002u         /* a model store is configured */
#define AISRV_CAP_TIMING_RECORD 0x0004u /* GET_TIMING_RECORD */
#define AISRV_CAP_CANCEL 0x0008u        /* CANCEL_INFER */
#define AISRV_CAP_SENSOR 0x0010u        /* a sensor is configured on at least one engine */
#define AISRV_CAP_GPIO 0x0020u          /* GPIO outputs are configured */
#define AISRV_CAP_CHAIN 0x0040u         /* engine chaining configured */
#define AISRV_CAP_USB_ONE_TRANSFER 0x0080u /* USB: a SET's header and payload may come as one transfer */
#define AISRV_CAP_INFER 0x0100u         /* INFER: inputs in, outputs out, one round trip */
#define AISRV_CAP_SESSIONS 0x0200u      /* tensors, outputs, error bits and log lines are per session */
#define AISRV_CAP_STATS 0x0400u         /* GET_SERVER_STATS (protocol minor 2) */
#define AISRV_CAP_I2C 0x0800u           /* a sensor I2C bus is configured (START_ACQUIRE_SET_I2C) */
#define AISRV_CAP_MODEL_METADATA 0x1000u /* GET_MODEL_METADATA (protocol minor 3) */

/* Session-scoped answers: lines kept per session and engine of its own debug-log lines. */
#define AISRV_SESSION_LOG_LINES 32u
/* GET_DEBUG_LOG flags in `tensor` (the low bits count lines): only lines this session has not read yet; only this
 * session's own lines (the reasons for its errors), not the engine's shared ones. */
#define AISRV_DEBUG_LOG_NEW 0x80000000u
#define AISRV_DEBUG_LOG_OWN 0x40000000u
/* CANCEL_INFER: `tensor` values. */
#define AISRV_CANCEL_OWN 0u
#define AISRV_CANCEL_ANY 1u
/* GET_ACQUIRE_MODE's answer and START_ACQUIRE_STREAM's optional u32 payload (XMOS's values; the payload is an
 * aisrv extension: SINGLE stops a stream). */
#define AISRV_ACQUIRE_MODE_SINGLE 0u
#define AISRV_ACQUIRE_MODE_STREAM 1u
/* START_ACQUIRE_SINGLE: `tensor` values (FILL: input 0 only, as XMOS; INFER: then the inference, an extension). */
#define AISRV_ACQUIRE_FILL 0u
#define AISRV_ACQUIRE_INFER 1u
/* Largest AUTH token. */
#define AISRV_MAX_TOKEN 256u

#endif
