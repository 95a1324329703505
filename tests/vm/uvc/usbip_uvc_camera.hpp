// aisrv VM test helper (test code only) — the UVC webcam (uvc_camera_model.hpp) played over USB/IP: the kernel's
// vhci-hcd takes one end of a socket as a USB device on its root hub (/sys/devices/platform/vhci_hcd.0/attach), and
// this object answers the URBs vhci sends over it (the USB/IP protocol: CMD_SUBMIT / RET_SUBMIT, CMD_UNLINK /
// RET_UNLINK), so the kernel's own uvcvideo driver binds to it and offers /dev/videoN. Written from the kernel's
// USB/IP protocol documentation (Documentation/usb/usbip_protocol.rst); see tests/vm/uvc/vm_uvc_test.cpp for why
// USB/IP rather than the usb_f_uvc gadget over dummy_hcd.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "uvc_camera_model.hpp"

namespace aisrv::test {

class UsbipUvcCamera : public UvcCamera {
 public:
  // Makes the device and attaches it to vhci-hcd's port 0 (high speed). Empty with `error` set when that fails.
  static std::unique_ptr<UsbipUvcCamera> attach(int fps, std::string& error);
  ~UsbipUvcCamera() override;  // detaches (the host sees an unplug) and stops the thread

 private:
  explicit UsbipUvcCamera(int fps) : UvcCamera(fps) {}
  void run();
  bool handle_one();
  void serve_bulk();
  void reply_submit(uint32_t seqnum, uint32_t ep, uint32_t dir, int32_t status, const uint8_t* data, uint32_t len);

  int fd_ = -1;        // our end; vhci-hcd holds the other
  int stop_fd_ = -1;   // eventfd: ends the thread
  std::thread thread_;
  struct Pending {
    uint32_t seqnum, length;
  };
  std::vector<Pending> pending_;  // bulk IN URBs waiting for data, oldest first
};

}  // namespace aisrv::test
