/* aisrv protocol — the SPI link layer (C99 and C++): frame headers, CRC framing, chunking, link states and errors.
 *
 * The host is the SPI master; every transaction (CS low .. CS high) carries one request frame on MOSI and, at the
 * same time, one reply frame on MISO. The slave must prepare MISO before the master clocks, so the reply clocked
 * out during transaction n answers the request frame of transaction n-1 ("one behind"). Frames:
 *
 *   request (MOSI)  magic 0xA5 | type | seq | flags | xfer u16 | length u16 | cmd u32 | engine u32 | tensor u32 |
 *                   total u32 | offset u32 | want u16 | reserved u16 | payload[length] | crc32
 *   reply   (MISO)  magic 0x5A | state | seq | error | xfer u16 | length u16 | status u32 | cmd u32 | frame u16 |
 *                   reserved u16 | total u32 | offset u32 | boot u32 | answer[length] | crc32
 *
 * Both headers are 32 bytes, little-endian; the CRC-32 (crc32.h) covers header and payload. Bytes after a frame,
 * up to the end of the transaction, are filler (0xFF) and ignored. A command's request payload travels in chunks
 * of at most (frame - 36) bytes: a BEGIN frame (offset 0), then DATA frames at increasing offsets; the answer is
 * read with POLL frames, each asking for the answer bytes the next reply should carry. docs/transport-spi.md has the
 * byte layouts, the state machines of both ends and a worked hex trace.
 */
#ifndef AISRV_PROTOCOL_SPI_LINK_H
#define AISRV_PROTOCOL_SPI_LINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AISRV_SPI_HEADER_SIZE 32u
#define AISRV_SPI_CRC_SIZE 4u
/* Header + CRC: the bytes a frame carries besides its payload. */
#define AISRV_SPI_OVERHEAD (AISRV_SPI_HEADER_SIZE + AISRV_SPI_CRC_SIZE)
/* Transaction (frame) sizes: the largest frame either side accepts is negotiated with SYNC. 4092 bytes fits an
 * ESP32 DMA descriptor and Linux spidev's default bufsiz (4096); 65535 is the u16 limit (and Rockchip/STM32 DMA). */
#define AISRV_SPI_MIN_FRAME 64u
#define AISRV_SPI_MAX_FRAME 65535u
#define AISRV_SPI_DEFAULT_FRAME 4092u
/* What an undriven line / an unprepared byte reads as, and what a side clocks out after its frame. */
#define AISRV_SPI_FILLER 0xFFu
#define AISRV_SPI_MAGIC_REQUEST 0xA5u
#define AISRV_SPI_MAGIC_REPLY 0x5Au

/* Request frame types. */
#define AISRV_SPI_BEGIN 0x01u /* starts a command; carries the first chunk of its request payload (offset 0) */
#define AISRV_SPI_DATA 0x02u  /* a further chunk of the request payload at `offset` */
#define AISRV_SPI_POLL 0x03u  /* status transaction; asks for `want` answer bytes from `offset` in the next reply */
#define AISRV_SPI_SYNC 0x04u  /* resets the slave's link state; `total` = the master's largest frame */

/* Reply state bits (the link's status word; BUSY has the XMOS value). */
#define AISRV_SPI_STATE_BUSY 0x01u      /* the command is executing */
#define AISRV_SPI_STATE_READY 0x02u     /* the answer is ready: status, total valid; answer bytes may follow */
#define AISRV_SPI_STATE_RECEIVING 0x04u /* a request payload is arriving: offset = bytes received and verified */
#define AISRV_SPI_STATE_REJECTED 0x08u  /* the request frame `seq` was rejected; `error` says why */
#define AISRV_SPI_STATE_FIXED 0x10u     /* the slave needs every transaction to be exactly `frame` bytes */

/* Link errors (reply `error`), columns X(NAME, value, meaning). */
/* clang-format off */
#define AISRV_SPI_ERROR_TABLE(X) \
  X(NONE,           0, "frame accepted") \
  X(NO_FRAME,       1, "no frame: too few bytes clocked or only filler") \
  X(BAD_MAGIC,      2, "first byte is not the request magic 0xA5") \
  X(BAD_CRC,        3, "CRC-32 over header and payload does not match") \
  X(BAD_LENGTH,     4, "payload length runs past the clocked bytes or the negotiated frame") \
  X(BAD_TYPE,       5, "unknown frame type or non-zero reserved field") \
  X(NO_TRANSFER,    6, "DATA or POLL for a transfer the slave does not have") \
  X(GAP,            7, "DATA offset beyond the bytes received so far") \
  X(MISMATCH,       8, "DATA header differs from its BEGIN (cmd, engine, tensor, total)") \
  X(BAD_OFFSET,     9, "offset/length outside the transfer or the answer") \
  X(BAD_FRAME_SIZE, 10, "SYNC asked for an unusable frame size") \
  X(WRONG_SIZE,     11, "fixed-size link: the transaction was not exactly one frame") \
  X(TIMEOUT,        12, "the transfer was discarded: no frame within the link timeout")
/* clang-format on */

typedef enum aisrv_spi_error {
#define AISRV_X_SPI_ERR(name, value, text) AISRV_SPI_E_##name = value,
  AISRV_SPI_ERROR_TABLE(AISRV_X_SPI_ERR)
#undef AISRV_X_SPI_ERR
} aisrv_spi_error_t;

/* Request frame header (host -> server). */
typedef struct aisrv_spi_request {
  uint8_t type;    /* AISRV_SPI_BEGIN .. AISRV_SPI_SYNC */
  uint8_t seq;     /* transaction counter, echoed by the reply to this frame */
  uint8_t flags;   /* reserved, 0 */
  uint16_t xfer;   /* transfer id: one per command */
  uint16_t length; /* payload bytes in this frame */
  uint32_t cmd;    /* opcode (commands.h); BEGIN/DATA */
  uint32_t engine; /* BEGIN/DATA */
  uint32_t tensor; /* BEGIN/DATA */
  uint32_t total;  /* BEGIN/DATA: request payload length; SYNC: the master's largest frame */
  uint32_t offset; /* DATA: offset of this payload; POLL: offset of the answer bytes wanted */
  uint16_t want;   /* answer bytes wanted in the reply to this frame (0: status only) */
} aisrv_spi_request_t;

/* Reply frame header (server -> host). */
typedef struct aisrv_spi_reply {
  uint8_t state;   /* AISRV_SPI_STATE_* bits; 0 = idle */
  uint8_t seq;     /* seq of the request frame this reply answers */
  uint8_t error;   /* aisrv_spi_error_t for that frame (0 when accepted) */
  uint16_t xfer;   /* the slave's current transfer */
  uint16_t length; /* answer bytes in this frame */
  uint32_t status; /* READY: the command's status word (status.h) */
  uint32_t cmd;    /* opcode of the current transfer */
  uint16_t frame;  /* frame size in force (negotiated) */
  uint32_t total;  /* RECEIVING: request payload length; READY: answer length */
  uint32_t offset; /* RECEIVING: request bytes received; with answer bytes: their offset in the answer */
  uint32_t boot;   /* server instance id (changes when the server restarts) */
} aisrv_spi_reply_t;

/* Encode/decode the 32-byte headers (magic included; decode does not check it). */
void aisrv_spi_encode_request(const aisrv_spi_request_t *r, uint8_t out[AISRV_SPI_HEADER_SIZE]);
void aisrv_spi_decode_request(const uint8_t in[AISRV_SPI_HEADER_SIZE], aisrv_spi_request_t *r);
void aisrv_spi_encode_reply(const aisrv_spi_reply_t *r, uint8_t out[AISRV_SPI_HEADER_SIZE]);
void aisrv_spi_decode_reply(const uint8_t in[AISRV_SPI_HEADER_SIZE], aisrv_spi_reply_t *r);

/* Payload bytes one frame of `frame` bytes carries (0 when frame is below the minimum). */
uint32_t aisrv_spi_chunk_size(uint32_t frame);
/* Frames needed to carry a request payload of `total` bytes in chunks of `chunk` (a BEGIN always: >= 1). */
uint32_t aisrv_spi_frame_count(uint32_t total, uint32_t chunk);
/* Length of the chunk at `offset` (0 past the end). */
uint32_t aisrv_spi_chunk_at(uint32_t total, uint32_t chunk, uint32_t offset);

/* Writes a complete request frame (header, payload, CRC) to `out`, which holds AISRV_SPI_OVERHEAD + r->length
 * bytes; returns the frame length. `payload` may be NULL when r->length is 0. */
size_t aisrv_spi_build_request(const aisrv_spi_request_t *r, const uint8_t *payload, uint8_t *out);
size_t aisrv_spi_build_reply(const aisrv_spi_reply_t *r, const uint8_t *answer, uint8_t *out);

/* Checks a received request frame at the start of `buf` (`avail` bytes received): magic, length against `avail`
 * and `max_payload` (the negotiated chunk), type, reserved fields, CRC. Returns AISRV_SPI_E_NONE and fills `r` and
 * `*payload` (a pointer into buf) on success, else the error. */
aisrv_spi_error_t aisrv_spi_parse_request(const uint8_t *buf, size_t avail, uint32_t max_payload,
                                          aisrv_spi_request_t *r, const uint8_t **payload);
/* The same for a reply frame. */
aisrv_spi_error_t aisrv_spi_parse_reply(const uint8_t *buf, size_t avail, uint32_t max_payload, aisrv_spi_reply_t *r,
                                        const uint8_t **answer);

/* "BAD_CRC", ... ("UNKNOWN" for a value not in the table) and its one-line meaning. */
const char *aisrv_spi_error_name(unsigned error);
const char *aisrv_spi_error_text(unsigned error);

#ifdef __cplusplus
}
#endif
#endif
