/* aisrv protocol — command header encoding. */
#include "aisrv/protocol/header.h"

void aisrv_header_encode(const aisrv_header_t *h, uint8_t out[AISRV_HEADER_SIZE]) {
  aisrv_put_u32(out, h->cmd);
  aisrv_put_u32(out + 4, h->engine);
  aisrv_put_u32(out + 8, h->tensor);
}

void aisrv_header_decode(const uint8_t in[AISRV_HEADER_SIZE], aisrv_header_t *h) {
  h->cmd = aisrv_get_u32(in);
  h->engine = aisrv_get_u32(in + 4);
  h->tensor = aisrv_get_u32(in + 8);
}
