#!/bin/sh
# aisrv VM guest — starts / stops the server on FunctionFS (busybox sh). `start` launches aisrv_test_server on the
# FunctionFS mount, binds the gadget (tools/usb-gadget bind) and waits until the host side configured the device;
# `stop` sends SIGTERM and fails unless the server exited with 0 (clean shutdown; under ASan: no leak). Closing ep0
# makes the kernel unbind the gadget, so the host sees an unplug.
#   aisrv-vm-daemon start|stop      env: AISRV_VM_GADGET (aisrv), AISRV_VM_FFS (/dev/ffs-NAME), AISRV_VM_UDC,
#                                   AISRV_VM_SERVER=aisrvd (the real daemon with two CPU engines instead)
NAME=${AISRV_VM_GADGET:-aisrv}
FFS=${AISRV_VM_FFS:-/dev/ffs-$NAME}
G=/sys/kernel/config/usb_gadget/$NAME
IDS="$(sed 's/^0x//' $G/idVendor):$(sed 's/^0x//' $G/idProduct)"
# The device as the host side sees it, once configured (the UDC's own state attribute keeps "configured" across an
# unbind, so it cannot tell a fresh connection).
host_device() {
  for d in /sys/bus/usb/devices/*; do
    [ -f "$d/idVendor" ] || continue
    [ "$(cat "$d/idVendor"):$(cat "$d/idProduct")" = "$IDS" ] || continue
    [ -n "$(cat "$d/bConfigurationValue" 2>/dev/null)" ] || continue
    echo "$d"
    return 0
  done
  return 1
}
case "$1" in
start)
  rm -f /run/server-$NAME.rc
  (
    if [ "${AISRV_VM_SERVER:-test}" = aisrvd ]; then
      aisrvd --usb-ffs "$FFS" --listen "unix:/run/aisrv-$NAME.sock" --engine 0=cpu --engine 1=cpu:kernels=ref \
        >> /tmp/server-$NAME.log 2>&1 &
    else
      aisrv_test_server --usb-ffs "$FFS" --listen "unix:/run/aisrv-$NAME.sock" --engines 2 >> /tmp/server-$NAME.log 2>&1 &
    fi
    echo $! > /run/server-$NAME.pid
    wait $!
    echo $? > /run/server-$NAME.rc
  ) &
  usb-gadget bind --name "$NAME" ${AISRV_VM_UDC:+--udc "$AISRV_VM_UDC"} > /dev/null || exit 1
  i=0
  while ! host_device > /dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
  udevadm settle -t 10
  host_device > /dev/null || { echo "aisrv-vm-daemon: $IDS not configured on the host side after 20 s"; exit 1; }
  ;;
stop)
  [ -e /run/server-$NAME.pid ] || exit 0
  kill -TERM "$(cat /run/server-$NAME.pid)"
  i=0
  while [ ! -e /run/server-$NAME.rc ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  rc=$(cat /run/server-$NAME.rc 2>/dev/null || echo "no exit within 30 s")
  rm -f /run/server-$NAME.pid
  i=0
  while host_device > /dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  udevadm settle -t 10
  if [ "$rc" != 0 ]; then
    echo "aisrv-vm-daemon: server exited with $rc"
    tail -n 40 /tmp/server-$NAME.log
    exit 1
  fi
  ;;
*) echo "usage: aisrv-vm-daemon start|stop"; exit 2 ;;
esac
