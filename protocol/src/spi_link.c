/* aisrv protocol — SPI link layer: header codecs, chunk arithmetic, frame building and checking (C99, no heap,
 * no libc beyond what the headers inline: usable on microcontrollers). */
#include "aisrv/protocol/spi_link.h"

#include "aisrv/protocol/crc32.h"
#include "aisrv/protocol/header.h"

void aisrv_spi_encode_request(const aisrv_spi_request_t *r, uint8_t out[AISRV_SPI_HEADER_SIZE]) {
  out[0] = AISRV_SPI_MAGIC_REQUEST;
  out[1] = r->type;
  out[2] = r->seq;
  out[3] = r->flags;
  aisrv_put_u16(out + 4, r->xfer);
  aisrv_put_u16(out + 6, r->length);
  aisrv_put_u32(out + 8, r->cmd);
  aisrv_put_u32(out + 12, r->engine);
  aisrv_put_u32(out + 16, r->tensor);
  aisrv_put_u32(out + 20, r->total);
  aisrv_put_u32(out + 24, r->offset);
  aisrv_put_u16(out + 28, r->want);
  aisrv_put_u16(out + 30, 0);
}

void aisrv_spi_decode_request(const uint8_t in[AISRV_SPI_HEADER_SIZE], aisrv_spi_request_t *r) {
  r->type = in[1];
  r->seq = in[2];
  r->flags = in[3];
  r->xfer = aisrv_get_u16(in + 4);
  r->length = aisrv_get_u16(in + 6);
  r->cmd = aisrv_get_u32(in + 8);
  r->engine = aisrv_get_u32(in + 12);
  r->tensor = aisrv_get_u32(in + 16);
  r->total = aisrv_get_u32(in + 20);
  r->offset = aisrv_get_u32(in + 24);
  r->want = aisrv_get_u16(in + 28);
}

void aisrv_spi_encode_reply(const aisrv_spi_reply_t *r, uint8_t out[AISRV_SPI_HEADER_SIZE]) {
  out[0] = AISRV_SPI_MAGIC_REPLY;
  out[1] = r->state;
  out[2] = r->seq;
  out[3] = r->error;
  aisrv_put_u16(out + 4, r->xfer);
  aisrv_put_u16(out + 6, r->length);
  aisrv_put_u32(out + 8, r->status);
  aisrv_put_u32(out + 12, r->cmd);
  aisrv_put_u16(out + 16, r->frame);
  aisrv_put_u16(out + 18, 0);
  aisrv_put_u32(out + 20, r->total);
  aisrv_put_u32(out + 24, r->offset);
  aisrv_put_u32(out + 28, r->boot);
}

void aisrv_spi_decode_reply(const uint8_t in[AISRV_SPI_HEADER_SIZE], aisrv_spi_reply_t *r) {
  r->state = in[1];
  r->seq = in[2];
  r->error = in[3];
  r->xfer = aisrv_get_u16(in + 4);
  r->length = aisrv_get_u16(in + 6);
  r->status = aisrv_get_u32(in + 8);
  r->cmd = aisrv_get_u32(in + 12);
  r->frame = aisrv_get_u16(in + 16);
  r->total = aisrv_get_u32(in + 20);
  r->offset = aisrv_get_u32(in + 24);
  r->boot = aisrv_get_u32(in + 28);
}

uint32_t aisrv_spi_chunk_size(uint32_t frame) {
  if (frame < AISRV_SPI_MIN_FRAME) return 0;
  if (frame > AISRV_SPI_MAX_FRAME) frame = AISRV_SPI_MAX_FRAME;
  return frame - AISRV_SPI_OVERHEAD;
}

uint32_t aisrv_spi_frame_count(uint32_t total, uint32_t chunk) {
  if (chunk == 0) return 0;
  if (total == 0) return 1;
  return total / chunk + (total % chunk != 0);
}

uint32_t aisrv_spi_chunk_at(uint32_t total, uint32_t chunk, uint32_t offset) {
  const uint32_t left = offset < total ? total - offset : 0;
  return left < chunk ? left : chunk;
}

static void put_crc(uint8_t *frame, size_t covered) {
  aisrv_put_u32(frame + covered, aisrv_crc32(0, frame, covered));
}

static void copy_bytes(uint8_t *dst, const uint8_t *src, size_t n) {
  while (n--) *dst++ = *src++;
}

size_t aisrv_spi_build_request(const aisrv_spi_request_t *r, const uint8_t *payload, uint8_t *out) {
  aisrv_spi_encode_request(r, out);
  if (r->length) copy_bytes(out + AISRV_SPI_HEADER_SIZE, payload, r->length);
  put_crc(out, AISRV_SPI_HEADER_SIZE + (size_t)r->length);
  return AISRV_SPI_OVERHEAD + (size_t)r->length;
}

size_t aisrv_spi_build_reply(const aisrv_spi_reply_t *r, const uint8_t *answer, uint8_t *out) {
  aisrv_spi_encode_reply(r, out);
  if (r->length) copy_bytes(out + AISRV_SPI_HEADER_SIZE, answer, r->length);
  put_crc(out, AISRV_SPI_HEADER_SIZE + (size_t)r->length);
  return AISRV_SPI_OVERHEAD + (size_t)r->length;
}

/* Common checks of a received frame: enough bytes, magic, length, CRC. */
static aisrv_spi_error_t check_frame(const uint8_t *buf, size_t avail, uint32_t max_payload, uint8_t magic,
                                     uint16_t length) {
  size_t covered;
  if (avail < AISRV_SPI_OVERHEAD) return AISRV_SPI_E_NO_FRAME;
  if (buf[0] != magic) return buf[0] == AISRV_SPI_FILLER ? AISRV_SPI_E_NO_FRAME : AISRV_SPI_E_BAD_MAGIC;
  if (length > max_payload || AISRV_SPI_OVERHEAD + (size_t)length > avail) return AISRV_SPI_E_BAD_LENGTH;
  covered = AISRV_SPI_HEADER_SIZE + (size_t)length;
  if (aisrv_crc32(0, buf, covered) != aisrv_get_u32(buf + covered)) return AISRV_SPI_E_BAD_CRC;
  return AISRV_SPI_E_NONE;
}

aisrv_spi_error_t aisrv_spi_parse_request(const uint8_t *buf, size_t avail, uint32_t max_payload,
                                          aisrv_spi_request_t *r, const uint8_t **payload) {
  aisrv_spi_error_t e;
  if (avail < AISRV_SPI_OVERHEAD) return AISRV_SPI_E_NO_FRAME;
  e = check_frame(buf, avail, max_payload, AISRV_SPI_MAGIC_REQUEST, aisrv_get_u16(buf + 6));
  if (e != AISRV_SPI_E_NONE) return e;
  aisrv_spi_decode_request(buf, r);
  if (r->type < AISRV_SPI_BEGIN || r->type > AISRV_SPI_SYNC || r->flags != 0 || aisrv_get_u16(buf + 30) != 0)
    return AISRV_SPI_E_BAD_TYPE;
  if (payload) *payload = buf + AISRV_SPI_HEADER_SIZE;
  return AISRV_SPI_E_NONE;
}

aisrv_spi_error_t aisrv_spi_parse_reply(const uint8_t *buf, size_t avail, uint32_t max_payload, aisrv_spi_reply_t *r,
                                        const uint8_t **answer) {
  aisrv_spi_error_t e;
  if (avail < AISRV_SPI_OVERHEAD) return AISRV_SPI_E_NO_FRAME;
  e = check_frame(buf, avail, max_payload, AISRV_SPI_MAGIC_REPLY, aisrv_get_u16(buf + 6));
  if (e != AISRV_SPI_E_NONE) return e;
  aisrv_spi_decode_reply(buf, r);
  if (answer) *answer = buf + AISRV_SPI_HEADER_SIZE;
  return AISRV_SPI_E_NONE;
}

typedef struct spi_error_row {
  const char *name;
  const char *text;
} spi_error_row_t;

static const spi_error_row_t k_spi_errors[] = {
#define AISRV_X_SPI_ROW(name, value, text) [value] = {#name, text},
    AISRV_SPI_ERROR_TABLE(AISRV_X_SPI_ROW)
#undef AISRV_X_SPI_ROW
};

static const spi_error_row_t *spi_error_row(unsigned error) {
  if (error >= sizeof k_spi_errors / sizeof k_spi_errors[0] || !k_spi_errors[error].name) return NULL;
  return &k_spi_errors[error];
}

const char *aisrv_spi_error_name(unsigned error) {
  const spi_error_row_t *row = spi_error_row(error);
  return row ? row->name : "UNKNOWN";
}

const char *aisrv_spi_error_text(unsigned error) {
  const spi_error_row_t *row = spi_error_row(error);
  return row ? row->text : "undefined link error";
}
