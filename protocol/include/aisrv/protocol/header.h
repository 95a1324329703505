/* aisrv protocol — the 12-byte command header and little-endian helpers (C99 and C++). */
#ifndef AISRV_PROTOCOL_HEADER_H
#define AISRV_PROTOCOL_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "aisrv/protocol/limits.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aisrv_header {
  uint32_t cmd;    /* opcode, see commands.h */
  uint32_t engine; /* engine number */
  uint32_t tensor; /* tensor index, or the command's small argument */
} aisrv_header_t;

static inline void aisrv_put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void aisrv_put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}
static inline uint16_t aisrv_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t aisrv_get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Writes AISRV_HEADER_SIZE bytes. */
void aisrv_header_encode(const aisrv_header_t *h, uint8_t out[AISRV_HEADER_SIZE]);
/* Reads AISRV_HEADER_SIZE bytes. */
void aisrv_header_decode(const uint8_t in[AISRV_HEADER_SIZE], aisrv_header_t *h);

#ifdef __cplusplus
}
#endif
#endif
