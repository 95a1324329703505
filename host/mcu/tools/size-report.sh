#!/usr/bin/env bash
# aisrv MCU client — code and RAM size report (a proxy for an MCU build: -Os, x86-64, no PIC, no unwind tables).
#   size-report.sh CC SOURCE_DIR OUT_DIR SIZEOF_PROGRAM
# Prints `size` of each object, of a section-garbage-collected link that keeps every public function (what an
# application using the whole API carries), the largest stack frames, and sizeof(aisrv_mcu_t).
set -euo pipefail
cc="$1"; src="$2"; out="$3"; sizeof="$4"
mkdir -p "$out"; cd "$out"; rm -f ./*.o ./*.su
flags=(-std=c99 -Wall -Wextra -pedantic -Werror -Os -fno-pic -fno-pie -fno-asynchronous-unwind-tables
       -ffunction-sections -fdata-sections -fstack-usage -I"$src/host/mcu/include" -I"$src/protocol/include")
for f in host/mcu/src/aisrv_mcu.c protocol/src/spi_link.c protocol/src/crc32.c host/mcu/tools/size_root.c; do
  "$cc" "${flags[@]}" -c "$src/$f" -o "$(basename "$f" .c).o"
done
echo "== objects (every function, before the linker drops unused ones)"
size aisrv_mcu.o spi_link.o crc32.o
"$cc" -no-pie -nostdlib -static -Wl,--gc-sections -Wl,--entry=aisrv_mcu_api -Wl,--unresolved-symbols=ignore-all \
  aisrv_mcu.o spi_link.o crc32.o size_root.o -o api.elf
echo "== linked with --gc-sections, every public function kept (flash = .text + .rodata)"
size -A api.elf | grep -E '^\.(text|rodata|data|bss) '
echo "== largest stack frames (bytes)"
cat ./*.su | awk -F'\t' '{print $2"\t"$1}' | sort -n | tail -6
"$sizeof"
