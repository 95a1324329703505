/* A C program built with `pkg-config --cflags --libs aisrv-client`: the C99 MCU client's protocol tables from the
 * installed headers and library. Prints the number of commands and the name of GET_SERVER_STATS. */
#include <aisrv/protocol/commands.h>
#include <stdio.h>

int main(void) {
  unsigned n = aisrv_command_count();
  for (unsigned i = 0; i < n; ++i)
    if (aisrv_command_at(i)->value == AISRV_CMD_GET_SERVER_STATS) printf("%u commands, %s\n", n, aisrv_command_at(i)->name);
  return 0;
}
