#!/usr/bin/env bash
# USB transport on the real Linux USB stack: boots Debian's own kernel under QEMU with dummy_hcd, libcomposite and
# usb_f_fs, and runs inside it the gadget set-up (tools/usb-gadget), aisrv_test_server on FunctionFS and the libusb
# host programs (the recipe of ../shared/design/usb-vm-recipe.md, adapted).
#   tests/vm/usb/vm.sh --build BUILD_DIR [--mode test|bench] [--timeout SECONDS]
#     test   the full conformance suite over USB, `aisrv scan` and the CLI, usb_vm_test (payload lengths around packet
#            multiples, stalls, cancel half way, daemon restarts) at high speed, then lengths at super and full speed
#     bench  bench_usb: SET_INPUT/GET_OUTPUT throughput against raw libusb bulk transfers (prints `bench ...` lines)
# Exit status: 0 every phase passed, 1 a failure, 77 the VM cannot run on this machine (the reason is printed).
# Environment: AISRV_VM_CACHE (downloaded .debs, extracted kernel; default ~/.cache/aisrv-vm), AISRV_VM_KPKG (kernel
# package, default: what linux-image-amd64 depends on), AISRV_VM_MEM (MiB, 1024), AISRV_VM_SMP (2), AISRV_VM_CPU
# (qemu64: guest binaries must not use -march=native), AISRV_VM_KEEP=1 (keep the work directory), AISRV_VM_APPEND
# (more kernel arguments: aisrv.only=PHASE runs only that test phase, aisrv.tc=PATTERN selects usb_vm_test cases).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="" mode=test timeout_s=900
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "vm.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$build" ] || { echo "vm.sh: --build BUILD_DIR is required" >&2; exit 2; }
case "$mode" in test|bench) ;; *) echo "vm.sh: --mode test|bench" >&2; exit 2 ;; esac
t_start=$(date +%s)
say() { echo "vm.sh [$(( $(date +%s) - t_start ))s] $*"; }
skip() { echo "vm.sh: SKIPPED: $*"; exit 77; }

# ------------------------------------------------------------------------------------------- prerequisites
for tool in qemu-system-x86_64 cpio depmod modprobe xz readelf dpkg apt-get ldd timeout; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is missing (tools/install-deps --vm installs the VM packages)"
done
[ -x /bin/busybox ] || skip "/bin/busybox is missing (busybox-static)"
if [ "$mode" = test ]; then
  bins=("$build/tests/aisrv_test_server" "$build/tests/conformance_suite" "$build/tests/usb_vm_test" "$build/bin/aisrv"
        "$build/bin/aisrvd")
else
  bins=("$build/tests/aisrv_test_server" "$build/bench/bench_usb" "$build/bench/ffs_raw_device")
fi
for b in "${bins[@]}"; do [ -x "$b" ] || { echo "vm.sh: $b is not built" >&2; exit 1; }; done

# ------------------------------------------------------------------------------------------- kernel + udev (cached)
cache="${AISRV_VM_CACHE:-${HOME:-/tmp}/.cache/aisrv-vm}"
mkdir -p "$cache/dl"
exec 9>"$cache/.lock"
flock 9  # one VM run prepares the cache at a time
kpkg_of() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'; }
kpkg="${AISRV_VM_KPKG:-$(kpkg_of)}"
if [ -z "$kpkg" ]; then
  # no package lists yet: try once (needs root), else use what the cache already holds
  if [ "$(id -u)" = 0 ]; then apt-get update -qq >/dev/null 2>&1 || true; kpkg="$(kpkg_of)"; fi
  if [ -z "$kpkg" ]; then
    deb="$(ls "$cache"/dl/linux-image-[0-9]*.deb 2>/dev/null | head -n1 || true)"
    [ -n "$deb" ] && kpkg="$(basename "$deb" | cut -d_ -f1)"
  fi
fi
[ -n "$kpkg" ] || skip "cannot resolve the kernel package behind linux-image-amd64 (apt-get update?)"
kver="${kpkg#linux-image-}"
fetch() {  # fetch PKG: the .deb into the cache with apt-get download (never installed)
  local deb
  deb="$(ls "$cache"/dl/"$1"_*.deb 2>/dev/null | head -n1 || true)"
  if [ -z "$deb" ]; then
    say "apt-get download $1"
    (cd "$cache/dl" && apt-get download "$1" >/dev/null 2>&1) || skip "apt-get download $1 failed (no package mirror reachable?)"
    deb="$(ls "$cache"/dl/"$1"_*.deb | head -n1)"
  fi
  echo "$deb"
}
kdeb="$(fetch "$kpkg")"
udeb="$(fetch udev)"
kroot="$cache/kernel-$kver"
if [ ! -f "$kroot/.ready" ]; then
  say "extracting $(basename "$kdeb")"
  rm -rf "$kroot"; mkdir -p "$kroot"
  dpkg -x "$kdeb" "$kroot"
  depmod -b "$kroot" "$kver"  # the .deb ships no modules.dep
  touch "$kroot/.ready"
fi
uroot="$cache/udev"
if [ ! -x "$uroot/bin/udevadm" ]; then rm -rf "$uroot"; dpkg -x "$udeb" "$uroot"; fi
for c in CONFIG_USB_DUMMY_HCD CONFIG_USB_LIBCOMPOSITE CONFIG_USB_F_FS CONFIG_USB_CONFIGFS_F_FS; do
  grep -qE "^$c=" "$kroot/boot/config-$kver" || skip "$kver lacks $c"
done
# The uncompressed vmlinux boots directly (PVH entry, CONFIG_PVH) and saves ~3 s of xz under TCG.
vmlinux="$cache/vmlinux-$kver"
if [ ! -s "$vmlinux" ]; then
  vz="$kroot/boot/vmlinuz-$kver"
  LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vz" > "$cache/xzoff" || true
  off="$(head -n1 "$cache/xzoff" | cut -d: -f1)"
  rm -f "$cache/xzoff"
  if [ -n "$off" ] && tail -c +$((off + 1)) "$vz" > "$cache/vmlinux.xz" &&
     xz -dc --single-stream "$cache/vmlinux.xz" > "$cache/vmlinux.tmp" 2>/dev/null &&
     readelf -n "$cache/vmlinux.tmp" > "$cache/notes" 2>/dev/null && grep -q '(0x00000012)' "$cache/notes"; then
    mv "$cache/vmlinux.tmp" "$vmlinux"
  else
    cp "$vz" "$vmlinux"  # no PVH note: boot the bzImage
  fi
  rm -f "$cache/vmlinux.xz" "$cache/vmlinux.tmp" "$cache/notes"
fi
flock -u 9

# ------------------------------------------------------------------------------------------- initramfs
work="$(mktemp -d "${TMPDIR:-/tmp}/aisrv-vm-usb.XXXXXX")"
cleanup() { if [ "${AISRV_VM_KEEP:-0}" = 1 ]; then echo "vm.sh: work directory kept: $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
r="$work/rootfs"
mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,lib64,lib/x86_64-linux-gnu,lib/systemd}
cp /bin/busybox "$r/bin/busybox"
for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$r/bin/$a"; done
ln -s /bin/busybox "$r/usr/bin/env"  # for #!/usr/bin/env bash
copy_with_libs() {  # copy_with_libs FILE DEST: the program and every library ldd names, at the same paths
  cp "$1" "$2"
  local l
  for l in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*' || true); do
    [ -e "$r$l" ] && continue
    mkdir -p "$r$(dirname "$l")"
    cp -L "$l" "$r$l"
  done
}
copy_with_libs /bin/bash "$r/usr/bin/bash"  # tools/usb-gadget is a bash script
copy_with_libs "$uroot/bin/udevadm" "$r/usr/bin/udevadm"
ln -s /usr/bin/udevadm "$r/lib/systemd/systemd-udevd"
for b in "${bins[@]}"; do copy_with_libs "$b" "$r/usr/bin/"; done
cp "$root/tools/usb-gadget" "$r/usr/bin/usb-gadget"
cp "$here/guest-init.sh" "$r/init"
cp "$here/guest-daemon.sh" "$r/usr/bin/aisrv-vm-daemon"
chmod +x "$r/init" "$r/usr/bin/usb-gadget" "$r/usr/bin/aisrv-vm-daemon"
# A real model for aisrvd's CPU engine (third-party test data: ../shared/testdata, or $AISRV_TESTDATA; the phase is
# skipped without it): person_detect with its person image and the output TFLite Micro computed for it.
testdata="${AISRV_TESTDATA:-$root/../shared/testdata}"
if [ "$mode" = test ] && [ -f "$testdata/expected/person_detect__person_int8_96x96.out0.bin" ]; then
  mkdir -p "$r/testdata"
  cp "$testdata/tflite/tensorflow__tflite-micro/person_detect.tflite" "$r/testdata/model.tflite"
  cp "$testdata/reference_io/tflite-micro/person_int8_96x96.bin" "$r/testdata/input.bin"
  cp "$testdata/expected/person_detect__person_int8_96x96.out0.bin" "$r/testdata/expected.bin"
fi
: > "$r/etc/aisrv-vm-modules"
for ko in $(modprobe -d "$kroot" -S "$kver" -a --show-depends dummy_hcd libcomposite usb_f_fs |
            awk '$1 == "insmod" { print $2 }' | awk '!seen[$0]++'); do
  rel="${ko#"$kroot"}"
  mkdir -p "$r$(dirname "$rel")"
  cp "$ko" "$r$rel"
  echo "$rel" >> "$r/etc/aisrv-vm-modules"
done
(cd "$r" && find . | cpio -o -H newc --quiet --owner=0:0) > "$work/initramfs.cpio"
say "initramfs $(du -h "$work/initramfs.cpio" | cut -f1), kernel $kver, mode $mode"

# ------------------------------------------------------------------------------------------- boot
log="$work/console.log"
set +e
timeout "$timeout_s" qemu-system-x86_64 -machine pc -accel tcg,thread=multi -cpu "${AISRV_VM_CPU:-qemu64}" \
  -m "${AISRV_VM_MEM:-1024}" -smp "${AISRV_VM_SMP:-2}" -nodefaults -no-user-config -display none -serial stdio \
  -no-reboot -kernel "$vmlinux" -initrd "$work/initramfs.cpio" \
  -append "console=ttyS0 quiet panic=-1 aisrv.mode=$mode ${AISRV_VM_APPEND:-}" < /dev/null > "$log" 2>&1
qrc=$?
set -e
if [ "$mode" = bench ]; then
  grep -a '^bench ' "$log" | tr -d '\r' || true
  grep -aq 'AISRV-VM RESULT: PASS' "$log" || { tr -d '\r' < "$log" | tail -n 60; say "bench run FAILED (qemu rc $qrc)"; exit 1; }
  say "bench run done (qemu rc $qrc)"
  exit 0
fi
tr -d '\r' < "$log"
say "QEMU exited with $qrc"
if grep -aq 'AISRV-VM RESULT: PASS' "$log" && ! grep -aq 'AISRV-VM RESULT: FAIL' "$log"; then
  say "USB VM test PASSED in $(( $(date +%s) - t_start )) s"
  exit 0
fi
say "USB VM test FAILED"
exit 1
