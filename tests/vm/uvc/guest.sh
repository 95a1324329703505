# aisrv VM test (guest script, busybox sh) — a USB camera through the kernel's uvcvideo driver (vm_uvc_test, frames
# chosen by the test). First it tries the usb_f_uvc webcam gadget over dummy_hcd and prints what the kernel says
# (Debian's dummy_hcd has no isochronous endpoint, which the gadget's video stream needs); the camera the test then
# drives is a UVC device on USB/IP's vhci-hcd (tests/vm/uvc/usbip_uvc_camera.*), and for libcamera the same camera
# on QEMU's PCI xHCI over usbredir (usbredir_uvc_camera.*, vm-run --usb-redir-port uvc: a virtio-serial port named
# "uvc"). Exit 77 (skip) when a module or the test data is missing.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PATH=/vmtest/bin:$PATH
for m in uvcvideo vhci_hcd; do
  [ -d /sys/module/$m ] || { echo "SKIP: the kernel has no $m module"; exit 77; }
done
if [ ! -f /vmtest/data/mobilenet.tflite ]; then
  echo "SKIP: no test data in the guest (the RGB model); UVC test not run"
  exit 77
fi

# --- the usb_f_uvc gadget (configfs) with YUYV and MJPEG at 320x240 and 640x480, bound to dummy_udc.0
if [ -d /sys/module/usb_f_uvc ] && [ -d /sys/class/udc/dummy_udc.0 ]; then
  mount -t configfs none /sys/kernel/config 2>/dev/null
  g=/sys/kernel/config/usb_gadget/uvc
  mkdir $g && cd $g
  echo 0x1d6b > idVendor; echo 0x0104 > idProduct
  mkdir configs/c.1 $g/functions/uvc.0
  f=$g/functions/uvc.0
  mkdir -p $f/control/header/h
  ln -s $f/control/header/h $f/control/class/fs/h
  ln -s $f/control/header/h $f/control/class/ss/h
  for kind in uncompressed:u mjpeg:m; do
    d=$f/streaming/${kind%%:*}/${kind#*:}
    for size in 320x240 640x480; do
      w=${size%x*}; h=${size#*x}
      mkdir -p $d/$size
      echo $w > $d/$size/wWidth; echo $h > $d/$size/wHeight
      echo $((w * h * 2)) > $d/$size/dwMaxVideoFrameBufferSize
      echo 333333 > $d/$size/dwDefaultFrameInterval; echo 333333 > $d/$size/dwFrameInterval
    done
  done
  mkdir $f/streaming/header/h
  ln -s $f/streaming/uncompressed/u $f/streaming/header/h/u
  ln -s $f/streaming/mjpeg/m $f/streaming/header/h/m
  for s in fs hs ss; do ln -s $f/streaming/header/h $f/streaming/class/$s/h; done
  ln -s $f $g/configs/c.1/uvc.0
  echo "uvc gadget formats: $(ls $f/streaming/uncompressed/u $f/streaming/mjpeg/m | tr '\n' ' ')"
  if echo dummy_udc.0 > UDC 2>/tmp/bind.err; then
    echo "NOTE: the usb_f_uvc gadget bound to dummy_udc.0 (this kernel's dummy_hcd has isochronous endpoints);"
    echo "NOTE: unbound again, the test uses the USB/IP camera"
    echo "" > UDC
  else
    echo "uvc gadget: binding to dummy_udc.0 failed: $(cat /tmp/bind.err)"
  fi
  echo "uvc gadget: kernel log:"; dmesg | grep -iE 'uvc|udc|gadget' | tail -n 8
  cd /tmp
fi

# --- the camera the test plays over USB/IP, driven through aisrvd. udevd: libcamera takes only the devices udev has
# initialized (no rules here: it records them).
/lib/systemd/systemd-udevd --daemon --resolve-names=never 2>/dev/null || echo "udevd failed to start"
rc=0
if vm_uvc_test --duration=true; then echo "PASS: vm_uvc_test"; else echo "FAIL: vm_uvc_test"; rc=1; fi
ls -l /dev/media* /run/udev/data 2>&1 | head -n 12
echo "kernel log (uvcvideo, vhci, xhci):"; dmesg | grep -iE 'uvc|vhci|xhci|usb [0-9]-1' | tail -n 16
exit $rc
