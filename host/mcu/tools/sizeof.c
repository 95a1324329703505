/* aisrv MCU client — prints the RAM the client needs besides its code: the state struct and the largest stack
 * buffer a command function uses (for the size report in docs/transport-spi.md). */
#include <stdio.h>

#include "aisrv/mcu/aisrv_mcu.h"

int main(void) {
  printf("sizeof(aisrv_mcu_t) = %u bytes (AISRV_MCU_STAGE_SIZE %u)\n", (unsigned)sizeof(aisrv_mcu_t),
         (unsigned)AISRV_MCU_STAGE_SIZE);
  return 0;
}
