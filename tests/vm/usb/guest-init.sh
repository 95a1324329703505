#!/bin/sh
# aisrv VM guest — PID 1 of the USB test guest (busybox sh). Loads dummy_hcd + libcomposite + usb_f_fs, runs udevd
# (libusb learns about devices that appear later only through it), then the phases of the mode given on the kernel
# command line (aisrv.mode=test|bench). Each phase prints "AISRV-VM phase NAME: PASS|FAIL"; the last line is
# "AISRV-VM RESULT: PASS|FAIL". The guest powers off at the end (QEMU runs with -no-reboot).
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp /run
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
export HOME=/tmp ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

up() { cut -d' ' -f1 /proc/uptime; }
log() { echo "AISRV-VM [$(up)] $*"; }
RESULT=PASS
phase() {
  name=$1
  shift
  log "phase $name"
  if "$@"; then log "phase $name: PASS"; else log "phase $name: FAIL"; RESULT=FAIL; fi
}
MODE=test ONLY="" TC="*"
for a in $(cat /proc/cmdline); do
  case "$a" in
    aisrv.mode=*) MODE=${a#*=} ;;
    aisrv.only=*) ONLY=${a#*=} ;;  # run only this test phase (set-up phases always run)
    aisrv.tc=*) TC=${a#*=} ;;      # usb_vm_test cases (doctest -tc pattern)
  esac
done
selected() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }
log "kernel $(uname -r), mode $MODE"

/lib/systemd/systemd-udevd --daemon --resolve-names=never 2>/dev/null || log "udevd failed to start"
load_modules() {  # load_modules [dummy_hcd parameters...]
  while read -r ko; do
    case "$ko" in
      */dummy_hcd.ko*) insmod "$ko" "$@" || return 1 ;;
      *) grep -q "^$(basename "$ko" .ko | tr - _) " /proc/modules || insmod "$ko" || return 1 ;;
    esac
  done < /etc/aisrv-vm-modules
}
dummy_ko=$(grep dummy_hcd /etc/aisrv-vm-modules)
mount -t configfs none /sys/kernel/config

# ---------------------------------------------------------------------------------------------- test mode
scan_check() {
  aisrv scan || return 1
  aisrv scan --json > /tmp/scan.json || return 1
  cat /tmp/scan.json
  grep -q '"target": "usb:1209:0001:VMTEST01"' /tmp/scan.json && grep -q '"protocol": "1.0"' /tmp/scan.json
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
  [ -f /testdata/model.tflite ] || { log "no test data in the guest: CPU engine phase skipped"; return 0; }
  cpu_rc=0
  aisrv-vm-daemon stop || return 1
  AISRV_VM_SERVER=aisrvd aisrv-vm-daemon start || return 1
  AISRV_CONF_CONNECT=usb:1209:0001 AISRV_CONF_MODEL=/testdata/model.tflite AISRV_CONF_INPUT=/testdata/input.bin \
    AISRV_CONF_EXPECTED=/testdata/expected.bin conformance_suite || cpu_rc=1
  aisrv --connect usb:1209:0001 status || cpu_rc=1
  AISRV_VM_SERVER=aisrvd aisrv-vm-daemon stop || cpu_rc=1
  aisrv-vm-daemon start || return 1
  return $cpu_rc
}
speed_phase() {  # speed_phase DUMMY_HCD_PARAM MPS MAXLEN: reload dummy_hcd at another speed, lengths at its packets
  aisrv-vm-daemon stop || return 1
  usb-gadget down > /dev/null || return 1
  rmmod dummy_hcd || return 1
  insmod "$dummy_ko" $1 || return 1
  usb-gadget up --serial VMTEST01 > /dev/null || return 1
  aisrv-vm-daemon start || return 1
  log "UDC speed: $(cat /sys/class/udc/*/current_speed)"
  AISRV_VM_MPS=$2 AISRV_VM_MAX_LENGTH=$3 usb_vm_test -tc='connects*,every payload*'
}
if [ "$MODE" = test ]; then
  export AISRV_VM_DAEMON=aisrv-vm-daemon AISRV_VM_TARGET=usb:1209:0001
  phase modules load_modules
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
  if [ $RESULT != PASS ]; then
    echo "---- server log (USB lines) ----"; grep -a 'USB' /tmp/server-aisrv.log | tail -n 80
    echo "---- dmesg (tail) ----"; dmesg | tail -n 40
  fi
fi

# ---------------------------------------------------------------------------------------------- bench mode
raw_start() {  # raw_start SIZE: the raw sink/source with IN transfers of SIZE bytes, bound to dummy_udc.0
  [ -z "$RAW_PID" ] || { kill "$RAW_PID"; wait "$RAW_PID"; sleep 0.5; }
  ffs_raw_device /dev/ffs-raw --size "$1" > /tmp/raw.log 2>&1 &
  RAW_PID=$!
  usb-gadget bind --name raw --udc dummy_udc.0 > /dev/null || return 1
  sleep 1
  udevadm settle -t 10
}
bench_run() {
  raw_start 1048576 || return 1
  bench_usb --raw usb:1209:0002 --aisrv usb:1209:0001 --size 1048576 --count 16 --rounds 3 || return 1
  # larger payloads: the cost per command is spread over more bytes
  raw_start 4194304 || return 1
  bench_usb --raw usb:1209:0002 --aisrv usb:1209:0001 --size 4194304 --count 4 --rounds 3
}
if [ "$MODE" = bench ]; then
  phase modules load_modules num=2
  phase raw-up usb-gadget up --name raw --pid 0x0002 --serial RAW
  phase aisrv-up usb-gadget up --serial BENCH
  phase daemon-start env AISRV_VM_UDC=dummy_udc.1 aisrv-vm-daemon start
  sleep 1
  udevadm settle -t 10
  phase bench bench_run
  phase daemon-stop aisrv-vm-daemon stop
fi

log "done"
echo "AISRV-VM RESULT: $RESULT"
sync
reboot -f
