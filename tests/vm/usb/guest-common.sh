# aisrv VM test, USB (sourced by guest.sh and guest-bench.sh; busybox sh) — what both need once the harness's /init
# has loaded dummy_hcd, libcomposite and usb_f_fs: configfs, udevd (libusb learns about a device that appears after
# it started only through udev), ASan settings, and `phase NAME COMMAND...`, which prints "PASS: phase NAME" or
# "FAIL: phase NAME" (the harness fails the test on any FAIL line).
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 HOME=/tmp
up() { cut -d' ' -f1 /proc/uptime; }
log() { echo "USB-VM [$(up)] $*"; }
RESULT=0
phase() {
  name=$1
  shift
  log "phase $name"
  if "$@"; then echo "PASS: phase $name [$(up) s]"; else echo "FAIL: phase $name [$(up) s]"; RESULT=1; fi
}
# dummy_hcd's module file, for reloading it at another speed
DUMMY_KO=$(awk '/dummy_hcd/ { print $1 }' /etc/vmtest/modules)
mount -t configfs none /sys/kernel/config
/lib/systemd/systemd-udevd --daemon --resolve-names=never 2>/dev/null || log "udevd failed to start"
