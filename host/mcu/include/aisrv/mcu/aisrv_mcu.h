/* aisrv MCU client — drives an aisrv server over SPI from a microcontroller (or any SPI master).
 *
 * Portable C99: no heap, no OS, no libc beyond memcpy/memset. The board supplies a HAL (full-duplex transfer, chip
 * select, microsecond delay); the client runs the SPI link protocol (protocol/spi_link.h): CRC-checked frames,
 * chunked transfers with offsets (a model can be streamed from a read callback, never held in RAM), a status
 * transaction while the server is busy, retries after CRC or framing errors, and re-synchronisation after a
 * server restart. All state lives in an aisrv_mcu_t the caller provides.
 *
 * Every function returns an int: 0 on success, a negative AISRV_MCU_E_* for a local or link failure, or a positive
 * aisrv status bit (status.h, e.g. AISRV_STATUS_ERROR_NO_MODEL) when the server answered with an error.
 * aisrv_mcu_strerror() names any of them. docs/transport-spi.md has the porting guide.
 */
#ifndef AISRV_MCU_H
#define AISRV_MCU_H

#include <stddef.h>
#include <stdint.h>

#include "aisrv/protocol/commands.h"
#include "aisrv/protocol/spi_link.h"
#include "aisrv/protocol/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Local and link errors (negative). */
#define AISRV_MCU_OK 0
#define AISRV_MCU_E_ARG (-1)          /* invalid argument (NULL pointer, bad configuration) */
#define AISRV_MCU_E_HAL (-2)          /* the HAL reported a bus error */
#define AISRV_MCU_E_TIMEOUT (-3)      /* the server did not answer within the timeout */
#define AISRV_MCU_E_LINK (-4)         /* too many consecutive CRC/framing failures: the link is broken */
#define AISRV_MCU_E_PROTOCOL (-5)     /* the server sent something the link protocol does not allow */
#define AISRV_MCU_E_TOO_SMALL (-6)    /* the answer does not fit the buffer (its length is reported) */
#define AISRV_MCU_E_SOURCE (-7)       /* the request's read callback failed */
#define AISRV_MCU_E_INCOMPATIBLE (-8) /* protocol versions or frame sizes do not fit together */
#define AISRV_MCU_E_LOST (-9)         /* the server dropped the command's answer (another master?) */
#define AISRV_MCU_E_RESTARTED (-10)   /* the server kept restarting during the command */
#define AISRV_MCU_E_NO_ANSWER (-11)   /* aisrv_mcu_read_answer() without a ready answer */

/* The board's SPI master. The client calls select(1), one or more transfer()s, select(0) per transaction, and
 * reads rx bytes only after select(0) returned, so a HAL may clock each transfer at once (MCU) or collect the
 * window and clock it at release (Linux spidev). tx is consumed when transfer() returns. */
typedef struct aisrv_mcu_hal {
  void *ctx;
  /* Clocks len bytes full duplex: tx out on MOSI (NULL: 0xFF filler), MISO into rx (NULL: discard). 0 = ok. */
  int (*transfer)(void *ctx, const uint8_t *tx, uint8_t *rx, size_t len);
  /* Chip select: 1 asserts (transaction begins), 0 releases (transaction ends). 0 = ok (a HAL that clocks the
   * window at release reports its bus error here). */
  int (*select)(void *ctx, int active);
  /* Waits at least us microseconds. */
  void (*delay_us)(void *ctx, uint32_t us);
  /* Optional: a free-running microsecond counter (wrapping). NULL: time is the sum of delays plus an estimate of
   * each transaction from config.hz. */
  uint32_t (*now_us)(void *ctx);
  /* Optional: waits until the slave has armed its next transaction (a ready line), up to timeout_us. 0 = ready.
   * NULL: the client leaves config.gap_us between transactions instead. */
  int (*wait_ready)(void *ctx, uint32_t timeout_us);
} aisrv_mcu_hal_t;

typedef struct aisrv_mcu_config {
  uint16_t max_frame;   /* largest transaction this master can clock (>= 64; default 4092) */
  uint8_t fixed_frames; /* 1: clock exactly one frame per transaction (the slave needs the length in advance) */
  uint8_t max_retries;  /* consecutive failed transactions tolerated before AISRV_MCU_E_LINK (default 32) */
  uint32_t timeout_us;  /* per command, including the server's work (default 10 s) */
  uint32_t poll_us;     /* first wait between status polls / retries; doubles up to poll_max_us (default 20) */
  uint32_t poll_max_us; /* default 20000 */
  uint32_t gap_us;      /* CS-high time between transactions when there is no ready line (default 0) */
  uint32_t hz;          /* SPI clock, used only for the time estimate when the HAL has no now_us (0: unknown) */
} aisrv_mcu_config_t;

/* Counters, for diagnostics and tests. */
typedef struct aisrv_mcu_stats {
  uint32_t transactions; /* CS windows clocked */
  uint64_t clocked;      /* bytes clocked */
  uint32_t bad_replies;  /* replies that failed the magic/length/CRC check (MISO corrupted) */
  uint32_t rejected;     /* frames the server rejected (MOSI corrupted, gap, ...) */
  uint32_t resent;       /* request chunks sent again */
  uint32_t busy_polls;   /* status transactions answered BUSY */
  uint32_t restarts;     /* server restarts seen (its boot id changed) */
  uint32_t syncs;        /* link resets (SYNC) */
  uint8_t last_link_error; /* aisrv_spi_error_t of the last rejected frame */
} aisrv_mcu_stats_t;

/* A request payload: a buffer, or a callback that copies `len` bytes from `offset` into `dst` (0 = ok). The
 * callback may be asked for the same range again (retries, a server restart). */
typedef int (*aisrv_mcu_read_fn)(void *ctx, uint32_t offset, uint8_t *dst, uint32_t len);
typedef struct aisrv_mcu_source {
  const uint8_t *data; /* the payload, or NULL to use read */
  aisrv_mcu_read_fn read;
  void *ctx;
  uint32_t length;
} aisrv_mcu_source_t;

/* Staging buffer for callback sources (bytes per HAL transfer); a board may raise it. */
#ifndef AISRV_MCU_STAGE_SIZE
#define AISRV_MCU_STAGE_SIZE 64
#endif

/* The frame that was sent last; its reply arrives in the next transaction. (Private.) */
typedef struct aisrv_mcu_flight {
  uint8_t type;    /* AISRV_SPI_* of the frame, 0 = none */
  uint8_t seq;
  uint32_t index;  /* request frame index (BEGIN 0, DATA 1..); unused for POLL */
  uint32_t answer_offset;
  uint16_t want;   /* answer bytes its reply may carry */
  uint8_t *dst;    /* where they go */
} aisrv_mcu_flight_t;

/* Client state: allocate it anywhere (static, stack); all fields are private. */
typedef struct aisrv_mcu {
  aisrv_mcu_hal_t hal;
  aisrv_mcu_config_t cfg;
  aisrv_mcu_stats_t stats;
  uint16_t frame;  /* frame size in force, 0 before the first SYNC */
  uint8_t fixed;   /* the slave needs fixed-size frames */
  uint8_t seq;
  uint16_t xfer;
  uint32_t boot;
  uint32_t clock_us;  /* time accounting without now_us */
  uint32_t start_us;
  aisrv_mcu_flight_t flight;   /* the frame sent last */
  aisrv_mcu_flight_t answered; /* the frame the last reply answered */
  /* the last command's answer (readable again until the next command) */
  uint16_t answer_xfer;
  uint8_t answer_ready;
  uint32_t answer_status;
  uint32_t answer_total;
  uint8_t txh[AISRV_SPI_HEADER_SIZE], rxh[AISRV_SPI_HEADER_SIZE];
  uint8_t txc[AISRV_SPI_CRC_SIZE], rxc[AISRV_SPI_CRC_SIZE];
  uint8_t rxs[8]; /* the start of a reply whose answer bytes have no destination any more */
  uint8_t stage[AISRV_MCU_STAGE_SIZE];
} aisrv_mcu_t;

/* Fills a configuration with the defaults above. */
void aisrv_mcu_default_config(aisrv_mcu_config_t *cfg);
/* Stores the HAL and configuration (cfg may be NULL for the defaults). No bus traffic. */
int aisrv_mcu_init(aisrv_mcu_t *c, const aisrv_mcu_hal_t *hal, const aisrv_mcu_config_t *cfg);
/* Resets the server's link state and agrees on the frame size (done automatically before the first command and
 * after a server restart). */
int aisrv_mcu_sync(aisrv_mcu_t *c);
/* Name of a return value: "AISRV_MCU_E_TIMEOUT", "ERROR_NO_MODEL", "OKAY"... */
const char *aisrv_mcu_strerror(int err);
/* Frame size in force (0 before the first SYNC). */
uint16_t aisrv_mcu_frame(const aisrv_mcu_t *c);

/* Any command: sends `request` (may be NULL), waits for the answer, copies it to answer[0..cap). *answer_len gets
 * the answer's length (also when it does not fit: AISRV_MCU_E_TOO_SMALL, then aisrv_mcu_read_answer() can fetch
 * it into a larger buffer), *status the server's status word. Returns only local/link errors; a server error is
 * in *status. */
int aisrv_mcu_exchange(aisrv_mcu_t *c, uint32_t cmd, uint32_t engine, uint32_t tensor,
                       const aisrv_mcu_source_t *request, uint8_t *answer, uint32_t cap, uint32_t *answer_len,
                       uint32_t *status);
/* aisrv_mcu_exchange, with a server error returned as its status bit. */
int aisrv_mcu_call(aisrv_mcu_t *c, uint32_t cmd, uint32_t engine, uint32_t tensor, const aisrv_mcu_source_t *request,
                   uint8_t *answer, uint32_t cap, uint32_t *answer_len);
/* Reads the last command's answer again (it stays on the server until the next command). */
int aisrv_mcu_read_answer(aisrv_mcu_t *c, uint8_t *answer, uint32_t cap, uint32_t *answer_len);

/* The commands (engine numbers from 0; tensor = input/output index). */
int aisrv_mcu_hello(aisrv_mcu_t *c);
int aisrv_mcu_get_id(aisrv_mcu_t *c, uint32_t *id);

typedef struct aisrv_mcu_version {
  uint16_t major, minor, min_major;
  uint32_t capabilities;
  uint32_t max_payload;
  uint32_t engines;
} aisrv_mcu_version_t;
/* GET_VERSION; AISRV_MCU_E_INCOMPATIBLE when the server's protocol range does not include this client's. */
int aisrv_mcu_get_version(aisrv_mcu_t *c, aisrv_mcu_version_t *v);

typedef struct aisrv_mcu_spec {
  uint32_t input_length, output_length, timings_length;
} aisrv_mcu_spec_t;
int aisrv_mcu_get_spec(aisrv_mcu_t *c, uint32_t engine, uint32_t tensor, aisrv_mcu_spec_t *spec);
/* The engine's status word (BUSY/SENSING + error bits since the last read). */
int aisrv_mcu_get_status(aisrv_mcu_t *c, uint32_t engine, uint32_t *word);
int aisrv_mcu_input_length(aisrv_mcu_t *c, uint32_t engine, uint32_t tensor, uint32_t *length);
int aisrv_mcu_output_length(aisrv_mcu_t *c, uint32_t engine, uint32_t tensor, uint32_t *length);

/* SET_MODEL_PRIMARY (external = 0: in the engine's arena) or SET_MODEL_SECONDARY (external = 1). */
int aisrv_mcu_load_model(aisrv_mcu_t *c, uint32_t engine, const uint8_t *model, uint32_t length, int external);
/* The same, streamed from a callback (the model never needs to be in RAM). */
int aisrv_mcu_load_model_from(aisrv_mcu_t *c, uint32_t engine, aisrv_mcu_read_fn read, void *ctx, uint32_t length,
                              int external);
/* SET_MODEL_*_FLASH: the engine's model from the server's model store. */
int aisrv_mcu_load_model_from_flash(aisrv_mcu_t *c, uint32_t engine, int external);
int aisrv_mcu_unload_model(aisrv_mcu_t *c, uint32_t engine);

int aisrv_mcu_set_input(aisrv_mcu_t *c, uint32_t engine, uint32_t tensor, const uint8_t *data, uint32_t length);
/* START_INFER: returns when the inference finished (the client polls meanwhile). */
int aisrv_mcu_start_inference(aisrv_mcu_t *c, uint32_t engine);
int aisrv_mcu_cancel(aisrv_mcu_t *c, uint32_t engine);
int aisrv_mcu_get_output(aisrv_mcu_t *c, uint32_t engine, uint32_t tensor, uint8_t *buf, uint32_t cap,
                         uint32_t *length);
/* GET_TIMINGS: one value per operator (ns); *count gets how many the server has (even when more than max). */
int aisrv_mcu_get_timings(aisrv_mcu_t *c, uint32_t engine, uint32_t *ns, uint32_t max, uint32_t *count);
/* GET_DEBUG_LOG: the last `lines` lines (0 = all); engine AISRV_ENGINE_SERVER for the server log. The text is
 * NUL-terminated (cap includes the NUL). */
int aisrv_mcu_get_debug_log(aisrv_mcu_t *c, uint32_t engine, uint32_t lines, char *text, uint32_t cap,
                            uint32_t *length);

#ifdef __cplusplus
}
#endif
#endif
