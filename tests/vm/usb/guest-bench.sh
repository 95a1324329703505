# aisrv VM benchmark, USB (guest script, busybox sh; tools/bench usb runs it through tests/vm/vm-run) — two emulated
# controllers (dummy_hcd num=2): ffs_raw_device, a plain FunctionFS sink/source, on dummy_udc.0 (1209:0002) and
# aisrv_test_server on dummy_udc.1 (1209:0001). bench_usb alternates raw libusb bulk transfers with SET_INPUT_TENSOR /
# GET_OUTPUT_TENSOR of the same size and prints `bench ...` lines: 1 MiB, then 4 MiB.
. /vmtest/usb-common.sh
RAW_PID=""
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
  bench_usb --raw usb:1209:0002 --aisrv usb:1209:0001 --size 1048576 --count 12 --rounds 11 || return 1
  # larger payloads: the cost per command is spread over more bytes
  raw_start 4194304 || return 1
  bench_usb --raw usb:1209:0002 --aisrv usb:1209:0001 --size 4194304 --count 3 --rounds 5
}
phase raw-up usb-gadget up --name raw --pid 0x0002 --serial RAW
phase aisrv-up usb-gadget up --serial BENCH
phase daemon-start env AISRV_VM_UDC=dummy_udc.1 aisrv-vm-daemon start
sleep 1
udevadm settle -t 10
phase bench bench_run
phase daemon-stop aisrv-vm-daemon stop
exit $RESULT
