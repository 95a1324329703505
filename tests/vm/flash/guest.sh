# aisrv VM test (guest script) — the model store on a real MTD device: /dev/mtd0 comes from mtdram (4 MiB, 64 KiB
# erase blocks). 1. the flash layer's own test binary on the device; 2. the product end to end: the server formats
# the blank chip (--flash mtd:/dev/mtd0), `aisrv flash write` stores a model over the socket, the server restarts with
# --boot, `aisrv flash-image inspect mtd:/dev/mtd0` verifies the chip. Prints PASS/FAIL lines; exit code = result.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
rc=0
up() { cut -d' ' -f1 /proc/uptime; }
check() { if "$@"; then echo "PASS: $* [$(up) s]"; else echo "FAIL: $* [$(up) s]"; rc=1; fi; }

cat /proc/mtd
echo "mtd0: type $(cat /sys/class/mtd/mtd0/type) size $(cat /sys/class/mtd/mtd0/size) erasesize $(cat /sys/class/mtd/mtd0/erasesize) writesize $(cat /sys/class/mtd/mtd0/writesize)"
check test -c /dev/mtd0

AISRV_VM_MTD=/dev/mtd0 vm_flash_mtd || rc=1

# The product on the chip: blank it, let the server format it, write a model over the socket, restart with --boot.
check flash_erase -q /dev/mtd0 0 0
printf 'AIST\001\001\003\000\000\000\000\000\020\000\000\000\020\000\000\000' > /tmp/test.model
start_server() {
  rm -f /tmp/srv.sock
  aisrv_test_server --listen unix:/tmp/srv.sock --engines 2 --flash mtd:/dev/mtd0 "$@" > /tmp/srv.log 2>&1 &
  SRV=$!
  i=0; while [ ! -S /tmp/srv.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
}
stop_server() {
  kill -TERM $SRV; wait $SRV; code=$?
  cat /tmp/srv.log
  if [ $code -eq 0 ]; then echo "PASS: server shut down cleanly"; else echo "FAIL: server exit code $code"; rc=1; fi
}
A="aisrv -c unix:/tmp/srv.sock"
start_server
check $A flash write /tmp/test.model --name on-mtd
head -c 300000 /vmtest/bin/vm_flash_mtd > /tmp/blob.bin
check $A --engine 1 flash write /tmp/blob.bin --name big-blob
check $A flash read --out /tmp/back.model
check cmp /tmp/test.model /tmp/back.model
$A --json flash list > /tmp/list.json; cat /tmp/list.json
check grep -q '"name": "on-mtd"' /tmp/list.json
check grep -q 'mtd /dev/mtd0' /tmp/list.json
stop_server
start_server --boot 0
check grep -q "booted its stored model" /tmp/srv.log
printf '\001\002\003\004\005\006\007\010\011\012\013\014\015\016\017\020' > /tmp/in.bin
check $A infer --input /tmp/in.bin
stop_server
check aisrv flash-image inspect mtd:/dev/mtd0
exit $rc
