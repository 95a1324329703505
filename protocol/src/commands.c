/* aisrv protocol — lookups over the command and status tables. */
#include "aisrv/protocol/commands.h"
#include "aisrv/protocol/status.h"

#include <stddef.h>

static const aisrv_command_info_t k_commands[] = {
#define AISRV_X_ROW(name, value, kind, req, resp) {#name, value, kind, req, resp},
    AISRV_COMMAND_TABLE(AISRV_X_ROW)
#undef AISRV_X_ROW
};

#define AISRV_X_CHECK_KIND(name, value, kind, req, resp) \
  typedef char aisrv_kind_matches_bit_##name[((((value) & 0x80) != 0) == ((kind) != AISRV_KIND_GET)) ? 1 : -1];
AISRV_COMMAND_TABLE(AISRV_X_CHECK_KIND)
#undef AISRV_X_CHECK_KIND

const aisrv_command_info_t *aisrv_command_info(uint32_t value) {
  unsigned i;
  for (i = 0; i < sizeof k_commands / sizeof k_commands[0]; ++i)
    if (k_commands[i].value == value) return &k_commands[i];
  return NULL;
}

const char *aisrv_command_name(uint32_t value) {
  const aisrv_command_info_t *info = aisrv_command_info(value);
  return info ? info->name : "UNKNOWN";
}

int aisrv_command_sends_data(uint32_t value) { return (value & AISRV_CMD_SET_BIT) != 0; }

int aisrv_command_returns_data(uint32_t value) {
  const aisrv_command_info_t *info = aisrv_command_info(value);
  if (!info) return (value & AISRV_CMD_SET_BIT) == 0;
  return info->kind != AISRV_KIND_SET;
}

unsigned aisrv_command_count(void) { return (unsigned)(sizeof k_commands / sizeof k_commands[0]); }

const aisrv_command_info_t *aisrv_command_at(unsigned index) {
  return index < aisrv_command_count() ? &k_commands[index] : NULL;
}

typedef struct status_row {
  const char *name;
  uint32_t bit;
  const char *text;
} status_row_t;

static const status_row_t k_status[] = {
#define AISRV_X_ROW(name, bit, text) {#name, bit, text},
    AISRV_STATUS_TABLE(AISRV_X_ROW)
#undef AISRV_X_ROW
};

static const status_row_t *lowest_bit_row(uint32_t status) {
  unsigned i;
  uint32_t lowest = status & (~status + 1u);
  for (i = 0; i < sizeof k_status / sizeof k_status[0]; ++i)
    if (k_status[i].bit == lowest) return &k_status[i];
  return NULL;
}

const char *aisrv_status_name(uint32_t status) {
  const status_row_t *row;
  if (status == 0) return "OKAY";
  row = lowest_bit_row(status);
  return row ? row->name : "UNKNOWN";
}

const char *aisrv_status_text(uint32_t status) {
  const status_row_t *row;
  if (status == 0) return "success";
  row = lowest_bit_row(status);
  return row ? row->text : "undefined status bit";
}
