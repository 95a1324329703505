/* aisrv MCU client — the master end of the SPI link protocol (protocol/spi_link.h) and the command functions.
 *
 * Every transaction sends one request frame and receives the reply to the previous one ("one behind"). Requests go
 * out pipelined: while chunk k travels, the reply says whether chunk k-1 arrived; a chunk the server did not
 * confirm is sent again from the server's own count of bytes received (duplicates are harmless, gaps refused).
 * Answers come back the same way: each POLL asks for the next chunk, the reply carries the one asked for before.
 * No heap, no libc beyond memcpy/memset; payload bytes go straight between the caller's buffers and the bus. */
#include "aisrv/mcu/aisrv_mcu.h"

#include <string.h>

#include "aisrv/protocol/crc32.h"
#include "aisrv/protocol/header.h"
#include "aisrv/protocol/limits.h"

/* Internal outcomes besides the public codes. */
#define XACT_OK 0
#define XACT_BAD 1       /* the reply failed its checks */
#define XACT_SKIP 2      /* the reply carried answer bytes we no longer store: not checked, not a failure */
#define RUN_RESTART 100  /* the server restarted: SYNC and run the command again */
#define MAX_RESTARTS 3

/* ---------------------------------------------------------------------------------------------------- time */

static uint32_t now_us(aisrv_mcu_t *c) { return c->hal.now_us ? c->hal.now_us(c->hal.ctx) : c->clock_us; }

static void wait_us(aisrv_mcu_t *c, uint32_t us) {
  if (!us) return;
  c->hal.delay_us(c->hal.ctx, us);
  c->clock_us += us;
}

static void start_clock(aisrv_mcu_t *c) { c->start_us = now_us(c); }

static int timed_out(aisrv_mcu_t *c) { return (uint32_t)(now_us(c) - c->start_us) > c->cfg.timeout_us; }

/* Wait after the n-th consecutive unsuccessful poll or failure: poll_us doubling up to poll_max_us. */
static void back_off(aisrv_mcu_t *c, uint32_t n) {
  uint32_t us = c->cfg.poll_us;
  while (n-- > 1 && us < c->cfg.poll_max_us) us *= 2;
  wait_us(c, us < c->cfg.poll_max_us ? us : c->cfg.poll_max_us);
}

/* ----------------------------------------------------------------------------------------------- transaction */

typedef struct frame_out {
  aisrv_spi_request_t h;
  const aisrv_mcu_source_t *src; /* payload = src bytes [h.offset, h.offset + h.length) */
  uint32_t index;                /* request frame index (BEGIN 0, DATA 1..) */
  uint32_t answer_offset;        /* answer bytes the reply to this frame carries start here ... */
  uint8_t *dst;                  /* ... and go here (h.want of them) */
} frame_out_t;

static uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

/* Byte i of the reply's answer+CRC area as received. */
static uint8_t reply_tail_byte(const aisrv_mcu_t *c, const aisrv_mcu_flight_t *prev, uint32_t i) {
  if (prev->dst) return i < prev->want ? prev->dst[i] : c->rxc[i - prev->want];
  return c->rxs[i];
}

/* One transaction: clocks frame `f` out and the reply to the frame in flight in. XACT_OK with *r filled when the
 * reply passed its checks, XACT_BAD when it did not, AISRV_MCU_E_HAL / AISRV_MCU_E_SOURCE on a local failure. */
static int xact(aisrv_mcu_t *c, frame_out_t *f, aisrv_spi_reply_t *r) {
  const aisrv_mcu_flight_t prev = c->flight;
  const uint32_t plen = f->h.length;
  const uint32_t want = prev.want;
  /* Without a destination (the caller's buffer is gone), keep only the first bytes: enough for a status reply. */
  const uint32_t rx_keep = prev.dst ? want + AISRV_SPI_CRC_SIZE : (uint32_t)sizeof c->rxs;
  uint32_t len = AISRV_SPI_OVERHEAD + (plen > want ? plen : want);
  uint32_t pos = 0, crc, i, expect;
  int rc = 0;

  if (c->fixed || c->cfg.fixed_frames) len = c->frame ? c->frame : c->cfg.max_frame;
  f->h.seq = ++c->seq;
  aisrv_spi_encode_request(&f->h, c->txh);
  crc = aisrv_crc32(0, c->txh, AISRV_SPI_HEADER_SIZE);

  if (c->hal.wait_ready) {
    (void)c->hal.wait_ready(c->hal.ctx, c->cfg.poll_max_us); /* not ready: the reply will fail its checks */
  } else {
    wait_us(c, c->cfg.gap_us);
  }
  if (c->hal.select(c->hal.ctx, 1) != 0) rc = AISRV_MCU_E_HAL;
  while (pos < len && rc == 0) {
    const uint8_t *tx = NULL;
    uint8_t *rx = NULL;
    uint32_t end = len, n;
    int tx_payload = 0;
    /* where MOSI bytes come from */
    if (pos < AISRV_SPI_HEADER_SIZE) {
      tx = c->txh + pos;
      end = AISRV_SPI_HEADER_SIZE;
    } else if (pos < AISRV_SPI_HEADER_SIZE + plen) {
      tx_payload = 1;
      end = AISRV_SPI_HEADER_SIZE + plen;
    } else if (pos < AISRV_SPI_OVERHEAD + plen) {
      if (pos == AISRV_SPI_HEADER_SIZE + plen) aisrv_put_u32(c->txc, crc);
      tx = c->txc + (pos - AISRV_SPI_HEADER_SIZE - plen);
      end = AISRV_SPI_OVERHEAD + plen;
    }
    /* where MISO bytes go */
    if (pos < AISRV_SPI_HEADER_SIZE) {
      rx = c->rxh + pos;
      end = min_u32(end, AISRV_SPI_HEADER_SIZE);
    } else if (prev.dst && pos < AISRV_SPI_HEADER_SIZE + want) {
      rx = prev.dst + (pos - AISRV_SPI_HEADER_SIZE);
      end = min_u32(end, AISRV_SPI_HEADER_SIZE + want);
    } else if (pos < AISRV_SPI_HEADER_SIZE + rx_keep) {
      const uint32_t k = pos - AISRV_SPI_HEADER_SIZE - (prev.dst ? want : 0);
      rx = (prev.dst ? c->rxc : c->rxs) + k;
      end = min_u32(end, AISRV_SPI_HEADER_SIZE + rx_keep);
    }
    end = min_u32(end, len);
    if (tx_payload) {
      const uint32_t at = f->h.offset + (pos - AISRV_SPI_HEADER_SIZE);
      if (f->src->data) {
        tx = f->src->data + at;
      } else {
        end = min_u32(end, pos + AISRV_MCU_STAGE_SIZE);
        if (f->src->read(f->src->ctx, at, c->stage, end - pos) != 0) {
          rc = AISRV_MCU_E_SOURCE;
          break;
        }
        tx = c->stage;
      }
      crc = aisrv_crc32(crc, tx, end - pos);
    }
    n = end - pos;
    if (c->hal.transfer(c->hal.ctx, tx, rx, n) != 0) rc = AISRV_MCU_E_HAL;
    pos = end;
  }
  if (c->hal.select(c->hal.ctx, 0) != 0 && rc == 0) rc = AISRV_MCU_E_HAL;
  ++c->stats.transactions;
  c->stats.clocked += pos;
  if (!c->hal.now_us && c->cfg.hz) c->clock_us += (uint32_t)((uint64_t)pos * 8u * 1000000u / c->cfg.hz);

  c->answered = prev;
  c->flight.type = (uint8_t)f->h.type;
  c->flight.seq = f->h.seq;
  c->flight.index = f->index;
  c->flight.answer_offset = f->answer_offset;
  c->flight.want = f->h.want;
  c->flight.dst = f->dst;
  if (rc) return rc;

  /* the reply: magic, a length we asked for, CRC over header and answer bytes */
  if (c->rxh[0] != AISRV_SPI_MAGIC_REPLY) return XACT_BAD;
  aisrv_spi_decode_reply(c->rxh, r);
  if (r->length > want) return XACT_BAD;
  if ((uint32_t)r->length + AISRV_SPI_CRC_SIZE > rx_keep) return XACT_SKIP;
  crc = aisrv_crc32(0, c->rxh, AISRV_SPI_HEADER_SIZE);
  if (r->length) crc = aisrv_crc32(crc, prev.dst ? prev.dst : c->rxs, r->length);
  expect = 0;
  for (i = 0; i < AISRV_SPI_CRC_SIZE; ++i) expect |= (uint32_t)reply_tail_byte(c, &prev, r->length + i) << (8 * i);
  return crc == expect ? XACT_OK : XACT_BAD;
}

/* The caller's answer buffer must not be written after a function returns: the frame in flight keeps asking for
 * its bytes, but they are no longer stored. */
static int leave(aisrv_mcu_t *c, int rc) {
  c->flight.dst = NULL;
  return rc;
}

/* ------------------------------------------------------------------------------------------------------ SYNC */

static int do_sync(aisrv_mcu_t *c) {
  uint32_t failures = 0;
  c->frame = 0;
  c->fixed = 0;
  for (;;) {
    frame_out_t f, p;
    aisrv_spi_reply_t r;
    int rc;
    memset(&f, 0, sizeof f);
    f.h.type = AISRV_SPI_SYNC;
    f.h.total = c->cfg.max_frame;
    rc = xact(c, &f, &r);
    if (rc < 0) return rc;
    memset(&p, 0, sizeof p);
    p.h.type = AISRV_SPI_POLL;
    rc = xact(c, &p, &r); /* its reply answers the SYNC */
    if (rc < 0) return rc;
    if (rc == XACT_OK && (r.state & AISRV_SPI_STATE_FIXED) && (!c->cfg.fixed_frames || r.frame > c->cfg.max_frame))
      return AISRV_MCU_E_INCOMPATIBLE; /* the slave needs fixed frames this master is not set up to clock */
    if (rc == XACT_OK && r.seq == f.h.seq) {
      if (r.state & AISRV_SPI_STATE_REJECTED) {
        c->stats.last_link_error = r.error;
        if (r.error == AISRV_SPI_E_BAD_FRAME_SIZE) return AISRV_MCU_E_INCOMPATIBLE;
      } else {
        if (r.frame < AISRV_SPI_MIN_FRAME) return AISRV_MCU_E_PROTOCOL;
        c->fixed = (r.state & AISRV_SPI_STATE_FIXED) != 0;
        if (c->fixed && (r.frame > c->cfg.max_frame || !c->cfg.fixed_frames)) return AISRV_MCU_E_INCOMPATIBLE;
        c->frame = r.frame < c->cfg.max_frame ? r.frame : c->cfg.max_frame;
        if (c->boot && c->boot != r.boot) ++c->stats.restarts;
        c->boot = r.boot;
        ++c->stats.syncs;
        return AISRV_MCU_OK;
      }
    } else if (rc == XACT_BAD) {
      ++c->stats.bad_replies;
    }
    if (rc != XACT_SKIP && ++failures > c->cfg.max_retries) return AISRV_MCU_E_LINK;
    if (timed_out(c)) return AISRV_MCU_E_TIMEOUT;
    back_off(c, failures);
  }
}

/* ------------------------------------------------------------------------------------------- request upload */

/* Sends the request; returns AISRV_MCU_OK once a reply shows the server has all of it (BUSY or READY), that
 * reply in *done. */
static int send_request(aisrv_mcu_t *c, uint32_t cmd, uint32_t engine, uint32_t tensor, const aisrv_mcu_source_t *src,
                        uint8_t *answer, uint32_t cap, aisrv_spi_reply_t *done) {
  const uint32_t total = src ? src->length : 0;
  const uint32_t chunk = aisrv_spi_chunk_size(c->frame);
  const uint32_t frames = aisrv_spi_frame_count(total, chunk);
  const uint16_t want0 = (uint16_t)(answer ? min_u32(cap, chunk) : 0);
  uint32_t next = 0, acked = 0, highest = 0, failures = 0, pause = 0;
  int first = 1, doomed = 0;
  uint8_t doomed_seq = 0;

  if (++c->xfer == 0) c->xfer = 1;
  c->answer_ready = 0;
  for (;;) {
    frame_out_t f;
    aisrv_spi_reply_t r;
    int rc;
    memset(&f, 0, sizeof f);
    f.h.xfer = c->xfer;
    if (pause) {
      /* After the n-th consecutive failure, n-1 plain status transactions before the resend: the resends' rhythm
       * keeps changing, so interference that recurs every k transactions cannot hit every resend. */
      --pause;
      f.h.type = AISRV_SPI_POLL;
      f.h.xfer = 0; /* a plain status poll: always accepted, so pauses cannot feed on themselves */
      f.index = frames;
    } else if (next < frames) {
      f.h.type = next ? AISRV_SPI_DATA : AISRV_SPI_BEGIN;
      f.h.cmd = cmd;
      f.h.engine = engine;
      f.h.tensor = tensor;
      f.h.total = total;
      f.h.offset = next * chunk;
      f.h.length = (uint16_t)aisrv_spi_chunk_at(total, chunk, f.h.offset);
      f.src = src;
      f.index = next;
      if (next + 1 == frames) { /* the reply to the last chunk may already carry the answer */
        f.h.want = want0;
        f.dst = answer;
      }
      if (next < highest) ++c->stats.resent;
      if (next + 1 > highest) highest = next + 1;
    } else { /* everything sent: a status transaction, asking for the answer bytes after the first fetch */
      f.h.type = AISRV_SPI_POLL;
      f.index = frames;
      if (cap > want0) {
        f.h.offset = want0;
        f.answer_offset = want0;
        f.h.want = (uint16_t)min_u32(chunk, cap - want0);
        f.dst = answer + want0;
      }
    }
    rc = xact(c, &f, &r);
    if (rc < 0) return rc;
    if (rc == XACT_OK) {
      const int mine = r.xfer == c->xfer;
      if (c->boot != r.boot) return RUN_RESTART;
      if (mine && (r.state & (AISRV_SPI_STATE_BUSY | AISRV_SPI_STATE_READY))) {
        *done = r;
        return AISRV_MCU_OK;
      }
      if (mine && (r.state & AISRV_SPI_STATE_RECEIVING)) {
        if (r.total != total || r.offset % chunk != 0 || r.offset >= total) return AISRV_MCU_E_PROTOCOL;
        acked = r.offset / chunk;
      } else {
        acked = 0; /* the server does not have this transfer (yet) */
      }
      if (r.state & AISRV_SPI_STATE_REJECTED) {
        c->stats.last_link_error = r.error;
        if (!first && !(doomed && r.seq == doomed_seq)) { /* (a frame sent before we went back: expected) */
          ++c->stats.rejected;
          pause = failures++;
        }
      } else {
        failures = 0;
      }
      if (doomed && r.seq == doomed_seq) doomed = 0;
    } else if (rc == XACT_BAD && !first) {
      ++c->stats.bad_replies;
      pause = failures++;
    }
    first = 0;
    if (failures > c->cfg.max_retries) return AISRV_MCU_E_LINK;
    if (timed_out(c)) return AISRV_MCU_E_TIMEOUT;
    /* The frame just sent is in flight: go on after it when the server's count says it will fit, else resend
     * from what the server has. */
    if (f.index < frames && acked == f.index) {
      next = f.index + 1;
    } else {
      if (f.index < frames && f.index > acked) { /* it will be refused as a gap: not a new failure */
        doomed = 1;
        doomed_seq = f.h.seq;
      }
      next = acked;
    }
    if (failures) back_off(c, failures);
  }
}

/* ------------------------------------------------------------------------------------------ answer download */

/* From the reply that showed the request complete: polls until READY, then reads the answer into answer[0..cap).
 */
#define REPLY_NONE (-1) /* receive_answer: no reply to look at yet (re-reading a known answer) */

static int receive_answer(aisrv_mcu_t *c, aisrv_spi_reply_t r, int have_reply, uint8_t *answer, uint32_t cap,
                          uint32_t *answer_len, uint32_t *status) {
  const uint32_t chunk = aisrv_spi_chunk_size(c->frame);
  uint32_t have = 0, failures = 0, busy = 0, pause = 0;
  int ready = have_reply == REPLY_NONE;
  for (;;) {
    frame_out_t f;
    int rc;
    if (have_reply == REPLY_NONE || have_reply == XACT_SKIP) {
      /* nothing to evaluate: ask for the next chunk */
    } else if (have_reply == XACT_OK) {
      const aisrv_mcu_flight_t *asked = &c->answered;
      if (c->boot != r.boot) return RUN_RESTART;
      if (r.xfer != c->xfer || !(r.state & (AISRV_SPI_STATE_BUSY | AISRV_SPI_STATE_READY))) return AISRV_MCU_E_LOST;
      if (r.state & AISRV_SPI_STATE_REJECTED) {
        c->stats.last_link_error = r.error;
        ++c->stats.rejected;
        pause = failures++;
      } else {
        failures = 0;
      }
      if (r.state & AISRV_SPI_STATE_READY) {
        if (ready && (r.status != c->answer_status || r.total != c->answer_total)) return AISRV_MCU_E_PROTOCOL;
        ready = 1;
        c->answer_ready = 1;
        c->answer_xfer = c->xfer;
        c->answer_status = r.status;
        c->answer_total = r.total;
        if (r.total > cap) {
          *answer_len = r.total;
          *status = r.status;
          return AISRV_MCU_E_TOO_SMALL;
        }
        if (r.length && asked->dst && r.seq == asked->seq && r.offset == asked->answer_offset && r.offset == have &&
            r.length == min_u32(asked->want, r.total - have)) {
          have += r.length;
          /* The frame in flight may have asked for bytes we now have: its reply must not land on them (a status
           * reply in their place would overwrite them with its CRC and filler). */
          if (c->flight.dst && c->flight.answer_offset < have) c->flight.dst = NULL;
        }
        if (have == r.total) {
          *answer_len = have;
          *status = r.status;
          return AISRV_MCU_OK;
        }
      } else {
        ++c->stats.busy_polls;
        ++busy;
      }
    } else {
      ++c->stats.bad_replies;
      pause = failures++;
    }
    if (failures > c->cfg.max_retries) return AISRV_MCU_E_LINK;
    if (timed_out(c)) return AISRV_MCU_E_TIMEOUT;
    if (failures) {
      back_off(c, failures);
    } else if (!ready) {
      back_off(c, busy);
    }

    memset(&f, 0, sizeof f);
    f.h.type = AISRV_SPI_POLL;
    f.h.xfer = c->xfer;
    if (pause) {
      --pause; /* a status-only poll: shifts the rhythm of the re-requests, as for requests */
    } else if (ready) {
      /* the frame in flight asked for the chunk at `have`: ask for the one after it */
      const aisrv_mcu_flight_t *flying = &c->flight;
      uint32_t at = have;
      if (flying->dst && flying->want && flying->answer_offset == have) at = have + flying->want;
      if (at < c->answer_total) {
        f.h.want = (uint16_t)min_u32(chunk, c->answer_total - at);
        f.dst = answer + at;
      }
      f.h.offset = at;
      f.answer_offset = at;
    }
    rc = xact(c, &f, &r);
    if (rc < 0) return rc;
    have_reply = rc;
  }
}

/* ----------------------------------------------------------------------------------------------- the commands */

static int run(aisrv_mcu_t *c, uint32_t cmd, uint32_t engine, uint32_t tensor, const aisrv_mcu_source_t *src,
               uint8_t *answer, uint32_t cap, uint32_t *answer_len, uint32_t *status) {
  uint32_t restarts = 0;
  aisrv_spi_reply_t done;
  int rc;
  if (src && !src->data && (!src->read || !src->length)) {
    if (src->length) return AISRV_MCU_E_ARG;
    src = NULL;
  }
  if (src && src->length > AISRV_MAX_PAYLOAD) return AISRV_MCU_E_ARG;
  start_clock(c);
  for (;;) {
    if (!c->frame) {
      rc = do_sync(c);
      if (rc) return leave(c, rc);
    }
    rc = send_request(c, cmd, engine, tensor, src, answer, cap, &done);
    if (rc == AISRV_MCU_OK) rc = receive_answer(c, done, XACT_OK, answer, cap, answer_len, status);
    if (rc != RUN_RESTART) return leave(c, rc);
    /* The server restarted: everything it had is gone. SYNC (which counts the restart) and run the command from
     * the start. */
    c->frame = 0;
    if (++restarts > MAX_RESTARTS) return leave(c, AISRV_MCU_E_RESTARTED);
  }
}

void aisrv_mcu_default_config(aisrv_mcu_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->max_frame = AISRV_SPI_DEFAULT_FRAME;
  cfg->max_retries = 32;
  cfg->timeout_us = 10000000u;
  cfg->poll_us = 20;
  cfg->poll_max_us = 20000;
}

int aisrv_mcu_init(aisrv_mcu_t *c, const aisrv_mcu_hal_t *hal, const aisrv_mcu_config_t *cfg) {
  if (!c || !hal || !hal->transfer || !hal->select || !hal->delay_us) return AISRV_MCU_E_ARG;
  memset(c, 0, sizeof *c);
  c->hal = *hal;
  if (cfg) {
    c->cfg = *cfg;
  } else {
    aisrv_mcu_default_config(&c->cfg);
  }
  if (c->cfg.max_frame < AISRV_SPI_MIN_FRAME || c->cfg.poll_max_us < c->cfg.poll_us || !c->cfg.timeout_us)
    return AISRV_MCU_E_ARG;
  if (!c->cfg.poll_us) c->cfg.poll_us = 1;
  return AISRV_MCU_OK;
}

int aisrv_mcu_sync(aisrv_mcu_t *c) {
  if (!c) return AISRV_MCU_E_ARG;
  start_clock(c);
  return leave(c, do_sync(c));
}

uint16_t aisrv_mcu_frame(const aisrv_mcu_t *c) { return c ? c->frame : 0; }

int aisrv_mcu_exchange(aisrv_mcu_t *c, uint32_t cmd, uint32_t engine, uint32_t tensor,
                       const aisrv_mcu_source_t *request, uint8_t *answer, uint32_t cap, uint32_t *answer_len,
                       uint32_t *status) {
  uint32_t len_ignored = 0, status_ignored = 0;
  if (!c || (cap && !answer)) return AISRV_MCU_E_ARG;
  if (!answer) cap = 0;
  if (!answer_len) answer_len = &len_ignored;
  if (!status) status = &status_ignored;
  *answer_len = 0;
  *status = 0;
  return run(c, cmd, engine, tensor, request, answer, cap, answer_len, status);
}

/* The lowest error bit of a status word (BUSY/SENSING are states, not errors). */
static int status_error(uint32_t status) {
  const uint32_t errors = status & ~(uint32_t)AISRV_STATUS_STATE_MASK;
  if (!errors) return AISRV_MCU_OK;
  return (int)(errors & (~errors + 1u));
}

int aisrv_mcu_call(aisrv_mcu_t *c, uint32_t cmd, uint32_t engine, uint32_t tensor, const aisrv_mcu_source_t *request,
                   uint8_t *answer, uint32_t cap, uint32_t *answer_len) {
  uint32_t status = 0;
  const int rc = aisrv_mcu_exchange(c, cmd, engine, tensor, request, answer, cap, answer_len, &status);
  if (rc == AISRV_MCU_OK || rc == AISRV_MCU_E_TOO_SMALL) {
    const int e = status_error(status);
    if (e) return e;
  }
  return rc;
}

int aisrv_mcu_read_answer(aisrv_mcu_t *c, uint8_t *answer, uint32_t cap, uint32_t *answer_len) {
  uint32_t len_ignored = 0, status = 0;
  aisrv_spi_reply_t none;
  int rc;
  if (!c || (cap && !answer)) return AISRV_MCU_E_ARG;
  if (!c->answer_ready || c->answer_xfer != c->xfer || !c->frame) return AISRV_MCU_E_NO_ANSWER;
  if (!answer_len) answer_len = &len_ignored;
  memset(&none, 0, sizeof none);
  start_clock(c);
  if (c->answer_total > (answer ? cap : 0)) {
    *answer_len = c->answer_total;
    return AISRV_MCU_E_TOO_SMALL;
  }
  rc = receive_answer(c, none, REPLY_NONE, answer, answer ? cap : 0, answer_len, &status);
  if (rc == RUN_RESTART) rc = AISRV_MCU_E_LOST;
  return leave(c, rc);
}

/* ------------------------------------------------------------------------------------------ command wrappers */

static int call_u32(aisrv_mcu_t *c, uint32_t cmd, uint32_t engine, uint32_t tensor, uint32_t *value) {
  uint8_t b[4];
  uint32_t n = 0;
  const int rc = aisrv_mcu_call(c, cmd, engine, tensor, NULL, b, sizeof b, &n);
  if (rc) return rc;
  if (n != 4) return AISRV_MCU_E_PROTOCOL;
  if (value) *value = aisrv_get_u32(b);
  return AISRV_MCU_OK;
}

static int call_none(aisrv_mcu_t *c, uint32_t cmd, uint32_t engine, uint32_t tensor, const aisrv_mcu_source_t *src) {
  return aisrv_mcu_call(c, cmd, engine, tensor, src, NULL, 0, NULL);
}

static int call_buffer(aisrv_mcu_t *c, uint32_t cmd, uint32_t engine, uint32_t tensor, const uint8_t *data,
                       uint32_t length) {
  aisrv_mcu_source_t src;
  if (length && !data) return AISRV_MCU_E_ARG;
  memset(&src, 0, sizeof src);
  src.data = data;
  src.length = length;
  return call_none(c, cmd, engine, tensor, length ? &src : NULL);
}

int aisrv_mcu_hello(aisrv_mcu_t *c) { return call_none(c, AISRV_CMD_HELLO, 0, 0, NULL); }

int aisrv_mcu_get_id(aisrv_mcu_t *c, uint32_t *id) {
  if (!id) return AISRV_MCU_E_ARG;
  return call_u32(c, AISRV_CMD_GET_ID, 0, 0, id);
}

int aisrv_mcu_get_version(aisrv_mcu_t *c, aisrv_mcu_version_t *v) {
  uint8_t b[20 + 1 + 255]; /* the fixed fields and a version string of up to 255 bytes */
  uint32_t n = 0;
  int rc;
  if (!v) return AISRV_MCU_E_ARG;
  rc = aisrv_mcu_call(c, AISRV_CMD_GET_VERSION, 0, 0, NULL, b, sizeof b, &n);
  if (rc) return rc;
  if (n < 21 || n < 21u + b[20]) return AISRV_MCU_E_PROTOCOL;
  v->major = aisrv_get_u16(b);
  v->minor = aisrv_get_u16(b + 2);
  v->min_major = aisrv_get_u16(b + 4);
  v->capabilities = aisrv_get_u32(b + 8);
  v->max_payload = aisrv_get_u32(b + 12);
  v->engines = aisrv_get_u32(b + 16);
  if (v->major < AISRV_PROTOCOL_MIN_MAJOR || v->min_major > AISRV_PROTOCOL_MAJOR) return AISRV_MCU_E_INCOMPATIBLE;
  return AISRV_MCU_OK;
}

int aisrv_mcu_get_spec(aisrv_mcu_t *c, uint32_t engine, uint32_t tensor, aisrv_mcu_spec_t *spec) {
  uint8_t b[20];
  uint32_t n = 0;
  int rc;
  if (!spec) return AISRV_MCU_E_ARG;
  rc = aisrv_mcu_call(c, AISRV_CMD_GET_SPEC, engine, tensor, NULL, b, sizeof b, &n);
  if (rc) return rc;
  if (n != 20) return AISRV_MCU_E_PROTOCOL;
  spec->input_length = aisrv_get_u32(b + 8);
  spec->output_length = aisrv_get_u32(b + 12);
  spec->timings_length = aisrv_get_u32(b + 16);
  return AISRV_MCU_OK;
}

int aisrv_mcu_get_status(aisrv_mcu_t *c, uint32_t engine, uint32_t *word) {
  if (!word) return AISRV_MCU_E_ARG;
  return call_u32(c, AISRV_CMD_GET_STATUS, engine, 0, word);
}

int aisrv_mcu_input_length(aisrv_mcu_t *c, uint32_t engine, uint32_t tensor, uint32_t *length) {
  if (!length) return AISRV_MCU_E_ARG;
  return call_u32(c, AISRV_CMD_GET_INPUT_TENSOR_LENGTH, engine, tensor, length);
}

int aisrv_mcu_output_length(aisrv_mcu_t *c, uint32_t engine, uint32_t tensor, uint32_t *length) {
  if (!length) return AISRV_MCU_E_ARG;
  return call_u32(c, AISRV_CMD_GET_OUTPUT_TENSOR_LENGTH, engine, tensor, length);
}

int aisrv_mcu_load_model(aisrv_mcu_t *c, uint32_t engine, const uint8_t *model, uint32_t length, int external) {
  return call_buffer(c, external ? AISRV_CMD_SET_MODEL_SECONDARY : AISRV_CMD_SET_MODEL_PRIMARY, engine, 0, model,
                     length);
}

int aisrv_mcu_load_model_from(aisrv_mcu_t *c, uint32_t engine, aisrv_mcu_read_fn read, void *ctx, uint32_t length,
                              int external) {
  aisrv_mcu_source_t src;
  if (!read && length) return AISRV_MCU_E_ARG;
  memset(&src, 0, sizeof src);
  src.read = read;
  src.ctx = ctx;
  src.length = length;
  return call_none(c, external ? AISRV_CMD_SET_MODEL_SECONDARY : AISRV_CMD_SET_MODEL_PRIMARY, engine, 0,
                   length ? &src : NULL);
}

int aisrv_mcu_load_model_from_flash(aisrv_mcu_t *c, uint32_t engine, int external) {
  return call_none(c, external ? AISRV_CMD_SET_MODEL_SECONDARY_FLASH : AISRV_CMD_SET_MODEL_PRIMARY_FLASH, engine, 0,
                   NULL);
}

int aisrv_mcu_unload_model(aisrv_mcu_t *c, uint32_t engine) {
  return call_none(c, AISRV_CMD_UNLOAD_MODEL, engine, 0, NULL);
}

int aisrv_mcu_set_input(aisrv_mcu_t *c, uint32_t engine, uint32_t tensor, const uint8_t *data, uint32_t length) {
  return call_buffer(c, AISRV_CMD_SET_INPUT_TENSOR, engine, tensor, data, length);
}

int aisrv_mcu_start_inference(aisrv_mcu_t *c, uint32_t engine) {
  return call_none(c, AISRV_CMD_START_INFER, engine, 0, NULL);
}

int aisrv_mcu_cancel(aisrv_mcu_t *c, uint32_t engine) { return call_none(c, AISRV_CMD_CANCEL_INFER, engine, 0, NULL); }

int aisrv_mcu_get_output(aisrv_mcu_t *c, uint32_t engine, uint32_t tensor, uint8_t *buf, uint32_t cap,
                         uint32_t *length) {
  return aisrv_mcu_call(c, AISRV_CMD_GET_OUTPUT_TENSOR, engine, tensor, NULL, buf, cap, length);
}

int aisrv_mcu_get_timings(aisrv_mcu_t *c, uint32_t engine, uint32_t *ns, uint32_t max, uint32_t *count) {
  uint32_t n = 0, i;
  int rc;
  if (!count || (max && !ns)) return AISRV_MCU_E_ARG;
  rc = aisrv_mcu_call(c, AISRV_CMD_GET_TIMINGS, engine, 0, NULL, (uint8_t *)ns, max * 4u, &n);
  *count = n / 4u;
  if (rc) return rc;
  if (n % 4u) return AISRV_MCU_E_PROTOCOL;
  for (i = 0; i < n / 4u; ++i) { /* little-endian bytes to host words, in place */
    const uint8_t *p = (const uint8_t *)ns + 4u * i;
    const uint32_t v = aisrv_get_u32(p);
    ns[i] = v;
  }
  return AISRV_MCU_OK;
}

int aisrv_mcu_get_debug_log(aisrv_mcu_t *c, uint32_t engine, uint32_t lines, char *text, uint32_t cap,
                            uint32_t *length) {
  uint32_t n = 0;
  int rc;
  if (!text || !cap) return AISRV_MCU_E_ARG;
  rc = aisrv_mcu_call(c, AISRV_CMD_GET_DEBUG_LOG, engine, lines, NULL, (uint8_t *)text, cap - 1, &n);
  if (length) *length = n;
  text[rc == AISRV_MCU_OK ? n : 0] = '\0';
  return rc;
}

/* ------------------------------------------------------------------------------------------------- strerror */

typedef struct status_name_row {
  uint32_t bit;
  const char *name;
} status_name_row_t;

static const status_name_row_t k_status_names[] = {
#define AISRV_X_MCU_STATUS(name, bit, text) {bit, #name},
    AISRV_STATUS_TABLE(AISRV_X_MCU_STATUS)
#undef AISRV_X_MCU_STATUS
};

const char *aisrv_mcu_strerror(int err) {
  unsigned i;
  switch (err) {
    case AISRV_MCU_OK: return "OKAY";
    case AISRV_MCU_E_ARG: return "AISRV_MCU_E_ARG: invalid argument";
    case AISRV_MCU_E_HAL: return "AISRV_MCU_E_HAL: the SPI HAL reported a bus error";
    case AISRV_MCU_E_TIMEOUT: return "AISRV_MCU_E_TIMEOUT: no answer from the server within the timeout";
    case AISRV_MCU_E_LINK: return "AISRV_MCU_E_LINK: too many consecutive CRC/framing failures on the SPI link";
    case AISRV_MCU_E_PROTOCOL: return "AISRV_MCU_E_PROTOCOL: the server broke the SPI link protocol";
    case AISRV_MCU_E_TOO_SMALL: return "AISRV_MCU_E_TOO_SMALL: the answer does not fit the buffer";
    case AISRV_MCU_E_SOURCE: return "AISRV_MCU_E_SOURCE: the request's read callback failed";
    case AISRV_MCU_E_INCOMPATIBLE: return "AISRV_MCU_E_INCOMPATIBLE: protocol versions or frame sizes do not match";
    case AISRV_MCU_E_LOST: return "AISRV_MCU_E_LOST: the server dropped the command's answer";
    case AISRV_MCU_E_RESTARTED: return "AISRV_MCU_E_RESTARTED: the server kept restarting during the command";
    case AISRV_MCU_E_NO_ANSWER: return "AISRV_MCU_E_NO_ANSWER: no answer is ready to be read";
    default: break;
  }
  if (err > 0)
    for (i = 0; i < sizeof k_status_names / sizeof k_status_names[0]; ++i)
      if (k_status_names[i].bit == (uint32_t)err) return k_status_names[i].name;
  return "UNKNOWN";
}
