# aisrv VM test (guest script, busybox sh) — the sensor path on the real kernel interfaces: vivid (V4L2 virtual
# camera), i2c-stub (an SMBus chip at 0x48) through i2c-dev and hid-cp2112's gpiochip (a CP2112 emulated over
# FunctionFS + dummy_hcd), driven through aisrvd by vm_sensor_test. Prints
# PASS/FAIL lines; the exit code is the result.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PATH=/vmtest/bin:$PATH
rc=0
ls -l /dev/video* /dev/i2c-* 2>&1
for f in /sys/class/video4linux/*/name; do echo "$f: $(cat "$f")"; done
if [ ! -f /vmtest/data/mobilenet.tflite ]; then
  echo "SKIP: no test data in the guest (the RGB model); sensor test not run"
  exit 77  # ctest's skip code (guest-init and vm-run pass it on)
fi
# The emulated CP2112 (vm_gpio_test): a gadget with its ids whose FunctionFS the test serves, bound by the test.
usb-gadget up --name cp2112 --vid 0x10c4 --pid 0xea90 --product "CP2112 emulator" --mount /dev/ffs-cp2112 ||
  { echo "FAIL: usb-gadget up"; rc=1; }
if vm_sensor_test; then echo "PASS: vm_sensor_test"; else echo "FAIL: vm_sensor_test"; rc=1; fi
exit $rc
