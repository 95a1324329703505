/* aisrv protocol — CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320, init/xorout 0xFFFFFFFF) used by the SPI link
 * and the USB payload trailer. Plain C99, table-free (small for microcontrollers); the same value as zlib's crc32. */
#ifndef AISRV_PROTOCOL_CRC32_H
#define AISRV_PROTOCOL_CRC32_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Start with crc = 0; feed chunks by passing the previous result. */
uint32_t aisrv_crc32(uint32_t crc, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
