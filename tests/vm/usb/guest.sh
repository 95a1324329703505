# aisrv VM test, USB (guest script, busybox sh; run by the harness's /init, tests/vm/vm-run) — the USB transport on
# the real Linux gadget stack: dummy_hcd (high speed first), libcomposite, usb_f_fs, udevd. tools/usb-gadget sets up
# the gadget, aisrv_test_server serves FunctionFS and the libusb host side runs in the same guest:
#   scan, cli          `aisrv scan` (JSON: target, protocol), `aisrv version` (crc32 capability), hello, a stall
#                      through the CLI (exit 1 with the server's reason)
#   conformance        the whole conformance suite over usb:1209:0001
#   usb-high-speed     usb_vm_test: payload lengths around packet multiples (512) both ways with and without CRC,
#                      malformed command packets (stall, clear halt, LAST_ERROR, resume), cancel half way, the daemon
#                      restarted while the host is connected, a command while it is down
#   cpu-engine         the real aisrvd with two CPU engines over USB: the conformance suite with person_detect and
#                      TFLite Micro's expected output (skipped when the shared test data is absent)
#   usb-super-speed, usb-full-speed   dummy_hcd reloaded at that speed, lengths at its packet size (1024, 64)
#   daemon-stop, gadget-down          clean shutdown (exit 0; ASan: no leaks), tools/usb-gadget down
# Kernel arguments (vm-run --append): aisrv.only=PHASE runs one test phase, aisrv.tc=PATTERN selects usb_vm_test cases.
. /vmtest/usb-common.sh
ONLY="" TC="*"
for a in $(cat /proc/cmdline); do
  case "$a" in
    aisrv.only=*) ONLY=${a#*=} ;;
    aisrv.tc=*) TC=${a#*=} ;;
  esac
done
selected() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }

scan_check() {
  aisrv scan || return 1
  aisrv scan --json > /tmp/scan.json || return 1
  cat /tmp/scan.json
  grep -q '"target": "usb:1209:0001:VMTEST01"' /tmp/scan.json && grep -q '"protocol": "1.3"' /tmp/scan.json
}
cli_check() {
  aisrv --connect usb:1209:0001 version > /tmp/version.txt || return 1
  cat /tmp/version.txt
  grep -q 'capabilities:.*crc32' /tmp/version.txt || return 1
  aisrv --connect usb hello -n 20 || return 1
  # an unknown engine: the device stalls, the CLI prints the server's reason and exits 1
  aisrv --connect usb:1209:0001 --engine 9 status > /tmp/bad.txt 2>&1
  rc=$?
  cat /tmp/bad.txt
  [ $rc = 1 ] && grep -q 'does not exist' /tmp/bad.txt
}
cpu_phase() {  # the real aisrvd with CPU engines on FunctionFS: the conformance suite with a real TFLite model
  [ -f /vmtest/data/model.tflite ] || { log "no test data in the guest: CPU engine phase skipped"; return 0; }
  cpu_rc=0
  aisrv-vm-daemon stop || return 1
  AISRV_VM_SERVER=aisrvd aisrv-vm-daemon start || return 1
  AISRV_CONF_CONNECT=usb:1209:0001 AISRV_CONF_MODEL=/vmtest/data/model.tflite AISRV_CONF_INPUT=/vmtest/data/input.bin \
    AISRV_CONF_EXPECTED=/vmtest/data/expected.bin conformance_suite || cpu_rc=1
  aisrv --connect usb:1209:0001 status || cpu_rc=1
  AISRV_VM_SERVER=aisrvd aisrv-vm-daemon stop || cpu_rc=1
  aisrv-vm-daemon start || return 1
  return $cpu_rc
}
speed_phase() {  # speed_phase DUMMY_HCD_PARAM MPS MAXLEN: reload dummy_hcd at another speed, lengths at its packets
  aisrv-vm-daemon stop || return 1
  usb-gadget down > /dev/null || return 1
  rmmod dummy_hcd || return 1
  insmod "$DUMMY_KO" $1 || return 1
  usb-gadget up --serial VMTEST01 > /dev/null || return 1
  aisrv-vm-daemon start || return 1
  log "UDC speed: $(cat /sys/class/udc/*/current_speed)"
  AISRV_VM_MPS=$2 AISRV_VM_MAX_LENGTH=$3 usb_vm_test -tc='connects*,every payload*'
}

export AISRV_VM_DAEMON=aisrv-vm-daemon AISRV_VM_TARGET=usb:1209:0001 AISRV_CONF_CASES=/vmtest/data/cases.json
phase gadget-up usb-gadget up --serial VMTEST01
phase daemon-start aisrv-vm-daemon start
log "UDC speed: $(cat /sys/class/udc/*/current_speed)"
selected scan && phase scan scan_check
selected cli && phase cli cli_check
selected conformance && phase conformance env AISRV_CONF_CONNECT=usb:1209:0001 conformance_suite
selected usb-high-speed && phase usb-high-speed env AISRV_VM_MPS=512 usb_vm_test -tc="$TC"
selected cpu-engine && phase cpu-engine cpu_phase
# other speeds: the payload lengths at their packet sizes (full speed moves ~1 MB/s: short lengths only)
selected usb-super-speed && phase usb-super-speed speed_phase is_super_speed=1 1024 300000
selected usb-full-speed && phase usb-full-speed speed_phase is_high_speed=0 64 20000
phase daemon-stop aisrv-vm-daemon stop
phase gadget-down usb-gadget down
if [ $RESULT != 0 ]; then
  echo "---- server log (USB lines) ----"; grep -a 'USB' /tmp/server-aisrv.log | tail -n 80
  echo "---- dmesg (tail) ----"; dmesg | tail -n 40
fi
exit $RESULT
